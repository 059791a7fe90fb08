"""Every fault the fault server injects, through the real OpenAI client over HTTP on 127.0.0.1."""

from __future__ import annotations

import pytest

from fault_server import FAULT_KINDS, FaultServer
from toolgauge.errors import ConnectionFailed, ModelError, TransientModelError
from toolgauge.models.openai_compat import OpenAICompatClient, decode_completion
from toolgauge.records import Message, ModelRequest, ToolSpec

TOOLS = [
    ToolSpec(
        name="get_weather",
        description="Weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
]
REQUEST = ModelRequest(messages=[Message(role="user", content="Weather in Oslo?")], tools=TOOLS)
# Faults where nothing usable came back over the connection (they count toward an outage streak).
CONNECTION_LEVEL = {"truncated", "reset"}


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_fault_is_transient_and_the_next_attempt_is_answered(kind: str):
    with FaultServer(fault_rate=1.0, kinds=(kind,), max_faults=1) as srv:
        client = OpenAICompatClient("m", base_url=srv.url, api_key="k", timeout=0.5)
        try:
            with pytest.raises(TransientModelError) as failed:
                await client.generate(REQUEST)
            turn = await client.generate(REQUEST)
        finally:
            await client.close()
    assert isinstance(failed.value, ConnectionFailed) == (kind in CONNECTION_LEVEL), failed.value
    assert srv.faults == {kind: 1}
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Weather"})]


async def test_429_carries_its_retry_after():
    with FaultServer(fault_rate=1.0, kinds=("http_429",), max_faults=1) as srv:
        client = OpenAICompatClient("m", base_url=srv.url, api_key="k")
        try:
            with pytest.raises(TransientModelError) as failed:
                await client.generate(REQUEST)
        finally:
            await client.close()
    assert failed.value.retry_after == 0.0
    assert "HTTP 429" in str(failed.value)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"<html><body>Bad Gateway</body></html>", "not JSON (text/html)"),
        (b"{}", "choices: Field required"),
        (b'{"choices": []}', "choices: List should have at least 1 item"),
        (b'{"choices": [{"index": 0}]}', "choices.0.message: Field required"),
        (b"[1, 2]", "JSON list, not an object"),
        (b'{"choices": [{"message": ', "not JSON"),
    ],
)
def test_unusable_200_bodies_are_transient_with_a_clear_message(body: bytes, says: str):
    with pytest.raises(TransientModelError, match="malformed response") as failed:
        decode_completion(body, "text/html" if body.startswith(b"<") else "application/json")
    assert says in str(failed.value)


async def test_probe_passes_on_a_live_endpoint_and_is_not_a_sample_call():
    with FaultServer() as srv:
        client = OpenAICompatClient("m", base_url=srv.url, api_key="k")
        await client.probe()
        await client.close()
    assert srv.requests == 1 and srv.answered == 1


async def test_probe_reports_the_servers_answer_for_a_wrong_model_name():
    with FaultServer(models=("real-model",)) as srv:
        client = OpenAICompatClient("typo-model", base_url=srv.url, api_key="k")
        with pytest.raises(ModelError, match="HTTP 404: The model 'typo-model' does not exist"):
            await client.probe()
        await client.close()


async def test_probe_fails_at_once_on_a_refused_connection():
    with FaultServer() as srv:
        url = srv.url
    client = OpenAICompatClient("m", base_url=url, api_key="k")  # the port is closed now
    with pytest.raises(ModelError, match="APIConnectionError") as failed:
        await client.probe()
    await client.close()
    assert "(after" not in str(failed.value)  # refused: not asked again


async def test_probe_retries_a_server_that_answers_with_faults():
    with FaultServer(fault_rate=1.0, kinds=("http_503", "reset", "html"), max_faults=3) as srv:
        client = OpenAICompatClient("m", base_url=srv.url, api_key="k")
        await client.probe()
        await client.close()
    assert srv.requests == 4 and srv.answered == 1
