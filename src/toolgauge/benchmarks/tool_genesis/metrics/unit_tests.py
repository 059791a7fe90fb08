"""Tool-Genesis L2 unit tests (UT_soft / UT_hard): score one tool call against its recorded output.

``reference`` re-implements ``_tool_call_with_unit_tests``, ``_structural_judge``, ``_similar_score`` and
``_extract_text`` of subway-jack/Tool-Genesis (``src/env_evaluation/l2_semantic_correctness.py``):

- the *actual* text is ``json.dumps`` (``ensure_ascii=False``) of the whole MCP result content list, after
  the bridge's log truncation (each string capped at 2,000 characters, 20,000 in all), so it looks like
  ``[{"type": "text", "text": "...", "annotations": null}]``;
- the *expected* text is the recorded output reduced by ``_extract_text``: a JSON object holding a
  ``text`` / ``content`` / ``message`` / ``output`` / ``result`` field is replaced by that field; any other
  object is re-dumped with sorted keys;
- hard pass = the call ran and the actual text does not carry an error word (error, failed, exception,
  traceback; case-insensitive substring) that the expected text lacks; ``isError`` is never consulted;
- struct = key-path F1 of the two JSON values; embed = cosine of the lower-cased texts (1 when equal);
  soft = 0.5·struct + 0.5·embed on a hard pass, else 0.

``strict`` compares the result's text content with the full recorded output: hard pass only when they are
equal after JSON normalisation (an expected error must come back as an error: ``isError`` or an error word);
the soft score keeps the error-word gate, extended to ``isError``. See ``docs/metrics/tool-genesis.md``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant
from toolgauge.embeddings.base import Embedder, cosine_matrix

ERROR_WORDS = ("error", "failed", "exception", "traceback")
STRUCT_WEIGHT = 0.5  # LAMBDA_STRUCT of the official code
_REDUCED_KEYS = ("text", "content", "message", "output", "result")
# The official bridge passes every call result through LogTruncator.truncate_json_for_log(max_total_chars=20000).
_MAX_STRING_CHARS = 2000
_MAX_TOTAL_CHARS = 20000
_NOT_JSON = object()


class UnitTestScore(BaseModel):
    """The verdict on one unit test: hard pass, soft score and its two parts, and why it failed."""

    hard_pass: bool
    soft: float
    struct_f1: float
    embed_sim: float
    reason: str | None = None
    actual: str = ""
    expected: str = ""


class UnitTestSummary(BaseModel):
    """UT_soft and UT_hard of one server, with the counts behind them."""

    ut_soft: float
    ut_hard: float
    total: int
    hard_passed: int
    not_built: int
    not_run: int


def has_error_word(text: str) -> bool:
    """Whether ``text`` contains error / failed / exception / traceback (case-insensitive substring)."""
    low = text.lower()
    return any(word in low for word in ERROR_WORDS)


def extract_text(value: Any) -> str:
    """The official ``_extract_text``: reduce a recorded output (or result) to the text that is compared.

    A string that starts with ``{`` or ``[`` is parsed and reduced again (kept as is when it is not JSON);
    an object with a non-empty text / content / message / output / result field reduces to that field;
    any other object is dumped with sorted keys; a list is dumped as is; other scalars go through ``str``
    (so ``true`` becomes ``"True"``, as in the official code).
    """
    if value is None:
        return ""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith(("{", "[")):
            try:
                return extract_text(json.loads(stripped))
            except (ValueError, RecursionError):
                return stripped
        return stripped
    if isinstance(value, dict):
        for key in _REDUCED_KEYS:
            if key in value:
                reduced = extract_text(value[key])
                if reduced:
                    return reduced
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _truncate_like_bridge(value: Any) -> Any:
    """The string caps of the official bridge's ``LogTruncator`` (per string, then a total budget)."""
    budget = [_MAX_TOTAL_CHARS]
    exhausted = "... [log truncated: budget exhausted]"

    def take(text: str) -> str:
        if len(text) > _MAX_STRING_CHARS:
            text = text[:_MAX_STRING_CHARS] + f"... [{len(text) - _MAX_STRING_CHARS} chars omitted]"
        if budget[0] <= 0:
            return exhausted
        if len(text) > budget[0]:
            over = len(text) - budget[0]
            text = text[: budget[0]] + f"... [truncated, {over} chars over budget]"
            budget[0] = 0
            return text
        budget[0] -= len(text)
        return text

    def walk(item: Any) -> Any:
        if budget[0] <= 0:
            return exhausted
        if item is None or isinstance(item, bool | int | float):
            return item
        if isinstance(item, str):
            return take(item)
        if isinstance(item, dict):
            out: dict[str, Any] = {}
            for key, sub in item.items():
                if budget[0] <= 0:
                    out["__log_truncated__"] = exhausted
                    break
                out[str(key)] = walk(sub)
            return out
        if isinstance(item, list | tuple):
            items: list[Any] = []
            for sub in item:
                if budget[0] <= 0:
                    items.append(exhausted)
                    break
                items.append(walk(sub))
            return items
        return take(str(item))

    return walk(value)


def reference_actual_text(content: list[dict[str, Any]] | None) -> str:
    """The official "actual" text: ``json.dumps`` of the (truncated) content list, ``ensure_ascii=False``."""
    return json.dumps(_truncate_like_bridge(content or []), ensure_ascii=False)


def content_text(content: list[dict[str, Any]] | None) -> str:
    """The text parts of an MCP result content list, joined by newlines."""
    parts = [str(c.get("text", "")) for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(parts)


def _json_or_not(text: str) -> Any:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON
    # json.loads("null") gives None, which the official code cannot tell from "not parsed".
    return _NOT_JSON if value is None else value


def _key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every dict key and list index as a dotted path (``a.b[0].c``)."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            paths.add(path)
            paths |= _key_paths(sub, path)
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            path = f"{prefix}[{index}]"
            paths.add(path)
            paths |= _key_paths(sub, path)
    return paths


def structure_f1(actual: str, expected: str) -> float:
    """Key-path F1 of two JSON texts; both empty → 1, one empty → 0; non-JSON → lower-case equality 1/0."""
    a_text, e_text = actual.strip(), expected.strip()
    a_value, e_value = _json_or_not(a_text), _json_or_not(e_text)
    if a_value is not _NOT_JSON and e_value is not _NOT_JSON:
        a_paths, e_paths = _key_paths(a_value), _key_paths(e_value)
        if not a_paths and not e_paths:
            return 1.0
        if not a_paths or not e_paths:
            return 0.0
        hits = len(a_paths & e_paths)
        precision, recall = hits / len(a_paths), hits / len(e_paths)
        return 2 * precision * recall / (precision + recall + 1e-12)
    return 1.0 if a_text.lower() == e_text.lower() else 0.0


def embedding_similarity(actual: str, expected: str, embedder: Embedder) -> float:
    """Cosine of the embeddings of the stripped, lower-cased texts; 1 when they are equal (or both empty)."""
    a_low, e_low = actual.strip().lower(), expected.strip().lower()
    if a_low == e_low:
        return 1.0
    vectors = embedder.embed([a_low, e_low])
    return float(cosine_matrix(vectors[:1], vectors[1:])[0, 0])


def normalise_output(text: str) -> str:
    """Canonical form for strict equality: JSON re-dumped with sorted keys, other text stripped."""
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return stripped
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class UnitTestCall(BaseModel):
    """One unit-test call's outcome, as :func:`score_unit_tests` takes it (the arguments of :func:`score_unit_test`)."""

    content: list[dict[str, Any]] | None = None
    is_error: bool = False
    call_failure: str | None = None
    expected: str = ""


def compared_texts(content: list[dict[str, Any]] | None, expected: str, variant: GenesisVariant) -> tuple[str, str]:
    """The (actual, expected) texts a variant compares: see the module docstring."""
    if variant == "reference":
        return reference_actual_text(content), extract_text(expected)
    return content_text(content), expected.strip()


def score_unit_tests(
    calls: Sequence[UnitTestCall], embedder: Embedder, variant: GenesisVariant = "reference"
) -> list[UnitTestScore]:
    """Score many calls; with a caching embedder (MiniLM) all texts are embedded in one batch first.

    Gives the same scores as :func:`score_unit_test` on each call, faster: batches of 64 instead of pairs.
    """
    texts: list[str] = []
    for call in calls:
        if call.call_failure is None:
            actual, wanted = compared_texts(call.content, call.expected, variant)
            a_low, e_low = actual.strip().lower(), wanted.strip().lower()
            if a_low != e_low:
                texts += [a_low, e_low]
    if texts:
        embedder.embed(list(dict.fromkeys(texts)))
    return [score_unit_test(c.content, c.is_error, c.call_failure, c.expected, embedder, variant) for c in calls]


def score_unit_test(
    content: list[dict[str, Any]] | None,
    is_error: bool,
    call_failure: str | None,
    expected: str,
    embedder: Embedder,
    variant: GenesisVariant = "reference",
) -> UnitTestScore:
    """Score one unit-test call.

    Args:
        content: The MCP result content list in wire shape (``type``, ``text``, ``annotations``...), None
            when the call produced no result.
        is_error: The result's ``isError`` flag (ignored by ``reference``).
        call_failure: Why the call itself failed (timeout, dead server, transport error), else None.
        expected: The recorded ``function_output_content``.
        embedder: Embeds the two texts for the similarity part.
        variant: ``reference`` or ``strict`` (module docstring).

    Returns:
        The verdict; ``reason`` says why a hard pass was refused.
    """
    if call_failure is not None:
        return UnitTestScore(
            hard_pass=False, soft=0.0, struct_f1=0.0, embed_sim=0.0, reason=f"call failed: {call_failure}"
        )
    actual, wanted = compared_texts(content, expected, variant)
    if variant == "reference":
        gate_ok = not (has_error_word(actual.strip()) and not has_error_word(wanted.strip()))
        hard_pass, reason = gate_ok, None if gate_ok else "unexpected error word in the output"
    else:
        expected_error = has_error_word(wanted)
        came_back_as_error = is_error or has_error_word(actual)
        gate_ok = expected_error or not came_back_as_error
        if expected_error:
            hard_pass = came_back_as_error
            reason = None if hard_pass else "expected an error, got a normal result"
        elif not gate_ok:
            hard_pass, reason = False, "unexpected error in the output"
        else:
            hard_pass = normalise_output(actual) == normalise_output(wanted)
            reason = None if hard_pass else "output differs from the expected output"
    if not gate_ok:
        return UnitTestScore(
            hard_pass=False, soft=0.0, struct_f1=0.0, embed_sim=0.0, reason=reason, actual=actual, expected=wanted
        )
    struct = structure_f1(actual, wanted)
    sim = embedding_similarity(actual, wanted, embedder)
    soft = STRUCT_WEIGHT * struct + (1.0 - STRUCT_WEIGHT) * sim
    return UnitTestScore(
        hard_pass=hard_pass,
        soft=soft if math.isfinite(soft) else 0.0,
        struct_f1=struct,
        embed_sim=sim,
        reason=reason,
        actual=actual,
        expected=wanted,
    )


def summarise_unit_tests(
    scores: Sequence[UnitTestScore],
    *,
    not_built: int = 0,
    not_run: int = 0,
    variant: GenesisVariant = "reference",
) -> UnitTestSummary:
    """UT_soft = mean soft score, UT_hard = hard-pass rate, over the tests that count.

    ``reference`` counts only the tests that were called: tests of reference tools the model did not build
    (``not_built``) are dropped, and so are tests never run because the server died (``not_run``; the
    official loop stops there). ``strict`` counts both as failures. No test counted → 0.0 for both.
    """
    total = len(scores) + (not_built + not_run if variant == "strict" else 0)
    passed = sum(1 for s in scores if s.hard_pass)
    if total == 0:
        return UnitTestSummary(ut_soft=0.0, ut_hard=0.0, total=0, hard_passed=0, not_built=not_built, not_run=not_run)
    return UnitTestSummary(
        ut_soft=sum(s.soft for s in scores) / total,
        ut_hard=passed / total,
        total=total,
        hard_passed=passed,
        not_built=not_built,
        not_run=not_run,
    )
