"""MTU-Bench's viewer panels: the turn-level curves (turn success, SATS's soft turn score, error-free so far).

Checked on GPT-4's published replies to the real eval set: the numbers are recomputed here from the units by a
second, plain implementation of the SATS formula, tied to the run's own SATS and to the verdicts of the scorer
(not the units), drawn as SVG, and shown by the viewer for a stored gold run.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.benchmarks.mtu import SPEC as MTU
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions, pair_predictions
from toolgauge.benchmarks.mtu.metrics import score_mtu
from toolgauge.benchmarks.mtu.options import MtuOptions
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, MtuResult, item_keys
from toolgauge.benchmarks.mtu.react import parse_mtu_response
from toolgauge.benchmarks.mtu.records import MtuItem
from toolgauge.benchmarks.mtu.views import run_panels, sample_panels, turn_points
from toolgauge.engine import SampleOutcome
from toolgauge.panels import ChartPanel, TablePanel
from toolgauge.results import EvalResults, SampleScore

skip_or_fail_without(view_missing(browser=False))


class Gpt4:
    """The real eval set scored on GPT-4's recorded replies (reference variant): items, replies, results, units."""

    def __init__(self, mtu_dir: Path):
        self.items = load_mtu(mtu_dir)
        self.replies, _ = pair_predictions(self.items, load_mtu_predictions(mtu_dir / "responses"))
        bench = MtuBenchmark(self.items, options=MtuOptions(), data_label="d")
        outcomes = [
            SampleOutcome(key, MtuResult(content=r) if r is not None else None, None, 0.0)
            for key, r in zip(item_keys(self.items), self.replies, strict=True)
        ]
        run = bench.score(bench.samples(), outcomes)
        self.results: EvalResults = run.results
        self.units: list[SampleScore] = list(run.samples)


@pytest.fixture(scope="module")
def gpt4(mtu_dir: Path) -> Gpt4:
    return Gpt4(mtu_dir)


def by_hand(units: Sequence[SampleScore]) -> dict[tuple[str, int], tuple[int, float, float, float]]:
    """(split, turn) -> (dialogues, mean r_j, mean s_j, share error-free through j), written out plainly."""
    slots: dict[tuple[str, str], dict[int, bool]] = defaultdict(dict)
    # File order: a repeated id (``~k``) comes after its first occurrence, and the later one holds the turn.
    for unit in sorted(units, key=lambda u: int(u.id.split("~")[1]) if "~" in u.id else 0):
        split = unit.metadata["split"]
        if split in ("M-S", "M-M"):
            dialogue, turn = unit.metadata["item_id"].rsplit("_", 1)
            slots[(split, dialogue)][int(turn)] = bool(unit.scores["turn_correct"])
    per_turn: dict[tuple[str, int], list[tuple[int, float, int]]] = defaultdict(list)
    for (split, _), turns in slots.items():
        r = [turns[t] for t in sorted(turns)]
        for j, ok in enumerate(r):
            wrong_before = [i for i in range(j) if not r[i]]
            if not ok:
                s = 0.0
            elif not wrong_before:
                s = 1.0
            else:
                s = 1 - math.exp(-(j - max(wrong_before)))
            per_turn[(split, j)].append((int(ok), s, int(all(r[: j + 1]))))
    return {
        key: (len(v), sum(x[0] for x in v) / len(v), sum(x[1] for x in v) / len(v), sum(x[2] for x in v) / len(v))
        for key, v in per_turn.items()
    }


