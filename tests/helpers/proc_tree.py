"""The live process tree read from /proc, for tests and benchmarks that check which processes survive."""

from __future__ import annotations

from pathlib import Path


def proc_table() -> dict[int, tuple[int, int, str, str]]:
    """pid -> (parent pid, process group, state, command line) of every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(entry.name)] = (int(fields[1]), int(fields[2]), fields[0], cmdline)
    return table


def descendants(root: int) -> dict[int, tuple[int, str]]:
    """Live descendants of ``root``: pid -> (process group, command line)."""
    table = proc_table()
    found: dict[int, tuple[int, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, pgid, state, cmdline) in table.items():
            if ppid == parent and pid not in found and state != "Z":
                found[pid] = (pgid, cmdline)
                frontier.append(pid)
    return found


def survivors(pids: set[int], groups: set[int]) -> list[int]:
    """Which of ``pids``, or members of ``groups``, are still alive (not zombies)."""
    return sorted(p for p, (_, g, state, _) in proc_table().items() if state != "Z" and (p in pids or g in groups))
