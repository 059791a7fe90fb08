"""Loopback servers (127.0.0.1) speaking the named providers' wire formats, for tests driven through the real SDKs.

- ``anthropic``: Anthropic's Messages API (``POST /v1/messages``, key in ``x-api-key`` or as a bearer token);
- ``google``: Gemini's ``POST /v1beta/models/MODEL:generateContent`` (or ``/v1/``) (key in ``x-goog-api-key``);
- ``azure``: an Azure OpenAI deployment (``POST /openai/deployments/DEP/chat/completions?api-version=V``, key in
  ``api-key``); any other path or a missing ``api-version`` is a 404, as Azure answers.

Each request is answered like ``fault_server.answer_for`` answers a chat completion (a call of one offered tool
with arguments taken from the user's words, or text once a tool result is in), converted to the wire format.
``script`` sets what the next sample requests get, in order (the probe, a one-token request, is always answered):
``answer``; ``parallel`` (every offered tool called at once, up to two); ``refusal``; ``blocked`` (Gemini: the
prompt blocked, no candidate); ``max_tokens``; ``http_429`` (with ``Retry-After: 0``); ``http_500``; ``malformed``
(a 200 HTML page); ``empty_object`` (a 200 ``{}``); ``echo_key`` (a 401 whose body quotes the key it was sent).
Requests are kept in ``requests`` (path, headers, decoded body) for tests to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from helpers.fault_server import answer_for

Wire = Literal["anthropic", "google", "azure"]
KEY_HEADER = {"anthropic": "x-api-key", "google": "x-goog-api-key", "azure": "api-key"}


def sent_key(wire: Wire, headers: dict[str, str]) -> str:
    """The API key a request carried (the anthropic SDK sends it as a bearer token, older ones as x-api-key)."""
    return headers.get(KEY_HEADER[wire]) or headers.get("authorization", "").removeprefix("Bearer ")


MODES = (
    "answer",
    "parallel",
    "refusal",
    "blocked",
    "max_tokens",
    "http_429",
    "http_500",
    "malformed",
    "empty_object",
    "echo_key",
)


class Seen:
    """One request the server received."""

    def __init__(self, path: str, headers: dict[str, str], body: dict[str, Any]):
        self.path = path
        self.headers = headers
        self.body = body


class ProviderServer:
    """Serves one wire format on 127.0.0.1 at a free port; use as a context manager."""

    def __init__(self, wire: Wire, script: Iterable[str] = (), *, thinking_signature: str = "c2lnbmVkLXRob3VnaHQ="):
        unknown = [m for m in script if m not in MODES]
        if unknown:
            raise ValueError(f"unknown mode {unknown[0]!r}; modes: {', '.join(MODES)}")
        self.wire = wire
        self.requests: list[Seen] = []
        self.thinking_signature = thinking_signature
        self._script = list(script)
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = outer._respond(self.path, headers, body)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL the SDK is pointed at."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def spec(self, model: str = "m") -> str:
        """The ``--model`` spec of this server (its URL given in the spec)."""
        if self.wire == "azure":
            return f"azure:{model}@{self.url}?api-version=2024-10-21"
        return f"{self.wire}:{model}@{self.url}"

    @property
    def sample_requests(self) -> list[Seen]:
        """The requests that were not the probe."""
        return [r for r in self.requests if not _is_probe(self.wire, r.body)]

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _respond(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(Seen(path, headers, body))
            probe = _is_probe(self.wire, body)
            mode = self._script.pop(0) if self._script and not probe else "answer"
        if not _path_ok(self.wire, path):
            return 404, _JSON, json.dumps({"error": {"message": f"no such path {path}"}}).encode()
        if mode == "http_429":
            return 429, {**_JSON, "retry-after": "0"}, _error(self.wire, 429, "rate limited, slow down")
        if mode == "http_500":
            return 500, _JSON, _error(self.wire, 500, "internal error")
        if mode == "malformed":
            return 200, {"content-type": "text/html"}, b"<html><body>502 Bad Gateway</body></html>"
        if mode == "empty_object":
            return 200, _JSON, b"{}"
        if mode == "echo_key":
            key = sent_key(self.wire, headers)
            return 401, _JSON, _error(self.wire, 401, f"invalid key {key!r}")
        chat = to_chat(self.wire, body)
        message = answer_for(chat)
        if mode == "parallel":
            message = _parallel(chat, message)
        reply = {"anthropic": _anthropic_reply, "google": _google_reply, "azure": _azure_reply}[self.wire]
        return 200, _JSON, json.dumps(reply(body, message, mode, self.thinking_signature)).encode()


_JSON = {"content-type": "application/json"}


def _is_probe(wire: Wire, body: dict[str, Any]) -> bool:
    if wire == "google":
        return bool((body.get("generationConfig") or {}).get("maxOutputTokens") == 1)
    return bool(body.get("max_tokens") == 1)


def _path_ok(wire: Wire, path: str) -> bool:
    parts = urlsplit(path)
    if wire == "anthropic":
        return parts.path == "/v1/messages"
    if wire == "google":
        return parts.path.startswith(("/v1beta/models/", "/v1/models/")) and parts.path.endswith(":generateContent")
    query = parse_qs(parts.query)
    return (
        parts.path.startswith("/openai/deployments/")
        and parts.path.endswith("/chat/completions")
        and ("api-version" in query)
    )


def _error(wire: Wire, status: int, message: str) -> bytes:
    if wire == "anthropic":
        kind = {429: "rate_limit_error", 500: "api_error", 401: "authentication_error"}.get(status, "error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    if wire == "google":
        return json.dumps({"error": {"code": status, "message": message, "status": "ERROR"}}).encode()
    return json.dumps({"error": {"message": message, "code": str(status)}}).encode()


def _lower_types(schema: Any) -> Any:
    """A Gemini schema (``"type": "STRING"``) in JSON-Schema spelling, for ``answer_for``."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def to_chat(wire: Wire, body: dict[str, Any]) -> dict[str, Any]:
    """The request in chat-completion form (messages, tools, tool_choice), which ``answer_for`` reads."""
    if wire == "azure":
        return body
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    choice: Any = None
    if wire == "anthropic":
        for turn in body.get("messages", []):
            blocks = (
                turn["content"] if isinstance(turn["content"], list) else [{"type": "text", "text": turn["content"]}]
            )
            for block in blocks:
                if block["type"] == "text":
                    messages.append({"role": turn["role"], "content": block["text"]})
                elif block["type"] == "tool_result":
                    messages.append({"role": "tool", "content": block.get("content")})
                elif block["type"] == "tool_use":
                    messages.append({"role": "assistant", "content": None, "tool_calls": [block]})
        tools = [
            {"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}}
            for t in body.get("tools", [])
        ]
        forced = body.get("tool_choice") or {}
        choice = {"function": {"name": forced["name"]}} if forced.get("type") == "tool" else forced.get("type")
    else:
        for turn in body.get("contents", []):
            for part in turn.get("parts", []):
                if "text" in part and not part.get("thought"):
                    messages.append(
                        {"role": "user" if turn["role"] == "user" else "assistant", "content": part["text"]}
                    )
                elif "functionResponse" in part:
                    messages.append({"role": "tool", "content": json.dumps(part["functionResponse"]["response"])})
                elif "functionCall" in part:
                    messages.append({"role": "assistant", "content": None, "tool_calls": [part["functionCall"]]})
        for tool in body.get("tools", []):
            for decl in tool.get("functionDeclarations", []):
                params = _lower_types(decl.get("parameters") or {"type": "object", "properties": {}})
                tools.append({"type": "function", "function": {"name": decl["name"], "parameters": params}})
        config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        if config.get("mode") == "NONE":
            choice = "none"
        elif config.get("allowedFunctionNames"):
            choice = {"function": {"name": config["allowedFunctionNames"][0]}}
    return {"messages": messages, "tools": tools, "tool_choice": choice}


def _parallel(chat: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """The same answer with every offered tool (up to two) called, each with no arguments beyond the first's."""
    calls = list(message.get("tool_calls") or [])
    if not calls:
        return message
    for i, tool in enumerate(chat["tools"][:2]):
        name = tool["function"]["name"]
        if all(c["function"]["name"] != name for c in calls):
            calls.append({"id": f"call_{i + 1}", "type": "function", "function": {"name": name, "arguments": "{}"}})
    return {**message, "tool_calls": calls}


def _calls(message: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (c.get("id") or f"call_{i}", c["function"]["name"], json.loads(c["function"]["arguments"]))
        for i, c in enumerate(message.get("tool_calls") or [])
    ]


def _anthropic_reply(body: dict[str, Any], message: dict[str, Any], mode: str, signature: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if body.get("thinking"):
        content.append({"type": "thinking", "thinking": "The user wants a tool.", "signature": signature})
    stop = "end_turn"
    if mode == "refusal":
        content, stop = [], "refusal"
    elif mode == "max_tokens":
        content.append({"type": "text", "text": "I was about to"})
        stop = "max_tokens"
    else:
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        for call_id, name, args in _calls(message):
            content.append({"type": "tool_use", "id": f"toolu_{call_id}", "name": name, "input": args})
            stop = "tool_use"
    return {
        "id": "msg_loopback", "type": "message", "role": "assistant", "model": body.get("model", "m"),
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip


def _google_reply(body: dict[str, Any], message: dict[str, Any], mode: str, signature: str) -> dict[str, Any]:
    if mode == "blocked":
        return {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 10}}
    parts: list[dict[str, Any]] = []
    config = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
    thinking = bool(config.get("includeThoughts", config.get("include_thoughts")))  # the SDK sends either spelling
    if thinking:
        parts.append({"text": "The user wants a tool.", "thought": True})
    finish = "STOP"
    if mode == "refusal":
        parts, finish = [], "SAFETY"
    elif mode == "max_tokens":
        parts.append({"text": "I was about to"})
        finish = "MAX_TOKENS"
    else:
        if message.get("content"):
            parts.append({"text": message["content"]})
        for _, name, args in _calls(message):
            part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
            if thinking:
                part["thoughtSignature"] = signature
            parts.append(part)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-loopback",
    }


def _azure_reply(body: dict[str, Any], message: dict[str, Any], mode: str, signature: str) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    if mode == "refusal":
        message, finish = {"role": "assistant", "content": None}, "content_filter"
    elif mode == "max_tokens":
        message, finish = {"role": "assistant", "content": "I was about to"}, "length"
    return {
        "id": "chatcmpl-azure", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }  # fmt: skip
