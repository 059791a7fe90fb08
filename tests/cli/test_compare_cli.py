"""``toolgauge compare``: two real stored runs of the built-in suite, gold against a replay that fails some turns.

The replay file is the gold with the calls of the first turn removed in every third dialogue, so the verdicts
are known: those first turns fail (when the gold turn makes a call) and every other turn passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke, results_of
from toolgauge.api import compare
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.compare import RunComparison, compare_scores
from toolgauge.errors import UsageError
from toolgauge.results import SampleScore
from toolgauge.stats.paired import mcnemar


def failing_turns() -> list[str]:
    """The units the replay gets wrong: turn 0 of every third dialogue, when the gold turn calls a tool."""
    dialogues = load_suite(builtin_suite_path())
    return [f"{d.id}#0" for i, d in enumerate(dialogues) if i % 3 == 0 and d.turns[0].expected_calls]


def write_replay(path: Path) -> None:
    lines = []
    for i, dialogue in enumerate(load_suite(builtin_suite_path())):
        for t, turn in enumerate(dialogue.turns):
            calls = [] if (i % 3 == 0 and t == 0) else [c.model_dump(mode="json") for c in turn.expected_calls]
            lines.append({"id": dialogue.id, "turn": t, "content": None if calls else "Sorry.", "tool_calls": calls})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str, str]:
    """(store URL, gold run id, replay run id, a gold run of the first 20 dialogues)."""
    tmp = tmp_path_factory.mktemp("compare")
    store = f"sqlite:///{tmp / 'store.db'}"
    replay = tmp / "replay.jsonl"
    write_replay(replay)
    ids = []
    for extra in (["--model", "gold"], ["--model", f"replay:{replay}"], ["--model", "gold", "--limit", "20"]):
        res = invoke("eval", "suite", *extra, "--store", store, "--json", "-q")
        assert res.exit_code == 0, res.output
        run = results_of(res).run
        assert run is not None
        ids.append(run.id)
    return store, ids[0], ids[1], ids[2]


def compared(store: str, a: str, b: str, *extra: str) -> RunComparison:
    res = invoke("compare", a, b, "--store", store, "--json", *extra)
    assert res.exit_code == 0, res.output
    return RunComparison.model_validate_json(res.stdout)


def test_gold_against_the_replay_lists_the_known_failures(runs: tuple[str, str, str, str]) -> None:
    store, gold, replay, _ = runs
    expected = failing_turns()
    assert len(expected) >= 6
    result = compared(store, gold, replay)
    assert (result.a, result.b, result.benchmark) == (gold, replay, "suite")
    assert result.flipped.to_fail == expected and result.flipped.to_pass == []
    assert (result.only_in_a, result.only_in_b) == (0, 0)
    assert list(result.metrics) == ["tool_accuracy", "parameter_accuracy", "success_rate"]
    n_dialogues = len(load_suite(builtin_suite_path()))
    success = result.metrics["success_rate"]
    # One unit per dialogue, pass/fail: McNemar, every discordant pair the same way.
    assert (success.a, success.n, success.test) == (1.0, n_dialogues, "mcnemar_exact")
    assert success.b == pytest.approx(1 - len(expected) / n_dialogues, abs=1e-15)
    assert success.p_value == mcnemar(len(expected), 0)[1] == 2 * 0.5 ** len(expected)
    assert success.significant == (success.p_value < 0.05)
    assert success.ci_low is not None and success.ci_high is not None
    assert success.ci_low <= success.diff <= success.ci_high < 0  # type: ignore[operator]
    # Turns cluster in dialogues: not independent pairs, so the paired bootstrap.
    tools = result.metrics["tool_accuracy"]
    n_turns = sum(len(d.turns) for d in load_suite(builtin_suite_path()))
    assert (tools.n, tools.test) == (n_turns, "paired_bootstrap")
    assert tools.diff == pytest.approx(-len(expected) / n_turns, abs=1e-12)


def test_swapped_runs_list_the_same_units_as_gains(runs: tuple[str, str, str, str]) -> None:
    store, gold, replay, _ = runs
    forward, backward = compared(store, gold, replay), compared(store, replay, gold)
    assert backward.flipped.to_pass == forward.flipped.to_fail and backward.flipped.to_fail == []
    for name, row in forward.metrics.items():
        other = backward.metrics[name]
        assert other.diff == -row.diff  # type: ignore[operator]
        assert (other.p_value, other.test, other.significant) == (row.p_value, row.test, row.significant)


def test_units_only_in_one_run_are_counted(runs: tuple[str, str, str, str]) -> None:
    store, gold, _, first_20 = runs
    result = compared(store, gold, first_20, "--metric", "turn_correct")
    n_turns = sum(len(d.turns) for d in load_suite(builtin_suite_path()))
    n_first = sum(len(d.turns) for d in load_suite(builtin_suite_path())[:20])
    assert (result.only_in_a, result.only_in_b) == (n_turns - n_first, 0)
    assert list(result.metrics) == ["turn_correct"]  # a boolean per-unit score counts as 0/1
    row = result.metrics["turn_correct"]
    assert (row.n, row.a, row.b, row.diff, row.p_value) == (n_first, 1.0, 1.0, 0.0, 1.0)
    assert not row.significant


def test_terminal_table_and_the_python_api_agree(runs: tuple[str, str, str, str]) -> None:
    store, gold, replay, _ = runs
    res = invoke("compare", gold, replay, "--store", store)
    assert res.exit_code == 0, res.output
    for text in ("suite: B", "success_rate", "mcnemar_exact", "paired_bootstrap", "95% CI",
                 f"pass -> fail: {len(failing_turns())} (", "fail -> pass: 0", "units only in A: 0"):  # fmt: skip
        assert text in res.stdout, text
    assert compare(gold, replay, store=store) == compared(store, gold, replay)


def test_the_table_shows_percent_and_differences_in_percentage_points(runs: tuple[str, str, str, str]) -> None:
    store, gold, replay, _ = runs
    res = invoke("compare", gold, replay, "--store", store)
    assert res.exit_code == 0, res.output
    assert res.stdout.endswith("\n")
    assert "(A, B in percent; diff = B - A in percentage points)" in res.stdout
    success = compared(store, gold, replay).metrics["success_rate"]  # JSON: fractions
    assert success.b is not None and success.diff is not None and success.ci_low is not None
    assert success.ci_high is not None and 0 < success.b < 1 and -1 < success.diff < 0
    row = next(line for line in res.stdout.splitlines() if line.strip().startswith("success_rate"))
    b, diff = f"{success.b * 100:.2f}", f"{success.diff * 100:+.2f}"
    interval = f"[{success.ci_low * 100:+.2f}, {success.ci_high * 100:+.2f}]"
    assert row.split()[:7] == ["success_rate", str(success.n), "100.00", b, diff, *interval.split()], row


def test_three_runs_compare_each_with_the_first(runs: tuple[str, str, str, str]) -> None:
    store, gold, replay, first_20 = runs
    res = invoke("compare", gold, replay, first_20, "--store", store, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["baseline"], doc["benchmark"]) == (gold, "suite")
    # Each run after A is `compare A X` on its own: the same document, in the order given.
    assert doc["comparisons"] == [compared(store, gold, other).model_dump(mode="json") for other in (replay, first_20)]
    text = invoke("compare", gold, replay, first_20, "--store", store)
    assert text.exit_code == 0, text.output
    assert f"B {replay} vs A {gold}" in text.stdout and f"B {first_20} vs A {gold}" in text.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nosuchrun", "latest"], "no run 'nosuchrun' in the store"),
        (["latest", "nosuchrun"], "no run 'nosuchrun' in the store"),
        (["latest", "latest", "--metric", "bogus"], "metric 'bogus' is not a per-unit score of these runs"),
        (["latest", "latest", "nosuchrun"], "no run 'nosuchrun' in the store"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(runs: tuple[str, str, str, str], args: list[str], expected: str) -> None:
    store = runs[0]
    res = invoke("compare", *args, "--store", store)
    assert res.exit_code == 2
    assert expected in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert res.stdout == ""


def test_runs_of_two_benchmarks_are_refused(runs: tuple[str, str, str, str]) -> None:
    store, gold, _, _ = runs
    wild = invoke("eval", "wildtoolbench", "--model", "gold", "--store", store, "--json", "-q")
    assert wild.exit_code == 0, wild.output
    wild_run = results_of(wild).run
    assert wild_run is not None
    res = invoke("compare", gold, wild_run.id, "--store", store)
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1
    assert "is suite and run" in res.stderr and "is wildtoolbench: compare runs of the same benchmark" in res.stderr


def unit(uid: str, epoch: int, value: float, **scores: float) -> SampleScore:
    return SampleScore(id=uid, sample=uid.split("#")[0], value=value, scores=dict(scores), epoch=epoch)


def test_epochs_are_averaged_per_unit_before_pairing() -> None:
    # x passes 1 of 2 tries in A and both in B: 0.5 -> 1.0, a fractional score, so the bootstrap; y only in A.
    a = [unit("d#0", 1, 1.0, m=1.0), unit("d#0", 2, 0.0, m=0.0), unit("d#1", 1, 1.0, m=1.0), unit("y#0", 1, 1.0)]
    b = [unit("d#0", 1, 1.0, m=1.0), unit("d#0", 2, 1.0, m=1.0), unit("d#1", 1, 0.0, m=0.0), unit("z#0", 1, 0.0)]
    result = compare_scores("A", "B", "suite", a, b, ["m", "absent"], required=False)
    m = result.metrics["m"]
    assert (m.n, m.a, m.b, m.diff, m.test) == (2, 0.75, 0.5, -0.25, "paired_bootstrap")
    assert result.flipped.to_fail == ["d#1"] and result.flipped.to_pass == []  # d#0 averages to 0.5 in A
    assert (result.only_in_a, result.only_in_b) == (1, 1)
    absent = result.metrics["absent"]  # a headline metric no unit carries: no numbers, not significant
    assert (absent.n, absent.a, absent.test, absent.significant) == (0, None, None, False)
    with pytest.raises(UsageError, match="metric 'absent' is not a per-unit score"):
        compare_scores("A", "B", "suite", a, b, ["absent"])
