"""What a model sees for a BFCL entry and how its reply becomes a BFCL output.

Mirrors ``bfcl-eval`` 2026.3.23's generation side: the language hints BFCL adds to function docs
(``_func_doc_language_specific_pre_processing``), ``convert_to_tool`` for function-calling
("native") mode and the default prompting system prompt (``formulate_system_prompt`` with
``ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=classic``).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

from toolgauge.benchmarks.bfcl.decoders.python_calls import render_python_calls
from toolgauge.benchmarks.bfcl.loader import (
    BFCL_RELEVANCE_CATEGORIES,
    BfclEntry,
    BfclOutput,
    bfcl_language,
    is_irrelevance,
)
from toolgauge.records import AssistantTurn, Message, ToolCall, ToolSpec
from toolgauge.schema_types import JSON_SCHEMA_TYPE_NAMES

Style = Literal["prompt", "native"]

IRRELEVANCE_GOLD_TEXT = "None of the provided functions can be used for this request."
"""The gold reply for irrelevance entries: a plain-text refusal, no call."""

# BFCL's GORILLA_TO_OPENAPI: its docs' type names (Python's, Java's, JavaScript's) -> OpenAPI types.
_OPENAPI_TYPES = {
    **JSON_SCHEMA_TYPE_NAMES,
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}

_SYSTEM_PROMPT = (
    "You are an expert in composing functions.You are given a question and a set of possible functions. "
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. "
    "If none of the functions can be used, point it out. If the given question lacks the parameters required "
    "by the function, also point it out.\n\nYou should only return the function calls in your response.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)].  "
    "You SHOULD NOT include any other text in the response.\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user within the current "
    "turn. Continue to output functions to call until you have fulfilled the user's request to the best of "
    "your ability. Once you have no more functions to call, the system will consider the current turn "
    "complete and proceed to the next turn or task.\n\n"
    "Here is a list of functions in json format that you can invoke.\n{functions}\n"
)


def bfcl_tools(entry: BfclEntry, *, underscore_to_dot: bool, language_hint: bool = True) -> list[ToolSpec]:
    """The entry's functions as tools, as BFCL's ``convert_to_tool`` builds them for OpenAI.

    Args:
        entry: The test entry.
        underscore_to_dot: Replace dots in function names with underscores (OpenAI-style names
            may not contain dots; BFCL then expects the underscored name back).
        language_hint: Add BFCL's language hints (off for multi-turn held-back functions, which BFCL
            moves aside before it adds them).

    Returns:
        One tool per documented function, with BFCL types mapped to JSON Schema.
    """
    tools = []
    for doc in _documented_functions(entry) if language_hint else copy.deepcopy(entry.functions):
        name = doc["name"].replace(".", "_") if underscore_to_dot else doc["name"]
        parameters = dict(doc.get("parameters", {}))
        parameters["type"] = "object"
        parameters["properties"] = _openapi_properties(parameters.get("properties", {}))
        tools.append(ToolSpec(name=name, description=doc.get("description", ""), parameters=parameters))
    return tools


def bfcl_prompt_messages(entry: BfclEntry) -> list[Message]:
    """Prompting mode: BFCL's default system prompt with the function docs, then the first turn."""
    system = _SYSTEM_PROMPT.replace("{functions}", json.dumps(_documented_functions(entry), indent=4))
    messages = [_message(m) for m in entry.question[0]]
    if messages and messages[0].role == "system":
        messages[0] = Message(role="system", content=system + "\n\n" + (messages[0].content or ""))
    else:
        messages.insert(0, Message(role="system", content=system))
    return messages


def bfcl_native_messages(entry: BfclEntry) -> list[Message]:
    """Function-calling mode: the first turn's messages as they are (tools go separately)."""
    return [_message(m) for m in entry.question[0]]


