"""A real two-node Ray cluster on loopback addresses for tests: a head and a worker node, each started with
``ray start``, one CPU and a 100 MB object store each, no dashboard, token authentication off (loopback only).

The head listens on 127.0.0.2 and the worker node on 127.0.0.3 (both loopback): ``ray start`` would replace
127.0.0.1 with the machine's network address, and two addresses let a driver on this host attach to the head.
Every process the cluster started is found from the process table (new since the start, and naming the
cluster's temporary folder or head address, or a descendant of one) and killed by pid on ``close``, so a
failing test leaves no Ray process behind and no other Ray process on the machine is touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from helpers.proc_tree import descendants, proc_table

HEAD_IP = "127.0.0.2"
WORKER_IP = "127.0.0.3"
OBJECT_STORE_BYTES = 100 * 1000 * 1000

# What the cluster's processes and every driver of it need in their environment.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
# Starts of a node with new ports after ``ray start`` failed on a taken one: a port found free is bound only
# seconds later, and by then another process may hold it.
PORT_RETRIES = 3
# What ``ray start`` prints when a port of the node is taken (its gRPC server cannot bind it).
PORT_TAKEN = ("Failed to start the grpc server", "Address already in use", "already occupied")


class RayUnavailable(Exception):
    """The cluster could not be started (the reason is the message)."""


class PortTaken(RayUnavailable):
    """``ray start`` failed because a port it was to listen on was taken."""


def ray_binary() -> Path | None:
    """The ``ray`` command beside this Python, or None when Ray is not installed here."""
    path = Path(sys.executable).parent / "ray"
    return path if path.exists() else None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class RayCluster:
    """``start()`` the head and the worker node; ``kill_worker_node()``; ``close()`` kills everything it started."""

    def __init__(self) -> None:
        binary = ray_binary()
        if binary is None:
            raise RayUnavailable("the ray command is not installed beside this Python")
        self.binary = binary
        # A short folder: Ray's socket paths live under it and must stay under the 107-byte limit.
        self.temp_dir = tempfile.mkdtemp(prefix="tgray", dir="/tmp")
        self.port = _free_port(HEAD_IP)
        self.address = f"{HEAD_IP}:{self.port}"
        self.env = {**os.environ, **RAY_ENV}
        self._before = set(proc_table())
        self.worker_pids: set[int] = set()

    def _start(self, *args: str) -> None:
        proc = subprocess.run([str(self.binary), "start", *args, "--disable-usage-stats"], env=self.env,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        if proc.returncode != 0:
            error = PortTaken if any(sign in proc.stderr + proc.stdout for sign in PORT_TAKEN) else RayUnavailable
            raise error(f"ray start {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-800:]}")

    def _start_node(
        self, args: Callable[[], list[str]], leftovers: Callable[[], set[int]], move: Callable[[], None] | None = None
    ) -> None:
        """``ray start`` with ``args()`` (which picks free ports each time).

        After a taken port: kill the failed start's ``leftovers()``, ``move()`` to new fixed ports, and start again.

        Raises:
            RayUnavailable: the node did not start (a port was taken ``PORT_RETRIES + 1`` times, or another reason).
        """
        for retry in range(PORT_RETRIES + 1):
            try:
                self._start(*args())
                return
            except PortTaken:
                if retry == PORT_RETRIES:
                    raise
                self._kill_until_gone(leftovers)
                if move is not None:
                    move()

    def start(self, *, worker: bool = True) -> None:
        """Start the head node, then (unless ``worker`` is false) the worker node."""

        def head_args() -> list[str]:
            return [
                "--head", f"--node-ip-address={HEAD_IP}", f"--port={self.port}", "--num-cpus=1",
                f"--object-store-memory={OBJECT_STORE_BYTES}", "--include-dashboard=false",
                f"--temp-dir={self.temp_dir}", f"--ray-client-server-port={_free_port(HEAD_IP)}",
                f"--dashboard-port={_free_port('127.0.0.1')}", f"--dashboard-agent-listen-port={_free_port(HEAD_IP)}",
            ]  # fmt: skip

        def move_head() -> None:
            self.port = _free_port(HEAD_IP)
            self.address = f"{HEAD_IP}:{self.port}"

        self._start_node(head_args, self._ours, move_head)
        if not worker:
            return
        head = self._ours()
        before_worker = set(proc_table())

        def worker_args() -> list[str]:
            return [
                f"--address={self.address}", f"--node-ip-address={WORKER_IP}", "--num-cpus=1",
                f"--object-store-memory={OBJECT_STORE_BYTES}",
                f"--dashboard-agent-listen-port={_free_port(WORKER_IP)}",
            ]  # fmt: skip

        def worker_daemons() -> set[int]:
            # The worker node's own daemons: new, and not started by a head process (the head's task workers are).
            table = proc_table()
            return {
                pid for pid in self._ours() - head
                if pid not in before_worker and table.get(pid, (0,))[0] not in head
            }  # fmt: skip

        self._start_node(worker_args, worker_daemons)
        self.worker_pids = worker_daemons()
        if not any("raylet" in cmd for pid, (_, _, _, cmd) in proc_table().items() if pid in self.worker_pids):
            raise RayUnavailable("the worker node's raylet was not found after ray start")

    def _ours(self) -> set[int]:
        """The cluster's live processes: new since __init__, naming its folder or address, and their children."""
        table = proc_table()
        roots = {
            pid for pid, (_, _, state, cmd) in table.items()
            if pid not in self._before and state != "Z" and (self.temp_dir in cmd or self.address in cmd)
        }  # fmt: skip
        found = set(roots)
        for root in roots:
            found.update(descendants(root))
        return found

    def worker_node_processes(self) -> dict[int, str]:
        """The worker node's live processes (its raylet, agents and task workers): pid -> command line."""
        table = proc_table()
        pids = {p for p in self.worker_pids if p in table and table[p][2] != "Z"}
        for root in list(pids):
            pids.update(descendants(root))
        return {p: table[p][3] for p in pids if p in table}

    def worker_node_runs(self, *task_names: str) -> bool:
        """Whether a task worker of the worker node runs one of ``task_names`` now (Ray sets it as the title)."""
        titles = tuple(f"ray::{name}" for name in task_names)
        return any(cmd.startswith(titles) for cmd in self.worker_node_processes().values())

    def kill_worker_node(self) -> list[int]:
        """SIGKILL every process of the worker node (raylet first), as if the machine died; returns the pids."""
        procs = self.worker_node_processes()
        order = sorted(procs, key=lambda p: "raylet" not in procs[p])
        for pid in order:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return order

    def _kill_until_gone(self, find: Callable[[], set[int]]) -> None:
        """SIGKILL the processes ``find()`` returns, and again whatever it returns then (three rounds at most)."""
        for _ in range(3):
            found = find()
            if not found:
                break
            for pid in found:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)

    def close(self) -> None:
        """Kill every process the cluster started (by pid) and delete its folder."""
        self._kill_until_gone(lambda: self._ours() | set(self.worker_node_processes()))
        shutil.rmtree(self.temp_dir, ignore_errors=True)
