"""How many CPU threads the embedder's matrix products may use, chosen from the machine's load.

PyTorch's OpenMP pool, when its workers spin while they wait (``OMP_WAIT_POLICY=ACTIVE``, or libgomp's default
spin before sleeping), collapses on a loaded machine: each parallel region waits for a descheduled thread
while the other burns its time slice. On the 2-core project machine at load 7 (docs/benchmarks.md) 2 spinning
threads embedded 2.0 texts/s against 7.9 with 1. With a passive wait policy (the embedder sets it) the same 2
threads embedded 14.9 texts/s against 8.2 with 1: a process with two runnable threads gets two shares of a
fairly scheduled machine, and nothing spins. So with a passive pool every core of the affinity mask is used;
otherwise :func:`choose_threads` keeps to the cores the rest of the machine leaves free.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

# The kernel's 1-minute load average is an exponentially damped mean with this time constant.
_LOAD_WINDOW_S = 60.0


def choose_threads(cores: int, load: float, own_load: float, *, passive: bool) -> int:
    """The number of threads to use.

    Args:
        cores: CPUs this process may run on (its affinity mask).
        load: The 1-minute load average (runnable tasks, this process's threads included).
        own_load: How much of ``load`` is this process's own work (its recent CPU seconds per second).
        passive: Whether idle pool threads sleep (``OMP_WAIT_POLICY=PASSIVE`` when torch started).

    Returns:
        ``cores`` with a passive pool; else ``cores`` minus the other processes' load rounded half up,
        clamped to ``1..cores``.
    """
    if passive:
        return max(1, cores)
    others = max(0.0, load - max(0.0, own_load))
    busy = math.floor(others + 0.5)
    return max(1, min(cores, cores - busy))


def available_cores() -> int:
    """CPUs this process may run on (``os.sched_getaffinity`` where the platform has it)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return max(1, len(getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass
class OwnLoad:
    """This process's recent CPU use, damped like the kernel's 1-minute load average so the two compare."""

    level: float = 0.0
    _wall: float = field(default_factory=time.monotonic)
    _cpu: float = field(default_factory=lambda: _process_cpu_seconds())

    def sample(self) -> float:
        """Fold in the CPU used since the last sample and return the damped level."""
        wall, cpu = time.monotonic(), _process_cpu_seconds()
        elapsed = wall - self._wall
        if elapsed > 0:
            rate = max(0.0, cpu - self._cpu) / elapsed
            decay = math.exp(-elapsed / _LOAD_WINDOW_S)
            self.level = self.level * decay + rate * (1.0 - decay)
        self._wall, self._cpu = wall, cpu
        return self.level


def _process_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def threads_for_now(own: OwnLoad, *, passive: bool) -> int:
    """:func:`choose_threads` for this machine now (the load average where the platform has one)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average (Windows): use every core
        load = 0.0
    return choose_threads(available_cores(), load, own.sample(), passive=passive)
