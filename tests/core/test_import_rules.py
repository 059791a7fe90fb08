"""Import rules of the layout (docs/architecture.md), checked on the source with ``ast``:

(a) a benchmark's metrics (``benchmarks/*/metrics.py``, ``benchmarks/*/metrics/**``, and WildToolBench's
    ``graph.py`` and ``args.py``) import no engine, store, sandbox, tools (the MCP edge), model or driver code,
    directly or through other toolgauge modules;
(b) the core (everything but ``toolgauge.benchmarks.*``, ``toolgauge.cli.*`` and ``toolgauge.api``) imports no
    benchmark;
(c) no import cycles among modules;
(d) a benchmark reaches the store through ``toolgauge.store`` alone (``Store``, ``open_store``; its samples' named
    steps are the engine's ``EpisodeContext.checkpoint``): never the store's modules (its tables in
    ``toolgauge.store.schema``) nor SQLAlchemy.

Every import counts for (a), (b) and (d), including those inside functions and under ``TYPE_CHECKING``. For (c) every
import that runs counts: at load and inside functions (an import moved into a function hides a cycle, it does
not remove it); not those under ``TYPE_CHECKING`` (they never run), nor those in a package's module-level
``__getattr__`` (PEP 562: the package's public names, loaded when first read, such as ``toolgauge.evaluate``;
the package is the top of the tree, and a module reading ``toolgauge.__version__`` does not depend on the API).
``from pkg import name``
is an import of the module ``pkg.name`` when there is one, else of ``pkg`` (as import-linter does); importing
a submodule is not counted as importing its parent package. Each checker is also run on a planted violation,
so a broken checker cannot pass silently.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.paths import SRC

METRICS_FORBIDDEN = (
    "toolgauge.engine",
    "toolgauge.store",
    "toolgauge.sandbox",
    "toolgauge.tools",
    "toolgauge.models",
    "toolgauge.driver",
    # The same layers' third-party libraries: MCP servers, model APIs, the local model, the store's database.
    "mcp",
    "openai",
    "httpx",
    "llama_cpp",
    "sqlalchemy",
    "psycopg",
)
# Modules of WildToolBench that are part of its pure scoring besides metrics.py.
METRICS_EXTRA = ("toolgauge.benchmarks.wildtoolbench.graph", "toolgauge.benchmarks.wildtoolbench.args")
# The shells over the core: the CLI, the Python API and sweeps (which run cells through the driver).
NOT_CORE = ("toolgauge.benchmarks", "toolgauge.cli", "toolgauge.api", "toolgauge.sweep")


@dataclass(frozen=True)
class Import:
    """One import statement's target as seen from the importing module."""

    target: str
    line: int
    at_load: bool  # runs when the module is loaded (not in a function, not under TYPE_CHECKING)
    runs: bool = True  # counted for cycles: not under TYPE_CHECKING, not in a package's lazy ``__getattr__``


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, package: str = "toolgauge") -> dict[str, Path]:
    """Every module of ``package`` under ``root`` (a ``src`` folder), by dotted name."""
    return {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(
    node: ast.AST, at_load: bool, runs: bool = True, top: bool = True
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Yield every import statement under ``node`` with whether it runs at module load, and whether it runs at all.

    ``top``: ``node`` is the module itself (where a ``def __getattr__`` is the package's lazy public face).
    """
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, at_load, runs
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            facade = top and isinstance(child, ast.FunctionDef) and child.name == "__getattr__"
            yield from _walk(child, False, runs and not facade, False)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), False, False, top)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), at_load, runs, top)
        else:
            yield from _walk(child, at_load, runs, False)


def imports_of(name: str, path: Path, modules: Iterable[str]) -> list[Import]:
    """What module ``name`` (at ``path``) imports: toolgauge modules, and other distributions by top-level name."""
    known = set(modules)
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, at_load, runs in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), True):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        for target in targets:
            if target == "toolgauge" or target.startswith("toolgauge."):
                found.append(Import(_known_prefix(target, known), node.lineno, at_load, runs))
            else:  # another distribution: its top-level name is enough
                found.append(Import(target.split(".")[0], node.lineno, at_load, runs))
    return found


def _known_prefix(target: str, known: set[str]) -> str:
    """The longest prefix of ``target`` that is a module (``import a.b.c`` of a missing ``c`` imports ``a.b``)."""
    parts = target.split(".")
    while len(parts) > 1 and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, list[Import]]:
    """Module name -> its imports, for every module under ``root``."""
    modules = find_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def is_metrics_module(module: str) -> bool:
    parts = module.split(".")
    in_benchmark = len(parts) >= 4 and parts[:2] == ["toolgauge", "benchmarks"]
    return (in_benchmark and parts[3] == "metrics") or module in METRICS_EXTRA


def is_core(module: str) -> bool:
    return not any(_within(module, p) for p in NOT_CORE)


def _chain(graph: dict[str, list[Import]], start: str, bad: tuple[str, ...]) -> list[str] | None:
    """The shortest import chain from ``start`` to a module within ``bad``, or None."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for imp in graph.get(current, []):
            if imp.target in came_from:
                continue
            came_from[imp.target] = current
            if any(_within(imp.target, b) for b in bad):
                chain = [imp.target]
                step: str | None = current
                while step is not None:
                    chain.append(step)
                    step = came_from[step]
                return chain[::-1]
            queue.append(imp.target)
    return None


def metrics_violations(graph: dict[str, list[Import]]) -> list[str]:
    """Rule (a): each metrics module that reaches forbidden code, with the chain that does."""
    out = []
    for module in sorted(m for m in graph if is_metrics_module(m)):
        chain = _chain(graph, module, METRICS_FORBIDDEN)
        if chain is not None:
            first = next(i for i in graph[module] if i.target == chain[1])
            out.append(f"{module} (line {first.line}): {' -> '.join(chain)}")
    return out


def core_violations(graph: dict[str, list[Import]]) -> list[str]:
    """Rule (b): each import of a benchmark module by a core module."""
    return [
        f"{module} (line {imp.line}) imports {imp.target}"
        for module in sorted(m for m in graph if is_core(m))
        for imp in graph[module]
        if _within(imp.target, "toolgauge.benchmarks")
    ]


def store_violations(graph: dict[str, list[Import]]) -> list[str]:
    """Rule (d): each import of the store's inside (a module under ``toolgauge.store``, SQLAlchemy) by a benchmark."""
    found = [
        f"{module} (line {imp.line}) imports {imp.target}"
        for module in sorted(m for m in graph if _within(m, "toolgauge.benchmarks"))
        for imp in graph[module]
        if imp.target.startswith("toolgauge.store.") or _within(imp.target, "sqlalchemy")
    ]
    return list(dict.fromkeys(found))  # one line per statement, not per name it imports


def import_cycles(graph: dict[str, list[Import]]) -> list[str]:
    """Rule (c): one shortest cycle per strongly connected group of modules that import each other (at load or in
    a function)."""
    edges = {m: sorted({i.target for i in imps if i.runs and i.target in graph}) for m, imps in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan; the module graph is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    found = [f"{v} -> {v}" for v in sorted(edges) if v in edges[v]]  # a module that imports itself
    for group in groups:
        cycle = " -> ".join(_shortest_cycle(edges, group))
        others = sorted(set(group) - set(cycle.split(" -> ")))
        found.append(cycle + (f" (and through {', '.join(others)})" if others else ""))
    return sorted(found)


def _shortest_cycle(edges: dict[str, list[str]], group: list[str]) -> list[str]:
    """The shortest cycle of two or more modules through the group's first module, inside the group."""
    start, members = group[0], set(group) - {group[0]}
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for nxt in edges[current]:
            if nxt == start and current != start:
                path = [current]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*path[::-1], start]
            if nxt in members and nxt not in came_from:
                came_from[nxt] = current
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start} in {group}")


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Import]]:
    return import_graph(SRC)


