"""Gate 3, the tool-enabled solve: an agent with the domain's libraries must find the proposed option.

The solver (role ``solver``) works in a fresh workspace through the one tool loop
(:func:`toolgauge.tools.run_tool_loop`) against :class:`SolverWorkspace`, a ``ToolBackend`` with exactly two tools:

- ``run_python {"code": string}`` runs the code as a script (``__name__ == "__main__"``) in the sandbox, with
  the workspace as its working directory and the domain's libraries importable (the interpreter of gate 1).
  It returns JSON ``{"stdout", "stderr", "exit_code"}``; each stream is cut with a marker
  (``[... N characters cut]``) so that the whole reply fits the tool loop's limit. A run stopped by the
  per-call time limit or a sandbox limit has ``exit_code`` null and the cause at the end of ``stderr``.
- ``submit_answer {"answer": "A"|"B"|"C"|"D"}`` writes the single-answer file ``answer.txt`` and ends the
  episode (the backend's ``stop`` flag). Only the first submission counts.

The workspace holds ``question.json`` = ``{"question", "options"}``: the solver sees the question and the options
(in the candidate's own order) and nothing else. The whole solve, model calls included, has the time limit; one
``run_python`` call at most ``call_time_limit`` and never past the solve's end.

Verdict: the submitted letter is the proposed one -> solved (``accepted``); another letter -> ``wrong_answer``;
no submission -> ``no_answer``, or ``timeout`` when the time limit ended the episode (both ``flagged``, the
transcript kept). A model that fails for good, or a sandbox that cannot start, gives no verdict (the episode
raises).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate, Letter, SolveResult
from toolgauge.benchmarks.toolgate.verify import DEFAULT_MEMORY_MB, SandboxSetupError, verify_limits
from toolgauge.errors import ModelError
from toolgauge.records import GenerateOptions, Message, ToolCall, ToolSpec
from toolgauge.sandbox import SandboxKind, require_isolation, run_sandboxed, sandbox_python
from toolgauge.tools import MAX_TOOL_OUTPUT_CHARS, ToolCallOutcome, run_tool_loop
from toolgauge.tools.backend import unknown_tool
from toolgauge.tools.workspace import run_python_spec

if TYPE_CHECKING:
    from toolgauge.engine import EpisodeContext

ANSWER_FILE = "answer.txt"
QUESTION_FILE = "question.json"
DEFAULT_MAX_STEPS = 50
TIME_UP = "the solve's time limit"

RUN_PYTHON = run_python_spec(
    "Run Python code as a script in a sandbox (no network) with the scientific libraries installed and your "
    "workspace (holding question.json) as the working directory. Returns JSON with stdout, stderr and "
    "exit_code. Files it writes are not kept between calls.",
    code="The Python source to run as a script.",
)
SUBMIT_ANSWER = ToolSpec(
    name="submit_answer",
    description="Submit your final answer, the letter of one option, and end the task. Only one submission counts.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(LETTERS), "description": "A, B, C or D."}},
        "required": ["answer"],
    },
)


class SolveTimeUp(ModelError):
    """The solve's time limit ended the episode during (or before) a model call."""


def cut_head(text: str, limit: int) -> str:
    """Keep the first ``limit`` characters of ``text``, saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} characters cut]"


def cut_tail(text: str, limit: int) -> str:
    """Keep the last ``limit`` characters of ``text`` (where a traceback ends), saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters cut]\n{text[len(text) - limit :]}"


