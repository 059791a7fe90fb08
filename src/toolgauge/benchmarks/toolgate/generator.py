"""The generator (role ``generator``): a code agent that proposes one candidate per round.

It works in a fresh workspace folder through the one tool loop (:func:`toolgauge.tools.run_tool_loop`) with
:class:`toolgauge.tools.CodeWorkspace`'s two tools: ``write_file`` (only inside the folder) and ``run_python``
(in the sandbox, with the domain's libraries, the folder as working directory, the gate's time limit per run).
It must leave ``candidate.json`` (the candidate without ``solution``) and ``solution.py``; a reply without a
tool call ends its turn. What it left is read back (:func:`read_proposal`): the harness sets the candidate's
``id``, fills in a missing ``domain`` and takes the solution from ``solution.py``; then the candidate is checked
like any ``--candidates`` line (:func:`toolgauge.benchmarks.toolgate.loader.candidate_problem`). Anything wrong
is a proposal with a ``problem``, which the loop records as a ``malformed`` rejection.

The prompt (:func:`generator_messages`, pure) holds the domain guide, the domain's seed items, the outcome
counts of the earlier rounds, the 20 most recent records and a summary of the local-verification (and format)
failures that recurred, and asks it to change approach when a failure recurs and to build distractors from
realistic modelling or implementation errors. Only in-loop outcomes reach it (post-hoc rescreens and audits
never do), and its own executions are never evidence: the gates run everything again.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from toolgauge.benchmarks.toolgate.audit import answer_rank
from toolgauge.benchmarks.toolgate.loader import candidate_problem
from toolgauge.benchmarks.toolgate.records import Candidate, RecordedCandidate
from toolgauge.benchmarks.toolgate.verify import verify_limits
from toolgauge.jsonl import JsonProblem, parse_json
from toolgauge.records import GenerateOptions, Message
from toolgauge.tools import CodeWorkspace, run_tool_loop

if TYPE_CHECKING:
    from toolgauge.benchmarks.toolgate.domains import Domain
    from toolgauge.engine import EpisodeContext
    from toolgauge.sandbox import SandboxLimits

ROLE = "generator"
CANDIDATE_FILE = "candidate.json"
SOLUTION_FILE = "solution.py"
DEFAULT_MAX_STEPS = 30
RECENT_RECORDS = 20
# Past failures are "repeated" from their second occurrence on.
REPEATED_AT = 2
_REPEATED_SHOWN = 10
_QUESTION_SHOWN = 160
_DETAIL_SHOWN = 240
_RAW_KEPT = 20_000
_FINAL_KEPT = 2_000
_RANK_NAMES = ("smallest", "second smallest", "second largest", "largest")


# --- what the generator left ------------------------------------------------------------------------------


class GeneratorReport(BaseModel):
    """How the generator's episode went (its model calls are in the store's call log under role ``generator``).

    Attributes:
        model_steps: model calls that answered.
        tool_calls: tool calls it made (``write_file``, ``run_python``).
        stopped: why its tool loop ended: ``answer`` (a reply without tool calls), ``max_steps`` or
            ``model_error``.
        model_error: the error that ended it, when the model failed for good.
        final_answer: its last reply's text (cut), when it ended with one.
        files: the files it left in its workspace (top level, sorted).
        seconds: wall time of the episode.
    """

    model_steps: int = 0
    tool_calls: int = 0
    stopped: str = "answer"
    model_error: str | None = None
    final_answer: str | None = None
    files: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class Proposal(BaseModel):
    """The generator's proposal: a well-formed candidate, or what is wrong with what it left.

    Attributes:
        candidate: the candidate (``id`` set by the harness, solution from ``solution.py``); None when malformed.
        problem: for a malformed proposal, one line ``field: what is wrong`` (the ``malformed`` rejection's detail).
        raw: for a malformed proposal, the files as it left them (``candidate.json``, ``solution.py``; cut).
        generator: how its episode went.
    """

    candidate: Candidate | None = None
    problem: str | None = None
    raw: dict[str, Any] | None = None
    generator: GeneratorReport = Field(default_factory=GeneratorReport)

    @model_validator(mode="after")
    def _candidate_or_problem(self) -> Proposal:
        if (self.candidate is None) == (self.problem is None):
            raise ValueError("a proposal has a candidate or a problem, not both or neither")
        return self


def _read_file(folder: Path, name: str) -> str | None:
    path = folder / name
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


def read_proposal(
    folder: Path, *, domain: str, candidate_id: str
) -> tuple[Candidate | None, str | None, dict[str, Any]]:
    """Read ``candidate.json`` and ``solution.py`` from a generator's folder and check the candidate.

    The harness sets ``id`` to ``candidate_id`` (the generator's own id is dropped), fills in ``domain`` when it
    is missing (another domain is malformed) and sets ``solution`` to the text of ``solution.py`` (a
    ``solution`` field in ``candidate.json`` is ignored).

    Returns:
        ``(candidate, None, raw)`` when well-formed, else ``(None, problem, raw)``; ``raw`` holds the two files'
        texts as left (cut to 20,000 characters each; None when missing).
    """
    text = _read_file(folder, CANDIDATE_FILE)
    solution = _read_file(folder, SOLUTION_FILE)
    raw: dict[str, Any] = {CANDIDATE_FILE: _cut(text, _RAW_KEPT), SOLUTION_FILE: _cut(solution, _RAW_KEPT)}
    if text is None:
        return None, f"{CANDIDATE_FILE}: missing (the generator left no {CANDIDATE_FILE})", raw
    try:
        data = parse_json(text)
    except JsonProblem as problem:
        return None, f"{CANDIDATE_FILE}: {problem.message}", raw
    if not isinstance(data, dict):
        kind = "an array" if isinstance(data, list) else "a string" if isinstance(data, str) else "a scalar"
        return None, f"{CANDIDATE_FILE}: expected a JSON object (the candidate), got {kind}", raw
    data = dict(data)
    data["id"] = candidate_id
    data.setdefault("domain", domain)
    data.pop("solution", None)
    if solution is None:
        return None, f"solution: missing (the generator left no {SOLUTION_FILE})", raw
    data["solution"] = solution
    problem_line = candidate_problem(data, domain=domain)
    if problem_line is not None:
        return None, problem_line, raw
    return Candidate.model_validate(data), None, raw


# --- the prompt (pure) ------------------------------------------------------------------------------------


def _one_line(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def verdict(record: RecordedCandidate) -> str:
    """One record's outcome in words: ``accepted``, ``flagged (wrong_answer)``, ``rejected by verify: crashed``."""
    outcome = record.outcome
    if outcome.outcome == "rejected":
        return f"rejected by {outcome.rejected_by}: {outcome.reason}"
    if outcome.outcome == "flagged":
        return f"flagged: the tool-enabled solver did not solve it ({outcome.reason})"
    if outcome.outcome == "accepted":
        return "accepted: verified, not solved without tools, solved with tools"
    return outcome.outcome


def _rank_text(candidate: Candidate | None) -> str:
    rank = answer_rank(candidate) if candidate is not None else None
    return f"; proposed answer = the {_RANK_NAMES[rank]} value" if rank is not None else ""


def record_line(record: RecordedCandidate) -> str:
    """One past record as the generator sees it: id, topic, outcome, why, and the start of the question."""
    candidate = record.candidate
    topic = candidate.topic if candidate is not None else "?"
    lines = [f"- {record.outcome.id} [{topic}] {verdict(record)}{_rank_text(candidate)}"]
    detail = record.outcome.detail
    if detail and record.outcome.outcome != "accepted":
        lines.append(f"  why: {_one_line(detail, _DETAIL_SHOWN)}")
    if candidate is not None:
        lines.append(f"  question: {_one_line(candidate.question, _QUESTION_SHOWN)}")
    return "\n".join(lines)


def outcome_summary(records: Sequence[RecordedCandidate]) -> str:
    """The outcome counts so far, the verification failures by reason, and the proposed answers' ranks."""
    if not records:
        return "This is the first round: there are no earlier outcomes yet."
    outcomes = Counter(r.outcome.outcome for r in records)
    by_gate = Counter(r.outcome.rejected_by for r in records if r.outcome.rejected_by is not None)
    rejected = ", ".join(f"{gate} {by_gate[gate]}" for gate in ("format", "verify", "screen") if by_gate[gate])
    lines = [
        f"Outcomes of the {len(records)} earlier rounds: accepted {outcomes['accepted']}, "
        f"flagged {outcomes['flagged']}, rejected {outcomes['rejected']}" + (f" ({rejected})" if rejected else "") + "."
    ]
    reasons = Counter(
        r.outcome.reason for r in records if r.outcome.rejected_by == "verify" and r.outcome.reason is not None
    )
    if reasons:
        listed = ", ".join(f"{reason} {count}" for reason, count in reasons.most_common())
        lines.append(f"Local-verification failures by reason: {listed}.")
    ranks = Counter(
        rank
        for r in records
        if r.candidate is not None and r.outcome.rejected_by not in ("format", "verify")
        for rank in [answer_rank(r.candidate)]
        if rank is not None
    )
    if ranks:
        listed = ", ".join(f"{name} {ranks.get(i, 0)}" for i, name in enumerate(_RANK_NAMES))
        lines.append(f"Rank of the proposed answer among the four values (verified numeric items): {listed}.")
    return "\n".join(lines)


def failure_signature(record: RecordedCandidate) -> tuple[str, str] | None:
    """What makes two failures "the same" (gate and reason, plus the error line of a crash or a format problem).

    None for a record that did not fail at the format or the local verification.
    """
    outcome = record.outcome
    if outcome.rejected_by == "format":
        return "format: malformed", _one_line(outcome.detail, _DETAIL_SHOWN)
    if outcome.rejected_by == "verify":
        what = f"verify: {outcome.reason}"
        if outcome.reason == "crashed":
            return what, _one_line(_last_line(outcome.detail), _DETAIL_SHOWN)
        return what, ""
    return None


def repeated_failures(records: Sequence[RecordedCandidate]) -> str:
    """The format and local-verification failures that happened at least twice, most frequent first."""
    groups: dict[tuple[str, str], list[str]] = {}
    for record in records:
        signature = failure_signature(record)
        if signature is not None:
            groups.setdefault(signature, []).append(record.outcome.id)
    repeated = sorted(
        ((sig, ids) for sig, ids in groups.items() if len(ids) >= REPEATED_AT), key=lambda item: -len(item[1])
    )
    if not repeated:
        return "No format or local-verification failure has recurred."
    lines = ["These failures recurred; do not repeat them, change approach:"]
    for (what, line), ids in repeated[:_REPEATED_SHOWN]:
        shown = ", ".join(ids[-3:]) + (", ..." if len(ids) > 3 else "")
        lines.append(f"- {what}, {len(ids)} times (latest: {shown})" + (f": {line}" if line else ""))
    return "\n".join(lines)


def _seed_block(number: int, seed: Candidate) -> str:
    shown = {"question": seed.question, "options": seed.options, "answer": seed.answer, "meta": seed.meta}
    data = json.dumps(shown, ensure_ascii=False)
    return (
        f"### Seed item {number} ({seed.id})\n\n{CANDIDATE_FILE}:\n```json\n{data}\n```\n"
        f"{SOLUTION_FILE}:\n```python\n{seed.solution.rstrip()}\n```"
    )


def system_prompt(domain: Domain, guide: str, *, max_steps: int, time_limit: float) -> str:
    """The generator's instructions: the task, the tools, the two files, the rules, then the domain guide.

    The same for every round of a run (the round's own parts are in the user message), so that a server
    that caches prompt prefixes reuses it.
    """
    return f"""You are the generator of ToolGate, a pipeline that builds multiple-choice benchmark items that need \
scientific software to answer. Each round you propose one candidate item. Three gates then decide whether it is kept:
1. Local verification: your {SOLUTION_FILE} runs alone in a sandbox and must print exactly one ANSWER: line that \
selects your proposed option.
2. No-tool screens: models without tools see only the question and the options, shuffled; an item they answer \
correctly in two of three tries is rejected as too easy.
3. Tool-enabled solve: an agent with the libraries must solve it.

Your tools:
- write_file(path, content): write a file in your workspace folder.
- run_python(code): run Python in a sandbox (no network) with your folder as the working directory and the \
domain's libraries installed; each run has a wall clock of {time_limit:g} s.
You have at most {max_steps} replies. Files that run_python writes are not kept: write files with write_file.

Leave these two files in your workspace, then reply with a short message and no tool call to finish:
- {CANDIDATE_FILE}: {{"question": ..., "options": [four distinct strings], "answer": "A"|"B"|"C"|"D", \
"meta": {{"topic": ..., "libraries": [...], "distractor_errors": [...]}}}}. The id and the domain \
({domain.name}) are set for you.
- {SOLUTION_FILE}: a script that computes the answer from scratch and prints one line "ANSWER: <letter or value>".

Rules:
- Build every distractor from a realistic modelling or implementation error, computed by running the mistaken code.
- When a failure recurs in the records you are shown, change approach (another API, a smaller problem, another \
topic) instead of repeating it.
- Your own runs are not evidence: the solution is run again, alone, and only the gates decide.

{guide.strip()}
"""


def user_prompt(
    seeds: Sequence[Candidate], records: Sequence[RecordedCandidate], *, candidate_id: str, recent: int = RECENT_RECORDS
) -> str:
    """The round's message: the seed items, the outcome counts, the most recent records, the repeated failures."""
    parts: list[str] = []
    if seeds:
        parts.append("## Seed items written by experts (examples of good items; do not copy them)")
        parts += [_seed_block(i, seed) for i, seed in enumerate(seeds, 1)]
    parts.append("## Outcomes so far\n\n" + outcome_summary(records))
    latest = list(records)[-recent:]
    if latest:
        parts.append(
            f"## The {len(latest)} most recent records (oldest first)\n\n" + "\n".join(record_line(r) for r in latest)
        )
    parts.append("## Repeated failures\n\n" + repeated_failures(records))
    parts.append(
        f"## Your task\n\nPropose candidate {candidate_id}: write {CANDIDATE_FILE} and {SOLUTION_FILE}, check that "
        f"{SOLUTION_FILE} prints its one ANSWER: line, then finish with a short reply without tool calls."
    )
    return "\n\n".join(parts)


def generator_messages(
    domain: Domain,
    guide: str,
    seeds: Sequence[Candidate],
    records: Sequence[RecordedCandidate],
    *,
    candidate_id: str,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float = 300.0,
) -> list[Message]:
    """The generator's opening messages for one round (pure: the same inputs give the same messages)."""
    return [
        Message(
            role="system",
            content=system_prompt(domain, guide, max_steps=max_steps, time_limit=time_limit),
        ),
        Message(role="user", content=user_prompt(seeds, records, candidate_id=candidate_id)),
    ]


# --- the episode ------------------------------------------------------------------------------------------


async def run_generator(
    ctx: EpisodeContext,
    messages: Sequence[Message],
    *,
    domain: str,
    candidate_id: str,
    time_limit: float = 300.0,
    max_steps: int = DEFAULT_MAX_STEPS,
    options: GenerateOptions | None = None,
    role: str = ROLE,
    limits: SandboxLimits | None = None,
) -> Proposal:
    """Run the generator in a fresh workspace and read back what it left.

    Args:
        ctx: the round's episode context (the generator's calls go through the engine under ``role``).
        messages: its opening messages (:func:`generator_messages`).
        domain: the domain's name (a candidate of another domain is malformed).
        candidate_id: the id the harness gives the candidate.
        time_limit: the wall clock of each ``run_python`` (the gate's time limit).
        max_steps: at most this many model calls.
        options: sampling options of its calls.
        role: the engine role of its calls.
        limits: the sandbox limits of ``run_python`` (default: gate 1's limits for ``time_limit``).

    Returns:
        The proposal. A model that fails late may already have left both files: they are the proposal, and the
        error is kept in the report.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolgauge-generator-") as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o755)  # the sandbox's unprivileged uid reads the files run_python imports
        workspace = CodeWorkspace(folder, limits=limits or verify_limits(time_limit))
        transcript = await run_tool_loop(ctx, messages, workspace, max_steps, role=role, options=options)
        candidate, problem, raw = read_proposal(folder, domain=domain, candidate_id=candidate_id)
        files = sorted(p.name for p in folder.iterdir())
    report = GeneratorReport(
        model_steps=transcript.model_steps,
        tool_calls=len(transcript.steps),
        stopped=transcript.stopped,
        model_error=transcript.model_error,
        final_answer=_cut(transcript.final_answer, _FINAL_KEPT),
        files=files,
        seconds=round(time.perf_counter() - started, 3),
    )
    if problem is not None and transcript.model_error is not None:
        problem = f"{problem}; generator model error at step {transcript.model_steps}: {transcript.model_error}"
    if candidate is not None:
        return Proposal(candidate=candidate, generator=report)
    return Proposal(problem=problem, raw=raw, generator=report)
