"""Gate 1, local verification: run a candidate's solution in the sandbox and check its one ``ANSWER:``.

The solution runs as ``python solution.py`` (``__name__ == "__main__"``) with the harness's interpreter, in a
fresh workdir holding only ``solution.py`` and ``question.json`` (the candidate without ``answer`` and
``solution``), under :mod:`toolgauge.sandbox`: no network, a read-only root, a private copy of the workdir,
a cleared environment (no secrets), rlimits, an unprivileged uid. The interpreter's prefixes are bound
read-only, so the domain's libraries installed there are importable and the harness's checkout is not.

Precedence: the wall clock exceeded -> ``timeout``; else a non-zero exit (or a sandbox limit that stopped it)
-> ``crashed`` with the exit code and last stderr lines, even if an ``ANSWER:`` was printed; else the
``ANSWER:`` rules of :mod:`toolgauge.benchmarks.toolgate.answers`. The CPU limit sits above the time limit
(times the cores), so a CPU-bound loop is a timeout. Without bubblewrap the run is refused (UsageError)
unless the sandbox's unsafe opt-out is in effect, as for any untrusted code.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from toolgauge.benchmarks.toolgate.answers import grade_answer
from toolgauge.benchmarks.toolgate.records import Candidate, Letter, VerifyReason, VerifyResult
from toolgauge.sandbox import (
    SandboxKind,
    SandboxLimits,
    SandboxResult,
    require_isolation,
    run_sandboxed,
    sandbox_python,
)

DEFAULT_TIME_LIMIT = 300.0
SOLUTION_FILE = "solution.py"
QUESTION_FILE = "question.json"
# Address space for scripts that import numpy, scipy, scikit-fem and Basix (they peak near 400 MB) with room
# for real meshes; processes and files as the sandbox's defaults.
DEFAULT_MEMORY_MB = 4096
STDERR_LINES = 10
TAIL_CHARS = 4000
# Extra CPU seconds above time limit x cores, so that the wall clock always fires first.
CPU_MARGIN_SECONDS = 10


class SandboxSetupError(RuntimeError):
    """The sandbox itself could not start (not the solution's fault): the gate has no verdict."""


def verify_limits(time_limit: float = DEFAULT_TIME_LIMIT, *, memory_mb: int = DEFAULT_MEMORY_MB) -> SandboxLimits:
    """The sandbox limits of one gate-1 run: the wall clock is the time limit, the CPU limit sits above it.

    RLIMIT_CPU counts the CPU time of all threads of a process, so a BLAS-threaded script may use up to
    ``cores x wall`` seconds: the CPU limit is that plus a margin, and only the wall clock stops a slow script.
    """
    cores = os.cpu_count() or 1
    return SandboxLimits(
        wall_seconds=time_limit,
        cpu_seconds=math.ceil(time_limit * cores) + CPU_MARGIN_SECONDS,
        memory_mb=memory_mb,
    )


def _tail(text: str, chars: int = TAIL_CHARS) -> str:
    return text if len(text) <= chars else "..." + text[-chars:]


def last_lines(text: str, count: int = STDERR_LINES) -> str:
    """The last ``count`` non-blank lines of ``text``, joined by newlines."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-count:])


def judge(candidate: Candidate, result: SandboxResult, time_limit: float) -> VerifyResult:
    """Turn a finished sandbox run of the solution into the gate-1 record (pure).

    Raises:
        SandboxSetupError: the sandbox failed to start, so the solution never ran.
    """

    def record(
        reason: VerifyReason | None, detail: str | None, selected: Letter | None = None, answer: str | None = None
    ) -> VerifyResult:
        return VerifyResult(
            passed=reason is None,
            reason=reason,
            detail=detail,
            selected=selected,
            answer=answer,
            exit_code=result.returncode,
            seconds=round(result.seconds, 3),
            time_limit=time_limit,
            stdout_tail=_tail(result.stdout),
            stderr_tail=_tail(result.stderr),
        )

    if result.timed_out:
        return record("timeout", f"wall clock of {time_limit:g} s exceeded")
    if result.reason is not None and result.reason.startswith("sandbox failed to start"):
        raise SandboxSetupError(result.reason)
    if result.returncode != 0 or result.reason is not None:
        parts = [f"exit code {result.returncode}"]
        if result.reason:
            parts.append(result.reason)
        stderr = last_lines(result.stderr)
        return record("crashed", "; ".join(parts) + (f"\n{stderr}" if stderr else ""))
    reading = grade_answer(result.stdout, candidate.options, candidate.answer)
    return record(reading.reason, reading.detail, reading.selected, reading.answer)


def stage_workdir(candidate: Candidate, folder: Path) -> Path:
    """Write ``solution.py`` and ``question.json`` into ``folder`` (made readable for the sandbox's uid)."""
    folder.chmod(0o755)
    solution = folder / SOLUTION_FILE
    solution.write_text(candidate.solution, encoding="utf-8")
    question = folder / QUESTION_FILE
    question.write_text(json.dumps(candidate.public(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for path in (solution, question):
        path.chmod(0o644)
    return folder


async def verify_candidate(
    candidate: Candidate,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    limits: SandboxLimits | None = None,
    kind: SandboxKind | None = None,
) -> VerifyResult:
    """Run gate 1 on one candidate (async: several run side by side on one event loop).

    Args:
        candidate: the candidate; its solution runs untrusted.
        time_limit: the wall clock of the whole script, interpreter start and imports included (seconds).
        limits: the sandbox limits (default :func:`verify_limits` of ``time_limit``; its ``wall_seconds`` is
            then the time limit).
        kind: the sandbox kind; default the detected one, which must be bubblewrap unless the opt-out is given.

    Returns:
        The record; anything the solution does is a record, never an exception.

    Raises:
        UsageError: bubblewrap is unavailable and the unsafe opt-out is not in effect.
        SandboxSetupError: the sandbox could not start at all.
    """
    if kind is None:
        kind = require_isolation().kind
    limits = limits or verify_limits(time_limit)
    with tempfile.TemporaryDirectory(prefix="toolgauge-verify-") as tmp:
        workdir = stage_workdir(candidate, Path(tmp))
        result = await run_sandboxed([sandbox_python(), SOLUTION_FILE], workdir, limits, kind=kind)
    return judge(candidate, result, limits.wall_seconds)
