"""JSON Schema's type names, as the tool docs of benchmark data spell them.

BFCL's function docs and MTU-Bench's API lists both write JSON Schema's own names and some of Python's
(``float``, ``bool``, ``list``, ``dict``); each benchmark adds the other spellings its data has.
"""

from __future__ import annotations

JSON_SCHEMA_TYPE_NAMES: dict[str, str] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
}
"""A type name -> its JSON Schema type, for the spellings BFCL and MTU-Bench share."""
