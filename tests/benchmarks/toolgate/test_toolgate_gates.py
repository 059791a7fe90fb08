"""Gates 2 and 3 and the pool benchmark, driven by scripted screens and solvers with hand-derived outcomes.

Screens: the spec syntax, the three calls with their recorded permutations (seeds whose orders are listed
below), grading by value, the 2-of-3 boundary, unparsable replies, fixed order and the gold screen. Solver: every
verdict (solved, wrong answer, no answer, timeout, model failure), the two tools and their refusals, and
``run_python`` in the real sandbox (skipped without bubblewrap). Pool: the pure scoring of hand-built records, and
the episode's gate order (cheapest first, stop at the first rejection) through the real driver.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers.episode_helpers import in_episode
from toolgauge.benchmarks.toolgate.answers import permutation_from_seed
from toolgauge.benchmarks.toolgate.options import ToolgateOptions
from toolgauge.benchmarks.toolgate.protocol import (
    PoolBenchmark,
    PoolSettings,
    document_of,
    score_records,
)
from toolgauge.benchmarks.toolgate.records import (
    Candidate,
    RecordedCandidate,
    ScreenCall,
    ScreenResult,
    SolveResult,
    VerifyResult,
    decide,
)
from toolgauge.benchmarks.toolgate.screens import (
    ScreenSpec,
    check_screen_names,
    parse_screen_spec,
    screen_candidate,
)
from toolgauge.benchmarks.toolgate.solve import (
    ANSWER_FILE,
    SolverWorkspace,
    run_reply,
    solve_candidate,
)
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig, EpisodeContext
from toolgauge.errors import UsageError
from toolgauge.models.offline import GoldClient, NoModel, ScriptedClient
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall
from toolgauge.sandbox import detect_sandbox
from toolgauge.tools import MAX_TOOL_OUTPUT_CHARS, ToolTranscript

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")

# permutation_from_seed: seed 1 -> D A C B, 2 -> B C D A, 3 -> D A C B, 4 -> C A D B, 5 -> A B D C (the original
# letter shown first is what an always-"A" screen picks).
ORDERS = {1: "DACB", 2: "BCDA", 3: "DACB", 4: "CADB", 5: "ABDC"}


def cand(
    cid: str = "q1",
    *,
    answer: str = "D",
    options: list[str] | None = None,
    question: str = "Which value does the computation give?",
    solution: str = 'print("ANSWER: D")\n',
) -> Candidate:
    return Candidate(
        id=cid,
        domain="fem",
        question=question,
        options=options or ["0.1", "0.2", "0.3", "0.4"],
        answer=answer,  # type: ignore[arg-type]
        solution=solution,
        meta={"topic": "t"},
    )


def reply(text: str | Callable[[ModelRequest], str]) -> ScriptedClient:
    """A screen answering ``text`` (or ``text(request)``) to every call, keeping the requests."""

    def policy(request: ModelRequest) -> AssistantTurn:
        return AssistantTurn(content=text(request) if callable(text) else text, finish_reason="stop")

    return ScriptedClient(policy=policy, record_requests=True)


def displayed_options(request: ModelRequest) -> dict[str, str]:
    """The (letter -> option text) a screen saw."""
    prompt = request.messages[-1].content or ""
    return dict(re.findall(r"^\(([ABCD])\) (.*)$", prompt, flags=re.M))


def true_value(value: str) -> Callable[[ModelRequest], str]:
    """A screen that always picks the option whose text is ``value``, wherever it is shown."""
    return lambda request: next(k for k, v in displayed_options(request).items() if v == value)


async def screen(tmp_path: Path, client: Any, candidate: Candidate, spec: ScreenSpec, **kw: Any) -> ScreenResult:
    async def body(ctx: EpisodeContext) -> ScreenResult:
        return await screen_candidate(ctx, candidate, spec, role=spec.role, **kw)

    return await in_episode(tmp_path, body, ScreenResult, **{spec.role: client})


# --- the screen spec -----------------------------------------------------------------------------------------


def test_screen_spec_forms():
    gold = parse_screen_spec("gold")
    assert (gold.name, gold.spec, gold.temperature, gold.max_tokens, gold.reasoning_effort) == (
        "gold",
        "gold",
        None,
        None,
        None,
    )
    assert gold.role == "screen:gold"
    url = parse_screen_spec(" http://127.0.0.1:8000/v1#m , temperature=0.7 ")
    assert (url.spec, url.temperature, url.name) == (
        "http://127.0.0.1:8000/v1#m",
        0.7,
        "http://127.0.0.1:8000/v1#m,temperature=0.7",
    )
    full = parse_screen_spec("openai:gpt-x,reasoning_effort=medium,max_tokens=64,name=strong")
    assert (full.name, full.spec, full.max_tokens, full.reasoning_effort) == ("strong", "openai:gpt-x", 64, "medium")
    options = full.options()
    assert (options.temperature, options.max_tokens, options.reasoning_effort) == (None, 64, "medium")
    assert full.settings() == {
        "model": "openai:gpt-x",
        "temperature": None,
        "max_tokens": 64,
        "reasoning_effort": "medium",
    }
    # Default names list the options in a fixed order, and never show a password.
    named = parse_screen_spec("http://u:secret@h/v1#m,max_tokens=5,temperature=0")
    assert named.name == "http://u:***@h/v1#m,temperature=0.0,max_tokens=5"
    assert "secret" not in json.dumps(named.record())
    assert named.spec == "http://u:secret@h/v1#m"  # the client needs the real one


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "give a model spec first"),
        (",temperature=1", "give a model spec first"),
        ("gold,temp=1", "'temp=1' is not one of temperature=..."),
        ("gold,temperature", "'temperature' is not one of"),
        ("gold,temperature=1,temperature=2", "temperature is given twice"),
        ("gold,temperature=-1", "expected a finite number >= 0"),
        ("gold,temperature=nan", "expected a finite number >= 0"),
        ("gold,temperature=warm", "expected a number"),
        ("gold,max_tokens=0", "expected an integer >= 1"),
        ("gold,max_tokens=1.5", "expected an integer >= 1"),
        ("gold,reasoning_effort=High", "expected a lower-case word"),
        ("gold,name=a b", "a name has no spaces or commas"),
    ],
)
def test_screen_spec_errors(text: str, message: str):
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_screen_spec(text)


def test_screen_names_must_differ_and_replay_cannot_screen():
    with pytest.raises(UsageError, match="two screens are named 'gold'"):
        check_screen_names([parse_screen_spec("gold"), parse_screen_spec("gold")])
    check_screen_names([parse_screen_spec("gold"), parse_screen_spec("gold,name=g2")])
    with pytest.raises(UsageError, match="replay:PATH cannot answer a screen"):
        parse_screen_spec("replay:x.jsonl").client()
    assert isinstance(parse_screen_spec("gold").client(), GoldClient)


# --- screen calls ----------------------------------------------------------------------------------------------


async def test_always_a_screen_two_of_three_is_too_easy(tmp_path):
    # Answer D; seeds 1, 2, 3 show D, B, D first: "A" is right in calls 1 and 3 -> 2 of 3 -> too_easy.
    client = reply("A")
    result = await screen(tmp_path, client, cand(answer="D"), parse_screen_spec("gold,name=s"), seeds=[1, 2, 3])
    assert ["".join(c.permutation) for c in result.calls] == [ORDERS[1], ORDERS[2], ORDERS[3]]
    assert [(c.seed, c.displayed, c.chosen, c.correct) for c in result.calls] == [
        (1, "A", "D", True),
        (2, "A", "B", False),
        (3, "A", "D", True),
    ]
    assert (result.passed, result.correct, result.reason, result.detail) == (
        False,
        2,
        "too_easy",
        "2 of 3 calls correct",
    )
    assert result.screen == "s" and result.fixed_order is False
    # The screen saw the options in each call's order, and nothing else of the candidate.
    first = client.requests[0]
    assert displayed_options(first) == {"A": "0.4", "B": "0.1", "C": "0.3", "D": "0.2"}
    assert len(first.messages) == 1 and first.tools == []
    assert "ANSWER" not in (first.messages[0].content or "") and "print" not in (first.messages[0].content or "")


async def test_always_a_screen_one_of_three_passes(tmp_path):
    # Seeds 1, 2, 5 show D, B, A first: one right call -> passes (1 of 3).
    result = await screen(tmp_path, reply("A"), cand(answer="D"), parse_screen_spec("gold,name=s"), seeds=[1, 2, 5])
    assert [c.correct for c in result.calls] == [True, False, False]
    assert (result.passed, result.correct, result.reason) == (True, 1, None)
    # Seeds 2, 4, 5 show B, C, A first: none right.
    result = await screen(
        tmp_path / "b", reply("A"), cand(answer="D"), parse_screen_spec("gold,name=s"), seeds=[2, 4, 5]
    )
    assert (result.passed, result.correct) == (True, 0)


async def test_true_value_screen_is_right_under_every_order(tmp_path):
    candidate = cand(answer="C", options=["1.5", "2.5", "3.5", "4.5"])
    result = await screen(tmp_path, reply(true_value("3.5")), candidate, parse_screen_spec("gold,name=t"))
    assert (result.passed, result.correct, result.reason) == (False, 3, "too_easy")
    assert all(c.chosen == "C" and c.seed is not None for c in result.calls)
    # Each call drew its own seed, and its permutation is the one that seed gives.
    assert len({c.seed for c in result.calls}) == 3
    assert all(c.permutation == permutation_from_seed(c.seed) for c in result.calls if c.seed is not None)


async def test_unparsable_replies_count_as_wrong(tmp_path):
    replies = iter(["A or B", "", "c"])
    client = reply(lambda request: next(replies))
    result = await screen(tmp_path, client, cand(answer="D"), parse_screen_spec("gold,name=s"), seeds=[1, 1, 1])
    # Seed 1 shows D first, so "A" would have been right each time; none of these replies names one letter.
    assert [(c.reason, c.displayed, c.chosen, c.correct) for c in result.calls] == [
        ("unparsable", None, None, False)
    ] * 3
    assert [c.detail for c in result.calls] == [
        "the reply names several letters: A, B",
        "the reply names no letter A-D",
        "the reply names no letter A-D",
    ]
    assert (result.passed, result.correct) == (True, 0)


async def test_fixed_order_shows_the_original_order(tmp_path):
    result = await screen(tmp_path, reply("A"), cand(answer="A"), parse_screen_spec("gold,name=s"), fixed_order=True)
    assert [("".join(c.permutation), c.seed) for c in result.calls] == [("ABCD", None)] * 3
    assert (result.passed, result.correct, result.fixed_order) == (False, 3, True)
    other = await screen(
        tmp_path / "b", reply("A"), cand(answer="B"), parse_screen_spec("gold,name=s"), fixed_order=True
    )
    assert (other.passed, other.correct) == (True, 0)


async def test_gold_screen_names_the_right_displayed_letter(tmp_path):
    spec = parse_screen_spec("gold")
    result = await screen(tmp_path, spec.client(), cand(answer="B"), spec, seeds=[1, 2, 4])
    # B is shown at D (seed 1: D A C B), at A (seed 2: B C D A) and at D (seed 4: C A D B).
    assert [c.displayed for c in result.calls] == ["D", "A", "D"]
    assert (result.correct, result.reason) == (3, "too_easy")


async def test_screen_options_and_settings_reach_the_request_and_the_record(tmp_path):
    client = reply("B")
    spec = parse_screen_spec("gold,temperature=0.5,max_tokens=8,reasoning_effort=low,name=s")
    result = await screen(tmp_path, client, cand(), spec, seeds=[1, 2, 3])
    options = client.requests[0].options
    assert (options.temperature, options.max_tokens, options.reasoning_effort) == (0.5, 8, "low")
    assert result.settings == {"model": "gold", "temperature": 0.5, "max_tokens": 8, "reasoning_effort": "low"}


async def test_screen_needs_three_seeds_and_a_failing_model_gives_no_verdict(tmp_path):
    with pytest.raises(AssertionError, match="give 3 seeds, not 2"):
        await screen(tmp_path, reply("A"), cand(), parse_screen_spec("gold,name=s"), seeds=[1, 2])

    async def body(ctx: EpisodeContext) -> ScreenResult:
        return await screen_candidate(ctx, cand(), parse_screen_spec("gold,name=s"), role="screen:s")

    with pytest.raises(AssertionError, match="the script has 1 outputs"):
        await in_episode(tmp_path / "b", body, ScreenResult, **{"screen:s": ScriptedClient(["A"])})


def test_reasoning_effort_is_sent_only_when_set_and_keeps_old_cache_keys():
    from toolgauge.engine.cache import request_hash
    from toolgauge.records import GenerateOptions, Message

    plain = ModelRequest(messages=[Message(role="user", content="hi")])
    assert "reasoning_effort" not in plain.cache_payload()["options"]
    assert plain.cache_payload()["options"] == {
        "temperature": 0.0,
        "max_tokens": 512,
        "tool_choice": None,
        "seed": None,
    }
    effort = plain.model_copy(update={"options": GenerateOptions(reasoning_effort="high")})
    assert effort.cache_payload()["options"]["reasoning_effort"] == "high"
    assert request_hash("m", plain) != request_hash("m", effort)


# --- the solver ------------------------------------------------------------------------------------------------


def submit(letter: str, call_id: str = "s1") -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit_answer", "arguments": {"answer": letter}, "id": call_id}]}


def run_code(*codes: str) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "run_python", "arguments": {"code": c}, "id": f"r{i}"} for i, c in enumerate(codes)]
    }


async def solve(tmp_path: Path, client: Any, candidate: Candidate, **kw: Any) -> SolveResult:
    kw.setdefault("time_limit", 60.0)
    if detect_sandbox() != "bwrap":
        kw.setdefault("kind", "rlimits")  # never used by these scripts unless they run code (those need bwrap)

    async def body(ctx: EpisodeContext) -> SolveResult:
        return await solve_candidate(ctx, candidate, **kw)

    return await in_episode(tmp_path, body, SolveResult, solver=client)


async def test_solver_submitting_the_proposed_letter_solves_it(tmp_path):
    client = ScriptedClient([submit("D")], record_requests=True)
    result = await solve(tmp_path, client, cand(answer="D"), kind="bwrap")
    assert (result.solved, result.answer, result.reason, result.time_limit) == (True, "D", None, 60.0)
    transcript = ToolTranscript.model_validate(result.transcript)
    assert transcript.stopped == "tool" and transcript.steps[0].result.text == "Submitted D."
    request = client.requests[0]
    # Exactly the two tools; the solver sees the question and the options, never the answer or the solution.
    assert [t.name for t in request.tools] == ["run_python", "submit_answer"]
    assert request.tools[1].parameters["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]
    text = "\n".join(m.content or "" for m in request.messages)
    assert "(A) 0.1\n(B) 0.2\n(C) 0.3\n(D) 0.4" in text and "Which value" in text
    assert "ANSWER: D" not in text and "proposed" not in text
    assert request.options.temperature is None and request.options.max_tokens is None


async def test_solver_wrong_letter_is_flagged(tmp_path):
    result = await solve(tmp_path, ScriptedClient([submit("A")]), cand(answer="D"), kind="bwrap")
    assert (result.solved, result.answer, result.reason, result.detail) == (
        False,
        "A",
        "wrong_answer",
        "submitted A, proposed D",
    )


async def test_bad_letters_are_refused_and_only_the_first_submission_counts(tmp_path):
    # Turn 1: "E" and "d" are refused (the episode goes on); turn 2: B then D in one turn -> B counts, D is refused.
    script = [
        {"tool_calls": [{"name": "submit_answer", "arguments": {"answer": "E"}, "id": "a"},
                        {"name": "submit_answer", "arguments": {"answer": "d"}, "id": "b"}]},
        {"tool_calls": [{"name": "submit_answer", "arguments": {"answer": " B "}, "id": "c"},
                        {"name": "submit_answer", "arguments": {"answer": "D"}, "id": "d"}]},
    ]  # fmt: skip
    result = await solve(tmp_path, ScriptedClient(script), cand(answer="D"), kind="bwrap")
    assert (result.answer, result.reason) == ("B", "wrong_answer")
    texts = [s.result.text for s in ToolTranscript.model_validate(result.transcript).steps]
    assert texts == [
        'Error: answer must be one of "A", "B", "C", "D", got \'E\'.',
        'Error: answer must be one of "A", "B", "C", "D", got \'d\'.',
        "Submitted B.",
        "Error: an answer (B) was already submitted.",
    ]


async def test_no_submission_is_no_answer(tmp_path):
    result = await solve(tmp_path, ScriptedClient(["I think it is D."]), cand(), kind="bwrap")
    assert (result.solved, result.answer, result.reason) == (False, None, "no_answer")
    assert result.detail == "the solver replied without submitting: 'I think it is D.'"
    unknown = {"tool_calls": [{"name": "read_file", "arguments": {}, "id": "x"}]}
    result = await solve(tmp_path / "b", ScriptedClient([unknown] * 3), cand(), kind="bwrap", max_steps=3)
    assert (result.reason, result.detail) == ("no_answer", "no submission within 3 model calls")
    steps = ToolTranscript.model_validate(result.transcript).steps
    assert [s.result.failure for s in steps] == ["unknown_tool"] * 3


async def test_time_limit_ends_the_solve_during_a_model_call(tmp_path):
    slow = ScriptedClient([submit("D")], delay=600.0)
    result = await solve(tmp_path, slow, cand(answer="D"), kind="bwrap", time_limit=0.3)
    assert (result.solved, result.reason, result.answer) == (False, "timeout", None)
    assert result.detail == "time limit of 0.3 s reached without a submission (0 tool calls)"
    assert result.seconds is not None and 0.3 <= result.seconds < 60  # the solve did not wait for the model's reply
    transcript = ToolTranscript.model_validate(result.transcript)
    assert transcript.model_error == "the solve's time limit of 0.3 s was reached"


async def test_a_failing_solver_model_gives_no_verdict(tmp_path):
    async def body(ctx: EpisodeContext) -> SolveResult:
        return await solve_candidate(ctx, cand(), time_limit=30, kind="bwrap")

    with pytest.raises(AssertionError, match="the solver's model failed"):
        await in_episode(tmp_path, body, SolveResult, solver=ScriptedClient(outputs=[]))


def test_workspace_submit_writes_the_single_answer_file(tmp_path):
    workspace = SolverWorkspace(tmp_path, deadline=float("inf"), call_time_limit=1.0, kind="bwrap")
    first = workspace.submit("C")
    assert (first.text, first.stop, first.is_error) == ("Submitted C.", True, False)
    assert (tmp_path / ANSWER_FILE).read_text() == "C\n"
    again = workspace.submit("A")
    assert again.is_error and again.stop and (tmp_path / ANSWER_FILE).read_text() == "C\n"
    assert workspace.answer == "C"
    late = asyncio.run(workspace.run_python("print(1)"))
    assert late.is_error and late.stop and "submitted" in late.text
    assert workspace.runs == 0
    expired = SolverWorkspace(tmp_path / "x", deadline=0.0, call_time_limit=1.0, kind="bwrap")
    out = asyncio.run(expired.call(ToolCall(name="run_python", arguments={"code": "print(1)"})))
    assert (out.failure, out.stop) == ("time limit", True)
    bad = asyncio.run(expired.call(ToolCall(name="run_python", arguments={"code": 3})))
    assert bad.is_error and "run_python needs" in bad.text
    assert asyncio.run(expired.call(ToolCall(name="write_file", arguments={}))).failure == "unknown_tool"


def test_run_reply_fits_the_tool_output_limit():
    small = json.loads(run_reply("hi\n", "", 0))
    assert small == {"stdout": "hi\n", "stderr": "", "exit_code": 0}
    huge = run_reply("o" * 50_000, "e" * 50_000 + "Traceback end", 1)
    assert len(huge) <= MAX_TOOL_OUTPUT_CHARS
    data = json.loads(huge)
    assert data["stdout"].startswith("ooo") and "[... " in data["stdout"] and "characters cut]" in data["stdout"]
    assert data["stderr"].endswith("Traceback end") and data["stderr"].startswith("[... ")
    assert data["exit_code"] == 1
    # Escaped characters take six times their length in JSON: the budget shrinks until it fits.
    escaped = run_reply("\x01" * 20_000, "\x02" * 20_000, None)
    assert len(escaped) <= MAX_TOOL_OUTPUT_CHARS and json.loads(escaped)["exit_code"] is None
    # A short stderr is kept whole; stdout takes the rest.
    mixed = json.loads(run_reply("x" * 10_000, "short error", 2))
    assert mixed["stderr"] == "short error" and len(mixed["stdout"]) > 3000


@needs_bwrap
async def test_run_python_runs_scripts_in_the_sandbox(tmp_path):
    codes = [
        "import json\nprint(__name__)\nprint(json.load(open('question.json')))",
        "raise SystemExit('boom')",
        "print('x' * 20000)",
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
    ]
    # Scripts that end on their own get a per-call limit far above a sandbox's start; the sleeper gets its own solve,
    # with a short one it sleeps far past.
    script = [run_code(*codes), submit("D")]
    result = await solve(tmp_path / "a", ScriptedClient(script), cand(answer="D"), time_limit=600, call_time_limit=60)
    assert result.solved
    steps = ToolTranscript.model_validate(result.transcript).steps
    replies = [json.loads(s.result.text) for s in steps[:4]]
    sleeping = [run_code("import time\ntime.sleep(600)"), submit("D")]
    slept = await solve(tmp_path / "b", ScriptedClient(sleeping), cand(answer="D"), time_limit=600, call_time_limit=1.0)
    assert slept.solved
    slept_steps = ToolTranscript.model_validate(slept.transcript).steps
    replies.append(json.loads(slept_steps[0].result.text))
    assert all(set(r) == {"stdout", "stderr", "exit_code"} for r in replies)
    main, crash, flood, network, sleeper = replies
    # __main__, and question.json holds the question and the options only.
    assert main["exit_code"] == 0
    assert main["stdout"].splitlines() == [
        "__main__",
        "{'question': 'Which value does the computation give?', 'options': ['0.1', '0.2', '0.3', '0.4']}",
    ]
    assert (crash["exit_code"], crash["stderr"].strip()) == (1, "boom")
    assert flood["exit_code"] == 0 and "characters cut]" in flood["stdout"] and len(steps[2].result.text) <= 4000
    assert sleeper["exit_code"] is None and "[stopped: timed out after 1 s (wall clock)]" in sleeper["stderr"]
    assert network["exit_code"] == 1 and "Network is unreachable" in network["stderr"]
    assert steps[4].result.text == "Submitted D." and slept_steps[1].result.text == "Submitted D."


# --- the pool: scoring ---------------------------------------------------------------------------------------

OK = VerifyResult(passed=True, selected="D", answer="0.4", exit_code=0, seconds=0.5, time_limit=300)


def screen_result(name: str, correct: int) -> ScreenResult:
    calls = [
        ScreenCall(seed=i, permutation=list("ABCD"), reply="D", displayed="D", chosen="D", correct=i < correct)
        for i in range(3)
    ]
    return ScreenResult(
        screen=name,
        passed=correct < 2,
        correct=correct,
        calls=calls,
        reason=None if correct < 2 else "too_easy",
    )


def hand_built() -> list[tuple[str, RecordedCandidate | None, str | None]]:
    crashed = VerifyResult(passed=False, reason="crashed", detail="exit code 1", exit_code=1)
    return [
        ("a", RecordedCandidate(candidate=cand("a", question="qa"), outcome=decide(
            "a", verify=OK, screens=[screen_result("s1", 1)], solve=SolveResult(solved=True, answer="D"))), None),
        ("b", RecordedCandidate(candidate=cand("b", question="qb"), outcome=decide("b", verify=crashed)), None),
        ("c", RecordedCandidate(candidate=cand("c", question="qc"), outcome=decide(
            "c", verify=OK, screens=[screen_result("s1", 2)])), None),
        ("d", RecordedCandidate(candidate=cand("d", question="qd"), outcome=decide(
            "d", verify=OK, screens=[screen_result("s1", 0)],
            solve=SolveResult(solved=False, answer="A", reason="wrong_answer", transcript={"turns": []}))), None),
        ("e", None, "model_error: boom"),
    ]  # fmt: skip


def test_score_records_counts_funnel_reasons_and_document():
    scored = score_records("toolgate", {"gates": ["verify", "screens", "solve"]}, hand_built())
    results = scored.results
    # a accepted, b rejected by verify, c by screen s1, d flagged; e has no verdict.
    value = results.value
    assert [value(n) for n in ("attempts", "accepted", "rejected", "flagged", "passed", "errors")] == [4, 1, 2, 1, 0, 1]
    assert value("survival_rate") == 2 / 4 and value("acceptance_rate") == 1 / 4
    reasons = {m.group: (m.value, m.n) for m in results.metrics if m.by == "reason"}
    assert reasons == {
        "verified crashed": (1, 4),
        "screen:s1 too_easy": (1, 3),
        "solved wrong_answer": (1, 2),
        "unique exact_duplicate": (0, 1),
    }
    funnel = {m.group: m.value for m in results.metrics if m.by == "funnel"}
    assert funnel == {"verified": 3, "screen:s1": 2, "solved": 1, "unique": 1}
    assert results.value("middle_value_share") == 0.0  # every answer is D = 0.4, the largest value
    document = document_of(results)
    assert set(document) == {"candidates", "counts"}
    assert document["counts"] == {
        "total": 4, "accepted": 1, "rejected": 2, "flagged": 1, "passed": 0,
        "rejected_by_format": 0, "rejected_by_verify": 1, "rejected_by_screen": 1, "errors": 1,
    }  # fmt: skip
    by_id = {c["id"]: c for c in document["candidates"]}
    assert set(by_id) == {"a", "b", "c", "d"}
    assert set(by_id["b"]["gates"]) == {"verify"} and by_id["b"]["rejected_by"] == "verify"
    assert set(by_id["c"]["gates"]) == {"verify", "screens"} and by_id["c"]["reason"] == "too_easy"
    assert "transcript" not in by_id["d"]["gates"]["solve"] and by_id["d"]["outcome"] == "flagged"
    assert results.details["errors"] == [{"id": "e", "error": "model_error: boom"}]
    assert results.warnings == [
        "1 candidates have no verdict (their episode failed; resume the run to try them again); "
        "first (e): model_error: boom"
    ]
    rows = {s.id: s for s in scored.samples}
    assert rows["a"].value == 1.0 and rows["a"].scores == {
        "outcome": "accepted", "rejected_by": None, "reason": None, "verified": True, "screen:s1": 1, "solved": True,
        "survival_rate": 1.0, "acceptance_rate": 1.0,
    }  # fmt: skip
    assert rows["c"].value == 0.0 and rows["c"].explanation == "rejected: too_easy"
    assert rows["e"].value is None and rows["e"].error == "model_error: boom"
    assert rows["d"].metadata["topic"] == "t"


def test_score_without_the_solve_gate_has_no_acceptance_rate_and_empty_runs_score():
    scored = score_records("toolgate", {"gates": ["screens"]}, [])
    assert scored.results.value("acceptance_rate") is None and scored.results.metric("acceptance_rate") is None
    assert scored.results.value("survival_rate") is None
    assert document_of(scored.results)["counts"]["total"] == 0
    assert document_of(scored.results.without_scores())["candidates"] == []


def test_pool_settings_are_checked():
    with pytest.raises(ValueError, match="at least one screen"):
        PoolSettings(command="screen", gates=("screens",))
    with pytest.raises(ValueError, match="needs a solver"):
        PoolSettings(command="solve", gates=("solve",))
    with pytest.raises(ValueError, match="gates must be some of"):
        PoolSettings(command="check", gates=())


# --- the pool: the episode through the real driver -----------------------------------------------------------

EASY, HARD, FLAG, BROKEN = "Easy question?", "Hard question?", "Flagged question?", "Broken question?"


def pool() -> list[Candidate]:
    good = 'print("ANSWER: 0.4")\n'
    return [
        cand("broken", question=BROKEN, solution='print("ANSWER: C")\n'),  # selects C, proposed D: mismatch
        cand("easy", question=EASY, solution=good),
        cand("hard", question=HARD, solution=good),
        cand("flag", question=FLAG, solution=good),
    ]


def question_of(request: ModelRequest) -> str:
    return next(q for q in (EASY, HARD, FLAG, BROKEN) if q in "\n".join(m.content or "" for m in request.messages))


def knows_easy(request: ModelRequest) -> str:
    """Screen 1: knows the easy question's value; says it cannot tell otherwise (unparsable)."""
    return true_value("0.4")(request) if question_of(request) == EASY else "I cannot tell."