def run_reply(stdout: str, stderr: str, exit_code: int | None, *, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    """The JSON text of one ``run_python`` reply, each stream cut so that the text fits in ``limit`` characters.

    stdout keeps its beginning and stderr its end (where a traceback ends). stderr gets what it needs up to half
    the budget, more when stdout needs less; the budget shrinks until the JSON, escapes included, fits.
    """
    budget = limit
    while True:
        err_share = min(len(stderr), max(budget // 2, budget - len(stdout)))
        reply = {
            "stdout": cut_head(stdout, budget - err_share),
            "stderr": cut_tail(stderr, err_share),
            "exit_code": exit_code,
        }
        text = json.dumps(reply, ensure_ascii=False)
        if len(text) <= limit or budget == 0:
            return text
        budget = int(budget * 0.8)


def _refusal(text: str, failure: str | None = None, *, stop: bool = False) -> ToolCallOutcome:
    return ToolCallOutcome(text=text, is_error=True, failure=failure, stop=stop)


class SolverWorkspace:
    """The solver's ``ToolBackend``: ``run_python`` in the sandbox and ``submit_answer``, within a deadline.

    Attributes:
        folder: the workspace (it holds ``question.json``, and ``answer.txt`` once an answer is submitted).
        answer: the submitted letter (None until a valid submission).
        runs: how many ``run_python`` calls ran.
        setup_error: why the sandbox could not start (then the episode has no verdict).
    """

    def __init__(
        self,
        folder: Path,
        *,
        deadline: float,
        call_time_limit: float,
        memory_mb: int = DEFAULT_MEMORY_MB,
        kind: SandboxKind | None = None,
    ):
        self.folder = Path(folder)
        self.deadline = deadline
        self.call_time_limit = call_time_limit
        self.memory_mb = memory_mb
        self.kind = kind
        self.answer: Letter | None = None
        self.runs = 0
        self.setup_error: str | None = None

    def time_left(self) -> float:
        """Seconds until the solve's deadline (negative once past it)."""
        return self.deadline - time.monotonic()

    async def list_tools(self) -> list[ToolSpec]:
        """``run_python`` and ``submit_answer``."""
        return [RUN_PYTHON, SUBMIT_ANSWER]

    async def call(self, call: ToolCall) -> ToolCallOutcome:
        """Run ``run_python`` or ``submit_answer``; anything else is an unknown tool."""
        if call.name == SUBMIT_ANSWER.name:
            return self.submit(call.arguments.get("answer"))
        if call.name == RUN_PYTHON.name:
            code = call.arguments.get("code")
            if not isinstance(code, str):
                return ToolCallOutcome.error('Error: run_python needs {"code": "<python source>"}.')
            return await self.run_python(code)
        return unknown_tool(call.name, (RUN_PYTHON.name, SUBMIT_ANSWER.name))

    def submit(self, answer: object) -> ToolCallOutcome:
        """Write the single-answer file and end the episode; a second submission or a bad letter is refused."""
        if self.answer is not None:
            return _refusal(f"Error: an answer ({self.answer}) was already submitted.", stop=True)
        if not isinstance(answer, str) or answer.strip() not in LETTERS:
            return ToolCallOutcome.error(f'Error: answer must be one of "A", "B", "C", "D", got {answer!r}.')
        letter = cast(Letter, answer.strip())
        (self.folder / ANSWER_FILE).write_text(letter + "\n", encoding="utf-8")
        self.answer = letter
        return ToolCallOutcome(text=f"Submitted {letter}.", stop=True)

    async def run_python(self, code: str) -> ToolCallOutcome:
        """Run ``code`` as a script in the sandbox, for at most the per-call limit and the time left."""
        if self.answer is not None:
            return _refusal("Error: the answer is submitted; the task is over.", stop=True)
        left = self.time_left()
        if left <= 0:
            return _refusal("Error: the time limit of the task is reached.", "time limit", stop=True)
        wall = min(self.call_time_limit, left)
        limits = verify_limits(wall, memory_mb=self.memory_mb)
        run = await run_sandboxed([sandbox_python(), "-"], self.folder, limits, stdin=code.encode(), kind=self.kind)
        if run.reason is not None and run.reason.startswith("sandbox failed to start"):
            self.setup_error = run.reason
            return _refusal(f"Error: {run.reason}", "sandbox failed to start", stop=True)
        self.runs += 1
        stderr = run.stderr
        if run.reason is not None and not run.reason.startswith("exited with code"):
            # Killed by the wall clock or a sandbox limit: the cause goes at the end of stderr.
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + f"[stopped: {run.reason}]"
        exit_code = None if run.timed_out else run.returncode
        return ToolCallOutcome(text=run_reply(run.stdout, stderr, exit_code), seconds=run.seconds)


def solver_messages(candidate: Candidate, *, time_limit: float, call_time_limit: float) -> list[Message]:
    """The solver's opening messages: what it has, the rules, then the question and the options."""
    libraries = _libraries(candidate.domain)
    system = (
        "You solve one multiple-choice question that needs a scientific computation. You have two tools.\n"
        f"- run_python(code): runs your code as a Python script in a sandbox without network, with {libraries} "
        "installed. The working directory holds question.json (the question and the options). It returns JSON "
        f"with stdout, stderr and exit_code. One run may take at most {call_time_limit:g} s.\n"
        "- submit_answer(answer): submits the letter of your chosen option (A, B, C or D) and ends the task. "
        "Only one submission counts.\n"
        f"The whole task has a time limit of {time_limit:g} s. Compute the answer with the libraries rather "
        "than guessing, then submit it."
    )
    options = "\n".join(f"({letter}) {option}" for letter, option in zip(LETTERS, candidate.options, strict=True))
    user = f"{candidate.question.strip()}\n\n{options}"
    return [Message(role="system", content=system), Message(role="user", content=user)]


def _libraries(domain: str) -> str:
    from toolgauge.benchmarks.toolgate.domains import domain_names, get_domain

    if domain not in domain_names():
        return "numpy and scipy"
    names = list(get_domain(domain).info.modules.values())
    return ", ".join(names) + ", numpy and scipy"


def _stage(folder: Path, candidate: Candidate) -> None:
    folder.chmod(0o755)  # the sandbox's unprivileged uid reads it
    question = folder / QUESTION_FILE
    public = {"question": candidate.question, "options": list(candidate.options)}
    question.write_text(json.dumps(public, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    question.chmod(0o644)


def _no_answer_detail(stopped: str, final: str | None, steps: int, max_steps: int) -> str:
    if stopped == "answer":
        return f"the solver replied without submitting: {(final or '')[:200]!r}"
    if stopped == "max_steps":
        return f"no submission within {max_steps} model calls"
    return f"the episode ended without a submission ({stopped}, {steps} tool calls)"


async def solve_candidate(
    ctx: EpisodeContext,
    candidate: Candidate,
    *,
    time_limit: float,
    role: str = "solver",
    options: GenerateOptions | None = None,
    call_time_limit: float | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    kind: SandboxKind | None = None,
) -> SolveResult:
    """Run gate 3 on one candidate: the solver of ``role`` works with ``run_python`` and ``submit_answer``.

    Args:
        ctx: the episode's context (the solver's calls go through it, under ``role``).
        candidate: the candidate; the solver sees its question and options only.
        time_limit: seconds for the whole solve, model calls and runs included.
        role: the driver role holding the solver's client.
        options: the solver's request options (default: nothing sent, the server's defaults).
        call_time_limit: seconds for one ``run_python`` call (default: the time limit); never past the solve's end.
        max_steps: the most model calls of the episode.
        kind: the sandbox kind (default: the detected one, which must be bubblewrap unless the opt-out is given).

    Returns:
        The record, with the transcript.

    Raises:
        UsageError: bubblewrap is unavailable and the unsafe opt-out is not in effect.
        SandboxSetupError: the sandbox could not start (no verdict).
        ModelError: the solver's model failed for good (no verdict).
    """
    if kind is None:
        kind = require_isolation().kind
    per_call = min(call_time_limit or time_limit, time_limit)
    started = time.monotonic()
    deadline = started + time_limit
    opts = options or GenerateOptions(temperature=None, max_tokens=None)
    with tempfile.TemporaryDirectory(prefix="toolgauge-solve-") as tmp:
        folder = Path(tmp)
        _stage(folder, candidate)
        backend = SolverWorkspace(folder, deadline=deadline, call_time_limit=per_call, kind=kind)
        messages = solver_messages(candidate, time_limit=time_limit, call_time_limit=per_call)
        time_up = f"{TIME_UP} of {time_limit:g} s was reached"
        with ctx.deadline(deadline, lambda: SolveTimeUp(time_up)):
            transcript = await run_tool_loop(ctx, messages, backend, max_steps, role=role, options=opts)
        answer_file = folder / ANSWER_FILE
        submitted = answer_file.read_text(encoding="utf-8").strip() if answer_file.exists() else None
    seconds = round(time.monotonic() - started, 3)
    if backend.setup_error is not None:
        raise SandboxSetupError(backend.setup_error)
    timed_out = transcript.stopped == "model_error" and (transcript.model_error or "").startswith(TIME_UP)
    if transcript.stopped == "model_error" and not timed_out and submitted is None:
        raise ModelError(f"the solver's model failed: {transcript.model_error}")
    record: dict[str, Any] = {
        "answer": submitted if submitted in LETTERS else None,
        "seconds": seconds,
        "time_limit": time_limit,
        "transcript": transcript.model_dump(mode="json"),
    }
    if submitted is None:
        calls = len(transcript.steps)
        if timed_out or backend.time_left() <= 0:
            detail = f"time limit of {time_limit:g} s reached without a submission ({calls} tool calls)"
            return SolveResult(solved=False, reason="timeout", detail=detail, **record)
        detail = _no_answer_detail(transcript.stopped, transcript.final_answer, calls, max_steps)
        return SolveResult(solved=False, reason="no_answer", detail=detail, **record)
    if submitted != candidate.answer:
        detail = f"submitted {submitted}, proposed {candidate.answer}"
        return SolveResult(solved=False, reason="wrong_answer", detail=detail, **record)
    return SolveResult(solved=True, **record)
