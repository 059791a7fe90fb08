"""Secrets never reach the store, samples, reports or the terminal.

A real HTTP server on 127.0.0.1 answers 401 with a body that echoes the API key and every request
header back (as some servers do); the real ``toolgauge`` process runs against it, and the planted
secret is searched for in everything that process and ``report``/``runs`` write.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from chat_stub import ChatStub, completion, is_probe
from toolgauge.models.openai_compat import _short
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.redact import MASK, redact_tree
from toolgauge.report.export import results_to_csv, samples_jsonl
from toolgauge.results import EvalResults, Metric, SampleScore

API_KEY = "planted-api-key-7f3a9c2e41"
URL_PASSWORD = "planted-url-pw-5d8b1e6a"
STORE_PASSWORD = "planted-db-pw-c4e2a917"


class EchoingServer(ChatStub):
    """Rejects chat completions with 401, quoting the key and all request headers in the body.

    With ``answer_probe`` it answers toolgauge's one-token probe, so the run starts and every sample's
    request is the one rejected (the secret then travels through sample errors, the store and reports);
    without it the probe itself is rejected and the run ends before its first sample.
    """

    def __init__(self) -> None:
        self.authorizations: list[str] = []
        self.answer_probe = True
        super().__init__(self._respond)

    def _respond(self, request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
        auth = headers.get("authorization", "")
        self.authorizations.append(auth)
        if self.answer_probe and is_probe(request):
            return 200, completion("OK", finish_reason="length")
        key = auth.removeprefix("Bearer ")
        body = {
            "error": {
                "message": f"Incorrect API key provided: {key}. You sent Authorization: {auth}",
                "headers": dict(headers.items()),
            }
        }
        return 401, json.dumps(body).encode()


@pytest.fixture()
def server() -> Iterator[EchoingServer]:
    with EchoingServer() as srv:
        yield srv


def toolgauge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", *args], capture_output=True, env=env, timeout=300, check=False
    )


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLGAUGE_API_KEY", "OPENAI_API_KEY", "TOOLGAUGE_DEBUG")}
    env.update(extra)
    return env


def everything_written(store_dir: Path, outputs: list[bytes]) -> bytes:
    """The bytes of every file in the store's folder (database, WAL, journal, samples) plus the outputs."""
    files = [p.read_bytes() for p in sorted(store_dir.rglob("*")) if p.is_file()]
    return b"\n".join([*files, *outputs])


