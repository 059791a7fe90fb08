"""Start a generated MCP server inside the sandbox, whichever of the two accepted shapes it has.

This file is copied next to the server code and run as a script by the sandbox's interpreter, so it
imports only the standard library (and ``mcp`` lazily). Usage::

    python _toolgauge_shim.py --script server.py   # an ordinary stdio server: run it as __main__
    python _toolgauge_shim.py --class server.py    # the official generator's shape (see below)

The official generator's shape is a module holding a class whose ``_initialize_mcp_server()``
returns a server object with ``run()``; the official launcher imports the module, builds the class
with a spec dict (``cls({})``) and calls ``run()`` (stdio). The harness decides the shape from the
source without executing it (``toolgauge.tools.mcp_server.detect_server_shape``).

Code written for mcp 1.x imports ``mcp.server.fastmcp.FastMCP``, which mcp 2 removed (the module
raises ``ModuleNotFoundError``). When that import would fail, the shim registers a small alias
module whose ``FastMCP`` is mcp 2's ``MCPServer`` so such code gets a chance to run; servers that
rely on other 1.x-only APIs still fail, and that failure is scored.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import os
import runpy
import sys
import types
from typing import Any

SHIM_FILE_NAME = "_toolgauge_shim.py"
REQUIRED = "_initialize_mcp_server"


def install_fastmcp_alias() -> None:
    """Make ``from mcp.server.fastmcp import FastMCP`` resolve to mcp 2's ``MCPServer``."""
    try:
        import mcp.server.fastmcp  # noqa: F401
    except ModuleNotFoundError:
        try:
            from mcp.server import MCPServer
        except ImportError:  # no mcp at all: the server's own import fails and says so
            return
        alias = types.ModuleType("mcp.server.fastmcp")
        alias.FastMCP = MCPServer  # type: ignore[attr-defined]
        sys.modules["mcp.server.fastmcp"] = alias
    except Exception:  # an unexpected mcp layout: leave imports to fail on their own
        return


def find_server_class(module: types.ModuleType) -> type[Any]:
    """The class to build, by the official launcher's preference order.

    First a class with ``_initialize_mcp_server``, ``load_state`` and ``get_state``; then any class
    with ``_initialize_mcp_server``. Classes defined in the module itself come before imported ones.

    Raises:
        LookupError: no class of that shape.
    """
    classes = [obj for _, obj in inspect.getmembers(module, inspect.isclass)]
    own = [c for c in classes if c.__module__ == module.__name__] + [
        c for c in classes if c.__module__ != module.__name__
    ]
    with_init = [c for c in own if callable(getattr(c, REQUIRED, None))]
    full = [c for c in with_init if all(callable(getattr(c, m, None)) for m in ("load_state", "get_state"))]
    if full:
        return full[0]
    if with_init:
        return with_init[0]
    raise LookupError(f"no class with {REQUIRED}() in {module.__name__}")


def build_server(cls: type[Any]) -> Any:
    """Instantiate the class as the official launcher does (``cls(spec)`` with an empty spec).

    A class whose constructor takes no argument is built with ``cls()``.

    Raises:
        RuntimeError: ``_initialize_mcp_server()`` returned None or an object without ``run()``.
    """
    try:
        app = cls({})
    except TypeError:
        app = cls()
    server = getattr(app, REQUIRED)()
    if server is None:
        raise RuntimeError(f"{cls.__name__}.{REQUIRED}() returned None")
    if not callable(getattr(server, "run", None)):
        raise RuntimeError(f"{cls.__name__}.{REQUIRED}() returned {type(server).__name__}, which has no run()")
    return server


def load_module(path: str) -> types.ModuleType:
    """Import the file at ``path`` as a module (its folder first on ``sys.path``)."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = os.path.splitext(os.path.basename(path))[0] or "server"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_class_shape(path: str) -> None:
    """Import the module, build its server object and run it on stdio."""
    # stdout carries JSON-RPC; a print while importing or building would corrupt the first message.
    with contextlib.redirect_stdout(sys.stderr):
        module = load_module(path)
        server = build_server(find_server_class(module))
    server.run()


def run_script(path: str) -> None:
    """Run an ordinary stdio server script as ``__main__``."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    """Entry point inside the sandbox."""
    parser = argparse.ArgumentParser(description="toolgauge MCP server shim")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--script", help="an ordinary stdio MCP server script")
    group.add_argument("--class", dest="class_path", help="a module in the official generator's class shape")
    args = parser.parse_args(argv)
    install_fastmcp_alias()
    if args.class_path:
        run_class_shape(args.class_path)
    else:
        run_script(args.script)
    return 0


if __name__ == "__main__":
    sys.exit(main())
