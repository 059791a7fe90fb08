"""Tool-Genesis L1 compliance: the official strict schema check, an MCP validity check, and the strict transform.

:func:`check_compliance` follows ``_compliant_input_schema_only`` of subway-jack/Tool-Genesis
(``src/env_evaluation/l1_protocol_compliance.py``) rule for rule, in its order, and says which rule failed.
The reference schemas of the benchmark fail it (they use ``anyOf`` and omit ``additionalProperties``), so
:func:`check_mcp_valid` reports the weaker "valid MCP tool list with valid JSON Schemas".
:func:`make_strictly_compliant` rewrites a reference tool so that it passes the official check.
"""

from __future__ import annotations

import copy
from typing import Any

# jsonschema comes with the `mcp` dependency and ships no type information.
from jsonschema import exceptions as jsonschema_exceptions  # type: ignore[import-untyped]
from jsonschema.validators import validator_for  # type: ignore[import-untyped]
from pydantic import BaseModel

# The JSON Schema type names (the official check accepts these as a schema's single `type`).
JSON_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_OBJECT_KEYS = ("properties", "required", "additionalProperties")


class Verdict(BaseModel, frozen=True):
    """The outcome of one check: ``ok``, and on failure the first rule broken (``reason``)."""

    ok: bool
    reason: str | None = None


_OK = Verdict(ok=True)


def _fail(reason: str) -> Verdict:
    return Verdict(ok=False, reason=reason)


def tool_input_schema(tool: dict[str, Any]) -> Any:
    """The tool's input schema as the official code picks it: ``input_schema``, else ``inputSchema``.

    Like the official ``t.get("input_schema") or t.get("inputSchema")``, an empty or falsy
    ``input_schema`` falls through to ``inputSchema``.
    """
    return tool.get("input_schema") or tool.get("inputSchema")


def check_compliance(payload: Any) -> Verdict:
    """The official strict compliance check of a schema file's payload (``{"tools": [...]}``).

    Rules (official order): the payload is an object with a non-empty ``tools`` list; every tool is an
    object with string ``name`` and ``description``, has no ``parameters`` key, and has an
    ``input_schema`` / ``inputSchema`` in the restricted subset checked by :func:`check_restricted_schema`.

    Args:
        payload: The parsed JSON of the schema file.

    Returns:
        ``Verdict(ok=True)`` or the first failure, e.g. ``tools[0].input_schema.properties.x: anyOf is not
        allowed (no single type)``.
    """
    if not isinstance(payload, dict):
        return _fail("payload is not a JSON object")
    tools = payload.get("tools")
    if not isinstance(tools, list) or not tools:
        return _fail("`tools` is missing, not a list or empty")
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            return _fail(f"{where}: not an object")
        if not isinstance(tool.get("name"), str):
            return _fail(f"{where}: `name` is not a string")
        if not isinstance(tool.get("description"), str):
            return _fail(f"{where}: `description` is not a string")
        if "parameters" in tool:
            return _fail(f"{where}: `parameters` is forbidden (use input_schema / inputSchema)")
        key = "input_schema" if tool.get("input_schema") else "inputSchema"
        verdict = check_restricted_schema(tool_input_schema(tool), f"{where}.{key}")
        if not verdict.ok:
            return verdict
    return _OK


def check_restricted_schema(schema: Any, where: str = "schema") -> Verdict:
    """The official restricted JSON-Schema subset (``_is_valid_input_schema``), recursively.

    A schema is an object with one ``type`` string among the JSON types. An object needs ``properties``
    (each a valid schema), ``required`` (strings, all in properties) and ``additionalProperties`` exactly
    ``false``, and no ``items``. An array needs a valid ``items`` and none of properties / required /
    additionalProperties. Any other type has none of properties / items / required / additionalProperties.
    Other keywords (``title``, ``enum``, ``default``...) are not looked at.
    """
    if not isinstance(schema, dict):
        return _fail(f"{where}: not an object")
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in JSON_SCHEMA_TYPES:
        detail = "anyOf is not allowed (no single type)" if "anyOf" in schema else f"`type` {kind!r} is not one type"
        return _fail(f"{where}: {detail}")
    if kind == "object":
        for key in _OBJECT_KEYS:
            if key not in schema:
                return _fail(f"{where}: object without `{key}`")
        properties = schema["properties"]
        if not isinstance(properties, dict):
            return _fail(f"{where}: `properties` is not an object")
        for name, sub in properties.items():
            verdict = check_restricted_schema(sub, f"{where}.properties.{name}")
            if not verdict.ok:
                return verdict
        required = schema["required"]
        if not isinstance(required, list) or any(not isinstance(x, str) for x in required):
            return _fail(f"{where}: `required` is not a list of strings")
        unknown = [x for x in required if x not in properties]
        if unknown:
            return _fail(f"{where}: required {unknown} not in properties")
        if schema["additionalProperties"] is not False:
            return _fail(f"{where}: `additionalProperties` is not false")
        if "items" in schema:
            return _fail(f"{where}: object with `items`")
        return _OK
    if kind == "array":
        verdict = check_restricted_schema(schema.get("items"), f"{where}.items")
        if not verdict.ok:
            return verdict
        for key in _OBJECT_KEYS:
            if key in schema:
                return _fail(f"{where}: array with `{key}`")
        return _OK
    for key in ("properties", "items", "required", "additionalProperties"):
        if key in schema:
            return _fail(f"{where}: {kind} with `{key}`")
    return _OK


