"""Secrets never reach the store, samples, reports or the terminal.

A real HTTP server on 127.0.0.1 answers 401 with a body that echoes the API key and every request
header back (as some servers do); the real ``toolgauge`` process runs against it, and the planted
secret is searched for in everything that process and ``report``/``runs`` write. Another answers
every completion with the credentials it was sent (in the text and in a tool call's arguments, encoded
several ways); every table of the SQLite and PostgreSQL stores, found by asking the database for its
tables, is searched for them (tests/helpers/secret_scan.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from sqlalchemy import func, select

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.episode_helpers import CachedEndpoint, Echo, echo_episode
from helpers.secret_scan import encoded_forms, file_bytes, leaks, store_values
from toolgauge import redact as redact_module
from toolgauge.engine import EngineConfig, run_episodes
from toolgauge.models.spec import display_spec, resolve_model
from toolgauge.models.wire import one_line
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolCall
from toolgauge.redact import MASK, SecretMasker, learn_url_credentials, redact, redact_tree, secret_forms
from toolgauge.report.export import results_to_csv, samples_jsonl
from toolgauge.results import EvalResults, Metric, SampleScore
from toolgauge.store import open_store, schema
from toolgauge.store.sweeps import create_sweep, set_cell
from toolgauge.store.transcripts import MessageChain

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
    shown = one_line(text, secrets=[key])
    assert key not in shown and MASK in shown
    # A key cut in half by the length limit would leak its first half: redaction comes first.
    assert key[:10] not in one_line("x" * 290 + key, secrets=[key])


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


def test_encoded_forms_of_a_secret_are_masked_at_every_alignment() -> None:
    secret = "planted-encoded-9c1e55d2"
    forms = list(secret_forms(frozenset({secret})))
    for prefix in ("", "x", "xy", "Bearer "):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode((prefix + secret).encode()).decode()
            masked = redact(f"echo {encoded} end", secrets=forms)
            assert masked.startswith("echo ") and masked.endswith(" end") and MASK in masked
            assert not [f for f in encoded_forms(secret) if f.decode() in masked], (prefix, masked)
    text = f"q={quote(secret + '/ &x', safe='')} and {json.dumps(secret + chr(233))}"
    assert redact(text, secrets=list(secret_forms(frozenset({secret + "/ &x", secret + chr(233)})))).count(MASK) == 2


def test_url_credentials_are_learned_with_their_basic_form() -> None:
    password = "planted-learned-pw-%2F61d0"  # percent-encoded in the URL; sent decoded
    learn_url_credentials(f"http://alice:{password}@127.0.0.1:9/v1")
    basic = base64.b64encode(b"alice:planted-learned-pw-/61d0").decode()
    masker = SecretMasker(environ={})
    assert masker.text(f"Authorization: Basic {basic}") == f"Authorization: Basic {MASK}"
    assert masker.text(f"raw {basic} here") == f"raw {MASK} here"
    assert masker.text("pw planted-learned-pw-/61d0 and planted-learned-pw-%2F61d0") == f"pw {MASK} and {MASK}"


def test_the_masker_keeps_json_as_written_unless_it_masks_something() -> None:
    masker = SecretMasker(environ={"SOME_TOKEN": "planted-json-tok-1234"})
    plain = '{"url": "http://host:8080/v1", "n": [1, 2]}'  # a trigger ("://") but nothing to mask
    assert masker.json_text(plain) is plain
    assert masker.value('{"a": "x planted-json-tok-1234"}') == f'{{"a":"x {MASK}"}}'
    assert masker.value('["not json planted-json-tok-1234') == f'["not json {MASK}'
    assert masker.parameters(("short", 3, b"planted-json-tok-1234", "planted-json-tok-1234")) == (
        "short", 3, b"planted-json-tok-1234", MASK,
    )  # fmt: skip
    assert masker.parameters({"k": "a planted-json-tok-1234"}) == {"k": f"a {MASK}"}


def test_the_masker_looks_at_a_short_answers_json_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gold, scripted or cached run stores the same short answer in every row: it is masked from memory."""
    looked_at: list[str] = []
    needs = redact_module.needs_redaction
    monkeypatch.setattr(redact_module, "needs_redaction", lambda text, s: looked_at.append(text) or needs(text, s))
    masker = SecretMasker(environ={"SOME_TOKEN": "planted-json-tok-1234"})
    answer = AssistantTurn(content="2").model_dump_json()
    assert [masker.value(answer) for _ in range(3)] == [answer] * 3
    leaky = AssistantTurn(content="planted-json-tok-1234").model_dump_json()
    assert [masker.value(leaky) for _ in range(2)] == [leaky.replace("planted-json-tok-1234", MASK)] * 2
    assert [text for text in looked_at if text in (answer, leaky)] == [answer, leaky]  # each whole JSON once


# --- every write path of the store, every table scanned -------------------------------------------

