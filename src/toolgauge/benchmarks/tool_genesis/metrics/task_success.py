"""Tool-Genesis L4 task success: judge ratings, per-server SR, and oracle normalisation.

Re-implements ``ExecuteTask._parse_judge_response`` / ``get_execute_task_result``
(``src/env_evaluation/execute_task.py``) and ``compute_oracle_sr``
(``scripts/experiment_journal/eval_oracle_sr.py``) of subway-jack/Tool-Genesis.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant

# The labels of the judge prompt (prompt/response_quality_check.md), lower-cased, and their scores.
RATING_LABELS: dict[str, int] = {
    "very incomplete": 1,
    "incomplete": 2,
    "partially complete": 3,
    "mostly complete": 4,
    "fully complete": 5,
}
SOLVED_AT = 3  # a task with a rating >= 3 is "solved" (the hard score)
ORACLE_EPS = 1e-6
_RATING_TAG = re.compile(r"<rating>\s*(.*?)\s*</rating>", re.IGNORECASE | re.DOTALL)


def _score_of(raw: str) -> int | None:
    label = raw.strip().lower()
    try:
        score = int(label) if label.isdigit() else RATING_LABELS.get(label, 0)
    except ValueError:  # "²".isdigit() is true but int() refuses it
        score = 0
    return score if 1 <= score <= 5 else None


def parse_rating(text: str, variant: GenesisVariant = "reference") -> int | None:
    """The judge's rating 1..5, or None when it cannot be read (the caller retries, then scores 0).

    ``reference``: the text between the first ``<response`` and the last ``</response>`` (the whole text
    when either is missing) is parsed as XML; the first ``rating`` element below the root holds a label
    (case-insensitive) or a digit. Text that is not well-formed XML (an unescaped ``&`` or ``<`` in the
    reasoning, say) is unreadable. ``strict`` falls back to the last ``<rating>...</rating>`` in the text.
    """
    body = text.strip()
    start, end = body.find("<response"), body.rfind("</response>")
    if start != -1 and end != -1:
        body = body[start : end + len("</response>")]
    if not body:
        return None
    raw: str | None = None
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        root = None
    if root is not None:
        element = root.find(".//rating")
        raw = element.text if element is not None and element.text else ""
    score = None if raw is None else _score_of(raw)
    if score is None and variant == "strict":
        found = _RATING_TAG.findall(text)
        score = _score_of(found[-1]) if found else None
    return score


def task_scores(ratings: Sequence[int | None]) -> tuple[float, float]:
    """(soft, hard) of one server: mean of score/5 and the share of tasks rated >= 3.

    ``ratings`` has one entry per task example; a rating that could not be obtained is 0 or None (both
    score 0). No tasks → (0.0, 0.0).
    """
    if not ratings:
        return 0.0, 0.0
    values = [max(0, min(5, r or 0)) for r in ratings]
    soft = sum(v / 5 for v in values) / len(values)
    hard = sum(1 for v in values if v >= SOLVED_AT) / len(values)
    return soft, hard


def oracle_normalized(gen: Sequence[float], ref: Sequence[float], variant: GenesisVariant = "reference") -> float:
    """Oracle-normalised SR of one server: per task, the generated server's score relative to the reference's.

    Tasks are aligned by index and ``n = min(len(gen), len(ref))``; scores are clipped to [0, 1]. Per task
    ``SR_j = s_gen`` when ``s_ref <= 1e-6``, else ``min(1, s_gen / (s_ref + 1e-6))`` in ``reference`` (the
    official epsilon, so a perfect match gives 0.999999) and ``min(1, s_gen / s_ref)`` in ``strict``.

    Args:
        gen: Per-task scores (score/5) with the generated server.
        ref: Per-task scores with the reference server, same task order.
        variant: ``reference`` or ``strict``.

    Returns:
        The mean of SR_j, or 0.0 when there is no task pair.
    """
    n = min(len(gen), len(ref))
    if n == 0:
        return 0.0
    total = 0.0
    for s_gen_raw, s_ref_raw in zip(gen[:n], ref[:n], strict=True):
        s_gen, s_ref = max(0.0, min(1.0, s_gen_raw)), max(0.0, min(1.0, s_ref_raw))
        denominator = s_ref + ORACLE_EPS if variant == "reference" else s_ref
        sr = s_gen if s_ref <= ORACLE_EPS else s_gen / denominator
        total += max(0.0, min(1.0, sr))
    return total / n