@pytest.mark.realdata
def test_turn_curves_are_the_units_turn_verdicts_by_position(gpt4: Gpt4) -> None:
    points = turn_points(gpt4.units)
    expected = by_hand(gpt4.units)
    assert {(p.split, p.turn) for p in points} == set(expected)
    for p in points:
        n, success, soft, free = expected[(p.split, p.turn)]
        assert p.dialogues == n
        assert p.turn_success == pytest.approx(success, abs=1e-12)
        assert p.soft_turn_score == pytest.approx(soft, abs=1e-12)
        assert p.error_free == pytest.approx(free, abs=1e-12)
    # The first turn is had by every dialogue of the split; there, the three measures coincide.
    for split in ("M-S", "M-M"):
        first = next(p for p in points if p.split == split and p.turn == 0)
        assert first.dialogues == gpt4.results.value("n_dialogues", split, by="split")
        assert first.turn_success == first.soft_turn_score == first.error_free
    # Later positions are had by fewer dialogues (the long ones), never more.
    for split in ("M-S", "M-M"):
        counts = [p.dialogues for p in points if p.split == split]
        assert counts == sorted(counts, reverse=True) and counts[-1] >= 1


@pytest.mark.realdata
def test_the_curves_count_every_turn_of_the_runs_dialogues(gpt4: Gpt4) -> None:
    # Summed over positions, the points count every turn slot of the split once, and the right ones: as the
    # scorer's verdicts (not the units) give them.
    points = turn_points(gpt4.units)
    for split in ("M-S", "M-M"):
        mine = [p for p in points if p.split == split]
        turns_total = sum(p.dialogues for p in mine)
        right_total = sum(p.turn_success * p.dialogues for p in mine)
        items = [i for i in gpt4.items if i.split == split]
        verdicts = independent_verdicts(gpt4, items)
        # The dialogues' turn slots: a repeated id counts once (its later item), as the dialogue metrics count it.
        slots = {(i.dialogue_id, i.turn_index): ok for i, ok in zip(items, verdicts, strict=True)}
        assert turns_total == len(slots)
        assert right_total == pytest.approx(sum(slots.values()), abs=1e-9)
    # The dialogues the points are over are the ones the run's SATS is over (one unit carries each).
    for split in ("M-S", "M-M"):
        units = [u for u in gpt4.units if u.metadata["split"] == split]
        carried = [u.scores["soft_turn_success_rate"] for u in units if "soft_turn_success_rate" in u.scores]
        assert len(carried) == gpt4.results.value("n_dialogues", split, by="split")
        assert sum(carried) / len(carried) == pytest.approx(
            gpt4.results.value("soft_turn_success_rate", split, by="split"), abs=1e-12
        )


def independent_verdicts(gpt4: Gpt4, items: Sequence[MtuItem]) -> list[bool]:
    """Each item's turn verdict from the scorer itself on the parsed replies (not from the units)."""
    index = {id(item): k for k, item in enumerate(gpt4.items)}
    predicted = [parse_mtu_response(gpt4.replies[index[id(i)]] or "", i.split, multi=i.multi_call) for i in items]
    return [v.turn_correct for v in score_mtu(list(items), predicted, "reference").verdicts]


@pytest.mark.realdata
def test_one_point_against_the_data(gpt4: Gpt4) -> None:
    # M-M, second turn (j = 1): over the M-M dialogues that have a turn 1, the share whose turn-1 item GPT-4 got
    # right, from the items and the scorer's verdicts, without the units.
    items = [i for i in gpt4.items if i.split == "M-M"]
    verdicts = independent_verdicts(gpt4, items)
    slot: dict[tuple[str, int], bool] = {}
    for item, ok in zip(items, verdicts, strict=True):
        slot[(item.dialogue_id, item.turn_index)] = ok  # the later of a repeated id wins, as the metrics say
    at_one = [ok for (_, turn), ok in slot.items() if turn == 1]
    point = next(p for p in turn_points(gpt4.units) if p.split == "M-M" and p.turn == 1)
    assert point.dialogues == len(at_one) == 78  # one M-M dialogue of 79 has a single turn
    assert point.turn_success == pytest.approx(sum(at_one) / len(at_one), abs=1e-12)