def solver_policy(request: ModelRequest) -> AssistantTurn:
    letter = "A" if question_of(request) == FLAG else "D"
    return AssistantTurn(tool_calls=[ToolCall(name="submit_answer", arguments={"answer": letter}, id="s")])


async def run_pool(tmp_path: Path, settings: PoolSettings, candidates: list[Candidate]) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)  # toolgauge makes no folder for a named store
    # The options the run is stored with (not validated: these tests' solver answers as "gold", which --solver refuses).
    options = ToolgateOptions.model_construct(
        candidates=Path("test"), command=settings.command, gates=list(settings.gates), screen=settings.screens,
        solver=settings.solver, time_limit=settings.time_limit, fixed_order=settings.fixed_order,
        all_screens=settings.all_screens, seed=settings.seed, solver_steps=settings.solver_steps,
        domain_checks=settings.domain_checks,
    )  # fmt: skip
    bench = PoolBenchmark.of(candidates, settings, source="test", options=options)
    roles: dict[str, Any] = {s.role: reply(knows_easy if s.name == "s1" else "Z") for s in settings.screens}
    roles["solver"] = ScriptedClient(policy=solver_policy)
    result = await run_benchmark(
        bench,
        "pool",
        RunOptions(store_url=f"sqlite:///{tmp_path / 'runs.db'}", engine=EngineConfig(show_progress=False)),
        client=NoModel("pool"),
        roles=roles,
    )
    return {c["id"]: c for c in document_of(result.scored.results)["candidates"]}


