"""The raw exchange of an OpenAI-compatible endpoint is kept in the transcript, secrets masked.

A real HTTP server on 127.0.0.1 (tests/helpers/chat_stub.py) answers each completion with a body that carries
a field of its own and echoes the Authorization header; the stored transcript must hold the request as sent
(less messages and tools) and that body as it came, the key masked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, is_probe, tool_call_completion
from helpers.cli_helpers import invoke, results_of
from helpers.secret_scan import leaks, store_values
from toolgauge.redact import MASK
from toolgauge.store import open_store

API_KEY = "sk-exchange-echo-5f1d0c9a7b"


def echo_respond(request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
    """A tool call, plus the server's own fields: one a client never reads, one echoing the key."""
    body = json.loads(tool_call_completion("echo", {"t": "hi"}))
    if not is_probe(request):
        body["server_note"] = "kept as it came"
        body["echoed_authorization"] = headers.get("authorization", "")
    return 200, json.dumps(body).encode()


def test_the_transcript_keeps_the_raw_openai_exchange_with_the_key_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLGAUGE_API_KEY", API_KEY)
    store_url = f"sqlite:///{tmp_path / 's.db'}"
    with ChatStub(echo_respond) as server:
        res = invoke("eval", "suite", "--model", server.model(), "--store", store_url, "--limit", "1",
                     "--concurrency", "1", "--top-p", "0.5", "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None and run.model_calls >= 1
    store = open_store(store_url)
    try:
        sample = sorted(store.finished_samples(run.id))[0]
        calls = store.transcript(run.id, sample)
    finally:
        store.close()
    response = calls[0].response
    assert response is not None and response.exchange is not None
    exchange = response.exchange
    assert exchange.provider == "openai"
    assert exchange.request["model"] == "m" and exchange.request["top_p"] == 0.5
    assert "messages" not in exchange.request and "tools" not in exchange.request
    assert exchange.response["server_note"] == "kept as it came"
    assert exchange.response["echoed_authorization"] == f"Bearer {MASK}"
    assert leaks(store_values(store_url), [API_KEY]) == []