def test_the_checker_sees_the_whole_package(graph: dict[str, list[Import]]):
    assert {"toolgauge", "toolgauge.engine.runner", "toolgauge.cli.common", "toolgauge.benchmarks.registry"} <= set(
        graph
    )
    assert any(is_metrics_module(m) for m in graph)
    imported = {i.target for imps in graph.values() for i in imps}
    assert {"toolgauge.benchmarks.registry", "toolgauge.engine", "toolgauge.results"} <= imported


def test_metrics_import_no_engine_store_sandbox_tools_models_or_driver(graph: dict[str, list[Import]]):
    found = metrics_violations(graph)
    assert not found, "metrics must stay pure:\n" + "\n".join(found)


def test_the_core_imports_no_benchmark(graph: dict[str, list[Import]]):
    found = core_violations(graph)
    assert not found, "the core reaches benchmarks only through the registry:\n" + "\n".join(found)


def test_benchmarks_use_the_store_through_its_package_alone(graph: dict[str, list[Import]]):
    found = store_violations(graph)
    assert not found, "benchmarks keep out of the store's tables:\n" + "\n".join(found)


def test_no_import_cycles(graph: dict[str, list[Import]]):
    found = import_cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(found)


# The checkers on a planted tree: each must flag its violation (and nothing that is allowed).


