"""``toolgauge sweep --executor ray`` on a real two-node Ray cluster (tests/helpers/ray_cluster.py), PostgreSQL store:
the worker node is killed while it runs a shard, Ray retries the shard on the head, and every sample of every
cell is stored exactly once; requests to the endpoint stay within its limit across both nodes. And on a local Ray
instance started by the sweep itself (SQLite), with 2 epochs, the same leaderboard as the local executor."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.child_process import sigint_ignored
from helpers.cli_helpers import invoke
from helpers.ray_cluster import RAY_ENV, RayCluster, RayUnavailable
from toolgauge.store import open_store, schema

# A Ray cluster starts, loses a node and retries its tasks: longer than the global per-test timeout allows.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

HAVE_RAY = importlib.util.find_spec("ray") is not None
SUITE_SAMPLES = 24  # the built-in suite
BFCL_LIMIT = 2
ENDPOINT_LIMIT = 2


def need_ray() -> None:
    if HAVE_RAY:
        return
    if os.environ.get("CI") == "true":  # make test installs the [ray] extra: a skip there would hide a broken setup
        pytest.fail("CI must run the Ray tests: ray is not installed")
    pytest.skip("ray is not installed (pip install 'toolgauge[ray]'; make test installs it)")


@pytest.fixture()
def cluster() -> Iterator[RayCluster]:
    need_ray()
    try:
        c = RayCluster()
    except RayUnavailable as exc:
        pytest.skip(str(exc))
    try:
        c.start()
        yield c
    finally:
        c.close()


class HeldEndpoint:
    """Answers the first ``free`` sample requests; holds every later one until ``release``; counts what is in flight."""

    def __init__(self, free: int):
        self.free = free
        self.sample_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.held = 0
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, bytes]:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if not is_probe(request):
                self.sample_requests += 1
            hold = not is_probe(request) and self.sample_requests > self.free and not self.release.is_set()
            if hold:
                self.held += 1
        try:
            if hold:
                self.release.wait(120)
            return 200, completion("I cannot help with that.")
        finally:
            with self.lock:
                self.in_flight -= 1
                if hold:
                    self.held -= 1


def sweep_text(stub_model: str, bfcl_dir: Path) -> str:
    return (
        "epochs = 1\nseed = 0\n"
        '[[model]]\nspec = "gold"\n'
        f'[[model]]\nspec = "{stub_model}"\nconcurrency = {ENDPOINT_LIMIT}\nno_cache = true\ntimeout = 600\n'
        '[[benchmark]]\nname = "suite"\nconcurrency = 1\n'
        f'[[benchmark]]\nname = "bfcl"\ndata = "{bfcl_dir}"\ncategories = ["simple_python", "multiple"]\n'
        f"limit = {BFCL_LIMIT}\nconcurrency = 1\n"
    )


def test_a_lost_worker_node_loses_and_repeats_no_sample(cluster: RayCluster, pg_url: str, bfcl_dir: Path,
                                                         tmp_path: Path):  # fmt: skip
    endpoint = HeldEndpoint(free=6)
    sweep_file = tmp_path / "SWEEP.toml"
    with ChatStub(endpoint) as stub:
        sweep_file.write_text(sweep_text(stub.model("qwen"), bfcl_dir))
        command = [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--executor", "ray",
                   "--address", cluster.address, "--store", pg_url, "--shard-size", "4", "--concurrency", "4",
                   "--json"]  # fmt: skip
        proc = subprocess.Popen(command, env={**os.environ, **RAY_ENV}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            # Both nodes blocked in a request of a task (one CPU each, one request at a time per task).
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and proc.poll() is None:
                if endpoint.held == ENDPOINT_LIMIT and cluster.worker_node_runs("shard_task", "cell_task"):
                    break
                time.sleep(0.1)
            assert endpoint.held == ENDPOINT_LIMIT, f"the shards never ran on both nodes: {proc.poll()}"
            assert cluster.worker_node_runs("shard_task", "cell_task")
            killed = cluster.kill_worker_node()
            assert killed
            endpoint.release.set()
            stdout, stderr = proc.communicate(timeout=600)
        finally:
            endpoint.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    assert not cluster.worker_node_processes()
    doc = json.loads(stdout)
    assert doc["status"] == "finished"
    assert [c["status"] for c in doc["cells"]] == ["finished"] * 4
    assert endpoint.max_in_flight <= ENDPOINT_LIMIT  # the limit held across both nodes

    st = open_store(pg_url, create=False)
    try:
        with st.engine.connect() as conn:
            s, c = schema.samples.c, schema.model_calls.c
            for cell in doc["cells"]:
                expected = SUITE_SAMPLES if cell["benchmark"] == "suite" else BFCL_LIMIT * 2
                rows = conn.execute(select(s.sample_key, s.status).where(s.run_id == cell["run"])).all()
                assert len(rows) == len({k for k, _ in rows}) == expected, cell
                assert {status for _, status in rows} == {"done"}
                # One stored call per sample, step and role: the lost worker's unfinished attempt left none behind.
                calls = conn.execute(select(c.sample_key, c.step, c.role).where(c.run_id == cell["run"])).all()
                assert len(calls) == len(set(calls))
                if cell["model"] != "gold":
                    assert {k for k, _, _ in calls} == {k for k, _ in rows}
            stub_runs = [cell["run"] for cell in doc["cells"] if cell["model"] != "gold"]
            stored_calls = conn.execute(select(func.count()).select_from(schema.model_calls)
                                        .where(c.run_id.in_(stub_runs))).scalar_one()  # fmt: skip
            leases = conn.execute(select(func.count()).select_from(schema.run_locks)).scalar_one()
    finally:
        st.close()
    # Each stored call was asked once, plus the requests of samples in flight on the lost node (asked again).
    assert stored_calls <= endpoint.sample_requests <= stored_calls + ENDPOINT_LIMIT
    assert leases == 0  # every shard's and run's lease was given back


def test_a_local_ray_instance_gives_the_local_executors_leaderboard(tmp_path: Path):
    need_ray()
    sweep_file = tmp_path / "SWEEP.toml"
    sweep_file.write_text(
        'epochs = 2\n[[model]]\nspec = "gold"\n[[model]]\nspec = "scripted:' + str(_script(tmp_path)) + '"\n'
        '[[benchmark]]\nname = "suite"\nlimit = 6\n'
    )
    local = invoke("sweep", sweep_file, "--store", f"sqlite:///{tmp_path / 'local.db'}", "--json")
    assert local.exit_code == 0, local.stderr
    before = _ray_pids()
    # The local instance's session folder goes to a folder of the test's (short: Ray's socket paths must fit).
    ray_tmp = tempfile.mkdtemp(prefix="tgray", dir="/tmp")
    env = {**os.environ, **RAY_ENV, "RAY_TMPDIR": ray_tmp}
    ray = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--executor", "ray", "--shard-size", "4",
         "--store", f"sqlite:///{tmp_path / 'ray.db'}", "--json"],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    leftover = _ray_pids() - before
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert ray.returncode == 0, ray.stderr[-3000:]
    assert not leftover, "the sweep left its local Ray instance running"

    def board(doc: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
        return [(c["model"], c["benchmark"], c["status"], c["metrics"]) for c in doc["cells"]]

    assert board(json.loads(ray.stdout)) == board(json.loads(local.stdout))
    scripted = json.loads(ray.stdout)["cells"][1]["metrics"]["tool_accuracy"]
    assert scripted["mean"] < 1.0 and scripted["ci_low"] is not None  # two tries each, shards of 4 samples


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(["I cannot help with that."] * 200))
    return path


def _ray_pids() -> set[int]:
    from helpers.proc_tree import proc_table

    return {pid for pid, (_, _, state, cmd) in proc_table().items()
            if state != "Z" and ("raylet" in cmd or "gcs_server" in cmd)}  # fmt: skip


def test_sigterm_to_a_ray_sweep_started_as_a_background_job_stops_it_with_the_hint(tmp_path: Path):
    """Ray's driver would exit at once on SIGTERM (``ray.init`` installs ``sys.exit``); the sweep's handler stays."""
    need_ray()
    endpoint = HeldEndpoint(free=2)
    sweep_file = tmp_path / "SWEEP.toml"
    url = f"sqlite:///{tmp_path / 'ray.db'}"
    ray_tmp = tempfile.mkdtemp(prefix="tgray", dir="/tmp")
    before = _ray_pids()
    with ChatStub(endpoint) as stub:
        sweep_file.write_text(
            f'[[model]]\nspec = "{stub.model("held")}"\nno_cache = true\ntimeout = 600\n'
            '[[benchmark]]\nname = "suite"\nlimit = 6\nconcurrency = 1\n'
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep_file), "--executor", "ray", "--store", url],
            env={**os.environ, **RAY_ENV, "RAY_TMPDIR": ray_tmp}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, preexec_fn=sigint_ignored,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 600
            while endpoint.held == 0:  # a Ray worker's request is held at the endpoint: the cell runs
                assert proc.poll() is None, proc.communicate(timeout=60)[1][-3000:]
                assert time.monotonic() < deadline, "the sweep's cell never reached the endpoint"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=300)
        finally:
            endpoint.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=60)
    leftover = _ray_pids() - before
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 130, stderr[-3000:]
    st = open_store(url, create=False)
    try:
        from toolgauge.store.sweeps import list_sweeps

        [sweep] = list_sweeps(st)
    finally:
        st.close()
    assert sweep.status == "interrupted" and [c.status for c in sweep.cells] == ["interrupted"]
    assert stderr.endswith(
        f"interrupted: finished cells and samples of sweep {sweep.id} are saved; continue with:\n"
        f"  toolgauge sweep {sweep_file} --executor ray --store {url} --resume {sweep.id}\n"
    ), stderr[-3000:]
    assert "Traceback" not in stderr
    assert not leftover, "the sweep left its local Ray instance running"