def bfcl_gold_turn(entry: BfclEntry, *, style: Style, underscore_to_dot: bool) -> AssistantTurn:
    """The reference answer as a model turn.

    Each parameter takes its first non-``""`` option (``""`` alone means "omit"), dict options
    are expanded key by key, as ``make_perfect_results.py`` does. Irrelevance gold is a plain
    refusal; live_relevance gold calls the first function without arguments (any call passes).

    Args:
        entry: The test entry.
        style: ``"prompt"`` puts call text in ``content``; ``"native"`` uses ``tool_calls``.
        underscore_to_dot: Name native calls with underscores instead of dots.

    Returns:
        The gold assistant turn.
    """
    if entry.category in BFCL_RELEVANCE_CATEGORIES:
        if is_irrelevance(entry.category):
            return AssistantTurn(content=IRRELEVANCE_GOLD_TEXT)
        calls: list[tuple[str, dict[str, Any]]] = [(entry.functions[0]["name"], {})]
    else:
        calls = [_gold_call(call) for call in entry.ground_truth or []]
    output = bfcl_calls_output(entry, calls, style=style, underscore_to_dot=underscore_to_dot)
    if isinstance(output, str):
        return AssistantTurn(content=output)
    tool_calls = []
    for call in output:
        ((name, raw),) = call.items()
        tool_calls.append(ToolCall(name=name, arguments=json.loads(raw), raw=raw))
    return AssistantTurn(tool_calls=tool_calls)


def bfcl_calls_output(
    entry: BfclEntry, calls: list[tuple[str, dict[str, Any]]], *, style: Style, underscore_to_dot: bool
) -> BfclOutput:
    """Render calls as the BFCL output a model in the given style would produce.

    Python categories: ``[f(a=1)]`` text or ``[{name: json_arguments}]``. Java/JavaScript
    categories: every value becomes source text (``5L``, ``new ArrayList<>(...)``, ``[1, 2]``),
    quoted strings in prompt style and bare strings in native style, as BFCL expects.

    Args:
        entry: The entry whose function docs give the declared types.
        calls: ``(function_name, arguments)`` pairs with Python values.
        style: ``"prompt"`` for text, ``"native"`` for function-calling output.
        underscore_to_dot: Name native calls with underscores instead of dots.

    Returns:
        Prompting text or a function-calling output list.
    """
    language = bfcl_language(entry.category)
    if style == "prompt":
        if language == "python":
            return render_python_calls(calls)
        rendered = [_render_source_call(entry, name, args, language, quoted=True) for name, args in calls]
        return "[" + ", ".join(rendered) + "]"
    output: list[dict[str, Any]] = []
    for name, args in calls:
        if language != "python":
            args = _source_arguments(entry, name, args, language, quoted=False)
        output.append({name.replace(".", "_") if underscore_to_dot else name: json.dumps(args)})
    return output


def assistant_turn_to_bfcl_output(turn: AssistantTurn, style: Style) -> BfclOutput:
    """The BFCL output for a model turn.

    Prompt style: the content text. Native style: ``[{name: arguments_json}]`` from the tool
    calls, using the raw argument text when present so undecodable arguments fail as in BFCL.
    A native turn without tool calls gives ``[]`` (BFCL's FC handler stores the text, which its
    decoder then rejects: both count as "no call"; see docs/metrics/bfcl.md).
    """
    if style == "prompt":
        return turn.content or ""
    return [{call.name: call.raw if call.raw is not None else json.dumps(call.arguments)} for call in turn.tool_calls]


def _message(raw: dict[str, Any]) -> Message:
    return Message(role=raw.get("role", "user"), content=raw.get("content"))


def _documented_functions(entry: BfclEntry) -> list[dict[str, Any]]:
    """The function docs with BFCL's generation-time language hints."""
    functions = copy.deepcopy(entry.functions)
    language = bfcl_language(entry.category)
    java, javascript = language == "java", language == "javascript"
    syntax = "Java 8 SDK" if java else "JavaScript" if javascript else "Python 3"
    for doc in functions:
        doc["description"] = doc.get("description", "") + f" Note that the provided function is in {syntax} syntax."
        if not (java or javascript):
            continue
        word = "Java" if java else "JavaScript"
        for schema in doc.get("parameters", {}).get("properties", {}).values():
            declared = schema.get("type")
            if declared == "any":
                schema["description"] = schema.get("description", "") + (
                    f" This parameter can be of any type of {word} object in string representation."
                )
            else:
                schema["description"] = schema.get("description", "") + (
                    f" This is {word} {declared} type parameter in string representation."
                )
            if declared in (("ArrayList", "Array") if java else ("array",)) and "items" in schema:
                schema["description"] += (
                    f" The list elements are of type {schema['items'].get('type')}; they are not in string "
                    "representation."
                )
                del schema["items"]
            if javascript and declared == "dict" and "properties" in schema:
                schema["description"] += (
                    " The dictionary entries have the following schema; they are not in string "
                    f"representation. {json.dumps(schema['properties'])}"
                )
                del schema["properties"]
            schema["type"] = "string"
    return functions