ENV_SECRET = "planted-env-secret-8e41b2c9d7"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_every_write_path_masks_secrets_in_every_table(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", ENV_SECRET)
    b64 = base64.b64encode(("key=" + ENV_SECRET).encode()).decode()
    said = f"I read {ENV_SECRET} (that is {b64}, or {quote(ENV_SECRET, safe='')})"
    store = open_store(store_url)
    run_id = store.create_run("suite", f"http://u:{ENV_SECRET}@h/v1#m", {"note": said, "nested": [said]})
    request = ModelRequest(messages=[Message(role="user", content=said)], options=GenerateOptions(), sample_key="a")
    refs = store.put_request(MessageChain(), request)
    turn = AssistantTurn(content=said, tool_calls=[ToolCall(name="f", arguments={"x": said}, raw=json.dumps(said))])
    store.record_call({"run_id": run_id, "sample_key": "a", "step": 0, **refs, "response": turn.model_dump_json()})
    store.record_call({"run_id": run_id, "sample_key": "b", "step": 0, "error": said})
    store.cache_put("k1", "m", turn.model_dump())
    store.record_sample(run_id, "a", result={"text": said, "deep": {"list": [said]}}, error=None, latency_s=0.1)
    store.record_sample(run_id, "b", result=None, error=said, latency_s=0.1)
    store.flush()
    store.save_results(run_id, EvalResults(benchmark="suite", metrics=[Metric(name="acc", value=1.0, group=said)]))
    sweep = create_sweep(store, f"# {said}\n", [(said, "suite")])
    set_cell(store, sweep.id, 0, "failed", error=said)
    store.save_step(run_id, "round-0001", "gate1", {"why": said})
    store.close()

    found = list(store_values(store_url))
    assert leaks(iter(found), [ENV_SECRET]) == []
    # The rows are there, with the secret masked: this searched what was written.
    tables = {where.split(".")[0] for where, data in found if MASK.encode() in data}
    assert {"runs", "samples", "model_calls", "response_cache", "blobs", "sweeps", "sweep_cells"} <= tables, tables
    assert any(where.startswith("sample_steps") for where, data in found if MASK.encode() in data), tables


def test_the_cache_serves_the_masked_answer_it_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", ENV_SECRET)
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    store.cache_put("k", "m", {"content": f"key {ENV_SECRET}"})
    # Exact text only where no other secret is known: secrets learned by earlier tests of this process (URL
    # passwords, client keys) mask too, and may overlap this one.
    buffered = store.cache_known("k")
    assert buffered is not None and ENV_SECRET not in buffered["content"] and MASK in buffered["content"]
    assert buffered["content"].startswith("key ")
    store.flush()
    assert store.cache_get("k") == buffered  # buffered: the same as after the commit
    store.close()


def test_no_cache_neither_reads_nor_writes_the_response_cache(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    samples = [(f"s{i}", f"q{i}") for i in range(5)]
    client = CachedEndpoint()
    config = EngineConfig(show_progress=False, use_cache=False)
    run_id = store.create_run("t", "m", {})
    asyncio.run(run_episodes(samples, echo_episode, Echo, client=client, store=store, run_id=run_id, config=config))
    with store.engine.connect() as conn:
        cached = conn.execute(select(func.count()).select_from(schema.response_cache)).scalar_one()
        calls = conn.execute(select(func.count()).select_from(schema.model_calls)).scalar_one()
    store.close()
    assert (client.calls, calls, cached) == (5, 5, 0)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_its_wal_and_its_folders_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "made" / "for-it" / "store.db"
    # Only the default store's folders are made (a named store's folder must exist): TOOLGAUGE_STORE names it.
    monkeypatch.setenv("TOOLGAUGE_STORE", f"sqlite:///{db}")
    tmp_mode = mode(tmp_path)
    before = os.umask(0o022)  # the common umask, under which files are world-readable unless made otherwise
    try:
        store = open_store()
        run_id = store.create_run("t", "m", {})
        store.record_sample(run_id, "a", result={"x": 1}, error=None, latency_s=0.1)
        store.flush()
        files = [db, db.with_name("store.db-wal"), db.with_name("store.db-shm")]
        modes = {p.name: mode(p) for p in files}  # the store is open: its WAL and shared memory exist
        folders = {p.name: mode(p) for p in (db.parent, db.parent.parent)}
        store.close()
    finally:
        os.umask(before)
    assert modes == {"store.db": 0o600, "store.db-wal": 0o600, "store.db-shm": 0o600}
    assert folders == {"for-it": 0o700, "made": 0o700}
    assert mode(tmp_path) == tmp_mode, "a folder the store did not create is left as it was"


# --- a model that echoes its credentials: the real CLI, every table, every file, every output ---------------

ECHO_KEY = "planted-echo-key-2b7e9f03c6"
ECHO_PASSWORD = "planted-echo-pw-71c4a0e8"


class CredentialEcho(ChatStub):
    """Answers every completion with the credentials it was sent, in its text and in a tool call's arguments.

    Each credential (the Authorization header, its token, a Basic token's ``user:password`` and password, and a
    secret of the environment the model "knows") is repeated as it is, URL-encoded and base64-encoded at three
    alignments.
    """

    def __init__(self) -> None:
        self.authorizations: list[str] = []
        super().__init__(self._respond)

    def _respond(self, request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("OK", finish_reason="length")
        auth = headers.get("authorization", "")
        self.authorizations.append(auth)
        scheme, _, token = auth.partition(" ")
        said = [auth, token, ENV_SECRET]
        if scheme.lower() == "basic":
            user_password = base64.b64decode(token).decode()
            said += [user_password, user_password.partition(":")[2]]
        forms = [f for s in said for f in (s, quote(s, safe=""), *(base64.b64encode((p + s).encode()).decode()
                                                                   for p in ("", "x", "xy")))]  # fmt: skip
        text = "you sent: " + " | ".join(forms)
        call = {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"t": text})}}
        body = {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": text, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip
        return 200, json.dumps(body).encode()


def test_credentials_echoed_by_the_model_reach_no_table_file_or_output(tmp_path: Path, store_url: str) -> None:
    sqlite_db = tmp_path / "store.db" if store_url.startswith("sqlite") else None
    env = clean_env(TOOLGAUGE_API_KEY=ECHO_KEY, SOME_SERVICE_TOKEN=ENV_SECRET)
    outputs: list[tuple[str, bytes]] = []
    files: list[Path] = []

    def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        proc = toolgauge(*args, env=env)
        outputs.extend([(f"stdout of {args[:2]}", proc.stdout), (f"stderr of {args[:2]}", proc.stderr)])
        assert proc.returncode == 0, proc.stderr.decode()
        return proc

    held: sqlite3.Connection | None = None
    with CredentialEcho() as server:
        for n, model in enumerate([server.model(), f"http://tg:{ECHO_PASSWORD}@127.0.0.1:{server.port}/v1#m"]):
            samples = tmp_path / f"samples-{n}.jsonl"
            files.append(samples)
            cli("eval", "suite", "--model", model, "--store", store_url, "--samples", str(samples), "--limit", "2",
                "--max-retries", "0", "--concurrency", "1", "--json", "-q")  # fmt: skip
            if sqlite_db is not None and held is None:
                # Held open through the second run: its WAL and shared-memory files stay to be searched.
                held = sqlite3.connect(sqlite_db)
                held.execute("SELECT count(*) FROM runs").fetchone()
    try:
        basic = "Basic " + base64.b64encode(f"tg:{ECHO_PASSWORD}".encode()).decode()
        assert {f"Bearer {ECHO_KEY}", basic} <= set(server.authorizations), server.authorizations
        runs = json.loads(cli("runs", "--store", store_url, "--json").stdout)
        assert len(runs) == 2
        for run in runs:
            run_id = run["id"]
            for flag in ([], ["--json"], ["--csv"]):
                cli("report", run_id, "--store", store_url, *flag)
            cli("transcript", run_id, a_sample_with_calls(store_url, run_id), "--store", store_url, "--json")
            for fmt in ("jsonl", "csv"):
                out = tmp_path / f"export-{run_id}-{fmt}"
                cli("export", run_id, "--format", fmt, "--out", str(out), "--store", store_url)
                files += [p for p in out.rglob("*") if p.is_file()]
        store_files: list[Path] = []
        if sqlite_db is not None:
            store_files = [sqlite_db, sqlite_db.with_name("store.db-wal"), sqlite_db.with_name("store.db-shm")]
            assert {p.name: mode(p) for p in store_files} == {p.name: 0o600 for p in store_files}
        found = list(store_values(store_url))
        secrets = [ECHO_KEY, ECHO_PASSWORD, f"tg:{ECHO_PASSWORD}", ENV_SECRET]
        if store_url.startswith("postgresql"):
            secrets.append(str(urlsplit(store_url).password))
        haystacks = [*found, *file_bytes(*files, *store_files), *outputs]
        assert leaks(iter(haystacks), secrets) == []
        # What was searched holds the echoes, masked: the answers were stored, in the samples and the cache.
        masked = {where for where, data in found if b"you sent: " in data and MASK.encode() in data}
        assert {"samples.result", "response_cache.response", "model_calls.response"} <= masked, masked
    finally:
        if held is not None:
            held.close()


def a_sample_with_calls(store_url: str, run_id: str) -> str:
    store = open_store(store_url, create=False)
    try:
        with store.engine.connect() as conn:
            c = schema.model_calls.c
            return str(conn.execute(select(c.sample_key).where(c.run_id == run_id).limit(1)).scalar_one())
    finally:
        store.close()
