"""WildToolBench: multi-task sessions through the official online loop, scored as the official ``eval_runner``.

One sample is one session (up to four tasks, each a DAG of gold calls); every task is run on the gold
history of the earlier ones and matched step by step (``graph``), logged in the official result-file shape
(``log``), and scored offline by the re-implemented ``params_checker`` / ``calc_accuracy`` (``args``,
``metrics``). ``io`` reads and writes step JSONL and the official result file; ``docs/metrics/wildtoolbench.md``
gives every formula and the ``reference`` / ``strict`` differences.

``eval wildtoolbench`` and ``score wildtoolbench`` are generated from :mod:`.options`; ``build`` is imported when
first used (``lazy``).
"""

from toolgauge.benchmark import BenchmarkSpec, OutputFiles, ScoreSpec, lazy
from toolgauge.benchmarks.wildtoolbench.options import WildLogFiles, WildOptions, WildScoreOptions
from toolgauge.benchmarks.wildtoolbench.report import render_wild

SPEC = BenchmarkSpec(
    name="wildtoolbench",
    title="WildToolBench: multi-task sessions through the official online loop (built-in sample sessions by default)",
    render=render_wild,
    headline=("task_accuracy", "session_accuracy", "optimal_path_rate", "accomplish_progress_rate"),
    variants=("reference", "strict"),
    unit="sessions",
    options=WildOptions,
    score=ScoreSpec(WildScoreOptions, lazy("toolgauge.benchmarks.wildtoolbench.build", "score_run")),
    migrate=lazy("toolgauge.benchmarks.wildtoolbench.build", "migrate_wild_config"),
    outputs=OutputFiles(WildLogFiles, lazy("toolgauge.benchmarks.wildtoolbench.build", "log_files")),
    run_panels=lazy("toolgauge.benchmarks.wildtoolbench.views", "run_panels"),
    sample_panels=lazy("toolgauge.benchmarks.wildtoolbench.views", "sample_panels"),
    paper=lazy("toolgauge.benchmarks.wildtoolbench.paper", "paper_blocks"),
)