def plant(root: Path, files: dict[str, str]) -> dict[str, list[Import]]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(root)


PLANTED_BASE = {
    "toolgauge/__init__.py": "",
    "toolgauge/records.py": "import json\nfrom pydantic import BaseModel\n",
    "toolgauge/engine/__init__.py": "",
    "toolgauge/engine/runner.py": "",
    "toolgauge/store/__init__.py": "from toolgauge.store.store import Store\n",
    "toolgauge/store/store.py": "",
    "toolgauge/cli/__init__.py": "from toolgauge.benchmarks import registry\n",
    "toolgauge/benchmarks/__init__.py": "",
    "toolgauge/benchmarks/registry.py": "import importlib\n",
    "toolgauge/benchmarks/demo/__init__.py": "from . import protocol\n",
    "toolgauge/benchmarks/demo/protocol.py": "from toolgauge.engine import runner\nfrom .metrics import score\n",
    "toolgauge/benchmarks/demo/records.py": "from toolgauge import records\n",
    "toolgauge/benchmarks/demo/metrics/__init__.py": "from .core import score\n",
    "toolgauge/benchmarks/demo/metrics/core.py": "from ..records import Thing\n",
}


def test_a_clean_planted_tree_has_no_violations(tmp_path: Path):
    graph = plant(tmp_path, PLANTED_BASE)
    assert graph["toolgauge.benchmarks.demo.metrics.core"] == [Import("toolgauge.benchmarks.demo.records", 1, True)]
    assert graph["toolgauge.records"] == [Import("json", 1, True), Import("pydantic", 2, True)]
    assert graph["toolgauge.benchmarks.demo"] == [Import("toolgauge.benchmarks.demo.protocol", 1, True)]
    assert graph["toolgauge.store"] == [Import("toolgauge.store.store", 1, True)]
    assert metrics_violations(graph) == []
    assert core_violations(graph) == []
    assert import_cycles(graph) == []
    assert store_violations(graph) == []


def test_metrics_checker_flags_a_forbidden_import_in_a_function_and_through_another_module(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "toolgauge/benchmarks/demo/metrics/core.py": "def f():\n    from toolgauge.store import Store\n",
            "toolgauge/benchmarks/demo/records.py": "import toolgauge.engine.runner\n",
            "toolgauge/benchmarks/demo/metrics/__init__.py": "from toolgauge.benchmarks.demo import records\n",
        },
    )
    assert metrics_violations(graph) == [
        "toolgauge.benchmarks.demo.metrics (line 1): toolgauge.benchmarks.demo.metrics -> "
        "toolgauge.benchmarks.demo.records -> toolgauge.engine.runner",
        "toolgauge.benchmarks.demo.metrics.core (line 2): toolgauge.benchmarks.demo.metrics.core -> toolgauge.store",
    ]


