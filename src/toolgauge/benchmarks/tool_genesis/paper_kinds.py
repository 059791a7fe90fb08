"""Tool-Genesis unit tests by kind (paper App. A.3, "standard vs boundary"): the rule that classifies a test.

The data does not label its tests; the dataset card says about 21% are negative or boundary cases, and A.3's
test-synthesis prompt asks for boundary-value inputs, invalid or missing required fields and rare branches,
with an expected error for invalid ones. A test is **boundary** (boundary or negative) when any of these
holds, else **standard** (docs/metrics/tool-genesis.md, "Unit tests by kind"):

1. its expected output is error-shaped: the text holds one of the official error words (error, failed,
   exception, traceback: the same words the hard pass looks for) or a refusal phrase (:data:`REFUSALS`:
   invalid, illegal, not found, ...), or it is a JSON object whose ``success`` or ``ok`` is false, or whose
   ``status`` is ``"error"``/``"failed"``;
2. it leaves out an argument the tool's ``input_schema`` requires, or sends an argument the schema does
   not declare (an invalid field);
3. an argument has the wrong JSON type for its declared ``type``, or is an empty string, list or object
   (a boundary value).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from toolgauge.benchmarks.tool_genesis.metrics.compliance import JSON_SCHEMA_TYPES
from toolgauge.benchmarks.tool_genesis.metrics.unit_tests import has_error_word
from toolgauge.benchmarks.tool_genesis.records import GenesisServer, UnitTest
from toolgauge.jsonl import json_type

# Phrases of a refused call besides the official error words (case-insensitive substrings).
REFUSALS = ("invalid", "illegal", "not found", "unsupported", "must be", "cannot ", "not allowed", "out of range")
UnitTestKind = Literal["standard", "boundary"]
KINDS: tuple[UnitTestKind, ...] = ("standard", "boundary")


def error_shaped(text: str) -> bool:
    """Whether a recorded output reads as an error (rule 1)."""
    if has_error_word(text) or any(phrase in text.lower() for phrase in REFUSALS):
        return True
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return False
    if not isinstance(value, dict):
        return False
    return value.get("success") is False or value.get("ok") is False or value.get("status") in ("error", "failed")


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a property schema allows (``anyOf`` branches included); empty: unconstrained."""
    found: list[str] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        found.append(declared)
    elif isinstance(declared, list):
        found.extend(t for t in declared if isinstance(t, str))
    for branch in schema.get("anyOf", []) or []:
        if isinstance(branch, Mapping):
            found.extend(_types(branch))
    return found


def _wrong_type(value: Any, schema: Mapping[str, Any]) -> bool:
    allowed = {t for t in _types(schema) if t in JSON_SCHEMA_TYPES}
    found = json_type(value)  # a JSON boolean is not a number
    return bool(allowed) and found not in allowed and not (found == "integer" and "number" in allowed)


def invalid_inputs(arguments: Mapping[str, Any] | str, tool: Mapping[str, Any] | None) -> bool:
    """Whether a test's inputs are invalid or boundary values for the tool's schema (rules 2 and 3)."""
    if not isinstance(arguments, Mapping):
        return True  # not even an object (the official evaluator sends {}): an invalid call
    for value in arguments.values():
        if value in ("", [], {}):
            return True
    schema = (tool or {}).get("input_schema") or (tool or {}).get("inputSchema") or {}
    if not isinstance(schema, Mapping):
        return False
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if any(name not in arguments for name in required):
        return True
    if isinstance(properties, Mapping) and properties:
        for name, value in arguments.items():
            prop = properties.get(name)
            if prop is None or (isinstance(prop, Mapping) and _wrong_type(value, prop)):
                return True
    return False


def unit_test_kind(test: UnitTest, tool: Mapping[str, Any] | None) -> UnitTestKind:
    """``boundary`` when the test expects an error or sends invalid/boundary inputs, else ``standard``."""
    if error_shaped(test.function_output_content) or invalid_inputs(test.arguments, tool):
        return "boundary"
    return "standard"


def server_test_kinds(server: GenesisServer) -> dict[tuple[str, int], UnitTestKind]:
    """Every unit test of a server, as ``(reference tool, index)`` -> kind."""
    tools = {str(t.get("name")): t for t in server.tool_definitions}
    return {
        (gold_tool, index): unit_test_kind(case, tools.get(gold_tool))
        for gold_tool, cases in server.unit_test.items()
        for index, case in enumerate(cases)
    }
