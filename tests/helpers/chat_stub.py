"""A small real OpenAI-compatible endpoint on 127.0.0.1 for tests: each POST is answered by a Python function.

Tests that need an endpoint with a particular behaviour (echo secrets, reject with markup, hold answers at a
gate) give it a ``respond(request, headers) -> (status, body)`` function instead of writing a server each.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Respond = Callable[[dict[str, Any], Mapping[str, str]], tuple[int, bytes]]


def completion(content: str = "ok", finish_reason: str = "stop", usage: tuple[int, int] = (1, 1)) -> bytes:
    """A chat-completion body with one text choice, reporting ``usage`` (prompt, completion tokens)."""
    return json.dumps(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }
    ).encode()  # fmt: skip


def tool_call_completion(name: str, arguments: dict[str, Any], *, prompt_tokens: int = 1) -> bytes:
    """A chat-completion body whose one choice calls the tool ``name`` (usage: ``prompt_tokens`` in, 2 out)."""
    call = {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return json.dumps(
        {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 2, "total_tokens": prompt_tokens + 2},
        }
    ).encode()  # fmt: skip


def error(message: str) -> bytes:
    """An OpenAI-style error body."""
    return json.dumps({"error": {"message": message}}).encode()


def is_probe(request: dict[str, Any]) -> bool:
    """toolgauge's probe before the first sample is a one-token completion."""
    return request.get("max_tokens") == 1


class ChatStub:
    """Serves ``respond`` on 127.0.0.1 at a free port; counts requests; use as a context manager."""

    def __init__(self, respond: Respond, models: Callable[[], dict[str, Any]] | None = None) -> None:
        """``models``: the body of ``GET /v1/models`` (made anew on each request); None: GET is not served."""
        self.requests = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                with lock:
                    outer.requests += 1
                self._reply(*respond(json.loads(raw or b"{}"), self.headers))

            def do_GET(self) -> None:
                if models is None or not self.path.rstrip("/").endswith("/models"):
                    self.send_error(404)
                    return
                self._reply(200, json.dumps(models()).encode())

            def _reply(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def model(self, name: str = "m") -> str:
        """The ``--model`` spec of this endpoint."""
        return f"http://127.0.0.1:{self.port}/v1#{name}"

    def __enter__(self) -> ChatStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
