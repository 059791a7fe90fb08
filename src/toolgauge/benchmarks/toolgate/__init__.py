"""ToolGate (arXiv 2609.02067): build tool-dependent science items through executable acceptance gates.

A generator proposes a candidate (question, four options, proposed answer, solution script); three gates
decide, cheapest first: local verification (:mod:`.verify`), no-tool screens (:mod:`.screens`, graded by
:mod:`.answers`) and a tool-enabled solve (:mod:`.solve`). This package holds the formats (:mod:`.records`,
:mod:`.loader`), the pure answer rules (:mod:`.answers`), the gates, the pool benchmark behind ``eval toolgate``
and the ``gate`` commands (:mod:`.protocol`; its options :mod:`.options`, made by :mod:`.build`; the commands
:mod:`.cli`), the audits and funnel (:mod:`.audit`, :mod:`.report`) and the domains (:mod:`.domains`, one folder
each). See docs/toolgate.md.
"""

from toolgauge.benchmark import BenchmarkSpec, lazy
from toolgauge.benchmarks.toolgate.options import ToolgateOptions
from toolgauge.benchmarks.toolgate.report import render_toolgate

SPEC = BenchmarkSpec(
    # Tries of one sample would share candidate ids (named by round): no --epochs yet.
    repeatable=False,
    name="toolgate",
    title="ToolGate: tool-dependent science items through executable acceptance gates (gate commands)",
    run_names=("toolgate", "toolgate-run"),
    # eval toolgate is generated from ToolgateOptions; the gate commands are ToolGate's own.
    add_commands=lazy("toolgauge.benchmarks.toolgate.cli", "add_commands"),
    render=render_toolgate,
    headline=("acceptance_rate",),
    roles=lazy("toolgauge.benchmarks.toolgate.build", "roles"),
    options=ToolgateOptions,
    client=lazy("toolgauge.benchmarks.toolgate.build", "run_model"),
    migrate=lazy("toolgauge.benchmarks.toolgate.build", "migrate_toolgate_config"),
    restore=lazy("toolgauge.benchmarks.toolgate.build", "restore"),
    run_panels=lazy("toolgauge.benchmarks.toolgate.views", "run_panels"),
    paper=lazy("toolgauge.benchmarks.toolgate.paper", "paper_blocks"),
    extras=("fem",),
    unit="candidates",
)
