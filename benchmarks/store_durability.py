"""Store failures mid-run: how many finished rows survive, how many are written twice.

Two real failures, each in two modes (``retry``: the same store writes the rows it kept once the
store is back; ``resume``: the process's buffered rows are abandoned, as when it exits, and a fresh
store resumes the run):

- full disk: a SQLite store on a 640 KiB tmpfs in a private mount namespace (needs ``unshare -m``
  and ``mount``, i.e. root or CAP_SYS_ADMIN), grown to 64 MiB after the failure;
- lost PostgreSQL: a throwaway server (tests/helpers/pg_server.py) stopped with ``pg_ctl -m immediate``
  before the 40th model call, started again after the failure.

    PYTHONPATH=src .venv/bin/python benchmarks/store_durability.py [--samples 400] [--json]

Prints a markdown table (or JSON) of the findings of ``tests/helpers/full_disk_run.py``'s scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from helpers.full_disk_run import scenario  # noqa: E402
from helpers.pg_server import PgServer, PgUnavailable  # noqa: E402


def full_disk(mode: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", sys.executable,
             str(TESTS / "helpers" / "full_disk_run.py"), tmp, mode,
             str(n)],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"full-disk scenario failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return dict(json.loads(proc.stdout.splitlines()[-1]))


def lost_postgres(server: PgServer, mode: str, n: int, database: str) -> dict[str, Any]:
    url = server.create_database(database)

    def cut(k: int) -> None:
        if k == 40:
            server.stop()

    return asyncio.run(scenario(url, mode, n, give_back=server.start, on_model_call=cut))


COLUMNS = [
    ("acked_samples", "finished before the failure"),
    ("present_after_free", "in the store after it came back"),
    ("lost", "finished but lost"),
    ("resume_asked", "asked again on resume"),
    ("asked_twice", "finished but asked again"),
    ("final_done", "done after resume"),
    ("doubled_call_rows", "call rows written twice"),
    ("calls_after_failure", "model calls after the first failed write"),
]


def row(name: str, found: dict[str, Any]) -> list[str]:
    found = {
        **found,
        "lost": len(found["missing_acked"]),
        "asked_twice": len(found["resume_asked_already_done"]),
        "calls_after_failure": found["model_calls_total_first_process"] - (found["model_calls_before_failure"] or 0),
    }
    return [name, found["mode"], str(found["samples"]), *(str(found[key]) for key, _ in COLUMNS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: list[tuple[str, dict[str, Any]]] = []
    for mode in ("retry", "resume"):
        results.append(("SQLite, full disk", full_disk(mode, args.samples)))
    try:
        server = PgServer()
        server.start()
    except PgUnavailable as exc:
        print(f"skipping PostgreSQL: {exc}", file=sys.stderr)
    else:
        try:
            for mode in ("retry", "resume"):
                results.append(("PostgreSQL, server stopped", lost_postgres(server, mode, args.samples, f"b_{mode}")))
        finally:
            server.close()
    if args.json:
        print(json.dumps([{"scenario": name, **found} for name, found in results], indent=2))
        return
    header = ["scenario", "mode", "samples", *(title for _, title in COLUMNS)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, found in results:
        print("| " + " | ".join(row(name, found)) + " |")


if __name__ == "__main__":
    main()