@needs_bwrap
async def test_check_runs_the_gates_cheapest_first_and_stops_at_the_first_rejection(tmp_path):
    screens = (parse_screen_spec("gold,name=s1"), parse_screen_spec("gold,name=s2"))
    settings = PoolSettings(
        command="check", gates=("verify", "screens", "solve"), screens=screens,
        solver=parse_screen_spec("gold,name=solver"), time_limit=30,
    )  # fmt: skip
    out = await run_pool(tmp_path, settings, pool())
    broken, easy, hard, flag = out["broken"], out["easy"], out["hard"], out["flag"]
    assert (broken["outcome"], broken["rejected_by"], broken["reason"]) == ("rejected", "verify", "mismatch")
    assert set(broken["gates"]) == {"verify"} and broken["gates"]["verify"]["selected"] == "C"
    # s1 knows the easy one: rejected there, so s2 and the solver never saw it.
    assert (easy["outcome"], easy["rejected_by"], easy["reason"]) == ("rejected", "screen", "too_easy")
    assert [s["screen"] for s in easy["gates"]["screens"]] == ["s1"] and "solve" not in easy["gates"]
    assert (hard["outcome"], hard["gates"]["solve"]["answer"]) == ("accepted", "D")
    assert [(s["screen"], s["correct"]) for s in hard["gates"]["screens"]] == [("s1", 0), ("s2", 0)]
    assert (flag["outcome"], flag["reason"], flag["gates"]["solve"]["answer"]) == ("flagged", "wrong_answer", "A")


