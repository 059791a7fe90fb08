"""A loopback dataset mirror for ``toolgauge data`` tests (``TOOLGAUGE_DATA_MIRROR``), with planted faults.

It serves GitHub's raw paths (``/<repo>/<commit>/<path>``) and a simple package index (``/simple/<project>/``,
its wheels under ``/files/``) from bytes it is given: the shared benchmark files, at the paths the registry
asks for. Per path a fault may be planted: ``404``, ``truncate`` (the full Content-Length, half the body,
then the connection closes), ``stall`` (headers never come) or ``gate`` (the first ``gate_bytes`` are sent,
then the handler waits until the test calls :meth:`release`). Every wait has a deadline, so no test can hang
on it; closing the mirror releases them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from helpers.paths import SRC
from toolgauge.datasets.registry import GithubSource, WheelSource, dataset_named

Fault = Literal["404", "truncate", "stall", "gate"]
HANDLER_DEADLINE = 60.0  # the longest a stalled or gated handler waits before giving up
SHARED_NAMES = {  # cache file name -> its place in ../shared/data, where the two differ
    ("mtu-bench-gpt4-responses", name): f"mtu-bench/responses/{name}"
    for name in (
        "S-S_gpt4_response.jsonl",
        "S-M_gpt4_response.jsonl",
        "M-S_gpt4_response.jsonl",
        "M-M_gpt4_response.jsonl",
    )
}


class DataMirror:
    """Serve ``routes`` (URL path -> bytes) on 127.0.0.1, counting requests and applying planted faults."""

    def __init__(self, routes: dict[str, bytes] | None = None, *, gate_bytes: int = 4096):
        self.routes: dict[str, bytes] = dict(routes or {})
        self.faults: dict[str, Fault] = {}
        self.requests: Counter[str] = Counter()
        self.gate_bytes = gate_bytes
        self.gate_reached = threading.Event()  # a gated handler has sent its first bytes and waits
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def release(self) -> None:
        """Let gated (and stalled) handlers go on."""
        self._release.set()

    def __enter__(self) -> DataMirror:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        self.requests[path] += 1
        fault = self.faults.get(path)
        body = self.routes.get(path)
        if fault == "stall":
            self._release.wait(HANDLER_DEADLINE)
            return
        if body is None or fault == "404":
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        h.send_response(200)
        kind = "application/vnd.pypi.simple.v1+json" if path.startswith("/simple/") else "application/octet-stream"
        h.send_header("Content-Type", kind)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if fault == "truncate":
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.close_connection = True
            return
        if fault == "gate":
            h.wfile.write(body[: self.gate_bytes])
            h.wfile.flush()
            self.gate_reached.set()
            if not self._release.wait(HANDLER_DEADLINE):
                return
            body = body[self.gate_bytes :]
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client went away (Ctrl-C)
            h.wfile.write(body)


def github_path(name: str, file: str) -> str:
    """The URL path of a dataset file of a GitHub source."""
    dataset = dataset_named(name)
    assert dataset is not None and isinstance(dataset.source, GithubSource)
    return f"/{dataset.source.repo}/{dataset.source.commit}/{dataset.source.paths[file]}"


def github_routes(name: str, shared: Path) -> dict[str, bytes]:
    """Routes serving a GitHub dataset's files from ``../shared/data/<name>``."""
    dataset = dataset_named(name)
    assert dataset is not None and isinstance(dataset.source, GithubSource)
    return {
        github_path(name, file): (shared / SHARED_NAMES.get((name, file), f"{name}/{file}")).read_bytes()
        for file in dataset.source.paths
    }


def wheel_routes(members: dict[str, bytes]) -> dict[str, bytes]:
    """A simple index listing a BFCL wheel (a zip of ``members`` under its data prefix) and the wheel itself."""
    dataset = dataset_named("bfcl")
    assert dataset is not None and isinstance(dataset.source, WheelSource)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(dataset.source.prefix + name, data)
    wheel = buffer.getvalue()
    listing = {
        "meta": {"api-version": "1.1"},
        "name": dataset.source.project,
        "files": [
            {
                "filename": dataset.source.filename,
                "url": f"../../files/{dataset.source.filename}",
                "hashes": {"sha256": hashlib.sha256(wheel).hexdigest()},
            }
        ],
    }
    return {
        f"/simple/{dataset.source.project}/": json.dumps(listing).encode(),
        f"/files/{dataset.source.filename}": wheel,
    }


def shared_bfcl_members(bfcl: Path) -> dict[str, bytes]:
    """The BFCL files of ``../shared/data/bfcl`` that are wheel members (its README under its wheel name)."""
    members = {}
    for path in sorted(bfcl.rglob("*.json")):
        members[path.relative_to(bfcl).as_posix()] = path.read_bytes()
    members["README.md"] = (bfcl / "DATA_README_upstream.md").read_bytes()
    return members


def cli(*args: str, env: dict[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``toolgauge ARGS`` in a child process (this tree's source first on the path), with a deadline."""
    return subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def start_cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """``toolgauge ARGS`` started in a child process whose Ctrl-C (SIGINT) acts as in a terminal."""
    return subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def cli_env(cache: Path, mirror: str | None) -> dict[str, str]:
    """The environment of a child ``toolgauge``: this tree's source, the cache ``cache``, the mirror."""
    src = str(SRC)
    env = {
        **os.environ,
        "TOOLGAUGE_DATA_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("TOOLGAUGE_DATA_MIRROR", None)
    if mirror is not None:
        env["TOOLGAUGE_DATA_MIRROR"] = mirror
    return env


def cache_listing(cache: Path) -> list[str]:
    """Every file and folder under the cache, relative and sorted (what a test asserts is on disk)."""
    return sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*")) if cache.exists() else []
