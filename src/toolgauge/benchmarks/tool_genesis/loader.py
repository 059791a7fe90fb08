"""Tool-Genesis files: the data file (``tool_genesis_v3.json``), registries and schema files.

Every problem is a one-line ``DataError``. A registry is the official layout
``{slug: {json_schema_path, env_code_path, server_id, server_name}}``; relative paths are resolved
against the registry file's folder. toolgauge adds an optional ``error`` key for a server whose
generation failed (its files need not exist; the evaluation scores it as an L1 failure).

The registry's paths are confined to its folder (the prediction folder): an absolute path, a ``..``
component, a symbolic link leading out of the folder or a hard-linked file is refused. The refusal is
recorded on that server (``error`` starting with ``unsafe path:``, an L1 failure), so a registry written
by an untrusted generator cannot make the harness read host files such as ``/etc/shadow``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.errors import DataError
from toolgauge.jsonl import JsonProblem, parse_json, read_text

REGISTRY_NAME = "registry.json"
UNSAFE_PATH = "unsafe path: "


def confined_path(base: Path, value: str) -> tuple[Path, str | None]:
    """Resolve a registry path against the prediction folder ``base``; return it and why it is refused.

    Refused: an absolute path, any ``..`` component, a path whose resolution (through symbolic links)
    leaves ``base``, and an existing file with more than one hard link. Nothing is read.
    """
    if os.path.isabs(value) or value.startswith("~"):
        return base / value.lstrip("/~"), "an absolute path (paths must be relative to the registry's folder)"
    if ".." in Path(value).parts or ".." in value.replace("\\", "/").split("/"):
        return base / Path(value).name, "a '..' component (paths must stay inside the registry's folder)"
    candidate = base / value
    try:
        resolved = candidate.resolve()
        inside = resolved.is_relative_to(base.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return candidate, "cannot be resolved (a symbolic link loop?)"
    if not inside:
        return candidate, "leads out of the registry's folder through a symbolic link"
    try:
        if resolved.is_file() and resolved.stat().st_nlink > 1:
            return candidate, "a hard link (it may be a file from elsewhere on the host)"
    except OSError:
        pass
    return candidate, None


def _parse_json(path: Path, text: str) -> Any:
    try:
        return parse_json(text)
    except JsonProblem as problem:
        raise DataError(str(path), problem.message, line=problem.line) from None


def _element_lines(text: str) -> list[int]:
    """Line number at which each element of a top-level JSON array starts (for error messages)."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    pos = text.index("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return lines
        lines.append(text.count("\n", 0, pos) + 1)
        _, pos = decoder.raw_decode(text, pos)


def _field_path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and ("[" in part or part in ("str", "int", "float", "bool", "none")):
            break  # pydantic names the union member it tried; the field path ends before it
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_genesis(path: Path) -> list[GenesisServer]:
    """Read a Tool-Genesis data file (a JSON array of server objects).

    Raises:
        DataError: unreadable file, malformed JSON, a malformed server entry (with its line and the
            failing field), a unit test naming another tool than its key, or a duplicate slug.
    """
    path = Path(path)
    text = read_text(path)
    data = _parse_json(path, text)
    if not isinstance(data, list):
        raise DataError(str(path), f"expected a JSON array of servers, got {type(data).__name__}")
    if not data:
        raise DataError(str(path), "the file holds no servers")
    servers: list[GenesisServer] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data):

        def fail(message: str, field: str | None = None, index: int = index) -> DataError:
            line = _element_lines(text)[index]
            return DataError(str(path), f"server #{index + 1}: {message}", line=line, field=field)

        if not isinstance(raw, dict):
            raise fail(f"expected an object, got {type(raw).__name__}")
        try:
            server = GenesisServer.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise fail(first["msg"], _field_path(first["loc"])) from None
        for number, tool in enumerate(server.tool_definitions):
            if not isinstance(tool.get("name"), str) or not tool["name"]:
                raise fail("a reference tool needs a non-empty string name", f"tool_definitions[{number}].name")
            schema = tool.get("input_schema", tool.get("inputSchema", {}))
            if not isinstance(schema, dict):
                raise fail("the input schema must be an object", f"tool_definitions[{number}].input_schema")
        for tool_name, cases in server.unit_test.items():
            for number, case in enumerate(cases):
                if case.function_name != tool_name:
                    raise fail(
                        f"a test of {tool_name!r} calls {case.function_name!r}",
                        f"unit_test.{tool_name}[{number}].function_name",
                    )
        if server.server_slug in seen:
            raise fail(f"duplicate server_slug {server.server_slug!r} (also server #{seen[server.server_slug] + 1})")
        seen[server.server_slug] = index
        servers.append(server)
    return servers


