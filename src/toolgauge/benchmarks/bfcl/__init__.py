"""BFCL (Berkeley Function Calling Leaderboard) v4, single-turn AST categories, with BFCL's checker rules.

``eval bfcl`` asks a model as BFCL's function-calling (``native``) or prompting handlers do;
``score bfcl`` rescores BFCL's own result files. The checker agrees with bfcl-eval 2026.3.23's
on every verdict and error type (docs/metrics/bfcl.md, docs/benchmarks/bfcl-agreement.md).

``eval bfcl`` and ``score bfcl`` are generated from :mod:`.options`; ``build`` is imported when first used
(``lazy``): importing the loader or the checker imports no command line, engine or store.
"""

from toolgauge.benchmark import BenchmarkSpec, Exporter, ScoreSpec, lazy
from toolgauge.benchmarks.bfcl.options import BfclOptions, BfclScoreOptions
from toolgauge.benchmarks.bfcl.report import render_bfcl

SPEC = BenchmarkSpec(
    name="bfcl",
    title="BFCL (Berkeley Function Calling Leaderboard) AST categories, with BFCL's checker rules",
    render=render_bfcl,
    headline=("accuracy",),
    options=BfclOptions,
    score=ScoreSpec(BfclScoreOptions, lazy("toolgauge.benchmarks.bfcl.build", "score_run")),
    migrate=lazy("toolgauge.benchmarks.bfcl.build", "migrate_bfcl_config"),
    restore=lazy("toolgauge.benchmarks.bfcl.build", "restore"),
    run_panels=lazy("toolgauge.benchmarks.bfcl.views", "run_panels"),
    exports={
        "bfcl": Exporter(
            writes="BFCL's score files and leaderboard CSVs, as bfcl evaluate writes them",
            runs="BFCL",
            write=lazy("toolgauge.benchmarks.bfcl.export", "write_bfcl_scores"),
        )
    },
)