@needs_bwrap
async def test_all_screens_runs_every_screen_and_a_screen_gate_skips_verification(tmp_path):
    screens = (parse_screen_spec("gold,name=s1"), parse_screen_spec("gold,name=s2"))
    settings = PoolSettings(command="screen", gates=("screens",), screens=screens, all_screens=True)
    out = await run_pool(tmp_path, settings, pool())
    # No verification: the broken one is screened like the others (s1 cannot tell) and passes.
    assert out["broken"]["outcome"] == "passed" and set(out["broken"]["gates"]) == {"screens"}
    assert [s["screen"] for s in out["easy"]["gates"]["screens"]] == ["s1", "s2"]
    assert out["easy"]["outcome"] == "rejected"
    assert all(out[c]["outcome"] == "passed" for c in ("hard", "flag"))
    # Reproducible seeds: --seed derives each call's seed from (seed, candidate, screen, call).
    seeded = PoolSettings(command="screen", gates=("screens",), screens=screens[:1], seed=7)
    first = await run_pool(tmp_path / "a", seeded, pool())
    second = await run_pool(tmp_path / "b", seeded, pool())
    seeds = [[c["seed"] for c in first[k]["gates"]["screens"][0]["calls"]] for k in first]
    assert seeds == [[c["seed"] for c in second[k]["gates"]["screens"][0]["calls"]] for k in second]


def test_toolgate_acceptance_from_candidates() -> None:
    # hand_built: the pool accepted, rejected twice, flagged, no verdict (the headline's units, as the other benchmarks'
    # in tests/cli/test_headline_units.py).
    from helpers.headline_units import assert_headline_reproduced
    from toolgauge.benchmarks.toolgate import SPEC as TOOLGATE
    from toolgauge.benchmarks.toolgate.protocol import score_records

    scored = score_records("toolgate", {"gates": ["verify", "screens", "solve"]}, hand_built())
    rows = scored.samples
    assert TOOLGATE.headline == ("acceptance_rate",)
    assert scored.results.value("acceptance_rate") == 1 / 4
    assert_headline_reproduced(scored.results, rows, [*TOOLGATE.headline, "survival_rate"])
    assert "acceptance_rate" not in rows[-1].scores  # the candidate without a verdict is in no rate
    # Without the solve gate there is no acceptance rate, and no candidate carries one.
    screens_only = score_records("toolgate", {"gates": ["verify", "screens"]}, hand_built())
    assert all("acceptance_rate" not in r.scores for r in screens_only.samples)
    assert_headline_reproduced(screens_only.results, screens_only.samples, ["survival_rate"])
