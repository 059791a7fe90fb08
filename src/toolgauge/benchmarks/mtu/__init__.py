"""MTU-Bench (MTU-Bench-Team/MTU-Bench): single- and multi-turn tool use, scored as the published scorer does.

Five eval splits (S-S, S-M, M-S, M-M, OOD) read from MTU-Bench's ``<split>_eval.jsonl`` files,
asked with the ReAct text prompt (as the reference) or as native tool calls, and scored with the
reference metrics or the ``strict`` variant (``docs/metrics/mtu-bench.md``). ``score mtu-bench``
rescores recorded replies such as the published GPT-4 responses.
"""

from toolgauge.benchmark import BenchmarkSpec, ScoreSpec, lazy
from toolgauge.benchmarks.mtu.options import MtuOptions, MtuScoreOptions
from toolgauge.report.call_metrics import render_call_metrics

SPEC = BenchmarkSpec(
    name="mtu-bench",
    title="MTU-Bench: single- and multi-turn, single- and multi-tool calls (S-S, S-M, M-S, M-M, OOD)",
    render=render_call_metrics,
    headline=(
        "tool_accuracy",
        "parameter_accuracy",
        "tool_number_accuracy",
        "tool_order_accuracy",
        "success_rate",
        "turn_success_rate",
    ),
    variants=("reference", "strict"),
    options=MtuOptions,
    score=ScoreSpec(MtuScoreOptions, lazy("toolgauge.benchmarks.mtu.build", "score_run")),
    client=lazy("toolgauge.benchmarks.mtu.build", "model_for"),
    migrate=lazy("toolgauge.benchmarks.mtu.build", "migrate_mtu_config"),
    run_panels=lazy("toolgauge.benchmarks.mtu.views", "run_panels"),
    sample_panels=lazy("toolgauge.benchmarks.mtu.views", "sample_panels"),
    paper=lazy("toolgauge.benchmarks.mtu.paper", "paper_blocks"),
)