def check_mcp_valid(payload: Any) -> Verdict:
    """Whether the payload is a valid MCP tool list whose input schemas are valid JSON Schemas.

    Rules: an object with a non-empty ``tools`` list; each tool an object with a non-empty string ``name``
    (unique in the list), a string ``description`` when present, and an ``inputSchema`` / ``input_schema``
    that is a JSON Schema of ``type: "object"`` (as MCP requires) and passes its dialect's meta-schema
    (``$schema`` when given, else Draft 2020-12).

    Args:
        payload: The parsed JSON of the schema file.

    Returns:
        ``Verdict(ok=True)`` or the first failure.
    """
    if not isinstance(payload, dict):
        return _fail("payload is not a JSON object")
    tools = payload.get("tools")
    if not isinstance(tools, list) or not tools:
        return _fail("`tools` is missing, not a list or empty")
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            return _fail(f"{where}: not an object")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            return _fail(f"{where}: `name` is not a non-empty string")
        if name in seen:
            return _fail(f"{where}: duplicate tool name {name!r}")
        seen.add(name)
        if "description" in tool and tool["description"] is not None and not isinstance(tool["description"], str):
            return _fail(f"{where}: `description` is not a string")
        schema = tool_input_schema(tool)
        if not isinstance(schema, dict):
            return _fail(f"{where}: no inputSchema object")
        if schema.get("type") != "object":
            return _fail(f'{where}.inputSchema: `type` is not "object"')
        try:
            validator_for(schema, default=validator_for({})).check_schema(schema)
        except jsonschema_exceptions.SchemaError as error:
            path = "".join(f"[{p!r}]" for p in error.path)
            return _fail(f"{where}.inputSchema{path}: not a valid JSON Schema: {error.message}")
    return _OK


def make_strictly_compliant(tool: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a (reference) tool so that it passes :func:`check_compliance`, keeping its meaning where it can.

    - An optional argument written ``anyOf: [T, {"type": "null"}]`` becomes ``T`` (its ``default: null``
      is dropped, since null is no longer allowed; other keywords such as title and description stay).
      A ``type: [T, "null"]`` list becomes ``T``. With several non-null alternatives the first is kept.
    - Every object gets ``additionalProperties: false`` and, where missing, ``properties: {}`` and
      ``required: []``; required names that are not properties are dropped.
    - A schema with no type at all (``{}``) becomes ``{"type": "string"}``; an array without ``items``
      gets string items.
    - ``description`` becomes a string (``""`` when missing) and a ``parameters`` key is dropped.

    Args:
        tool: A tool dict (``name``, ``description``, ``input_schema`` or ``inputSchema``...). Not modified.

    Returns:
        A new tool dict with the same keys (the input schema under the key it had, ``input_schema`` when
        it had none).
    """
    out = copy.deepcopy(tool)
    out.pop("parameters", None)
    if not isinstance(out.get("description"), str):
        out["description"] = ""
    key = "input_schema" if "input_schema" in out or "inputSchema" not in out else "inputSchema"
    schema = out.get(key)
    if not isinstance(schema, dict):
        schema = {"type": "object"}
    schema = _strict_schema(schema)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    out[key] = schema
    return out


def _non_null_alternative(schema: dict[str, Any]) -> dict[str, Any]:
    """Collapse ``anyOf`` / ``oneOf`` / a type list with a null option into the non-null alternative."""
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            rest = {k: v for k, v in schema.items() if k != combinator}
            non_null = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            chosen = non_null[0] if non_null and isinstance(non_null[0], dict) else {"type": "string"}
            if len(non_null) < len(options) and rest.get("default", 0) is None:
                rest.pop("default")
            merged: dict[str, Any] = {**rest, **chosen}
            return _non_null_alternative(merged)
    kind = schema.get("type")
    if isinstance(kind, list):
        non_null_types = [t for t in kind if t != "null"]
        schema = {**schema, "type": non_null_types[0] if non_null_types else "string"}
        if len(non_null_types) < len(kind) and schema.get("default", 0) is None:
            schema.pop("default")
    return schema


def _strict_schema(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"type": "string"}
    schema: dict[str, Any] = _non_null_alternative(dict(raw))
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in JSON_SCHEMA_TYPES:
        schema["type"] = kind = "string"
    if kind == "object":
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        schema["properties"] = {str(name): _strict_schema(sub) for name, sub in properties.items()}
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        schema["required"] = [r for r in required if isinstance(r, str) and r in schema["properties"]]
        schema["additionalProperties"] = False
        schema.pop("items", None)
        return schema
    if kind == "array":
        schema["items"] = _strict_schema(schema.get("items", {"type": "string"}))
        for key in _OBJECT_KEYS:
            schema.pop(key, None)
        return schema
    for key in ("properties", "items", "required", "additionalProperties"):
        schema.pop(key, None)
    return schema
