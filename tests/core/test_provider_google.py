"""What is particular to ``google:MODEL``: function declarations from our schemas, calling modes, thoughts."""

from __future__ import annotations

import base64

import pytest

from helpers.provider_servers import ProviderServer
from toolgauge.errors import ModelError
from toolgauge.models.gemini_schema import SchemaNotExpressible, gemini_schema
from toolgauge.models.google_client import GoogleClient, convert_messages, function_calling_config
from toolgauge.records import GenerateOptions, Message, ModelRequest, ToolCall, ToolSpec

KEY = "AIzaLoopbackKey0123456789abcdef"
FIND = ToolSpec(
    name="find_hotel",
    description="Find a hotel.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "stars": {"type": "integer", "enum": [3, 4, 5]},
            "budget": {"type": ["number", "null"]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["pool", "spa"]}},
            "near": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"lat": {"type": "number"}}}]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)


def client(url: str | None = None) -> GoogleClient:
    return GoogleClient("gemini-test", api_key=KEY, base_url=url, timeout=10)


def test_the_schema_subset_gemini_takes_is_converted() -> None:
    schema = gemini_schema(FIND.parameters)
    props = schema["properties"]
    assert schema["type"] == "OBJECT" and schema["required"] == ["city"] and "additional_properties" not in schema
    assert props["city"] == {"type": "STRING", "description": "City name"}
    assert props["stars"] == {"type": "INTEGER", "description": "(one of: 3, 4, 5)"}, "typed enums are said in words"
    assert props["budget"] == {"type": "NUMBER", "nullable": True}
    assert props["tags"] == {"type": "ARRAY", "items": {"type": "STRING", "enum": ["pool", "spa"]}}
    assert [v["type"] for v in props["near"]["any_of"]] == ["STRING", "OBJECT"]


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}, "parameters.properties.x: references"),
        (
            {"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "string"}]}}},
            "properties.p.items",
        ),
        ({"type": "object", "properties": {"n": {"not": {"type": "string"}}}}, "properties.n: 'not'"),
        ({"type": "object", "properties": {"t": {"type": "tuple"}}}, "properties.t.type: 'tuple'"),
    ],
)
def test_a_schema_gemini_cannot_express_is_refused_saying_where(schema: dict[str, object], where: str) -> None:
    with pytest.raises(SchemaNotExpressible, match=where.replace("$", r"\$")):
        gemini_schema(schema)
    tool = ToolSpec(name="bad_tool", parameters=schema)
    with pytest.raises(ModelError, match="tool 'bad_tool': cannot be declared to Gemini: "):
        client().request_config(ModelRequest(messages=[Message(role="user", content="x")], tools=[tool]))


@pytest.mark.parametrize(
    ("ours", "mode", "names"),
    [("auto", "AUTO", None), ("none", "NONE", None), ("required", "ANY", None), ("find_hotel", "ANY", ["find_hotel"])],
)
def test_tool_choice_maps_to_function_calling_modes(ours: str, mode: str, names: list[str] | None) -> None:
    config = function_calling_config(ours)
    assert config is not None and config.mode is not None
    assert config.mode.value == mode and config.allowed_function_names == names
    assert function_calling_config(None) is None


async def test_options_reach_generation_config_and_a_forced_tool_is_called() -> None:
    with ProviderServer("google") as server:
        model = client(server.url)
        options = GenerateOptions(
            temperature=0.3,
            top_p=0.8,
            seed=7,
            reasoning_effort="low",
            tool_choice="find_hotel",
            extra_body={"labels": {"run": "x"}},
        )
        turn = await model.generate(
            ModelRequest(messages=[Message(role="user", content="A hotel in Rome")], tools=[FIND], options=options)
        )
        await model.close()
    body = server.requests[-1].body
    config = body["generationConfig"]
    assert (config["temperature"], config["topP"], config["seed"]) == (0.3, 0.8, 7)
    assert config["thinkingConfig"].get("thinkingLevel", config["thinkingConfig"].get("thinking_level")) == "LOW"
    assert body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY", "allowedFunctionNames": ["find_hotel"]}
    assert body["labels"] == {"run": "x"}, "extra_body is merged into the request body"
    assert [c.name for c in turn.tool_calls] == ["find_hotel"] and turn.tool_calls[0].arguments == {"city": "Rome"}
    assert model.unsupported(options) == []


async def test_thoughts_are_kept_and_call_signatures_go_back_with_their_calls() -> None:
    with ProviderServer("google") as server:
        model = client(server.url)
        options = GenerateOptions(thinking_budget=1024)
        first = await model.generate(
            ModelRequest(messages=[Message(role="user", content="A hotel in Rome")], tools=[FIND], options=options)
        )
        assert first.thinking is not None
        thought, signed = first.thinking
        assert thought.text == "The user wants a tool." and signed.call_id == first.tool_calls[0].id
        assert server.requests[-1].body["generationConfig"]["thinkingConfig"]
        history = [
            Message(role="user", content="A hotel in Rome"),
            first.as_message(),
            Message(role="tool", content='{"hotel": "Roma"}', tool_call_id=first.tool_calls[0].id),
        ]
        await model.generate(ModelRequest(messages=history, tools=[FIND], options=options))
        sent_back = server.requests[-1].body
        # A protocol that rebuilds the model turn from its calls alone still sends the signature back.
        bare = Message(role="assistant", content="", tool_calls=first.tool_calls)
        await model.generate(ModelRequest(messages=[history[0], bare, history[2]], tools=[FIND], options=options))
        await model.close()
    model_turn = sent_back["contents"][1]
    assert model_turn["role"] == "model"
    part = model_turn["parts"][0]
    assert base64.b64decode(part["thoughtSignature"]) == base64.b64decode(server.thinking_signature)
    assert all("thought" not in p for p in model_turn["parts"]), "thought texts are kept, not sent back"
    result = sent_back["contents"][2]["parts"][0]["functionResponse"]
    assert result == {"name": "find_hotel", "response": {"hotel": "Roma"}}, "a result is named after its call"
    rebuilt = server.requests[-1].body["contents"][1]["parts"][0]
    assert base64.b64decode(rebuilt["thoughtSignature"]) == base64.b64decode(server.thinking_signature)


def test_system_messages_become_the_instruction_and_turns_merge() -> None:
    calls = [ToolCall(name="a", arguments={}, id="1"), ToolCall(name="b", arguments={"x": 1}, id="2")]
    system, contents = convert_messages(
        [
            Message(role="system", content="Be kind."),
            Message(role="user", content="hi"),
            Message(role="assistant", content=None, tool_calls=calls),
            Message(role="tool", content="plain text", tool_call_id="1"),
            Message(role="tool", content="[1, 2]", tool_call_id="2"),
        ]
    )
    assert system == "Be kind."
    assert [c.role for c in contents] == ["user", "model", "user"]
    responses = [p.function_response for p in contents[2].parts or []]
    assert [(r.name, r.response) for r in responses if r] == [
        ("a", {"result": "plain text"}),
        ("b", {"result": [1, 2]}),
    ]


async def test_a_blocked_prompt_is_a_content_filter_stop() -> None:
    with ProviderServer("google", ["blocked"]) as server:
        model = client(server.url)
        turn = await model.generate(ModelRequest(messages=[Message(role="user", content="x")]))
        await model.close()
    assert turn.finish_reason == "content_filter" and not turn.content and not turn.tool_calls
    assert turn.exchange is not None and turn.exchange.response["prompt_feedback"]["block_reason"] == "SAFETY"
