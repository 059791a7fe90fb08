"""Who holds a run, and whether that holder is gone (for the run lease in ``run_locks``)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

# A holder on another host is presumed dead when its heartbeat is older than this. The holder
# refreshes its heartbeat with its writes (every HEARTBEAT_SECONDS at most), and a model call
# never lasts this long (the engine's timeout is 120 s by default).
STALE_AFTER_SECONDS = 600.0
HEARTBEAT_SECONDS = 30.0


@dataclass(frozen=True)
class LockHolder:
    """One row of ``run_locks``: the process running a run."""

    run_id: str
    owner: str
    hostname: str
    pid: int
    pid_started: str | None
    acquired_at: float
    heartbeat_at: float

    def describe(self) -> str:
        """Return ``pid N on HOST since TIME``."""
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.acquired_at))
        return f"pid {self.pid} on {self.hostname} since {since}"


def this_host() -> str:
    """Return the host name written into the lease."""
    return socket.gethostname()


def pid_start_time(pid: int) -> str | None:
    """Return the start time of ``pid`` from ``/proc`` (None where there is no procfs or no such pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (the command) may hold spaces and parentheses; the fields after its last ')' start at field 3.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def pid_alive(pid: int, started: str | None) -> bool:
    """Return whether ``pid`` runs on this host and is the same process that took the lease."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    if started is None:
        return True
    now = pid_start_time(pid)
    return now is None or now == started


def is_stale(holder: LockHolder, *, now: float | None = None, stale_after: float = STALE_AFTER_SECONDS) -> bool:
    """Return whether a lease may be taken over: its process is gone (same host) or silent too long (other host)."""
    if holder.hostname == this_host():
        return not pid_alive(holder.pid, holder.pid_started)
    return (now if now is not None else time.time()) - holder.heartbeat_at > stale_after
