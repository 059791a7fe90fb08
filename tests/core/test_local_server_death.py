"""The embedded-model client notices when its server process dies and says how, instead of retrying a dead port."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from toolgauge.errors import ConnectionFailed, EndpointDown
from toolgauge.models.local_server import LocalServerClient
from toolgauge.models.openai_compat import OpenAICompatClient
from toolgauge.records import Message, ModelRequest

CRASHING_SERVER = (
    "import os, signal, sys; print('ggml: loading model'); sys.stdout.flush(); os.kill(os.getpid(), signal.SIGSEGV)"
)
EXITING_SERVER = "import sys; print('error: bad model file'); sys.exit(3)"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound, never listening, so no one else can take it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def client_with_server(code: str, port: int) -> LocalServerClient:
    """A client whose 'server' is a real process running ``code``, and whose HTTP port has nobody listening."""
    client = LocalServerClient()
    client._log = tempfile.NamedTemporaryFile(prefix="toolgauge-test-llama-", suffix=".log")  # noqa: SIM115
    client._proc = subprocess.Popen([sys.executable, "-c", code], stdout=client._log, stderr=subprocess.STDOUT)
    client._client = OpenAICompatClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=5)
    return client


@pytest.mark.parametrize(
    ("code", "how", "log_line"),
    [
        (CRASHING_SERVER, "killed by SIGSEGV", "ggml: loading model"),
        (EXITING_SERVER, "exited with code 3", "bad model"),
    ],
)
async def test_dead_server_is_reported_with_signal_and_log(
    code: str, how: str, log_line: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
):
    client = client_with_server(code, closed_port)
    request = ModelRequest(messages=[Message(role="user", content="hi")])
    proc = client._proc
    assert proc is not None
    # Let the fake server print and die first: the client gives a dying server only a moment to be reaped, and on a
    # loaded machine Python alone can take longer than that to start.
    await asyncio.to_thread(proc.wait, 60)
    try:
        # The death is seen after the request's connection error: the server looked alive when the request went out.
        with monkeypatch.context() as patch:
            patch.setattr(proc, "poll", lambda: None)
            with pytest.raises(EndpointDown) as caught:
                await client.generate(request)
        # Or it is seen before the request: the message is the same.
        with pytest.raises(EndpointDown) as again:
            await client.generate(request)
    finally:
        await client.close()
    assert isinstance(caught.value.__cause__, ConnectionFailed), caught.value.__cause__
    assert again.value.__cause__ is None
    for exc in (caught.value, again.value):
        assert how in str(exc)
        assert log_line in str(exc)
