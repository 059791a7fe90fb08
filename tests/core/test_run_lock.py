"""One process at a time per run: the run lease in ``run_locks``, in the store and across real CLI processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, update

from helpers.chat_stub import ChatStub, completion
from toolgauge.errors import RunLocked, StoreWriteError
from toolgauge.results import EvalResults
from toolgauge.store import open_store, schema
from toolgauge.store.lease import STALE_AFTER_SECONDS, pid_start_time, this_host


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def plant_lease(store, run_id: str, **fields) -> None:
    now = time.time()
    row = {"run_id": run_id, "owner": "other", "hostname": this_host(), "pid": os.getpid(), "pid_started": None,
           "acquired_at": now, "heartbeat_at": now, **fields}  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(insert(schema.run_locks).values(**row))


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def test_a_second_store_cannot_take_a_held_run_until_it_is_released(url):
    first, second = open_store(url), open_store(url)
    run_id = first.create_run("t", "m", {})
    first.acquire_run_lock(run_id)
    first.acquire_run_lock(run_id)  # taking it again is a no-op for the holder
    with pytest.raises(RunLocked) as caught:
        second.acquire_run_lock(run_id)
    message = str(caught.value)
    assert f"run {run_id} is being run by pid {os.getpid()} on {this_host()} since " in message
    assert message.endswith("wait for it or stop it") and "\n" not in message
    first.close()  # closing gives the lease back
    second.acquire_run_lock(run_id)
    assert second.run_lock_holder(run_id).owner == second.owner
    second.release_run_lock(run_id)
    assert second.run_lock_holder(run_id) is None
    second.close()


def test_a_lease_of_a_dead_process_on_this_host_is_taken_over(url):
    store = open_store(url)
    plant_lease(store, "r1", pid=dead_pid())
    store.acquire_run_lock("r1")
    assert store.run_lock_holder("r1").owner == store.owner
    store.close()


def test_a_reused_pid_is_not_taken_for_the_holder(url):
    store = open_store(url)
    # Our own pid is alive, but the lease records another start time: the process that took it is gone.
    assert pid_start_time(os.getpid()) is not None
    plant_lease(store, "r1", pid=os.getpid(), pid_started="1")
    store.acquire_run_lock("r1")
    plant_lease(store, "r2", pid=os.getpid(), pid_started=pid_start_time(os.getpid()))
    with pytest.raises(RunLocked):
        store.acquire_run_lock("r2")
    store.close()


def test_a_lease_on_another_host_is_taken_over_only_once_its_heartbeat_is_stale(url):
    store = open_store(url)
    plant_lease(store, "fresh", hostname="elsewhere", pid=1)
    with pytest.raises(RunLocked, match="by pid 1 on elsewhere"):
        store.acquire_run_lock("fresh")
    plant_lease(store, "silent", hostname="elsewhere", pid=1, heartbeat_at=time.time() - STALE_AFTER_SECONDS - 60)
    store.acquire_run_lock("silent")
    assert store.run_lock_holder("silent").owner == store.owner
    store.close()


def test_writes_refresh_the_heartbeat_and_stop_once_the_lease_was_taken_over(url):
    store = open_store(url)
    store.flush_seconds = float("inf")  # flushed by hand below, never early because time passed
    run_id = store.create_run("t", "m", {})
    store.acquire_run_lock(run_id)
    locks = schema.run_locks.c
    with store.engine.begin() as conn:
        conn.execute(update(schema.run_locks).where(locks.run_id == run_id).values(heartbeat_at=0.0))
    store._last_heartbeat = 0.0  # as if HEARTBEAT_SECONDS had passed
    store.record_sample(run_id, "s1", result={"x": 1}, error=None, latency_s=0.1)
    store.flush()
    with store.engine.connect() as conn:
        assert conn.execute(select(locks.heartbeat_at).where(locks.run_id == run_id)).scalar_one() > 0.0
    # Another process decided we were stale and took the run: our next write must not go into it.
    with store.engine.begin() as conn:
        conn.execute(update(schema.run_locks).where(locks.run_id == run_id).values(owner="thief"))
    store._last_heartbeat = 0.0
    store.record_sample(run_id, "s2", result={"x": 2}, error=None, latency_s=0.1)
    with pytest.raises(StoreWriteError, match="another process took over"):
        store.flush()
    with pytest.raises(StoreWriteError, match="another process took over"):
        store.flush()  # and every later write, too
    reader = open_store(url)
    assert set(reader.finished_samples(run_id)) == {"s1"}
    reader.close()


# -- two real CLI processes ---------------------------------------------------------------------------


class GateServer(ChatStub):
    """An OpenAI-compatible endpoint on 127.0.0.1 whose answers wait until ``gate`` is set; counts requests."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        super().__init__(self._respond)

    def _respond(self, _request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        self.gate.wait(120)
        return 200, completion()

    def __exit__(self, *exc: object) -> None:
        self.gate.set()  # releases held handlers
        super().__exit__(*exc)


def eval_args(server: GateServer, store: str) -> list[str]:
    """A three-dialogue suite run, one model call at a time, against ``server``."""
    return ["eval", "suite", "--model", server.model(), "--store", store, "-q", "--concurrency", "1", "--limit", "3"]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolgauge.cli", *args]


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def listed_runs(common: list[str]) -> list[dict]:
    """``toolgauge runs --json`` on the store of ``common``, from another process."""
    listed = subprocess.run(cli("runs", "--store", common[common.index("--store") + 1], "--json"),
                            capture_output=True, text=True, check=True)  # fmt: skip
    return list(json.loads(listed.stdout))


def start_blocked_run(server: GateServer, common: list[str]) -> tuple[subprocess.Popen[str], str]:
    """Start a CLI run whose first model call hangs at the gate; return the process and its run id."""
    before = server.requests
    proc = subprocess.Popen(cli(*common), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: server.requests > before or proc.poll() is not None, "the first model call")
    assert proc.poll() is None, proc.communicate()
    run = listed_runs(common)[0]
    assert run["status"] == "running" and run["held_by"].startswith(f"pid {proc.pid} on {this_host()} since ")
    return proc, run["id"]


def test_a_second_resumer_gets_one_clear_line_and_makes_no_model_call(tmp_path):
    store = f"sqlite:///{tmp_path / 's.db'}"
    with GateServer() as server:
        common = eval_args(server, store)
        first, run_id = start_blocked_run(server, common)
        try:
            assert server.requests == 1
            second = subprocess.run(cli(*common, "--resume", run_id), capture_output=True, text=True, timeout=120)
            assert second.returncode == 2, second.stderr
            lines = [line for line in second.stderr.splitlines() if line.strip()]
            assert len(lines) == 1, second.stderr
            assert f"run {run_id} is being run by pid {first.pid} on {this_host()} since" in lines[0]
            assert "wait for it or stop it" in lines[0]
            assert server.requests == 1  # the first run is still held at its first call: no other caller
            server.gate.set()
            _, err = first.communicate(timeout=120)
            assert first.returncode == 0, err
        finally:
            first.kill()
            first.wait()
        calls_of_first = server.requests
        # Once the holder has finished, the run can be resumed again (nothing left to ask).
        again = subprocess.run(cli(*common, "--json", "--resume", run_id), capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        again_run = EvalResults.model_validate_json(again.stdout).run
        assert again_run is not None and again_run.id == run_id and again_run.model_calls == 0
        assert server.requests == calls_of_first + 1  # the resume's probe, and no sample call


def test_a_resume_right_after_kill_9_takes_the_run_over(tmp_path):
    store = f"sqlite:///{tmp_path / 's.db'}"
    with GateServer() as server:
        common = eval_args(server, store)
        first, run_id = start_blocked_run(server, common)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        assert listed_runs(common)[0]["held_by"] is None  # its lease is stale now: nobody runs it
        server.gate.set()
        resumed = subprocess.run(
            cli(*common, "--json", "--resume", run_id), capture_output=True, text=True, timeout=120
        )
        assert resumed.returncode == 0, resumed.stderr
        run = EvalResults.model_validate_json(resumed.stdout).run
        assert run is not None and run.id == run_id and run.sample_errors == 0
    reopened = open_store(store)
    assert reopened.run_lock_holder(run_id) is None  # the resumer gave the lease back when it finished
    assert reopened.get_run(run_id).status == "finished"
    reopened.close()