@pytest.mark.realdata
def test_run_panels_are_a_rendered_chart_and_its_table(gpt4: Gpt4) -> None:
    from toolgauge.view.charts import render_svg

    chart, table = run_panels(gpt4.results, gpt4.units)
    assert isinstance(chart, ChartPanel) and isinstance(table, TablePanel)
    svg = render_svg(chart.spec)
    assert svg.startswith("<svg") and svg.count("<path") > 20
    assert "soft turn score" in svg and "M-M" in svg
    values = chart.spec["data"]["values"] if "data" in chart.spec else chart.spec["datasets"]
    drawn = values if isinstance(values, list) else [row for rows in values.values() for row in rows]
    points = turn_points(gpt4.units)
    assert len(drawn) == 3 * len(points)
    assert {(r["split"], r["turn"], r["dialogues"]) for r in drawn} == {(p.split, p.turn, p.dialogues) for p in points}
    assert table.columns == ["split", "turn", "dialogues", "turn success", "soft turn score", "error-free so far"]
    assert [row[:3] for row in table.rows] == [[p.split, p.turn, p.dialogues] for p in points]
    assert [row[4] for row in table.rows] == [round(p.soft_turn_score, 4) for p in points]


def test_no_multi_turn_split_no_panels() -> None:
    unit = SampleScore(id="S-S_1", sample="S-S_1", scores={"turn_correct": True}, metadata={"split": "S-S",
                       "item_id": "S-S_1"})  # fmt: skip
    assert run_panels(EvalResults(benchmark="mtu-bench"), [unit]) == []
    assert sample_panels([unit]) == []


def turn_unit(key: str, correct: bool, *, epoch: int = 1, split: str = "M-S") -> SampleScore:
    item_id = key.split("~")[0]
    return SampleScore(id=key, sample=key, scores={"turn_correct": correct}, epoch=epoch,
                       cluster=item_id.rsplit("_", 1)[0], metadata={"split": split, "item_id": item_id})  # fmt: skip


def test_repeats_gaps_and_tries() -> None:
    units = [
        # Dialogue M-S_1: turn 1 repeated; the later item (~1, right) holds it, whatever the unit order.
        turn_unit("M-S_1_1~1", True),
        turn_unit("M-S_1_0", False),
        turn_unit("M-S_1_1", False),
        turn_unit("M-S_1_2", True),
        # Dialogue M-S_2 has a gap (no turn 1): its turn 2 is its second position.
        turn_unit("M-S_2_0", True),
        turn_unit("M-S_2_2", False),
        # The second try of M-S_2 is a dialogue of its own.
        turn_unit("M-S_2_0", False, epoch=2),
    ]
    points = {(p.split, p.turn): p for p in turn_points(units)}
    assert set(points) == {("M-S", 0), ("M-S", 1), ("M-S", 2)}
    # Position 0: M-S_1 wrong, M-S_2 right, M-S_2 (try 2) wrong.
    assert (points[("M-S", 0)].dialogues, points[("M-S", 0)].turn_success) == (3, pytest.approx(1 / 3))
    # Position 1: M-S_1 (turn 1, right after a wrong turn 0: s = 1 - e^-1) and M-S_2 (turn 2, wrong).
    one = points[("M-S", 1)]
    assert (one.dialogues, one.turn_success, one.error_free) == (2, 0.5, 0.0)
    assert one.soft_turn_score == pytest.approx((1 - math.exp(-1)) / 2)
    two = points[("M-S", 2)]
    assert (two.dialogues, two.turn_success, two.soft_turn_score) == (1, 1.0, pytest.approx(1 - math.exp(-2)))


