"""Each benchmark's overall headline metrics are weighted means of its per-unit scores (to 1e-12).

What the epochs aggregator, the bootstrap and ``toolgauge compare`` rely on: for a headline metric ``m``,
``sum(scores[m] * w) / sum(w)`` with ``w = weights.get(m, 1)`` over the units that have ``m`` is the value the
run reports, and each unit names the cluster it is resampled with. Checked on real data where the
benchmark's tests use it (MTU-Bench's eval set with GPT-4's replies, BFCL v4's AST categories), on the
WildToolBench fixture sessions with their scripted step file, on the built-in suite, and on Tool-Genesis
server results (the sandboxed real-data run checks the same in test_genesis_eval.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke, results_of, sample_rows
from helpers.headline_units import assert_headline_reproduced, unit_mean
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.bfcl import SPEC as BFCL
from toolgauge.benchmarks.bfcl.io import assistant_turn_to_bfcl_output, bfcl_gold_turn
from toolgauge.benchmarks.bfcl.loader import load_bfcl
from toolgauge.benchmarks.bfcl.options import BfclOptions
from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark, BfclResult
from toolgauge.benchmarks.mtu import SPEC as MTU
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions, pair_predictions
from toolgauge.benchmarks.mtu.metrics import MtuVariant
from toolgauge.benchmarks.mtu.options import MtuOptions
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, MtuResult, item_keys
from toolgauge.benchmarks.mtu.records import MULTI_TURN_SPLITS
from toolgauge.benchmarks.registry import specs
from toolgauge.benchmarks.suite import SPEC as SUITE
from toolgauge.benchmarks.suite.loader import BUILTIN_SUITE, load_suite
from toolgauge.benchmarks.suite.options import SuiteOptions
from toolgauge.benchmarks.suite.protocol import SuiteBenchmark, SuiteResult, SuiteTurnResult
from toolgauge.benchmarks.tool_genesis import SPEC as GENESIS
from toolgauge.benchmarks.tool_genesis.metrics import genesis_metrics
from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict
from toolgauge.benchmarks.tool_genesis.metrics.schema import SchemaMatch
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import UnitTestSummary
from toolgauge.benchmarks.tool_genesis.protocol import (
    GenesisEvalResult,
    LaunchRecord,
    TaskRecord,
    server_sample_score,
    server_score,
)
from toolgauge.benchmarks.wildtoolbench import SPEC as WILD
from toolgauge.engine import SampleOutcome
from toolgauge.results import EvalResults, SampleScore

WILD_FIXTURES = FIXTURE_ROOT / "wildtoolbench"


def test_every_benchmark_names_rate_headlines() -> None:
    # A headline is a rate over units (counts cannot be means); toolgate's is checked in its own tests.
    for spec in specs():
        assert spec.headline, spec.name
    assert BFCL.headline == ("accuracy",)
    assert WILD.headline[:2] == ("task_accuracy", "session_accuracy")
    assert "sr_soft" in GENESIS.headline and "success_rate" in MTU.headline and "success_rate" in SUITE.headline


# -- suite: turns of the built-in dialogues, clustered by dialogue ---------------------------------------


def suite_outcomes(bench: SuiteBenchmark) -> list[SampleOutcome[SuiteResult]]:
    """Gold answers, except: every third dialogue misses its second turn's calls, every fifth is not run."""
    outcomes = []
    for index, (key, dialogue) in enumerate(bench.samples()):
        if index % 5 == 4:
            continue
        turns = [SuiteTurnResult(tool_calls=list(turn.expected_calls)) for turn in dialogue.turns]
        if index % 3 == 0 and len(turns) > 1:
            turns[1] = SuiteTurnResult(content="no call")
        outcomes.append(SampleOutcome(key, SuiteResult(turns=turns), None, 0.0))
    return outcomes


