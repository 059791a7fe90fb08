"""No benchmark package imports another benchmark package (docs/architecture.md, docs/adding-a-benchmark.md).

What two benchmarks share lives in the core (the suite scores with ``toolgauge.metrics.calls``, which MTU-Bench
uses too), so each package stands alone and the smallest one (``suite``) is a complete example. Every import
counts: at module level, inside functions and under ``TYPE_CHECKING``, absolute and relative. The checker is
also run on a planted tree, so a broken checker cannot pass silently.
"""

from __future__ import annotations

import ast
from pathlib import Path

# The checkout's src folder, wherever in tests/ this file is.
SRC = next(p / "src" for p in Path(__file__).resolve().parents if (p / "src" / "toolgauge").is_dir())
BENCHMARKS = ("toolgauge", "benchmarks")


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted target) of every import statement in the file of ``module``, relative ones resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            # ``from toolgauge.benchmarks import mtu`` imports the package ``mtu``.
            found += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
    return found


def owner(dotted: str) -> str | None:
    """The benchmark package a dotted name is in (``toolgauge.benchmarks.mtu.metrics`` -> ``mtu``), or None."""
    parts = dotted.split(".")
    if len(parts) < 3 or tuple(parts[:2]) != BENCHMARKS or parts[2] == "registry":
        return None
    return parts[2]


def cross_imports(src: Path) -> list[str]:
    """Each import of one benchmark package's module by another's: ``file:line imports target``."""
    root = src.joinpath(*BENCHMARKS)
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mine = owner(module)
        if mine is None:
            continue
        for line, target in imported_modules(path, module):
            theirs = owner(target)
            if theirs is not None and theirs != mine and (root / theirs).is_dir():
                out.append(f"{path.relative_to(src)}:{line} imports {target}")
    return out


def test_the_checker_reads_every_benchmark_package():
    packages = {p.parent.name for p in SRC.joinpath(*BENCHMARKS).glob("*/__init__.py")}
    assert {"suite", "mtu", "bfcl", "wildtoolbench", "tool_genesis", "toolgate"} <= packages


def test_no_benchmark_package_imports_another():
    found = cross_imports(SRC)
    assert not found, "a benchmark package imports another one (share through the core):\n" + "\n".join(found)


def test_the_checker_flags_every_kind_of_cross_import(tmp_path: Path):
    files = {
        "toolgauge/benchmarks/__init__.py": "",
        "toolgauge/benchmarks/registry.py": "import toolgauge.benchmarks.alpha\n",  # the registry may
        "toolgauge/benchmarks/alpha/__init__.py": "from toolgauge.benchmarks.beta.metrics import score\n",
        "toolgauge/benchmarks/alpha/cli.py": "def f():\n    from ..beta import protocol\n",
        "toolgauge/benchmarks/alpha/report.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toolgauge.benchmarks import beta\n"
        ),
        "toolgauge/benchmarks/alpha/views.py": "from . import report\nfrom toolgauge.benchmarks.alpha import cli\n",
        "toolgauge/benchmarks/beta/__init__.py": "import toolgauge.benchmarks.alpha.cli as c\n",
        "toolgauge/benchmarks/beta/metrics.py": "from toolgauge.results import Metric\n",
        "toolgauge/benchmarks/beta/protocol.py": "from .metrics import score\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert cross_imports(tmp_path) == [
        "toolgauge/benchmarks/alpha/__init__.py:1 imports toolgauge.benchmarks.beta.metrics.score",
        "toolgauge/benchmarks/alpha/cli.py:2 imports toolgauge.benchmarks.beta.protocol",
        "toolgauge/benchmarks/alpha/report.py:3 imports toolgauge.benchmarks.beta",
        "toolgauge/benchmarks/beta/__init__.py:1 imports toolgauge.benchmarks.alpha.cli",
    ]
