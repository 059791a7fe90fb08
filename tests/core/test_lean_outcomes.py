"""Long runs stay lean: the engine keeps no results (they are read back from the store), rows and
``--samples`` are written one at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from sqlalchemy import update

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import UsageError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.redact import redact_tree
from toolgauge.report.export import sample_lines, samples_jsonl, write_lines_atomic
from toolgauge.results import EvalResults, SampleScore, ScoredRun
from toolgauge.store import open_store, schema

QUIET = EngineConfig(concurrency=3, show_progress=False)


class Echo(BaseModel):
    text: str | None


class Strict(BaseModel):
    """A result type that the ``Echo`` results of an older run no longer validate as."""

    text: str
    length: int


async def echo(sample: str, ctx: EpisodeContext) -> Echo:
    if sample.startswith("fail"):
        raise ValueError(f"no answer for {sample}")
    turn = await ctx.generate([Message(role="user", content=sample)])
    return Echo(text=turn.content)


def reply(request: ModelRequest) -> AssistantTurn:
    return AssistantTurn(content=(request.messages[-1].content or "").upper())


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_sample_results_come_in_the_order_asked_across_chunks(store_url: str):
    store = open_store(store_url)
    run_id = store.create_run("t", "m", {})
    for i in range(7):
        failed = i == 4
        store.record_sample(
            run_id, f"k{i}", result=None if failed else {"text": str(i)}, error="boom" if failed else None, latency_s=i
        )
    keys = ["k6", "k0", "missing", "k4", "k3", "k5", "k1"]
    got = list(store.sample_results(run_id, keys, chunk=2))  # 4 queries; buffered rows are flushed first
    assert [k for k, _ in got] == keys
    assert {k: json.loads(v) if v else v for k, v in got} == {
        "k6": {"text": "6"}, "k0": {"text": "0"}, "missing": None, "k4": None,
        "k3": {"text": "3"}, "k5": {"text": "5"}, "k1": {"text": "1"},
    }  # fmt: skip
    states = store.sample_states(run_id)
    assert sorted(states) == [f"k{i}" for i in range(7)]
    assert (states["k4"].status, states["k4"].error, states["k4"].latency_s) == ("error", "boom", 4.0)
    assert (states["k2"].status, states["k2"].error) == ("done", None)
    store.close()


async def test_outcomes_read_their_results_from_the_store_in_input_order(store_url: str):
    store = open_store(store_url)
    run_id = store.create_run("t", "m", {})
    samples = [(f"s{i}", f"fail{i}" if i % 4 == 1 else f"q{i}") for i in range(12)]
    out = await run_episodes(
        samples, echo, Echo, client=ScriptedClient(policy=reply), store=store, run_id=run_id, config=QUIET
    )
    expected = [(k, None if s.startswith("fail") else s.upper()) for k, s in samples]
    # Read twice: each iteration reads the store again and gives the same outcomes.
    for _ in range(2):
        assert [(o.key, o.result.text if o.result else None) for o in out.outcomes] == expected
    assert len(out.outcomes) == 12
    assert out.outcomes[2].result == Echo(text="Q2") and out.outcomes[-1].result == Echo(text="Q11")
    assert [o.key for o in out.outcomes[1:4]] == ["s1", "s2", "s3"]
    assert [(o.key, o.result) for o in out.failed] == [("s1", None), ("s5", None), ("s9", None)]
    assert out.failed[0].error == "ValueError: no answer for fail1"
    # What the store holds is what is read: a row changed behind the engine's back shows up.
    with store.engine.begin() as conn:
        conn.execute(update(schema.samples).where(schema.samples.c.sample_key == "s0").values(result='{"text": "X"}'))
    assert out.outcomes[0].result == Echo(text="X")
    store.close()


async def test_a_resume_keeps_valid_stored_results_and_reruns_the_rest(tmp_path: Path):
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    run_id = store.create_run("t", "m", {})
    store.record_sample(run_id, "a", result={"text": "A", "length": 1}, error=None, latency_s=0.5)
    store.record_sample(run_id, "b", result={"text": "B"}, error=None, latency_s=0.5)  # no longer valid
    store.record_sample(run_id, "c", result=None, error="boom", latency_s=0.5)
    ran: list[str] = []

    async def strict(sample: str, ctx: EpisodeContext) -> Strict:
        ran.append(sample)
        return Strict(text=sample.upper(), length=len(sample))

    samples = [("a", "a"), ("b", "bb"), ("c", "ccc"), ("d", "dddd")]
    out = await run_episodes(
        samples, strict, Strict, client=ScriptedClient(policy=reply), store=store, run_id=run_id, config=QUIET
    )
    assert sorted(ran) == ["bb", "ccc", "dddd"] and out.resumed == 1
    assert [(o.key, o.result, o.resumed) for o in out.outcomes] == [
        ("a", Strict(text="A", length=1), True),
        ("b", Strict(text="BB", length=2), False),
        ("c", Strict(text="CCC", length=3), False),
        ("d", Strict(text="DDDD", length=4), False),
    ]
    assert out.failed == []
    store.close()


def test_lazy_sample_scores_are_made_on_each_call_and_only_when_asked():
    made: list[int] = []

    def scores() -> Iterator[SampleScore]:
        for i in range(3):
            made.append(i)
            yield SampleScore(id=str(i), sample=str(i), value=float(i))

    scored = ScoredRun(EvalResults(benchmark="t"), samples=scores)
    assert made == []
    expected = [SampleScore(id=str(i), sample=str(i), value=float(i)) for i in range(3)]
    assert list(scored.iter_samples()) == expected
    assert scored.samples == expected
    assert made == [0, 1, 2, 0, 1, 2]
    nine = SampleScore(id="9", sample="9")
    assert ScoredRun(EvalResults(benchmark="t"), samples=[nine]).samples == [nine]
    assert ScoredRun(EvalResults(benchmark="t")).samples == []


def test_samples_written_line_by_line_match_the_whole_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "hunter2-planted")
    rows = [
        {"id": "a", "error": "key sk-abcdefghijklmnopqrstuvwx", "nested": [{"hunter2-planted": "x hunter2-planted"}]},
        {"id": "b", "text": "ü", "n": 3},
    ]
    path = tmp_path / "samples.jsonl"
    write_lines_atomic(path, sample_lines(rows))
    assert path.read_text() == samples_jsonl(rows)
    # The same masking as redact_tree, environment secrets included.
    assert path.read_text().splitlines() == [json.dumps(redact_tree(r), ensure_ascii=False) for r in rows]
    assert "sk-abcdefghijklmnopqrstuvwx" not in path.read_text() and "hunter2-planted" not in path.read_text()


def test_a_failure_while_writing_leaves_the_old_file_and_no_temporary_file(tmp_path: Path):
    path = tmp_path / "samples.jsonl"
    path.write_text("old\n")

    def lines() -> Iterator[str]:
        yield "first\n"
        raise RuntimeError("scoring failed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        write_lines_atomic(path, lines())
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl"]

    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    with pytest.raises(UsageError, match="cannot write"):
        write_lines_atomic(blocked / "x.jsonl", ["a\n"])