@pytest.mark.parametrize("variant", ["strict", "reference"])
def test_suite_headline_from_turns(variant: MtuVariant) -> None:
    bench = SuiteBenchmark(load_suite(BUILTIN_SUITE), options=SuiteOptions(variant=variant), data_label="builtin")
    run = bench.score(bench.samples(), suite_outcomes(bench))
    rows = run.samples
    assert 0 < run.results.value("success_rate") < 1  # type: ignore[operator]
    assert_headline_reproduced(run.results, rows, SUITE.headline)
    # Every metric of the summary, not only the headline, and one dialogue unit per dialogue (its last turn).
    assert_headline_reproduced(run.results, rows, [m.name for m in run.results.overall() if m.kind == "rate"])
    assert all(r.cluster == r.sample for r in rows)
    carriers = [r for r in rows if "success_rate" in r.scores]
    assert [r.sample for r in carriers] == [d.id for d in bench.items]
    assert all(r.metadata["turn"] == len(d.turns) - 1 for r, d in zip(carriers, bench.items, strict=True))


# -- MTU-Bench: items; M-S and M-M items clustered by dialogue -----------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_mtu_headline_from_items_on_gpt4_replies(mtu_dir: Path, variant: MtuVariant) -> None:
    items = load_mtu(mtu_dir)  # every split; OOD has no published reply and scores as empty replies
    responses, _ = pair_predictions(items, load_mtu_predictions(mtu_dir / "responses"))
    bench = MtuBenchmark(items, options=MtuOptions(variant=variant), data_label="d")
    outcomes = [
        SampleOutcome(key, MtuResult(content=r) if r is not None else None, None, 0.0)
        for key, r in zip(item_keys(items), responses, strict=True)
    ]
    run = bench.score(bench.samples(), outcomes)
    rows = run.samples
    assert_headline_reproduced(run.results, rows, MTU.headline)
    assert_headline_reproduced(run.results, rows, [m.name for m in run.results.overall() if m.kind == "rate"])
    by_id = {item_keys(items)[i]: item for i, item in enumerate(items)}
    for row in rows:
        item = by_id[row.id]
        assert row.cluster == (item.dialogue_id if item.split in MULTI_TURN_SPLITS else None)
        assert ("tool_accuracy" in row.scores) != item.multi_call
        assert ("tool_number_accuracy" in row.scores) == item.multi_call
    # 85 M-S and 79 M-M dialogues, each carried by one item.
    assert Counter(r.id.split("_", 1)[0] for r in rows if "success_rate" in r.scores) == {"M-S": 85, "M-M": 79}


# -- BFCL: entries, each weighing 1 / its category's size --------------------------------------------


@pytest.mark.realdata
def test_bfcl_overall_accuracy_is_the_category_mean(bfcl_dir: Path) -> None:
    categories = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
                  "parallel_multiple", "live_simple", "live_multiple", "irrelevance"]  # fmt: skip
    entries = load_bfcl(bfcl_dir, categories)
    bench = BfclBenchmark(entries, BfclOptions(data=Path("d"), mode="prompt", underscore_to_dot=False))
    # Gold in BFCL's prompting form (java and javascript lose some), every seventh entry not run.
    outcomes = [
        SampleOutcome(e.id, BfclResult(output=assistant_turn_to_bfcl_output(
            bfcl_gold_turn(e, style="prompt", underscore_to_dot=False), "prompt")), None, 0.0)
        for i, e in enumerate(entries) if i % 7
    ]  # fmt: skip
    run = bench.score(bench.samples(), outcomes)
    rows = run.samples
    results = run.results
    accuracies = [results.value("accuracy", c, by="category") for c in results.groups("category")]
    assert results.value("accuracy") == pytest.approx(sum(accuracies) / len(categories), abs=1e-15)  # type: ignore[arg-type]
    assert_headline_reproduced(results, rows, BFCL.headline)
    sizes = Counter(e.category for e in entries)
    assert all(r.weights["accuracy"] == 1 / sizes[r.metadata["category"]] for r in rows)
    # The plain mean over entries is another number: the weights matter.
    assert abs(sum(r.value or 0 for r in rows) / len(rows) - results.value("accuracy")) > 1e-3  # type: ignore[operator]


