"""WildToolBench's argument checker, re-implemented: schema check of a predicted call, then match against gold.

The rules, their order and every returned string follow the official ``ToolArgsChecker``
(``wtb/checker_utils.py``); ``docs/metrics/wildtoolbench.md`` lists them. Things worth knowing:

- The schema check builds the top-level schema from the tool's ``parameters`` ``required`` and
  ``properties`` only, so a top-level ``additionalProperties: true`` is ignored (nested ones are honoured).
- Checking a top-level argument's value is already a *nested* check in the official code, so a wrongly typed
  argument reports ``error_schema: nested args type inconsistent``; the un-nested strings only appear for the
  argument object itself (not a JSON object, a required key missing, an undefined key).
- ``"float"`` accepts Python floats only, ``"number"`` ints and floats, ``"integer"`` ints *and bools*
  (``isinstance(True, int)``). A property without a type must be a string.
- Matching needs equal Python types (``500.0`` against ``500`` fails), equal key sets, equal list lengths.
  Strings pass when equal, equal after removing whitespace and lowercasing, or (gold shorter than 10
  characters: difflib ratio >= 0.8 first) ROUGE-L F >= 0.7 from the ``rouge`` package, with jieba words when
  either side has a CJK character. Any exception inside ROUGE is ``error_match: rouge calculation failed``.

Where the official code would crash (a tool that is not defined, a ``type`` given as a list, an empty
``anyOf``, a non-object property schema), this module returns a result instead; those cases are marked below.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from functools import cache
from typing import Any

from toolgauge.benchmarks.wildtoolbench.log import WildAnswerAction, WildToolCall

__all__ = [
    "CORRECT",
    "ERROR_ARGS_JSON_DECODE",
    "ERROR_CALL_COUNT",
    "ERROR_NAME_MISMATCH",
    "ERROR_TOOL_UNDEFINED",
    "MATCH_ERROR_ARRAY_LENGTH",
    "MATCH_ERROR_KEYS_MISMATCH",
    "MATCH_ERROR_ROUGE_FAIL",
    "MATCH_ERROR_STR_SIMILARITY",
    "MATCH_ERROR_TYPE_INCONSISTENT",
    "MATCH_ERROR_VALUE_MISMATCH",
    "SCHEMA_ERROR_ENUM",
    "SCHEMA_ERROR_MISSING",
    "SCHEMA_ERROR_NESTED_ENUM",
    "SCHEMA_ERROR_NESTED_MISSING",
    "SCHEMA_ERROR_NESTED_TYPE",
    "SCHEMA_ERROR_NESTED_UNDEFINED",
    "SCHEMA_ERROR_TYPE",
    "SCHEMA_ERROR_UNDEFINED",
    "check_call",
    "check_step",
    "is_schema_error",
    "squash",
]

CORRECT = "correct"
ERROR_ARGS_JSON_DECODE = "error: args invalid json format"
SCHEMA_ERROR_MISSING = "error_schema: required args missing"
SCHEMA_ERROR_UNDEFINED = "error_schema: args not defined"
SCHEMA_ERROR_TYPE = "error_schema: args type inconsistent"
SCHEMA_ERROR_ENUM = "error_schema: args value not in enum"
SCHEMA_ERROR_NESTED_MISSING = "error_schema: required nested args missing"
SCHEMA_ERROR_NESTED_UNDEFINED = "error_schema: nested args not defined"
SCHEMA_ERROR_NESTED_TYPE = "error_schema: nested args type inconsistent"
SCHEMA_ERROR_NESTED_ENUM = "error_schema: nested args value not in enum"
MATCH_ERROR_KEYS_MISMATCH = "error_match: args keys mismatch"
MATCH_ERROR_ARRAY_LENGTH = "error_match: array length mismatch"
MATCH_ERROR_TYPE_INCONSISTENT = "error_match: value type inconsistent"
MATCH_ERROR_VALUE_MISMATCH = "error_match: value mismatch"
MATCH_ERROR_STR_SIMILARITY = "error_match: string similarity too low"
MATCH_ERROR_ROUGE_FAIL = "error_match: rouge calculation failed"
#: Prefix of the official result when matching itself raised (``error: comparison failed - <exception>``).
COMPARISON_FAILED = "error: comparison failed - "

# toolgauge's own results for inputs on which the official checker crashes (assert or KeyError).
ERROR_TOOL_UNDEFINED = "error_schema: tool not defined"
ERROR_NAME_MISMATCH = "error: function name mismatch"
ERROR_CALL_COUNT = "error: call count mismatch"

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (float,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}
_CJK = re.compile(r"[\u4e00-\u9fa5]")
_SHORT_STRING = 10
_EDIT_RATIO_MIN = 0.8
_ROUGE_L_MIN = 0.7


def is_schema_error(result: str) -> bool:
    """Return True for results of the schema check (JSON decoding included), False for match results."""
    return result == ERROR_ARGS_JSON_DECODE or result.startswith("error_schema:")


def _as_schema(schema: Any) -> dict[str, Any]:
    # A malformed (non-object) schema constrains nothing here; the official code would crash on it.
    return schema if isinstance(schema, dict) else {}


def _allowed_types(schema: dict[str, Any]) -> tuple[type, ...]:
    if "anyOf" in schema:
        allowed: tuple[type, ...] = ()
        for branch in schema["anyOf"]:
            allowed += _allowed_types(_as_schema(branch))
        return allowed
    if "type" in schema:
        declared = schema["type"]
        if isinstance(declared, list):  # not in the official code (it crashes): the union of the listed types
            return tuple(t for name in declared if isinstance(name, str) for t in _PYTHON_TYPES.get(name, ()))
        return _PYTHON_TYPES.get(declared, ()) if isinstance(declared, str) else ()
    return _PYTHON_TYPES["string"]


def _schema_error(value: Any, schema: dict[str, Any], nested: bool) -> str | None:
    """Official ``_recursive_arg_check``: anyOf, then type, enum, object keys and values, array items."""
    if "anyOf" in schema:
        first_error: str | None = None
        for branch in schema["anyOf"]:
            error = _schema_error(value, _as_schema(branch), nested)
            if error is None:
                return None
            first_error = first_error or error
        return first_error  # all branches failed: the first branch's error, as the official code reports

    allowed = _allowed_types(schema)
    if allowed and not isinstance(value, allowed):
        return SCHEMA_ERROR_NESTED_TYPE if nested else SCHEMA_ERROR_TYPE
    if "enum" in schema and value not in schema["enum"]:
        return SCHEMA_ERROR_NESTED_ENUM if nested else SCHEMA_ERROR_ENUM

    if isinstance(value, dict):
        properties = _as_schema(schema.get("properties", {}))
        if set(schema.get("required", [])) - set(value):
            return SCHEMA_ERROR_NESTED_MISSING if nested else SCHEMA_ERROR_MISSING
        for key, item in value.items():
            if key not in properties:
                if schema.get("additionalProperties") is True:
                    continue
                return SCHEMA_ERROR_NESTED_UNDEFINED if nested else SCHEMA_ERROR_UNDEFINED
            error = _schema_error(item, _as_schema(properties[key]), nested=True)
            if error:
                return error

    if isinstance(value, list) and "items" in schema:
        for item in value:
            error = _schema_error(item, _as_schema(schema["items"]), nested=True)
            if error:
                return error
    return None


def squash(text: str) -> str:
    """Text without any whitespace, lowercased (how the checker and the taxonomy compare strings loosely)."""
    return "".join(text.split()).lower()


@cache
def _rouge() -> Any:
    from rouge import Rouge

    return Rouge()


def _words(text: str) -> str:
    import jieba

    jieba.setLogLevel(60)  # jieba logs its dictionary loading at INFO on first use
    return " ".join(jieba.cut(text))


def _rouge_l_f(predicted: str, gold: str) -> float:
    """ROUGE-L F of the ``rouge`` package with all its default metrics, as the official code calls it."""
    scores = _rouge().get_scores(predicted, gold)
    return float(scores[0]["rouge-l"]["f"])


def _compare_strings(predicted: str, gold: str, where: str) -> str:
    if predicted == gold or squash(predicted) == squash(gold):
        return CORRECT
    if len(gold) < _SHORT_STRING:
        ratio = SequenceMatcher(None, predicted, gold).ratio()
        if ratio < _EDIT_RATIO_MIN:
            return f"{MATCH_ERROR_STR_SIMILARITY}{where} (edit score: {ratio:.2f})"
    if _CJK.search(gold) or _CJK.search(predicted):
        predicted, gold = _words(predicted), _words(gold)
    try:
        similarity = _rouge_l_f(predicted, gold)
    except Exception:  # the rouge package raises on empty or punctuation-only text
        return f"{MATCH_ERROR_ROUGE_FAIL}{where}"
    if similarity < _ROUGE_L_MIN:
        return f"{MATCH_ERROR_STR_SIMILARITY}{where} (rouge score: {similarity:.2f})"
    return CORRECT


def _compare(predicted: Any, gold: Any, schema: Any, path: str) -> str:
    """Official ``_recursive_compare``. ``schema`` is deliberately untyped: a malformed one raises as officially."""
    where = f" at '{path}'" if path else ""
    if type(predicted) is not type(gold):
        return f"{MATCH_ERROR_TYPE_INCONSISTENT}{where}"

    if isinstance(gold, dict):
        if set(predicted) != set(gold):
            missing, extra = set(gold) - set(predicted), set(predicted) - set(gold)
            # Sorted so the message is stable; the official code lists set order, which varies between runs.
            detail = [f"{label}: {sorted(keys)}" for label, keys in (("missing", missing), ("extra", extra)) if keys]
            return f"{MATCH_ERROR_KEYS_MISMATCH}{where} ({', '.join(detail)})"
        properties = schema.get("properties", schema) if isinstance(schema, dict) else {}
        for key in gold:
            result = _compare(predicted[key], gold[key], properties.get(key, {}), f"{path}.{key}" if path else key)
            if result != CORRECT:
                return result
        return CORRECT

    if isinstance(gold, list):
        if len(predicted) != len(gold):
            return f"{MATCH_ERROR_ARRAY_LENGTH}{where}"
        item_schema = schema.get("items", {})
        for index, (predicted_item, gold_item) in enumerate(zip(predicted, gold, strict=True)):
            result = _compare(predicted_item, gold_item, item_schema, f"{path}[{index}]")
            if result != CORRECT:
                return result
        return CORRECT

    if isinstance(gold, str):
        return _compare_strings(predicted, gold, where)

    return CORRECT if predicted == gold else f"{MATCH_ERROR_VALUE_MISMATCH}{where}"


def _tool_parameters(tools: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The ``parameters`` of the last tool named ``name`` (OpenAI ``{"function": {...}}`` entries), else None."""
    found: dict[str, Any] | None = None
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            found = _as_schema(function.get("parameters", {}))
    return found


