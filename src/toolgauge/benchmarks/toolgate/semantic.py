"""A domain's executable semantic check after gate 1, and the audit flags it leaves.

The paper's Limitations call for "an additional domain-specific executable gate". A domain may declare a check
script (``domain.json``: ``"semantic_check": {"name", "script"}``). After local verification passed, the script
runs in the sandbox like the solution (same limits, a fresh workdir holding ``solution.py``, ``question.json`` and
the script) and runs the solution under a perturbation that must not change which option is right: for ``fem``,
every scikit-fem mesh the solution builds is refined once. It prints the solution's ``ANSWER:`` as usual, and may
print ``TOOLGATE_FLAG <name>`` lines on stderr for what it could not check. :func:`judge_check` (pure) decides:

- the perturbed answer differs from the verified one by **less than the options' spacing** (the smallest gap
  between two option values): passed;
- by that spacing or more: failed, the candidate is rejected by ``verify`` with reason ``semantic_check``;
- the check could not decide (it crashed or timed out, printed no single answer, the answers or options are not
  numbers, or it flagged itself): passed, with audit flags (``check_failed``, ``no_answer``, ``not_numeric``, the
  script's own), which the record and ``gate export`` carry with the candidate.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from decimal import Decimal
from pathlib import Path

from toolgauge.benchmarks.toolgate.answers import parse_number, read_answer
from toolgauge.benchmarks.toolgate.domains import Domain
from toolgauge.benchmarks.toolgate.records import Candidate, SemanticResult, VerifyResult
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT, last_lines, stage_workdir, verify_limits
from toolgauge.sandbox import SandboxKind, SandboxResult, require_isolation, run_sandboxed, sandbox_python

FLAG_PREFIX = "TOOLGATE_FLAG "


def option_spacing(options: list[str]) -> Decimal | None:
    """The smallest gap between two of the option values (None unless all four are distinct numbers)."""
    values = [parse_number(option) for option in options]
    if any(v is None for v in values):
        return None
    ordered = sorted(v for v in values if v is not None)
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    return min(gaps) if gaps and min(gaps) > 0 else None


def judge_check(name: str, candidate: Candidate, verify: VerifyResult, result: SandboxResult) -> SemanticResult:
    """The check's record from its finished sandbox run (pure; see the module docstring)."""
    flags = [line[len(FLAG_PREFIX) :].strip() for line in result.stderr.splitlines() if line.startswith(FLAG_PREFIX)]
    seconds = round(result.seconds, 3)

    def undecided(flag: str | None, detail: str, answer: str | None = None) -> SemanticResult:
        return SemanticResult(check=name, passed=True, flags=[*flags, *([flag] if flag else [])], detail=detail,
                              answer=answer, seconds=seconds)  # fmt: skip

    if result.timed_out or result.returncode != 0 or result.reason is not None:
        why = "timed out" if result.timed_out else f"exit code {result.returncode}"
        stderr = last_lines(result.stderr, 3)
        return undecided("check_failed", f"the check run {why}" + (f": {stderr}" if stderr else ""))
    reading = read_answer(result.stdout, candidate.options)
    if reading.answer is None:
        return undecided("no_answer", reading.detail or "the check run printed no single ANSWER: line")
    before, after = parse_number(verify.answer or ""), parse_number(reading.answer)
    spacing = option_spacing(list(candidate.options))
    if before is None or after is None or spacing is None:
        return undecided("not_numeric", "the answers or the options are not all numbers", reading.answer)
    moved = abs(after - before)
    detail = f"answer {before} -> {after} (moved {moved}), options' spacing {spacing}"
    if flags:  # the script said it could not apply its perturbation: the comparison proves nothing
        return undecided(None, detail, reading.answer)
    if moved < spacing:
        return SemanticResult(check=name, passed=True, detail=detail, answer=reading.answer, seconds=seconds)
    return SemanticResult(check=name, passed=False, reason="semantic_check", detail=detail, answer=reading.answer,
                          seconds=seconds)  # fmt: skip


async def semantic_check_candidate(
    candidate: Candidate,
    verify: VerifyResult,
    domain: Domain,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    kind: SandboxKind | None = None,
) -> SemanticResult | None:
    """Run ``domain``'s semantic check on a verified candidate (None when the domain declares none).

    Raises:
        UsageError: bubblewrap is unavailable and the unsafe opt-out is not in effect.
    """
    check, script = domain.info.semantic_check, domain.semantic_script
    if check is None or script is None:
        return None
    if kind is None:
        kind = require_isolation().kind
    limits = verify_limits(time_limit)
    with tempfile.TemporaryDirectory(prefix="toolgauge-check-") as tmp:
        workdir = stage_workdir(candidate, Path(tmp))
        staged = workdir / check.script
        shutil.copyfile(script, staged)
        staged.chmod(0o644)
        result = await run_sandboxed([sandbox_python(), check.script], workdir, limits, kind=kind)
    return judge_check(check.name, candidate, verify, result)