@pytest.mark.realdata
def test_a_dialogue_items_page_shows_its_turns_so_far(gpt4: Gpt4) -> None:
    units = {u.id: u for u in gpt4.units}
    item = next(i for i in gpt4.items if i.split == "M-S" and i.turn_index == 3)
    key = item.id
    (panel,) = sample_panels([units[key]])
    assert isinstance(panel, TablePanel) and panel.name == "dialogue-so-far"
    earlier = [units[f"{item.dialogue_id}_{t}"] for t in range(4)]
    assert [row[0] for row in panel.rows] == [0, 1, 2, 3]
    assert [row[1] for row in panel.rows] == [u.id for u in earlier]
    assert [row[2] for row in panel.rows] == ["pass" if u.scores["turn_correct"] else "fail" for u in earlier]
    assert [row[3] for row in panel.rows] == [u.scores["error_type"] for u in earlier]
    # An S-S item has none; the metadata is all the page needs (no other unit is read).
    single = next(u for u in gpt4.units if u.metadata["split"] == "S-S")
    assert "dialogue_so_far" not in single.metadata and sample_panels([single]) == []


@pytest.mark.realdata
def test_a_repeated_id_page_lists_the_items_holding_the_earlier_turns(gpt4: Gpt4) -> None:
    units = {u.id: u for u in gpt4.units}
    repeated = sorted(k for k in units if k.startswith("M-M_19_") and "~" in k)
    assert repeated, "the real M-M data repeats the ids of dialogue M-M_19"
    last = max(repeated, key=lambda k: int(k.split("~")[0].rsplit("_", 1)[1]))
    (panel,) = sample_panels([units[last]])
    # Every earlier turn of a repeated id is held by its later item, as in the dialogue metrics.
    assert [row[1] for row in panel.rows] == sorted(repeated, key=lambda k: int(k.split("~")[0].rsplit("_", 1)[1]))


def test_the_viewer_shows_the_turn_curves_of_a_stored_run(mtu_dir: Path, tmp_path: Path) -> None:
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.store import open_store
    from toolgauge.view.data import ViewData

    assert MTU.run_panels is not None and MTU.sample_panels is not None
    url = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "mtu-bench", "--data", mtu_dir, "--model", "gold", "--limit", "6", "--store", url, "-q",
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = json.loads(res.stdout)["run"]["id"]
    data = ViewData(open_store(url), registry_benchmarks())
    found = data.run_panels(run)
    assert found["note"] is None
    chart, table = found["panels"]
    assert chart["name"] == "turn-curves" and chart["svg"].startswith("<svg") and "<path" in chart["svg"]
    # The gold model gets every turn of the first 6 M-S and M-M items right, but for M-S_17_3 (docs/metrics).
    assert {row[0] for row in table["rows"]} == {"M-S", "M-M"}
    assert all(row[3] == 1.0 for row in table["rows"] if row[0] == "M-M")
    page = data.sample(run, "M-M_0_1")
    assert page["panels_note"] is None
    (so_far,) = page["panels"]
    assert so_far["name"] == "dialogue-so-far" and [r[1] for r in so_far["rows"]] == ["M-M_0_0", "M-M_0_1"]


def test_a_sample_page_with_two_tries_names_each() -> None:
    def so_far(epoch: int, second: bool) -> SampleScore:
        turns = [
            {"sample": "M-M_4_0", "turn": 0, "turn_correct": False, "error_type": "wrong_tool"},
            {"sample": "M-M_4_1", "turn": 1, "turn_correct": second, "error_type": None if second else "no_call"},
        ]
        return SampleScore(id="M-M_4_1", sample="M-M_4_1", epoch=epoch, cluster="M-M_4",
                           metadata={"split": "M-M", "item_id": "M-M_4_1", "dialogue_so_far": turns})  # fmt: skip

    first, second = sample_panels([so_far(1, True), so_far(2, False)])
    assert isinstance(first, TablePanel) and isinstance(second, TablePanel)
    assert first.title.endswith("(try 1)") and second.title.endswith("(try 2)")
    # s_1 after a wrong turn 0: 1 - e^-1 when right, 0 when wrong.
    assert first.rows[1] == [1, "M-M_4_1", "pass", None, round(1 - math.exp(-1), 4)]
    assert second.rows[1] == [1, "M-M_4_1", "fail", "no_call", 0.0]
    assert first.rows[0] == [0, "M-M_4_0", "fail", "wrong_tool", 0.0]