def run_and_report(
    tmp_path: Path, model: str, env: dict[str, str], *, expected_exit: int = 1
) -> tuple[bytes, str, str]:
    """Evaluate ``model`` on two suite dialogues, then list and report the run; return all bytes and the run."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    store = f"sqlite:///{out_dir / 'store.db'}"
    samples = out_dir / "samples.jsonl"
    ran = toolgauge(
        "eval", "suite", "--model", model, "--store", store, "--samples", str(samples), "--limit", "2",
        "--max-retries", "0", "--concurrency", "1", "-q", env=env,
    )  # fmt: skip
    # Every sample fails with 401 (exit 1, the run stored as failed), or the probe does (exit 2, before any sample).
    assert ran.returncode == expected_exit, ran.stderr.decode()
    runs = toolgauge("runs", "--store", store, "--json", env=env)
    assert runs.returncode == 0, runs.stderr.decode()
    listed = json.loads(runs.stdout)
    assert len(listed) == 1
    run_id, stored_model = listed[0]["id"], listed[0]["model"]
    reports = [toolgauge("report", run_id, "--store", store, *flag, env=env) for flag in ([], ["--json"], ["--csv"])]
    # Every sample failed: the table view says so in one line (exit 1), JSON and CSV export the summary (exit 0).
    # A run stopped by its probe has no summary at all: every view says so in one line (exit 2).
    expected = [1, 0, 0] if expected_exit == 1 else [2, 2, 2]
    assert [r.returncode for r in reports] == expected, [r.stderr for r in reports]
    outputs = [ran.stdout, ran.stderr, runs.stdout, runs.stderr]
    for r in reports:
        outputs += [r.stdout, r.stderr]
    return everything_written(out_dir, outputs), stored_model, ran.stderr.decode()


def test_api_key_echoed_by_the_server_reaches_nothing(tmp_path: Path, server: EchoingServer) -> None:
    written, _, stderr = run_and_report(
        tmp_path, f"http://127.0.0.1:{server.port}/v1#m", clean_env(TOOLGAUGE_API_KEY=API_KEY)
    )
    assert f"Bearer {API_KEY}" in server.authorizations, "the key must have been sent (and echoed) for this to test"
    assert API_KEY.encode() not in written
    assert b"401" in written and MASK.encode() in written, "the server's error text is kept, with the key masked"
    assert "HTTP 401" in stderr and len(stderr.strip().splitlines()) == 1


def test_api_key_echoed_in_the_probes_answer_reaches_nothing(tmp_path: Path, server: EchoingServer) -> None:
    server.answer_probe = False
    written, _, stderr = run_and_report(
        tmp_path, f"http://127.0.0.1:{server.port}/v1#m", clean_env(TOOLGAUGE_API_KEY=API_KEY), expected_exit=2
    )
    assert server.authorizations == [f"Bearer {API_KEY}"], "only the probe was sent, with the key"
    assert API_KEY.encode() not in written
    assert "HTTP 401" in stderr and MASK in stderr and len(stderr.strip().splitlines()) == 1


def test_password_in_the_model_url_reaches_nothing(tmp_path: Path, server: EchoingServer) -> None:
    model = f"http://user:{URL_PASSWORD}@127.0.0.1:{server.port}/v1#m"
    written, stored_model, _ = run_and_report(tmp_path, model, clean_env())
    assert server.authorizations, "the server must have been reached"
    assert stored_model == f"http://user:{MASK}@127.0.0.1:{server.port}/v1#m"
    assert URL_PASSWORD.encode() not in written
    assert base64.b64encode(f"user:{URL_PASSWORD}".encode()) not in written


def test_password_in_the_store_url_is_masked_in_the_error_line(tmp_path: Path) -> None:
    # Port 1 on loopback refuses the connection: the store cannot open, the URL is in the message.
    proc = toolgauge(
        "eval", "suite", "--model", "gold", "--store", f"postgresql://u:{STORE_PASSWORD}@127.0.0.1:1/db", "-q",
        env=clean_env(),
    )  # fmt: skip
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert f"u:{MASK}@127.0.0.1:1/db" in stderr
    assert STORE_PASSWORD not in stderr + proc.stdout.decode()


# --- the redaction boundaries, one by one ---------------------------------------------------


def test_short_masks_the_clients_key_and_auth_headers_before_cutting() -> None:
    key = "k3y-not-in-env-0123456789"
    text = f"Error code: 401 - {{'error': {{'message': 'bad key {key}', 'authorization': 'Bearer {key}'}}}}"
    shown = _short(text, secrets=[key])
    assert key not in shown and MASK in shown
    # A key cut in half by the length limit would leak its first half: redaction comes first.
    assert key[:10] not in _short("x" * 290 + key, secrets=[key])


def test_display_spec_masks_only_the_password() -> None:
    assert display_spec("http://user:pw@host:8000/v1#m") == f"http://user:{MASK}@host:8000/v1#m"
    assert display_spec("openai:gpt@https://u:pw@host/v1") == f"openai:gpt@https://u:{MASK}@host/v1"
    assert display_spec("http://127.0.0.1:8000/v1#m") == "http://127.0.0.1:8000/v1#m"
    assert display_spec("gold") == "gold"


def test_store_url_passwords_with_a_slash_are_masked_whole() -> None:
    from toolgauge.redact import redact, redact_url

    assert redact_url("postgresql://u:ab/cd@host/db") == f"postgresql://u:{MASK}@host/db"
    assert redact("cannot open 'postgresql+psycopg://u:ab/cd@h:1/db': refused") == (
        f"cannot open 'postgresql+psycopg://u:{MASK}@h:1/db': refused"
    )
    # A port and path without credentials stay as they are.
    assert redact("see http://host:8080/v1 or mail me@example.org") == "see http://host:8080/v1 or mail me@example.org"


def test_the_client_name_is_the_masked_spec() -> None:
    client = resolve_model("http://user:pw-secret-1@127.0.0.1:8000/v1#m")
    assert client.name == f"http://user:{MASK}@127.0.0.1:8000/v1#m"


def test_exports_mask_error_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-planted-123456")
    error = "model_error: HTTP 401: bad tok-planted-123456"
    score = SampleScore(id="a", sample="a", error=error, metadata={"nested": ["tok-planted-123456"]})
    rows = [score.model_dump(mode="json")]
    assert "tok-planted-123456" not in samples_jsonl(rows)
    assert json.loads(samples_jsonl(rows))["error"] == f"model_error: HTTP 401: bad {MASK}"
    secret_group, secret_by = "http://u:pw-planted@h/v1#m", "Authorization: Bearer abcdefgh12345678"
    overall, secret = Metric(name="x", value=0.5), Metric(name="acc", value=1.0, group=secret_group, by=secret_by, n=2)
    results = EvalResults(benchmark="t", metrics=[overall, secret])
    csv_text = results_to_csv(results)
    assert "abcdefgh12345678" not in csv_text and "pw-planted" not in csv_text
    assert "x,,,0.5," in csv_text.splitlines()
    assert f"acc,Authorization: Bearer {MASK},http://u:{MASK}@h/v1#m,1.0,2" in csv_text.splitlines(), csv_text
    assert redact_tree({"k": ("tok-planted-123456", 3)}) == {"k": [MASK, 3]}


def test_redact_masks_basic_credentials_but_not_the_word_basic() -> None:
    from toolgauge.redact import redact

    token = base64.b64encode(b"user:hunter2-pw").decode()
    assert (
        redact(f"sent Authorization Basic {token} twice; basic {token}")
        == f"sent Authorization Basic {MASK} twice; basic {MASK}"
    )
    assert redact("basic authentication and basic words") == "basic authentication and basic words"