# -- WildToolBench: tasks, clustered by session ------------------------------------------------------


@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_wild_headline_from_tasks_of_the_scripted_steps(tmp_path: Path, variant: str) -> None:
    samples = tmp_path / "rows.jsonl"
    res = invoke("score", "wildtoolbench", "--data", WILD_FIXTURES / "sessions.jsonl",
                 "--predictions", WILD_FIXTURES / "steps_scenario.jsonl", "--variant", variant, "--json",
                 "--store", f"sqlite:///{tmp_path / 's.db'}", "--samples", samples)  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    rows = [SampleScore.model_validate(r) for r in sample_rows(samples)]
    # Hand-derived in test_wild_protocol.py: 3 of 12 tasks right, AP 4/7 (reference).
    assert results.value("task_accuracy") == pytest.approx(3 / 12)
    assert_headline_reproduced(results, rows, WILD.headline)
    assert all(r.cluster == r.sample == r.metadata["session"] for r in rows)
    sessions = {r.sample for r in rows}
    assert sorted(r.sample for r in rows if "session_accuracy" in r.scores) == sorted(sessions)
    if variant == "reference":
        assert results.value("accomplish_progress_rate") == pytest.approx(4 / 7)
        assert all(r.weights["accomplish_progress_rate"] == r.metadata["gold_nodes"]
                   for r in rows if "accomplish_progress_rate" in r.scores)  # fmt: skip


# -- Tool-Genesis: servers -----------------------------------------------------------------------------


def genesis_result(
    slug: str, *, compliant: bool, launched: bool, ut: float = 0.0, ratings: tuple[int, ...] = ()
) -> GenesisEvalResult:
    """A server's results: L1 as given; Schema-F1 0.8, UT_soft = UT_hard = ``ut`` and the judge's ratings."""
    return GenesisEvalResult(
        slug=slug,
        variant="reference",
        compliance=Verdict(ok=compliant, reason=None if compliant else "no"),
        mcp_valid=Verdict(ok=True),
        launches=[LaunchRecord(attempt=1, ok=launched, tools=1 if launched else 0)],
        schema_match=SchemaMatch(tool_f1=0.8, args_f1=0.8, schema_f1=0.8),
        ut_summary=UnitTestSummary(ut_soft=ut, ut_hard=ut, total=4, hard_passed=int(4 * ut), not_built=0, not_run=0),
        tasks=[TaskRecord(index=i, task="t", rating=r) for i, r in enumerate(ratings)],
    )


@pytest.mark.parametrize("l4_run", [True, False])
def test_genesis_headline_from_servers(l4_run: bool) -> None:
    results_in = [
        genesis_result("a", compliant=True, launched=True, ut=0.75, ratings=(5, 2, 3)),
        genesis_result("b", compliant=True, launched=True, ut=0.25, ratings=(1,)),
        genesis_result("c", compliant=True, launched=False),
        genesis_result("d", compliant=False, launched=True, ut=1.0),
    ]
    scores = [server_score(r, "reference") for r in results_in]
    results = EvalResults(benchmark="tool-genesis", metrics=genesis_metrics(scores, l4_run=l4_run))
    rows = [server_sample_score(r.slug, r, s, None, l4_run=l4_run) for r, s in zip(results_in, scores, strict=True)]
    assert results.value("compliance") == pytest.approx(3 / 4)
    assert results.value("ut_hard") == pytest.approx((0.75 + 0.25) / 4)
    assert_headline_reproduced(results, rows, GENESIS.headline)
    assert all(r.cluster == r.id for r in rows)
    assert ("sr_soft" in rows[0].scores) == l4_run
    assert (unit_mean(rows, "sr_soft") is None) == (not l4_run)