def check_call(tools: Sequence[dict[str, Any]], name: str, predicted_args_json: str, gold_args_json: str) -> str:
    """Check one predicted call against its gold call: ``"correct"`` or the official error string.

    Args:
        tools: the tools as sent to the model (OpenAI ``tools`` entries).
        name: the function name (the same for prediction and gold).
        predicted_args_json: the argument text the model produced.
        gold_args_json: the gold arguments as JSON text.

    Returns:
        ``"correct"``, or the first problem: a schema string (``error_schema: ...`` or
        ``error: args invalid json format``) or a match string (``error_match: ...``, or
        ``error: comparison failed - <exception>``). ``error_schema: tool not defined`` is toolgauge's
        answer when ``name`` is not among ``tools`` (the official checker raises KeyError).
    """
    parameters = _tool_parameters(tools, name)
    if parameters is None:
        return ERROR_TOOL_UNDEFINED
    properties = _as_schema(parameters.get("properties", {}))
    # The official top-level schema keeps only required and properties (no additionalProperties, no anyOf).
    top_schema = {"type": "object", "required": list(parameters.get("required", [])), "properties": properties}
    try:
        predicted = json.loads(predicted_args_json)
    except json.JSONDecodeError:
        return ERROR_ARGS_JSON_DECODE
    error = _schema_error(predicted, top_schema, nested=False)
    if error:
        return error
    try:
        gold = json.loads(gold_args_json)
    except json.JSONDecodeError:
        return ERROR_ARGS_JSON_DECODE
    try:
        return _compare(predicted, gold, properties, "")
    except Exception as exc:  # as the official answer_check: a crash while matching is a failed check
        return f"{COMPARISON_FAILED}{exc}"


def check_step(
    tools: Sequence[dict[str, Any]], predicted_calls: Sequence[WildToolCall], gold_actions: Sequence[WildAnswerAction]
) -> list[str]:
    """Check the calls of one step, paired as the official ``params_checker`` pairs them.

    Both sides are sorted by (name, argument text) and paired in order. The official code asserts that the
    counts and the paired names agree (the online matcher guarantees it); here a name that differs gives
    ``error: function name mismatch`` and each unpaired call or gold action ``error: call count mismatch``.

    Returns:
        One result per pair (and per unpaired entry), in the sorted order.
    """
    predicted = sorted(predicted_calls, key=lambda call: (call.function.name, call.function.arguments))
    gold = sorted(gold_actions, key=lambda action: (action.name, action.arguments))
    results: list[str] = []
    for call, action in zip(predicted, gold, strict=False):
        if call.function.name != action.name:
            results.append(ERROR_NAME_MISMATCH)
        else:
            results.append(check_call(tools, action.name, call.function.arguments, action.arguments))
    results.extend(ERROR_CALL_COUNT for _ in range(abs(len(predicted) - len(gold))))
    return results