def _openapi_properties(properties: dict[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    for key, raw in properties.items():
        schema = dict(raw)
        declared = schema.get("type")
        if declared == "float":
            schema["format"] = "float"
            schema["description"] = schema.get("description", "") + " This is a float type value."
        schema["type"] = _OPENAPI_TYPES.get(declared, "string") if isinstance(declared, str) else "string"
        if schema["type"] in ("array", "object"):
            if "properties" in schema:
                schema["properties"] = _openapi_properties(schema["properties"])
            elif "items" in schema:
                items = dict(schema["items"])
                items["type"] = _OPENAPI_TYPES.get(items.get("type", "string"), "string")
                if items["type"] == "array" and "items" in items:
                    inner = dict(items["items"])
                    inner["type"] = _OPENAPI_TYPES.get(inner.get("type", "string"), "string")
                    items["items"] = inner
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _openapi_properties(items["properties"])
                schema["items"] = items
        converted[key] = schema
    return converted


def _first_option(options: Any) -> tuple[bool, Any]:
    if not isinstance(options, list):
        return True, options
    for option in options:
        if option != "":
            return True, _materialise(option)
    return False, None


def _materialise(value: Any) -> Any:
    if isinstance(value, dict):
        expanded = {}
        for key, options in value.items():
            keep, chosen = _first_option(options)
            if keep:
                expanded[key] = chosen
        return expanded
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_materialise(v) for v in value]
    return value


def _gold_call(call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((name, params),) = call.items()
    arguments = {}
    for param, options in params.items():
        keep, value = _first_option(options)
        if keep:
            arguments[param] = value
    return name, arguments


# -- Java / JavaScript source rendering for gold turns --------------------------------------------

_JAVA_ELEMENT_TYPES = {
    "integer": "int",
    "long": "long",
    "double": "double",
    "float": "float",
    "boolean": "boolean",
    "char": "char",
    "byte": "byte",
    "short": "short",
}


def _source_arguments(entry: BfclEntry, name: str, args: dict[str, Any], language: str, quoted: bool) -> dict[str, Any]:
    doc = next((d for d in entry.functions if d["name"] == name), None)
    properties = doc["parameters"].get("properties", {}) if doc else {}
    return {key: _source_value(value, properties.get(key, {}), language, quoted) for key, value in args.items()}


def _render_source_call(entry: BfclEntry, name: str, args: dict[str, Any], language: str, quoted: bool) -> str:
    rendered = _source_arguments(entry, name, args, language, quoted)
    return f"{name}({', '.join(f'{key}={value}' for key, value in rendered.items())})"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _literal(value: Any, declared: str | None, language: str) -> str:
    """Source text of a scalar or nested value (strings always quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, int):
        return f"{value}L" if language == "java" and declared == "long" else str(value)
    if isinstance(value, float):
        return f"{value!r}f" if language == "java" and declared == "float" else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, None, language) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {_literal(v, None, language)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)


def _source_value(value: Any, schema: dict[str, Any], language: str, quoted: bool) -> str:
    """One argument as Java/JavaScript source text (BFCL's Java/JS values are strings)."""
    declared = schema.get("type")
    if isinstance(value, str):
        return _quote(value) if quoted else value
    item_type = schema.get("items", {}).get("type")
    if language == "java" and isinstance(value, list):
        elements = ", ".join(_literal(v, item_type, language) for v in value)
        if declared == "ArrayList":
            return f"new ArrayList<>(Arrays.asList({elements}))"
        return f"new {_JAVA_ELEMENT_TYPES.get(item_type or '', 'String')}[]{{{elements}}}"
    if language == "java" and isinstance(value, dict):
        puts = " ".join(f"put({_quote(str(k))}, {_literal(v, None, language)});" for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return _literal(value, declared, language)
