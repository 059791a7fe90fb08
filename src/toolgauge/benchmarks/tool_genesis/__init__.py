"""Tool-Genesis: a model builds an MCP server from a requirement text; the server is scored on L1–L4.

``genesis generate`` writes the servers (direct or code-agent), ``genesis evaluate`` scores a registry of
them, ``eval tool-genesis`` does both in one run. Levels: L1 compliance and server execution, L2
Schema-F1, L3 unit tests, L4 task success (docs/metrics/tool-genesis.md). Generated code runs only in
the sandbox.

The CLI module is imported only when its functions are called: importing it imports ``toolgauge.cli``,
which reads the registry, which must find this package's ``SPEC`` complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolgauge.benchmark import BenchmarkSpec, CommandGroups
from toolgauge.benchmarks.tool_genesis.report import render_genesis

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark


def _add_commands(groups: CommandGroups) -> None:
    from toolgauge.benchmarks.tool_genesis.cli import add_commands

    add_commands(groups)


def _build(**options: Any) -> GenesisBenchmark:
    from toolgauge.benchmarks.tool_genesis.cli import build

    return build(**options)


def _rescore(config: Mapping[str, Any], variant: str | None) -> GenesisBenchmark:
    from toolgauge.benchmarks.tool_genesis.cli import rescore

    return rescore(config, variant)


SPEC = BenchmarkSpec(
    name="tool-genesis",
    title="Tool-Genesis: MCP servers built from requirements, scored on L1–L4",
    run_names=("tool-genesis", "tool-genesis-generate"),
    add_commands=_add_commands,
    build=_build,
    render=render_genesis,
    rescore=_rescore,
    headline=("compliance", "server_execution", "schema_f1", "ut_soft", "ut_hard", "sr_soft"),
    extras=("embeddings",),
    variants=("reference", "strict"),
    unit="servers",
)
