"""``--max-cost`` and ``--max-tokens-total``: a run stops before a call would cross its budget, resumable.

The budget arithmetic on its own (engine/budget.py), then the real CLI in-process against a loopback
OpenAI-compatible server (tests/chat_stub.py) that reports usage.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of
from helpers.episode_helpers import ClientWithoutLifecycle, Echo
from toolgauge.cost import parse_price
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.engine.budget import Budget, BudgetReached, Spend
from toolgauge.records import AssistantTurn, Message, ModelRequest, Usage
from toolgauge.store import open_store

TOKENS_IN, TOKENS_OUT = 100, 10
PER_CALL = TOKENS_IN + TOKENS_OUT


def answer(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
    """A text reply that reports TOKENS_IN prompt and TOKENS_OUT completion tokens."""
    return 200, completion("no", usage=(1, 1) if is_probe(request) else (TOKENS_IN, TOKENS_OUT))


# -- the arithmetic ------------------------------------------------------------------------------------------
def test_a_call_is_refused_when_it_would_cross_the_token_budget() -> None:
    spend = Spend(Budget(max_tokens_total=250), {"model": None})
    for _ in range(2):
        assert spend.admit() is None
        spend.add("model", 100, 10)
        spend.release()
    refused = spend.admit()  # 220 spent, a call of 110 more would make 330
    assert refused is not None and "--max-tokens-total 250" in refused and "220 tokens spent" in refused
    assert spend.in_flight == 0


def test_calls_in_flight_count_against_the_budget() -> None:
    spend = Spend(Budget(max_tokens_total=500), {"model": None})
    assert spend.admit() is None
    spend.add("model", 100, 0)
    spend.release()
    assert all(spend.admit() is None for _ in range(4))  # 100 spent + 4 x 100 expected <= 500
    assert spend.admit() is not None  # a fifth in flight would make 600
    assert spend.in_flight == 4


def test_the_cost_budget_uses_each_roles_price_and_a_resumed_runs_spend() -> None:
    spend = Spend(Budget(max_cost=1.0), {"model": parse_price("1000,0"), "judge": parse_price("0,0")})
    spend.seed({"model": [(200, 0, 2)], "judge": [(5000, 0, 1)]})  # $0.40 spent before the resume
    assert round(spend.usd, 6) == 0.4 and spend.calls == 3
    assert spend.admit() is None  # mean $0.133 a call: 0.53 <= 1
    spend.add("model", 500, 0)  # $0.50
    spend.release()
    assert spend.admit() is not None  # 0.90 + mean 0.225 > 1
    assert spend.cost_known


def test_a_role_without_a_price_makes_the_cost_unknown() -> None:
    spend = Spend(Budget(), {"model": parse_price("1,1")})
    spend.add("judge", 10, 10)
    assert not spend.cost_known and spend.tokens == 20


# -- the engine ----------------------------------------------------------------------------------------------
class HeldAnswers(ClientWithoutLifecycle):
    """Sample ``b``'s call is answered only once ``release`` is set; ``a``'s first call waits until b's is in flight."""

    name = "held"
    cacheable = False
    cache_id = "held"

    def __init__(self) -> None:
        self.b_in_flight = asyncio.Event()
        self.release = asyncio.Event()
        self.answered: list[tuple[str, int]] = []

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        # Deadlines on every wait: a broken engine fails the test instead of hanging it.
        if request.sample_key == "b":
            self.b_in_flight.set()
            await asyncio.wait_for(self.release.wait(), 30)
        elif request.step == 0:
            await asyncio.wait_for(self.b_in_flight.wait(), 30)
        self.answered.append((request.sample_key, request.step))
        return AssistantTurn(content="ok", usage=Usage(input_tokens=TOKENS_IN, output_tokens=TOKENS_OUT))


