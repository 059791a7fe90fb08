"""The OpenAI-compatible client over real HTTP (a tiny scripted HTTP server on loopback)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import ModelError, TransientModelError
from toolgauge.models.openai_compat import OpenAICompatClient, message_to_openai
from toolgauge.models.spec import resolve_model
from toolgauge.records import GenerateOptions, Message, ModelRequest, ToolCall, ToolSpec
from toolgauge.store import open_store


def completion(message: dict, finish: str = "stop") -> dict:
    return {
        "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }  # fmt: skip


class FakeServer:
    """Answers POST /v1/chat/completions from a queue of (status, headers, body)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                outer.requests.append(json.loads(self.rfile.read(length)))
                status, headers, body = outer.replies.pop(0) if outer.replies else (500, {}, {"error": "empty"})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


TOOLS = [
    ToolSpec(
        name="get_weather",
        description="Weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
]


def request(**kw) -> ModelRequest:
    return ModelRequest(messages=[Message(role="user", content="Weather in Oslo?")], tools=TOOLS, **kw)


async def test_tool_call_is_decoded_with_usage():
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    with FakeServer([(200, {}, completion({"content": None, "tool_calls": [call]}, "tool_calls"))]) as srv:
        client = OpenAICompatClient("fake-model", base_url=srv.url, api_key="k")
        turn = await client.generate(request(options=GenerateOptions(tool_choice="get_weather")))
        await client.close()
    assert turn.tool_calls == [
        ToolCall(name="get_weather", arguments={"city": "Oslo"}, id="c1", raw='{"city": "Oslo"}')
    ]
    assert turn.usage.input_tokens == 11 and turn.usage.output_tokens == 7
    sent = srv.requests[0]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["temperature"] == 0.0


async def test_truncated_arguments_become_a_parse_error_not_an_exception():
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Os'}}
    with FakeServer([(200, {}, completion({"content": None, "tool_calls": [call]}, "length"))]) as srv:
        client = OpenAICompatClient("fake-model", base_url=srv.url, api_key="k")
        turn = await client.generate(request())
        await client.close()
    assert turn.tool_calls[0].arguments == {}
    assert turn.tool_calls[0].parse_error == "call cut off by max_tokens (finish_reason=length)"
    assert turn.tool_calls[0].raw == '{"city": "Os'


async def test_429_is_transient_with_retry_after_and_400_is_permanent():
    replies = [
        (429, {"retry-after": "3"}, {"error": {"message": "slow down"}}),
        (400, {}, {"error": {"message": "bad"}}),
    ]
    with FakeServer(replies) as srv:
        client = OpenAICompatClient("fake-model", base_url=srv.url, api_key="k")
        with pytest.raises(TransientModelError) as transient:
            await client.generate(request())
        with pytest.raises(ModelError) as permanent:
            await client.generate(request())
        await client.close()
    assert transient.value.retry_after == 3.0
    assert not isinstance(permanent.value, TransientModelError)
    assert "HTTP 400" in str(permanent.value)


async def test_engine_retries_a_503_against_the_real_sdk(tmp_path):
    replies = [(503, {}, {"error": {"message": "overloaded"}}), (200, {}, completion({"content": "sunny"}))]

    class Reply(BaseModel):
        content: str | None

    async def ask(sample: str, ctx: EpisodeContext) -> Reply:
        turn = await ctx.generate([Message(role="user", content=sample)])
        return Reply(content=turn.content)

    with FakeServer(replies) as srv:
        client = OpenAICompatClient("fake-model", base_url=srv.url, api_key="k")
        store = open_store(f"sqlite:///{tmp_path / 's.db'}")
        out = await run_episodes(
            [("a", "hi")],
            ask,
            Reply,
            client=client,
            store=store,
            run_id=store.create_run("t", "m", {}),
            config=EngineConfig(backoff_base=0.01, show_progress=False),
        )
        await client.close()
    assert out.outcomes[0].result.content == "sunny"
    assert len(srv.requests) == 2


def test_assistant_messages_always_carry_content():
    msg = Message(role="assistant", tool_calls=[ToolCall(name="f", arguments={"a": 1}, id="x")])
    wire = message_to_openai(msg)
    assert wire["content"] == ""
    assert wire["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert message_to_openai(Message(role="tool", content="ok", tool_call_id="x")) == {
        "role": "tool",
        "content": "ok",
        "tool_call_id": "x",
    }


def test_model_specs_resolve():
    a = resolve_model("http://127.0.0.1:8000/v1#qwen")
    assert isinstance(a, OpenAICompatClient) and a.model == "qwen" and a.base_url == "http://127.0.0.1:8000/v1"
    b = resolve_model("openai:llama3@http://localhost:11434/v1")
    assert isinstance(b, OpenAICompatClient) and b.model == "llama3" and b.base_url == "http://localhost:11434/v1"
    from toolgauge.errors import UsageError

    with pytest.raises(UsageError, match="unknown model spec"):
        resolve_model("nonsense")
    with pytest.raises(UsageError, match="after '#'"):
        resolve_model("http://127.0.0.1:8000/v1")
