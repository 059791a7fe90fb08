"""End to end per provider: ``toolgauge eval bfcl`` and ``eval wildtoolbench`` against the loopback servers.

Anthropic and Gemini are reached the way a user points the SDKs elsewhere (``$ANTHROPIC_BASE_URL``,
``$GOOGLE_GEMINI_BASE_URL``), Azure by its endpoint in the spec. Each run must finish with every sample
answered, keep the provider's raw exchange in the transcript, and say once what the provider cannot honour.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_helpers import invoke, results_of
from helpers.paths import FIXTURE_ROOT
from helpers.provider_servers import ProviderServer, Wire
from helpers.secret_scan import leaks, store_values
from toolgauge.store import open_store

SESSIONS = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"
KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-e2e-0123456789abcdef"),
    "google": ("GEMINI_API_KEY", "AIzaE2eKey0123456789abcdef"),
    "azure": ("AZURE_OPENAI_API_KEY", "azure-e2e-key-0123456789"),
}
BASE_URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "google": "GOOGLE_GEMINI_BASE_URL"}


def model_spec(server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """The spec a user would type: the base URL from the environment where the SDK reads one."""
    name, key = KEYS[server.wire]
    monkeypatch.setenv(name, key)
    if server.wire in BASE_URL_ENV:
        monkeypatch.setenv(BASE_URL_ENV[server.wire], server.url)
        return f"{server.wire}:loopback-model"
    return server.spec("loopback-deployment")


@pytest.mark.parametrize("wire", ["anthropic", "google", "azure"])
def test_bfcl_runs_on_each_provider(
    wire: Wire, bfcl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ProviderServer(wire) as server:
        spec = model_spec(server, monkeypatch)
        res = invoke("eval", "bfcl", "--data", bfcl_dir, "--categories", "simple_python,parallel_multiple",
                     "--limit", "3", "--model", spec, "--store", store, "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None and run.status == "finished" and run.samples == 6 and run.sample_errors == 0
    assert run.model_calls == 6 and len(server.sample_requests) == 6
    warned = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    if wire == "anthropic":  # the benchmark's temperature 0 has no Messages-API field: said once, not per call
        assert len(warned) == 1 and "cannot honour temperature" in warned[0]
    else:
        assert warned == []
    opened = open_store(store)
    try:
        calls = opened.transcript(run.id, sorted(opened.finished_samples(run.id))[0])
    finally:
        opened.close()
    response = calls[0].response
    assert response is not None and response.tool_calls, "the gold-like server answers with a call"
    assert response.exchange is not None and response.exchange.provider == wire


@pytest.mark.parametrize("wire", ["anthropic", "google", "azure"])
def test_wildtoolbench_sample_sessions_run_on_each_provider(
    wire: Wire, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ProviderServer(wire) as server:
        spec = model_spec(server, monkeypatch)
        res = invoke("eval", "wildtoolbench", "--data", SESSIONS, "--model", spec, "--store", store, "--json", "-q")
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None and run.status == "finished" and run.samples == 3 and run.sample_errors == 0
    assert run.model_calls == len(server.sample_requests) > 3, "multi-step sessions: tool results went back"


@pytest.mark.parametrize("wire", ["anthropic", "google", "azure"])
def test_a_key_echoed_by_the_provider_reaches_nothing_stored(
    wire: Wire, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ProviderServer(wire, ["echo_key"]) as server:
        spec = model_spec(server, monkeypatch)
        res = invoke("eval", "wildtoolbench", "--data", SESSIONS, "--model", spec, "--store", store, "--json", "-q")
    key = KEYS[wire][1]
    assert key in str(server.sample_requests[0].headers), "the key was sent (and echoed back) for this to test"
    run = results_of(res).run
    assert run is not None and run.sample_errors == 1, "the sample the 401 hit failed, the others ran"
    assert leaks(store_values(store), [key]) == []
    assert key not in res.output


def test_a_sweep_with_one_model_per_provider_on_bfcl_and_wildtoolbench(
    bfcl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, key in KEYS.values():
        monkeypatch.setenv(name, key)
    store = f"sqlite:///{tmp_path / 's.db'}"
    sweep_file = tmp_path / "SWEEP.toml"
    with ProviderServer("anthropic") as claude, ProviderServer("google") as gemini, ProviderServer("azure") as azure:
        specs = [claude.spec("claude-loopback"), gemini.spec("gemini-loopback"), azure.spec("gpt-loopback")]
        models = "".join(f'[[model]]\nspec = "{spec}"\nmax_retries = 0\ntimeout = 30\n' for spec in specs)
        sweep_file.write_text(
            models
            + f'[[benchmark]]\nname = "bfcl"\ndata = "{bfcl_dir}"\ncategories = ["simple_python"]\nlimit = 3\n'
            + f'[[benchmark]]\nname = "wildtoolbench"\ndata = "{SESSIONS}"\n'
        )
        res = invoke("sweep", sweep_file, "--store", store, "--json")
        served = [len(server.sample_requests) for server in (claude, gemini, azure)]
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "finished"
    cells = {(c["model"], c["benchmark"]): c for c in doc["cells"]}
    assert set(cells) == {(spec, bench) for spec in specs for bench in ("bfcl", "wildtoolbench")}
    assert all(c["status"] == "finished" and c["metrics"] for c in cells.values())
    assert all(n > 3 for n in served), "every provider answered its own cells' samples"