async def test_a_call_in_flight_finishes_and_its_sample_is_kept_when_the_budget_stops_the_run(tmp_path: Path) -> None:
    client = HeldAnswers()

    async def episode(sample: str, ctx: EpisodeContext) -> Echo:
        try:
            for _ in range(2 if sample == "a" else 1):  # a: two calls, b: one
                turn = await ctx.generate([Message(role="user", content=sample)])
        except BudgetReached:
            client.release.set()  # b's call is still in flight: let it answer now
            raise
        return Echo(text=turn.content)

    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("test", "held", {})
    # a's first call answered, b's in flight: a's second would make 110 + 2 x 110 > 300.
    config = EngineConfig(concurrency=2, max_retries=0, show_progress=False, budget=Budget(max_tokens_total=300))
    try:
        with pytest.raises(BudgetReached) as stopped:
            await run_episodes([("a", "a"), ("b", "b")], episode, Echo, client=client, store=store, run_id=run_id,
                               config=config)  # fmt: skip
        assert stopped.value.reason.startswith("budget reached: --max-tokens-total 300: 110 tokens spent")
        assert client.answered == [("a", 0), ("b", 0)]  # a's second call was never sent
        states = store.sample_states(run_id)
        assert set(states) == {"b"} and states["b"].status == "done"  # b finished; a runs again on resume
        assert store.call_stats(run_id)["input_tokens"] == 2 * TOKENS_IN
    finally:
        store.close()


# -- a run ---------------------------------------------------------------------------------------------------
def _status(db: Path, run_id: str) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("select status from runs where id = ?", (run_id,)).fetchone()[0])


def test_a_run_stops_at_its_token_budget_and_resumes_to_the_end(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with ChatStub(answer) as stub:
        args = ("eval", "suite", "-m", stub.model(), "--limit", "6", "--store", f"sqlite:///{db}", "-c", "1", "-q")
        full = results_of(invoke(*args, "--json", "--store", f"sqlite:///{tmp_path / 'full.db'}", "--no-cache")).run
        assert full is not None and full.model_calls * PER_CALL > 5 * PER_CALL  # the budget below cuts it short
        served_before = stub.requests

        stopped = invoke(*args, "--max-tokens-total", str(5 * PER_CALL - 1))
        assert stopped.exit_code == 1
        lines = stopped.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: budget reached: --max-tokens-total 549")
        run_id = lines[0].split(" run ")[1].split()[0]
        assert "--resume " + run_id in lines[0] and _status(db, run_id) == "stopped_budget"
        with sqlite3.connect(db) as conn:
            spent = conn.execute("select sum(input_tokens + output_tokens) from model_calls").fetchone()[0]
        assert spent == 4 * PER_CALL  # a fifth call would have crossed 549
        assert stub.requests - served_before == 1 + 4  # the probe and the calls it let through

        report = invoke("report", run_id, "--store", f"sqlite:///{db}")
        assert report.exit_code == 2 and f"status: stopped_budget); resume it with --resume {run_id}" in report.stderr

        resumed = results_of(invoke(*args, "--json", "--resume", run_id, "--max-tokens-total", "100000")).run
        assert resumed is not None and resumed.status == "finished" and resumed.samples == 6
        assert _status(db, run_id) == "finished"
        # Nothing was asked twice: a sample cut short gets its first answers back from the cache.
        assert stub.requests - served_before == 2 + full.model_calls
        assert resumed.model_calls + 4 == full.model_calls


def test_a_cost_budget_needs_a_known_price(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with ChatStub(answer) as stub:
        res = invoke(
            "eval", "suite", "-m", stub.model(), "--limit", "1", "--store", f"sqlite:///{db}", "--max-cost", "1"
        )
        assert res.exit_code == 2
        assert "--max-cost needs the price of model" in res.stderr and "--price IN,OUT" in res.stderr
        assert stub.requests == 0
    assert not db.exists() or _run_count(db) == 0


def _run_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from runs").fetchone()[0])


def test_a_run_stops_at_its_cost_budget(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with ChatStub(answer) as stub:
        # $1 per million tokens in and out: a call costs $0.00011; $0.0003 lets two through.
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "6", "--store", f"sqlite:///{db}", "-c", "1",
                     "--price", "1,1", "--max-cost", "0.0003")  # fmt: skip
    assert res.exit_code == 1 and "budget reached: --max-cost 0.0003" in res.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from model_calls").fetchone()[0] == 2
        (status,) = conn.execute("select status from runs").fetchone()
    assert status == "stopped_budget"
