"""What is particular to ``anthropic:MODEL``: the Messages-API shape of our messages, tool_choice, thinking."""

from __future__ import annotations

import pytest

from helpers.provider_servers import ProviderServer
from toolgauge.driver import unsupported_options_warning
from toolgauge.models.anthropic_client import AnthropicClient, tool_choice_param
from toolgauge.records import GenerateOptions, Message, ModelRequest, ThinkingBlock, ToolCall, ToolSpec

KEY = "sk-ant-loopback-0123456789abcdef"
ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
)


def client(url: str | None = None) -> AnthropicClient:
    return AnthropicClient("claude-test", api_key=KEY, base_url=url, timeout=10)


def loop_messages(thinking: list[ThinkingBlock] | None) -> list[Message]:
    """A tool loop in our form: system, user, the assistant's two parallel calls, their two results."""
    calls = [ToolCall(name="add", arguments={"a": 1, "b": 2}, id="call.1"), ToolCall(name="add", arguments={}, id=None)]
    return [
        Message(role="system", content="You add."),
        Message(role="user", content="1+2 and 3+4?"),
        Message(role="assistant", content="", tool_calls=calls, thinking=thinking),
        Message(role="tool", content="3", tool_call_id="call.1"),
        Message(role="tool", content="7"),
        Message(role="system", content="Answer in one line."),
    ]


def test_messages_become_blocks_with_results_paired_to_their_calls() -> None:
    body = client().request_body(ModelRequest(messages=loop_messages(None), tools=[ADD]))
    assert body["system"] == "You add.\n\nAnswer in one line."
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "1+2 and 3+4?"}]}
    uses = assistant["content"]
    assert [b["type"] for b in uses] == ["tool_use", "tool_use"], "an empty text block is never sent"
    assert uses[0]["id"] == "call_1", "ids are made of the characters the API accepts"
    assert uses[1]["id"] == "call_2_1", "a call without id gets one"
    assert [b["tool_use_id"] for b in results["content"]] == ["call_1", "call_2_1"]
    assert results["role"] == "user" and [b["content"] for b in results["content"]] == ["3", "7"]
    assert body["tools"] == [{"name": "add", "description": "Add two numbers.", "input_schema": ADD.parameters}]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (None, None),
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("add", {"type": "tool", "name": "add"}),
    ],
)
def test_tool_choice_maps_to_the_apis_four_modes(ours: str | None, theirs: dict[str, str] | None) -> None:
    assert tool_choice_param(ours) == theirs


def test_options_map_to_the_apis_fields_and_the_rest_is_said_once() -> None:
    options = GenerateOptions(temperature=0.5, top_p=0.9, seed=1, stop=("X",), reasoning_effort="minimal")
    body = client().request_body(ModelRequest(messages=[Message(role="user", content="hi")], options=options))
    assert body["stop_sequences"] == ["X"] and body["output_config"] == {"effort": "low"}
    assert "temperature" not in body and "top_p" not in body
    line = unsupported_options_warning(client(), options)
    assert line.startswith("model 'anthropic:claude-test' cannot honour temperature")
    assert "top_p" in line and "seed" in line and "\n" not in line
    # With the provider's defaults nothing is sent, so nothing is said.
    assert unsupported_options_warning(client(), GenerateOptions(temperature=None)) == ""


async def test_thinking_blocks_are_kept_and_sent_back_with_their_signature() -> None:
    with ProviderServer("anthropic") as server:
        model = client(server.url)
        options = GenerateOptions(thinking_budget=2048, max_tokens=4096)
        first = await model.generate(
            ModelRequest(messages=[Message(role="user", content="Add 1 and 2")], tools=[ADD], options=options)
        )
        assert first.thinking == [
            ThinkingBlock(provider="anthropic", text="The user wants a tool.", signature=server.thinking_signature)
        ]
        assert server.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert server.requests[-1].body["max_tokens"] == 4096 + 2048, "thinking counts in max_tokens: added on top"
        history = [
            Message(role="user", content="Add 1 and 2"),
            first.as_message(),
            Message(role="tool", content="3", tool_call_id=first.tool_calls[0].id),
        ]
        await model.generate(ModelRequest(messages=history, tools=[ADD], options=options))
        sent = server.requests[-1].body["messages"][1]["content"]
        assert sent[0] == {
            "type": "thinking",
            "thinking": "The user wants a tool.",
            "signature": server.thinking_signature,
        }
        # A protocol that rebuilds the assistant message from its calls alone still sends the block back.
        bare = Message(role="assistant", content="", tool_calls=first.tool_calls)
        await model.generate(ModelRequest(messages=[history[0], bare, history[2]], tools=[ADD], options=options))
        assert server.requests[-1].body["messages"][1]["content"][0]["type"] == "thinking"
        await model.close()


def test_other_providers_thinking_is_never_sent() -> None:
    foreign = [ThinkingBlock(provider="google", text="hmm", signature="abc", call_id="call.1")]
    body = client().request_body(ModelRequest(messages=loop_messages(foreign)))
    assert all(b["type"] != "thinking" for turn in body["messages"] for b in turn["content"])


def test_redacted_thinking_goes_back_as_it_came() -> None:
    redacted = [ThinkingBlock(provider="anthropic", signature="opaque-data", redacted=True)]
    body = client().request_body(ModelRequest(messages=loop_messages(redacted)))
    assert body["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "opaque-data"}