def test_metrics_checker_covers_wildtoolbench_graph_and_args(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "toolgauge/benchmarks/wildtoolbench/__init__.py": "",
            "toolgauge/benchmarks/wildtoolbench/graph.py": "from toolgauge.models.base import ModelClient\n",
            "toolgauge/benchmarks/wildtoolbench/args.py": "from toolgauge import driver\n",
            "toolgauge/benchmarks/wildtoolbench/metrics.py": "import json\nfrom mcp.client import stdio\n",
            "toolgauge/benchmarks/wildtoolbench/protocol.py": "from toolgauge import driver\n",
            "toolgauge/models/__init__.py": "",
            "toolgauge/models/base.py": "",
            "toolgauge/driver.py": "",
        },
    )
    assert [v.split(" ")[0] for v in metrics_violations(graph)] == [
        "toolgauge.benchmarks.wildtoolbench.args",
        "toolgauge.benchmarks.wildtoolbench.graph",
        "toolgauge.benchmarks.wildtoolbench.metrics",
    ]


def test_core_checker_flags_a_benchmark_import_even_under_type_checking(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "toolgauge/store/store.py": (
                "import typing\nif typing.TYPE_CHECKING:\n    from toolgauge import benchmarks\n"
            ),
            "toolgauge/engine/runner.py": "def f():\n    import toolgauge.benchmarks.registry\n",
            "toolgauge/api.py": "from toolgauge.benchmarks import registry\n",  # the API may
        },
    )
    assert core_violations(graph) == [
        "toolgauge.engine.runner (line 2) imports toolgauge.benchmarks.registry",
        "toolgauge.store.store (line 3) imports toolgauge.benchmarks",
    ]


def test_cycle_checker_reports_the_cycles_path_and_counts_imports_in_functions(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "toolgauge/benchmarks/demo/metrics/core.py": "from toolgauge.benchmarks.demo import protocol\n",
            "toolgauge/engine/runner.py": "def f():\n    from toolgauge.store import store\n",
            "toolgauge/store/store.py": "from toolgauge.engine import runner\n",
            "toolgauge/records.py": "from . import records\n",
        },
    )
    assert import_cycles(graph) == [
        "toolgauge.benchmarks.demo.metrics -> toolgauge.benchmarks.demo.metrics.core -> "
        "toolgauge.benchmarks.demo.protocol -> toolgauge.benchmarks.demo.metrics",
        "toolgauge.engine.runner -> toolgauge.store.store -> toolgauge.engine.runner",
        "toolgauge.records -> toolgauge.records",
    ]


def test_cycle_checker_ignores_type_checking_imports_and_a_packages_lazy_getattr(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            # The package's public names, loaded when first read; a module reading its version does not depend on them.
            "toolgauge/__init__.py": "def __getattr__(name):\n    from toolgauge import api\n",
            "toolgauge/api.py": "from toolgauge.engine import runner\n",
            "toolgauge/engine/runner.py": (
                "import toolgauge\nfrom typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from toolgauge.store import store\n"
            ),
            "toolgauge/store/store.py": "from toolgauge.engine import runner\n",
        },
    )
    assert import_cycles(graph) == []
    # The same imports that run are a cycle: a __getattr__ that is not the module's own, an import in a function.
    graph = plant(
        tmp_path,
        {
            "toolgauge/__init__.py": (
                "class Lazy:\n    def __getattr__(self, name):\n        from toolgauge import api\n"
            ),
            "toolgauge/engine/runner.py": "import toolgauge\ndef f():\n    from toolgauge.store import store\n",
        },
    )
    assert import_cycles(graph) == [
        "toolgauge -> toolgauge.api -> toolgauge.engine.runner -> toolgauge (and through toolgauge.store.store)"
    ]


def test_store_checker_flags_a_benchmark_reaching_the_stores_tables_or_sqlalchemy(tmp_path: Path):
    graph = plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "toolgauge/store/schema.py": "",
            "toolgauge/benchmarks/demo/protocol.py": (
                "from toolgauge.store import Store\ndef f():\n    from toolgauge.store import schema\n"
            ),
            "toolgauge/benchmarks/demo/records.py": "import typing\nif typing.TYPE_CHECKING:\n    import sqlalchemy\n",
        },
    )
    assert store_violations(graph) == [
        "toolgauge.benchmarks.demo.protocol (line 3) imports toolgauge.store.schema",
        "toolgauge.benchmarks.demo.records (line 3) imports sqlalchemy",
    ]
