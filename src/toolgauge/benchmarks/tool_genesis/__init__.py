"""Tool-Genesis: a model builds an MCP server from a requirement text; the server is scored on L1–L4.

``genesis generate`` writes the servers (direct or code-agent), ``genesis evaluate`` scores a registry of
them, ``eval tool-genesis`` does both in one run. Levels: L1 compliance and server execution, L2
Schema-F1, L3 unit tests, L4 task success (docs/metrics/tool-genesis.md). Generated code runs only in
the sandbox.

``eval tool-genesis`` is generated from :mod:`.options`; the ``genesis`` commands, ``build`` and ``restore`` are
imported when first used (``lazy``).
"""

from toolgauge.benchmark import BenchmarkSpec, lazy
from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
from toolgauge.benchmarks.tool_genesis.report import render_genesis

SPEC = BenchmarkSpec(
    name="tool-genesis",
    title="Tool-Genesis: MCP servers built from requirements, scored on L1–L4",
    run_names=("tool-genesis", "tool-genesis-generate"),
    add_commands=lazy("toolgauge.benchmarks.tool_genesis.cli", "add_commands"),
    render=render_genesis,
    roles=lazy("toolgauge.benchmarks.tool_genesis.build", "role_specs"),
    headline=("compliance", "server_execution", "schema_f1", "ut_soft", "ut_hard", "sr_soft"),
    extras=("embeddings",),
    variants=("reference", "strict"),
    options=GenesisOptions,
    migrate=lazy("toolgauge.benchmarks.tool_genesis.build", "migrate_genesis_config"),
    restore=lazy("toolgauge.benchmarks.tool_genesis.build", "restore"),
    after_run=lazy("toolgauge.benchmarks.tool_genesis.build", "generated_servers"),
    # Servers are slow samples: two at once, and a generation request may take minutes.
    engine_defaults={"concurrency": 2, "timeout": 600.0},
    run_panels=lazy("toolgauge.benchmarks.tool_genesis.views", "run_panels"),
    sample_panels=lazy("toolgauge.benchmarks.tool_genesis.views", "sample_panels"),
    unit="servers",
    paper=lazy("toolgauge.benchmarks.tool_genesis.paper", "paper_blocks"),
)
