"""Every fault the fault server injects, through the real OpenAI client over HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

import pytest

from helpers.fault_server import FAULT_KINDS, FaultServer
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
    # Only a hang needs a short timeout: the client must give up on it. Any other fault gets a generous one, so
    # the first request is answered (with its fault) before the second is sent. With a short timeout for every
    # kind, a loaded machine (pytest -n 6) timed the first request out before the server had read it; the second
    # then reached the server first, took the attempt-0 fault and failed the test.
    with FaultServer(fault_rate=1.0, kinds=(kind,), max_faults=1) as srv:
        client = OpenAICompatClient("m", base_url=srv.url, api_key="k", timeout=0.5 if kind == "hang" else 60)
        retry = client
        try:
            with pytest.raises(TransientModelError) as failed:
                await client.generate(REQUEST)
            if kind == "hang":
                # The timeout says nothing of whether the server has read the hung request yet: wait until it has
                # (and holds it), then ask again with a client that is not in a hurry.
                await wait_until(lambda: srv.faults[kind] == 1)
                retry = OpenAICompatClient("m", base_url=srv.url, api_key="k", timeout=60)
            turn = await retry.generate(REQUEST)
        finally:
            await client.close()
            await retry.close()
    assert isinstance(failed.value, ConnectionFailed) == (kind in CONNECTION_LEVEL), failed.value
    assert srv.faults == {kind: 1}
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Weather"})]


async def wait_until(condition: Callable[[], bool], deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, "the server never saw the request"
        await asyncio.sleep(0.01)


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
    # A port bound but never listening refuses connections, and stays ours: a closed server's port could be taken
    # by another test's server in the meantime (pytest -n).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        client = OpenAICompatClient("m", base_url=f"http://127.0.0.1:{taken.getsockname()[1]}/v1", api_key="k")
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
