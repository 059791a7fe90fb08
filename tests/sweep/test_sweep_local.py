"""A local sweep end to end, on SQLite and on a real PostgreSQL server: 2 models (gold and a real HTTP endpoint)
x 2 benchmarks (the built-in suite and BFCL on the real data); then a sweep killed with SIGKILL mid-cell and
resumed, which repeats no finished cell or sample."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.child_process import sigint_ignored, sigint_restored
from helpers.cli_helpers import invoke
from toolgauge.store import open_store, schema
from toolgauge.store.sweeps import get_sweep
from toolgauge.sweep.report import sweep_report

SUITE_LIMIT = 3
BFCL_LIMIT = 2
BFCL_CATEGORIES = ["simple_python", "multiple"]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sweep.db'}"
    return str(request.getfixturevalue("pg_url"))


def sweep_text(stub_model: str, bfcl_dir: Path, *, no_cache: bool = False, suite_limit: int = SUITE_LIMIT) -> str:
    cache = "no_cache = true\n" if no_cache else ""
    return (
        "epochs = 1\nseed = 0\n"
        '[[model]]\nspec = "gold"\n'
        f'[[model]]\nspec = "{stub_model}"\nconcurrency = 2\nmax_retries = 0\ntimeout = 30\n{cache}'
        f'[[benchmark]]\nname = "suite"\nlimit = {suite_limit}\n'
        f'[[benchmark]]\nname = "bfcl"\ndata = "{bfcl_dir}"\ncategories = {json.dumps(BFCL_CATEGORIES)}\n'
        f"limit = {BFCL_LIMIT}\n"
    )


def answer_ok(request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
    return 200, completion("I cannot help with that.")


def count(store_url: str, table: Any, *where: Any) -> int:
    st = open_store(store_url, create=False)
    try:
        with st.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())
    finally:
        st.close()


def test_a_sweep_runs_every_cell_and_reports_a_leaderboard(store_url: str, bfcl_dir: Path, tmp_path: Path):
    sweep_file = tmp_path / "SWEEP.toml"
    with ChatStub(answer_ok) as stub:
        sweep_file.write_text(sweep_text(stub.model("qwen"), bfcl_dir))
        res = invoke("sweep", sweep_file, "--store", store_url, "--json")
        assert res.exit_code == 0, res.stderr
        served = stub.requests
    doc = json.loads(res.stdout)
    assert doc["status"] == "finished"
    stub_spec = f"http://127.0.0.1:{stub.port}/v1#qwen"
    assert [(c["model"], c["benchmark"], c["status"]) for c in doc["cells"]] == [
        ("gold", "suite", "finished"), ("gold", "bfcl", "finished"),
        (stub_spec, "suite", "finished"), (stub_spec, "bfcl", "finished"),
    ]  # fmt: skip
    for cell in doc["cells"]:
        assert set(cell) == {"model", "name", "benchmark", "run", "status", "metrics", "cost_usd", "cost_per_point"}
        for stat in cell["metrics"].values():
            assert set(stat) == {"mean", "stderr", "ci_low", "ci_high", "n"}
    suite = {c["model"]: c["metrics"] for c in doc["cells"] if c["benchmark"] == "suite"}
    assert set(suite["gold"]) == {"tool_accuracy", "parameter_accuracy", "success_rate"}
    assert suite["gold"]["tool_accuracy"]["mean"] == 1.0
    assert suite[stub_spec]["tool_accuracy"]["mean"] < 1.0  # the stub never calls a tool
    assert suite["gold"]["success_rate"]["n"] == SUITE_LIMIT

    # Every cell's run holds each of its samples once; the endpoint answered the probes and each sample's calls.
    sweep_id = doc["sweep"]
    for cell in doc["cells"]:
        expected = SUITE_LIMIT if cell["benchmark"] == "suite" else BFCL_LIMIT * len(BFCL_CATEGORIES)
        assert count(store_url, schema.samples, schema.samples.c.run_id == cell["run"]) == expected
    stub_runs = [c["run"] for c in doc["cells"] if c["model"] == stub_spec]
    calls = count(store_url, schema.model_calls, schema.model_calls.c.run_id.in_(stub_runs))
    assert served == calls + len(stub_runs)  # + one probe per run

    listed = invoke("sweeps", "--store", store_url, "--json")
    assert listed.exit_code == 0
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["status"], row["cells"], row["finished_cells"]) == (sweep_id, "finished", 4, 4)
    again = invoke("report", sweep_id, "--store", store_url, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout) == doc
    table = invoke("report", sweep_id[:-2], "--store", store_url)
    assert table.exit_code == 0
    suite_table = table.stdout.split("bfcl: ranked by")[0]
    assert "suite: ranked by tool_accuracy" in suite_table
    rows = [line for line in suite_table.splitlines() if re.match(r"│ \d+ │", line)]  # a row's first line
    assert "gold" in rows[0] and "best" in rows[0] and "http://" in rows[1]
    # The stub's difference with gold is judged by the paired comparison of the two runs (toolgauge.compare).
    st = open_store(store_url, create=False)
    try:
        report = sweep_report(st, sweep_id)
    finally:
        st.close()
    [stub_suite] = [c for c in report.cells if c.benchmark == "suite" and c.model == stub_spec]
    assert stub_suite.test == "paired" and stub_suite.significant is not None
    assert ("not significant" if not stub_suite.significant else "significant") in rows[1]
    # A run of the sweep is still an ordinary run.
    single = invoke("report", doc["cells"][0]["run"], "--store", store_url, "--json")
    assert single.exit_code == 0 and json.loads(single.stdout)["benchmark"] == "suite"


class HeldEndpoint:
    """Answers every request, except that the ``hold_at``-th sample request waits until ``release`` is set."""

    def __init__(self, hold_at: int):
        self.hold_at = hold_at
        self.sample_requests = 0
        self.reached = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
        if not is_probe(request):
            with self.lock:
                self.sample_requests += 1
                mine = self.sample_requests
            if mine == self.hold_at:
                self.reached.set()
                self.release.wait(60)
        return 200, completion("I cannot help with that.")


@pytest.mark.slow
def test_a_killed_sweep_resumes_without_repeating_a_finished_cell_or_sample(bfcl_dir: Path, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    sweep_file = tmp_path / "SWEEP.toml"
    endpoint = HeldEndpoint(hold_at=8)
    with ChatStub(endpoint) as stub:
        sweep_file.write_text(sweep_text(stub.model("qwen"), bfcl_dir, no_cache=True, suite_limit=10))
        command = [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--store", url,
                   "--concurrency", "1"]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert endpoint.reached.wait(120), "the sweep never reached the endpoint"
            # The held request is the stub's 8th: its cell (the stub on the suite) has finished samples by now.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and stub_suite_done(url) == 0:
                time.sleep(0.05)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            endpoint.release.set()
        st = open_store(url, create=False)
        [sweep] = [s for s in _sweeps(st)]
        before = {c.cell: c.status for c in sweep.cells}
        finished_runs = {c.run_id for c in sweep.cells if c.status == "finished"}
        done_before = _done_samples(st, [c.run_id for c in sweep.cells])
        calls_before = _call_ids(st, done_before)
        st.close()
        assert before[0] == before[1] == "finished"  # the gold cells ran first
        assert before[2] == "running"
        held_run = sweep.cells[2].run_id
        assert 0 < len(done_before[held_run]) < 10

        asked_before = endpoint.sample_requests
        res = invoke("sweep", sweep_file, "--store", url, "--resume", sweep.id, "--json")
        assert res.exit_code == 0, res.stderr
        asked_after = endpoint.sample_requests - asked_before

    st = open_store(url, create=False)
    record = get_sweep(st, sweep.id)
    assert record is not None and record.status == "finished"
    assert [c.status for c in record.cells] == ["finished"] * 4
    assert [c.run_id for c in record.cells] == [c.run_id for c in sweep.cells]  # the same runs, resumed
    with st.engine.connect() as conn:
        for cell in record.cells:
            keys = list(conn.execute(select(schema.samples.c.sample_key).where(schema.samples.c.run_id == cell.run_id)))
            assert len(keys) == len(set(keys)) == (10 if cell.benchmark == "suite" else BFCL_LIMIT * 2)
        # The finished cells were not run again: their runs kept their calls and samples untouched.
        for run_id in finished_runs:
            assert _done_samples(st, [run_id])[run_id] == done_before[run_id]
        # Finished samples of the killed cell kept their calls (not one was made again) ...
        assert _call_ids(st, done_before) == calls_before
        # ... and the resumed run asked the endpoint only for the samples that were not done.
        new_calls = conn.execute(
            select(func.count())
            .select_from(schema.model_calls)
            .where(
                schema.model_calls.c.run_id.in_([record.cells[2].run_id, record.cells[3].run_id])
                & schema.model_calls.c.sample_key.not_in(done_before[held_run])
            )
        ).scalar_one()
    st.close()
    assert asked_after == new_calls


def stub_suite_done(url: str) -> int:
    """Finished samples of the third cell (the stub on the suite), 0 while the store or the cell is not there."""
    if not Path(url.removeprefix("sqlite:///")).exists():
        return 0
    st = open_store(url, create=False)
    try:
        sweeps = _sweeps(st)
        if not sweeps or len(sweeps[0].cells) < 3:
            return 0
        return len(_done_samples(st, [sweeps[0].cells[2].run_id])[sweeps[0].cells[2].run_id])
    except Exception:
        return 0
    finally:
        st.close()


def _sweeps(st: Any) -> list[Any]:
    from toolgauge.store.sweeps import list_sweeps

    return list_sweeps(st)


def _done_rows(st: Any, run_ids: list[str]) -> dict[tuple[str, str], int]:
    """How many done rows each (run, sample) has."""
    c = schema.samples.c
    query = (
        select(c.run_id, c.sample_key, func.count())
        .where(c.run_id.in_(run_ids) & (c.status == "done"))
        .group_by(c.run_id, c.sample_key)
    )
    with st.engine.connect() as conn:
        return {(str(run), str(key)): int(n) for run, key, n in conn.execute(query)}


def _done_samples(st: Any, run_ids: list[str]) -> dict[str, set[str]]:
    c = schema.samples.c
    out: dict[str, set[str]] = {r: set() for r in run_ids}
    with st.engine.connect() as conn:
        rows = conn.execute(select(c.run_id, c.sample_key).where(c.run_id.in_(run_ids), c.status == "done"))
        for run_id, key in rows:
            out[run_id].add(key)
    return out


def _call_ids(st: Any, done: dict[str, set[str]]) -> set[int]:
    c = schema.model_calls.c
    ids: set[int] = set()
    with st.engine.connect() as conn:
        for run_id, keys in done.items():
            if keys:
                ids.update(conn.execute(select(c.id).where((c.run_id == run_id) & c.sample_key.in_(keys))).scalars())
    return ids


@pytest.mark.slow
@pytest.mark.parametrize("sigint", [sigint_restored, sigint_ignored], ids=["interactive", "background"])
def test_sigterm_stops_the_sweep_resumably_and_says_how_to_resume(
    bfcl_dir: Path, tmp_path: Path, sigint: Callable[[], None]
):
    """SIGTERM, also to a sweep started as a background job (SIGINT ignored): the hint; the resume runs the rest."""
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    sweep_file = tmp_path / "SWEEP.toml"
    endpoint = HeldEndpoint(hold_at=2)
    with ChatStub(endpoint) as stub:
        sweep_file.write_text(sweep_text(stub.model("qwen"), bfcl_dir, no_cache=True))
        # One cell at a time: the gold cells have finished when the stub's cell reaches the endpoint.
        command = [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--store", url, "-c", "1"]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint)
        try:
            assert endpoint.reached.wait(120), "the sweep never reached the endpoint"
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=120)
        finally:
            endpoint.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, stderr
        st = open_store(url, create=False)
        [sweep] = _sweeps(st)
        run_status = st.get_run(sweep.cells[2].run_id)
        st.close()
        assert sweep.status == "interrupted"
        assert [c.status for c in sweep.cells] == ["finished", "finished", "interrupted", "pending"]
        assert run_status is not None and run_status.status == "interrupted"
        assert stderr == (
            f"interrupted: finished cells and samples of sweep {sweep.id} are saved; continue with:\n"
            f"  toolgauge sweep {sweep_file} --store {url} -c 1 --resume {sweep.id}\n"
        )
        res = invoke("sweep", sweep_file, "--store", url, "--resume", sweep.id)
        assert res.exit_code == 0, res.stderr
    st = open_store(url, create=False)
    final = get_sweep(st, sweep.id)
    assert final is not None
    done = _done_rows(st, [c.run_id for c in final.cells])
    st.close()
    assert final.status == "finished" and {c.status for c in final.cells} == {"finished"}
    # Every sample of every cell ran to the end exactly once: 2 models x (3 suite + 2 x 2 BFCL samples).
    assert len(done) == 2 * (SUITE_LIMIT + BFCL_LIMIT * len(BFCL_CATEGORIES)) and set(done.values()) == {1}


def test_a_sweep_with_epochs_reports_each_headline_metric_with_its_interval(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["I cannot help with that."] * 500))
    sweep_file = tmp_path / "SWEEP.toml"
    sweep_file.write_text(
        f'epochs = 2\nseed = 3\n[[model]]\nspec = "gold"\n[[model]]\nspec = "scripted:{script}"\n'
        '[[benchmark]]\nname = "suite"\nlimit = 5\n'
    )
    url = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("sweep", sweep_file, "--store", url, "--json")
    assert res.exit_code == 0, res.stderr
    gold, scripted = json.loads(res.stdout)["cells"]
    for cell in (gold, scripted):
        assert count(url, schema.samples, schema.samples.c.run_id == cell["run"]) == 10  # 5 samples x 2 tries
        stat = cell["metrics"]["tool_accuracy"]
        assert stat["n"] == 5 and None not in (stat["stderr"], stat["ci_low"], stat["ci_high"])
        assert stat["ci_low"] <= stat["mean"] <= stat["ci_high"]
    assert gold["metrics"]["tool_accuracy"] == {"mean": 1.0, "stderr": 0.0, "ci_low": 1.0, "ci_high": 1.0, "n": 5}
    run = open_store(url, create=False)
    try:
        info = run.get_run(scripted["run"])
    finally:
        run.close()
    assert info is not None and info.config["epochs"] == 2
    assert info.results is not None and info.results.provenance is not None
    assert (info.results.provenance.seed, info.results.provenance.epochs) == (3, 2)