def registry_file(path: Path) -> Path:
    """The registry file for ``path``: the file itself, or ``registry.json`` inside a folder."""
    path = Path(path)
    return path / REGISTRY_NAME if path.is_dir() else path


def load_registry(path: Path, *, check_schemas: bool = True) -> dict[str, GeneratedServer]:
    """Read a registry (a ``registry.json`` file, or a folder holding one) into slug -> server.

    A user-supplied registry is input like any other: an entry without paths, a path to a missing
    file, or (with ``check_schemas``) a schema file that is not a JSON object is a ``DataError``.
    Entries carrying ``error`` (a generation failure recorded by toolgauge) are exempt. A path that
    leaves the registry's folder is refused: the entry gets ``error`` = ``unsafe path: ...`` and its
    files are never read (see :func:`confined_path`).

    Raises:
        DataError: as above, naming the registry (or schema) file and the slug.
    """
    reg = registry_file(path)
    data = _parse_json(reg, read_text(reg))
    if not isinstance(data, dict):
        raise DataError(str(reg), f"expected an object mapping slug -> entry, got {type(data).__name__}")
    base = reg.parent
    servers: dict[str, GeneratedServer] = {}
    for slug, entry in data.items():
        if not isinstance(entry, dict):
            raise DataError(str(reg), f"expected an object, got {type(entry).__name__}", field=slug)
        error = entry.get("error")
        if error is not None and not isinstance(error, str):
            raise DataError(str(reg), "error must be a string", field=f"{slug}.error")
        paths: dict[str, Path] = {}
        for key in ("json_schema_path", "env_code_path"):
            value = entry.get(key)
            if not isinstance(value, str) or not value:
                if error is not None:
                    paths[key] = base / slug / ("missing-" + key)
                    continue
                raise DataError(str(reg), "a path (string) is required", field=f"{slug}.{key}")
            resolved, unsafe = confined_path(base, value)
            if unsafe is not None:
                error = f"{UNSAFE_PATH}{key} {value!r}: {unsafe}"
                paths = {k: base / slug / ("refused-" + k) for k in ("json_schema_path", "env_code_path")}
                break
            if error is None and not resolved.is_file():
                raise DataError(str(reg), f"file not found: {resolved}", field=f"{slug}.{key}")
            paths[key] = resolved
        server = GeneratedServer(
            slug=str(slug),
            schema_path=paths["json_schema_path"],
            code_path=paths["env_code_path"],
            error=error,
            server_id=entry.get("server_id") if isinstance(entry.get("server_id"), (str, int)) else None,
            server_name=entry.get("server_name") if isinstance(entry.get("server_name"), str) else None,
        )
        if check_schemas and error is None:
            read_schema_file(server.schema_path)
        servers[server.slug] = server
    return servers


def read_schema_file(path: Path) -> dict[str, Any]:
    """Read a schema file: a JSON object (normally ``{"tools": [...]}``).

    Only its JSON-ness is checked here; whether the payload is a compliant tool list is a scored L1
    outcome, not bad input.

    Raises:
        DataError: unreadable file, not JSON, or JSON that is not an object.
    """
    path = Path(path)
    data = _parse_json(path, read_text(path))
    if not isinstance(data, dict):
        raise DataError(str(path), f"a schema file must hold a JSON object, got {type(data).__name__}")
    return data


def write_registry(path: Path, servers: Iterable[GeneratedServer]) -> Path:
    """Write ``servers`` as a registry in the official layout (paths relative to the registry folder).

    ``path`` is the registry file or a folder (then ``registry.json`` inside it). The file is written
    atomically. Returns the registry file path.
    """
    reg = Path(path)
    if reg.suffix != ".json":
        reg = reg / REGISTRY_NAME
    reg.parent.mkdir(parents=True, exist_ok=True)
    base = reg.parent.resolve()

    def rel(p: Path) -> str:
        try:
            return Path(os.path.relpath(Path(p).resolve(), base)).as_posix()
        except ValueError:  # another drive (Windows)
            return str(Path(p).resolve())

    payload: dict[str, dict[str, Any]] = {}
    for server in servers:
        entry: dict[str, Any] = {
            "json_schema_path": rel(server.schema_path),
            "env_code_path": rel(server.code_path),
            "server_id": server.server_id,
            "server_name": server.server_name or server.slug,
        }
        if server.error is not None:
            entry["error"] = server.error
        payload[server.slug] = entry
    tmp = reg.with_name(reg.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(reg)
    return reg
