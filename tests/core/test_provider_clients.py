"""The Anthropic, Gemini and Azure clients against loopback servers of each wire format, through the real SDKs.

What every provider must do alike: tool calls (one and parallel) in our neutral form, refusals and max-tokens
stops mapped to our finish reasons, 429 retried with the server's Retry-After, 5xx and malformed bodies
retried, an echoed key masked in the error, the raw exchange kept, the probe, and a dead port said at once.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from helpers.provider_servers import ProviderServer, Wire
from toolgauge.errors import ModelError, TransientModelError
from toolgauge.models.spec import resolve_model
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolSpec
from toolgauge.redact import MASK

WIRES: list[Wire] = ["anthropic", "google", "azure"]
KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-loopback-0123456789abcdef"),
    "google": ("GEMINI_API_KEY", "AIzaLoopbackKey0123456789abcdef"),
    "azure": ("AZURE_OPENAI_API_KEY", "azure-loopback-key-0123456789"),
}
WEATHER = ToolSpec(
    name="get_weather",
    description="Weather forecast.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
)
TIME = ToolSpec(name="get_time", description="Local time.", parameters={"type": "object", "properties": {}})


def ask(*tools: ToolSpec, **options: Any) -> ModelRequest:
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Paris for 3 days"),
    ]
    return ModelRequest(messages=messages, tools=list(tools), options=GenerateOptions(**options))


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Wire:
    name, value = KEYS[request.param]
    monkeypatch.setenv(name, value)
    return request.param  # type: ignore[no-any-return]


async def generate(server: ProviderServer, request: ModelRequest) -> AssistantTurn:
    client = resolve_model(server.spec(), timeout=10)
    try:
        return await client.generate(request)
    finally:
        await client.close()


async def test_a_tool_call_comes_back_in_our_form_with_the_raw_exchange(wire: Wire) -> None:
    with ProviderServer(wire) as server:
        turn = await generate(server, ask(WEATHER))
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Weather", "days": 3})]
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.input_tokens == 10 and turn.usage.output_tokens == 5
    assert turn.exchange is not None and turn.exchange.provider == wire
    assert turn.exchange.response, "the provider's response body is kept as it came"
    assert "messages" not in turn.exchange.request and "contents" not in turn.exchange.request
    assert "Be brief." in str(server.requests[-1].body), "the system prompt reached the provider"


async def test_parallel_calls_are_all_kept(wire: Wire) -> None:
    with ProviderServer(wire, ["parallel"]) as server:
        turn = await generate(server, ask(WEATHER, TIME))
    assert sorted(c.name for c in turn.tool_calls) == ["get_time", "get_weather"]
    assert len({c.id for c in turn.tool_calls}) == 2, "each call keeps an id of its own"


async def test_a_refusal_is_a_content_filter_stop_with_no_call(wire: Wire) -> None:
    with ProviderServer(wire, ["refusal"]) as server:
        turn = await generate(server, ask(WEATHER))
    assert turn.finish_reason == "content_filter" and not turn.tool_calls and not turn.content


async def test_a_max_tokens_stop_is_length(wire: Wire) -> None:
    with ProviderServer(wire, ["max_tokens"]) as server:
        turn = await generate(server, ask(WEATHER))
    assert turn.finish_reason == "length" and turn.content == "I was about to"


async def test_429_is_transient_with_the_servers_retry_after(wire: Wire) -> None:
    with ProviderServer(wire, ["http_429"]) as server, pytest.raises(TransientModelError) as caught:
        await generate(server, ask(WEATHER))
    assert caught.value.retry_after == 0.0
    assert str(caught.value).startswith("HTTP 429: ") and "rate limited" in str(caught.value)


@pytest.mark.parametrize("mode", ["http_500", "malformed", "empty_object"])
async def test_5xx_and_malformed_bodies_are_transient(wire: Wire, mode: str) -> None:
    with ProviderServer(wire, [mode]) as server, pytest.raises(TransientModelError) as caught:
        await generate(server, ask(WEATHER))
    assert ("HTTP 500" if mode == "http_500" else "malformed response") in str(caught.value)


async def test_an_echoed_key_is_masked_in_the_error(wire: Wire) -> None:
    key = KEYS[wire][1]
    with ProviderServer(wire, ["echo_key"]) as server, pytest.raises(ModelError) as caught:
        await generate(server, ask(WEATHER))
    assert key in str(server.requests[-1].headers), "the key must have been sent for this to test anything"
    assert not isinstance(caught.value, TransientModelError), "a 401 is not worth retrying"
    assert key not in str(caught.value) and MASK in str(caught.value)


async def test_the_probe_passes_on_a_live_server_and_says_a_dead_port_at_once(wire: Wire) -> None:
    with ProviderServer(wire) as server:
        client = resolve_model(server.spec(), timeout=10)
        await client.probe()  # type: ignore[attr-defined]
        await client.close()
        assert len(server.requests) == 1
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = server.spec().replace(f":{server.url.rsplit(':', 1)[1]}", f":{port}")
    client = resolve_model(dead, timeout=10)
    with pytest.raises(ModelError) as caught:
        await client.probe()  # type: ignore[attr-defined]
    await client.close()
    assert "after" not in str(caught.value), "a refused connection is not asked again"


async def test_stop_sequences_and_max_tokens_reach_the_wire(wire: Wire) -> None:
    with ProviderServer(wire) as server:
        await generate(server, ask(WEATHER, stop=("END",), max_tokens=77))
    body = server.requests[-1].body
    if wire == "anthropic":
        assert body["stop_sequences"] == ["END"] and body["max_tokens"] == 77
    elif wire == "google":
        config = body["generationConfig"]
        assert config["stopSequences"] == ["END"] and config["maxOutputTokens"] == 77
    else:
        assert body["stop"] == ["END"] and body["max_tokens"] == 77
