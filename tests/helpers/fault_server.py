"""A fault-injecting OpenAI-compatible server on 127.0.0.1, for tests and benchmarks/fault_injection.py.

Answers are a pure function of the request body (the same request always gets the same reply),
so a clean run and a faulty run can be compared verdict by verdict. Faults are a pure function
of (seed, request body, attempt number for that body): the schedule is reproducible whatever the
concurrency, and after ``max_faults`` faulty attempts of one request the next one is answered, so
a client with enough retries loses nothing.

Fault kinds: HTTP 500 and 503, 429 with ``Retry-After: 0``, a hang past the client's timeout,
200 with an HTML page, with ``{}``, with invalid JSON, with no choices, a body cut short
(Content-Length larger than what is sent, then close) and a connection reset (RST, no reply).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULT_KINDS = (
    "http_500",
    "http_503",
    "http_429",
    "hang",
    "html",
    "empty_object",
    "invalid_json",
    "no_choices",
    "truncated",
    "reset",
)


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _argument(schema: dict[str, Any], text: str, name: str) -> Any:
    """A value for one parameter, derived from the user's words so some answers are right."""
    kind = schema.get("type")
    if schema.get("enum"):
        return schema["enum"][0]
    if kind in ("integer", "number", "float"):
        numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
        value = float(numbers[0]) if numbers else 1.0
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return True
    if kind in ("array", "tuple"):
        return []
    if kind in ("object", "dict"):
        return {}
    words = re.findall(r"[A-Z][a-zA-Z]+", text) or re.findall(r"[a-zA-Z]+", text) or [name]
    return words[0]


def answer_for(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a request: a call of one offered tool, or text when none is offered."""
    messages = request.get("messages") or []
    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    text = users[-1] if users else ""
    if not isinstance(text, str):
        text = json.dumps(text)
    tools = [t["function"] for t in request.get("tools") or [] if t.get("type") == "function"]
    last = messages[-1] if messages else {}
    if not tools or last.get("role") == "tool" or request.get("tool_choice") == "none":
        return {"role": "assistant", "content": f"Done: {text[:40]}"}
    forced = request.get("tool_choice")
    if isinstance(forced, dict):
        chosen = next((t for t in tools if t.get("name") == forced["function"]["name"]), tools[0])
    else:
        chosen = tools[int(_unit("tool", text, len(messages)) * len(tools))]
    params = chosen.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = [n for n in params.get("required") or [] if n in props]
    args = {name: _argument(props[name], text, name) for name in required}
    call = {"id": "call_0", "type": "function", "function": {"name": chosen["name"], "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def completion(request: dict[str, Any]) -> dict[str, Any]:
    """A full chat-completion body for a request."""
    message = answer_for(request)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "cmpl-fault-server", "object": "chat.completion", "created": 0,
        "model": request.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }  # fmt: skip


class FaultServer:
    """POST /v1/chat/completions with deterministic answers and a seeded fault schedule.

    ``fault_rate`` is the share of attempts that get a fault (never more than ``max_faults`` in a
    row for one request; keep it below the client's attempts). ``down_after``: after that many
    answered requests every connection is reset (an endpoint that died mid-run); set
    ``down_after = None`` to bring it back. ``models``: the only model names served (others get
    HTTP 404). ``reject_tool_share``: that share of the requests offering tools is refused with
    HTTP 400 every time (samples that fail for good; requests without tools, such as the probe,
    are always served).
    """

    def __init__(
        self,
        *,
        fault_rate: float = 0.0,
        seed: int = 0,
        kinds: tuple[str, ...] = FAULT_KINDS,
        max_faults: int = 3,
        down_after: int | None = None,
        port: int = 0,
        models: tuple[str, ...] | None = None,
        reject_tool_share: float = 0.0,
    ):
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)}")
        self.fault_rate = fault_rate
        self.seed = seed
        self.kinds = kinds
        self.max_faults = max_faults
        self.down_after = down_after
        self.models = models
        self.reject_tool_share = reject_tool_share
        self.faults: Counter[str] = Counter()
        self.answered = 0  # 200 replies with a valid completion
        self.requests = 0
        self._attempts: Counter[str] = Counter()  # request digest -> attempts seen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # releases hanging handlers
        self.httpd.shutdown()
        self.httpd.server_close()

    def _fault_for(self, body: bytes) -> str | None:
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            if self.down_after is not None and self.answered >= self.down_after:
                self.faults["down"] += 1
                return "down"
            attempt = self._attempts[digest]
            self._attempts[digest] += 1
        if attempt >= self.max_faults or _unit(self.seed, digest, attempt) >= self.fault_rate:
            return None
        kind = self.kinds[int(_unit("kind", self.seed, digest, attempt) * len(self.kinds))]
        with self._lock:
            self.faults[kind] += 1
        return kind

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length", 0))
        body = h.rfile.read(length)
        if not h.path.endswith("/chat/completions"):
            self._send(h, 404, "application/json", b'{"error": {"message": "not found"}}')
            return
        with self._lock:
            self.requests += 1
        request = json.loads(body)
        if self.models is not None and request.get("model") not in self.models:
            message = f"The model '{request.get('model')}' does not exist"
            self._send(h, 404, "application/json", json.dumps({"error": {"message": message}}).encode())
            return
        if request.get("tools") and _unit("reject", self.seed, body) < self.reject_tool_share:
            message = "tools are not supported for this request"
            self._send(h, 400, "application/json", json.dumps({"error": {"message": message}}).encode())
            return
        fault = self._fault_for(body)
        if fault in ("reset", "down"):
            # RST instead of FIN: the client sees a connection reset, not a clean close.
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.close_connection = True
            h.connection.close()
            return
        if fault == "hang":
            self._stop.wait(60.0)
            h.close_connection = True
            return
        if fault in ("http_500", "http_503"):
            code = int(fault[-3:])
            self._send(h, code, "application/json", json.dumps({"error": {"message": f"injected {code}"}}).encode())
            return
        if fault == "http_429":
            payload = b'{"error": {"message": "injected rate limit"}}'
            self._send(h, 429, "application/json", payload, {"Retry-After": "0"})
            return
        if fault == "html":
            self._send(h, 200, "text/html", b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>")
            return
        if fault == "empty_object":
            self._send(h, 200, "application/json", b"{}")
            return
        if fault == "invalid_json":
            self._send(h, 200, "application/json", b'{"id": "cmpl", "choices": [{"index": 0, "message": ')
            return
        if fault == "no_choices":
            self._send(h, 200, "application/json", b'{"id": "cmpl", "object": "chat.completion", "choices": []}')
            return
        data = json.dumps(completion(request)).encode()
        if fault == "truncated":
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data) + 100))
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])
            h.close_connection = True
            return
        with self._lock:
            self.answered += 1
        self._send(h, 200, "application/json", data)

    @staticmethod
    def _send(
        h: BaseHTTPRequestHandler, status: int, ctype: str, data: bytes, headers: dict[str, str] | None = None
    ) -> None:
        h.send_response(status)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
