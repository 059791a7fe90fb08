"""Our tools' JSON Schemas in the OpenAPI subset Gemini's function declarations accept.

What Gemini has no form for is either carried another way (a type list with ``null`` becomes
``nullable``, ``oneOf`` becomes ``anyOf``, an enum of numbers is said in the description) or refused
with the place it is at (``$ref``, ``not``, tuple ``items`` ...): one clear error per tool, never a
schema quietly changed into another one. Keywords that only annotate or relax (``$schema``,
``additionalProperties``, ``examples`` ...) are left out.
"""

from __future__ import annotations

from typing import Any

# JSON-Schema keyword -> Gemini Schema field, for the ones that carry over as they are.
_SAME = {
    "description": "description",
    "title": "title",
    "format": "format",
    "nullable": "nullable",
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "minimum",
    "exclusiveMaximum": "maximum",
    "minItems": "min_items",
    "maxItems": "max_items",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minProperties": "min_properties",
    "maxProperties": "max_properties",
    "pattern": "pattern",
    "default": "default",
    "example": "example",
    "propertyOrdering": "property_ordering",
}
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
# Keywords Gemini cannot express: a schema using one is refused (said where).
_REFUSED = {
    "$ref": "references ($ref) are not supported; inline the definition",
    "not": "'not' has no Gemini form",
    "if": "conditional schemas (if/then/else) have no Gemini form",
    "patternProperties": "patternProperties has no Gemini form",
    "prefixItems": "tuple items (prefixItems) have no Gemini form",
    "dependentRequired": "dependentRequired has no Gemini form",
    "dependentSchemas": "dependentSchemas has no Gemini form",
    "unevaluatedProperties": "unevaluatedProperties has no Gemini form",
    "contains": "'contains' has no Gemini form",
}


class SchemaNotExpressible(ValueError):
    """A tool's parameters use JSON Schema Gemini has no form for; the message says where and what."""


def gemini_schema(schema: Any, where: str = "parameters") -> dict[str, Any]:
    """Convert one JSON Schema to the fields of ``google.genai.types.Schema`` (snake_case).

    Raises:
        SchemaNotExpressible: naming the path (``parameters.properties.unit``) and the keyword.
    """
    if not isinstance(schema, dict):
        raise SchemaNotExpressible(f"{where}: a schema must be an object, got {type(schema).__name__}")
    for keyword, why in _REFUSED.items():
        if keyword in schema:
            raise SchemaNotExpressible(f"{where}: {why}")
    if "allOf" in schema:
        parts = schema["allOf"]
        if not isinstance(parts, list) or len(parts) != 1:
            raise SchemaNotExpressible(f"{where}: allOf with several schemas has no Gemini form")
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        return gemini_schema({**parts[0], **merged}, where)
    out: dict[str, Any] = {out_key: schema[key] for key, out_key in _SAME.items() if key in schema}
    _set_type(schema.get("type"), out, where)
    if "properties" in schema:
        props = schema["properties"]
        if not isinstance(props, dict):
            raise SchemaNotExpressible(f"{where}.properties: must be an object")
        out["properties"] = {name: gemini_schema(sub, f"{where}.properties.{name}") for name, sub in props.items()}
    if "required" in schema:
        out["required"] = [str(name) for name in schema["required"]]
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise SchemaNotExpressible(f"{where}.items: tuple items (a list of schemas) have no Gemini form")
        out["items"] = gemini_schema(schema["items"], f"{where}.items")
    variants = schema.get("anyOf", schema.get("oneOf"))
    if variants is not None:
        if not isinstance(variants, list):
            raise SchemaNotExpressible(f"{where}.anyOf: must be a list of schemas")
        out["any_of"] = [gemini_schema(sub, f"{where}.anyOf.{i}") for i, sub in enumerate(variants)]
    values = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
    if values is not None:
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
        else:  # Gemini's enum holds strings only: a typed enum is said in words
            said = ", ".join(repr(v) for v in values)
            out["description"] = f"{out.get('description', '')} (one of: {said})".strip()
    return out


def _set_type(declared: Any, out: dict[str, Any], where: str) -> None:
    if declared is None:
        return
    names = declared if isinstance(declared, list) else [declared]
    unknown = [n for n in names if n not in _TYPES]
    if unknown:
        raise SchemaNotExpressible(f"{where}.type: {unknown[0]!r} is not a JSON Schema type")
    kinds = [n for n in names if n != "null"]
    if len(kinds) < len(names):
        out["nullable"] = True
    if len(kinds) == 1:
        out["type"] = kinds[0].upper()
    elif len(kinds) > 1:
        out["any_of"] = [{"type": k.upper()} for k in kinds]
    elif not kinds:
        out["type"] = "NULL"
