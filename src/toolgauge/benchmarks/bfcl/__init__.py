"""BFCL (Berkeley Function Calling Leaderboard) v4, single-turn AST categories, with BFCL's checker rules.

``eval bfcl`` asks a model as BFCL's function-calling (``native``) or prompting handlers do;
``score bfcl`` rescores BFCL's own result files. The checker agrees with bfcl-eval 2026.3.23's
on every verdict and error type (docs/metrics/bfcl.md, docs/benchmarks/bfcl-agreement.md).

The commands, ``build`` and ``rescore`` are imported when first used (``lazy``): importing the loader
or the checker imports no command line, engine or store.
"""

from toolgauge.benchmark import BenchmarkSpec, Exporter, lazy
from toolgauge.benchmarks.bfcl.report import render_bfcl

SPEC = BenchmarkSpec(
    name="bfcl",
    title="BFCL (Berkeley Function Calling Leaderboard) AST categories, with BFCL's checker rules",
    run_names=("bfcl",),
    add_commands=lazy("toolgauge.benchmarks.bfcl.cli", "add_commands"),
    build=lazy("toolgauge.benchmarks.bfcl.cli", "build"),
    render=render_bfcl,
    rescore=lazy("toolgauge.benchmarks.bfcl.cli", "rescore"),
    headline=("accuracy",),
    variants=(),
    run_panels=lazy("toolgauge.benchmarks.bfcl.views", "run_panels"),
    exports={
        "bfcl": Exporter(
            writes="BFCL's score files and leaderboard CSVs, as bfcl evaluate writes them",
            runs="BFCL",
            write=lazy("toolgauge.benchmarks.bfcl.export", "write_bfcl_scores"),
        )
    },
)
