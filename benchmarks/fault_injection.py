"""BFCL on real data through the real CLI, against a clean server and a fault-injecting one.

Both servers are ``tests/helpers/fault_server.py`` on 127.0.0.1: the same deterministic answers, the
faulty one with a seeded schedule of 5xx, 429, hangs, HTML/``{}``/invalid-JSON/no-choices
bodies, truncated bodies and connection resets. The script prints, per run: samples, lost
samples (missing or failed), duplicated samples (more than one stored row for a key), model-call
rows against the one call per sample BFCL makes, replies the server delivered against those
needed (one per uncached call row, plus the probe: more would be a duplicated call), verdict and
per-sample row differences between the two runs, faults injected by kind, and wall time.

    .venv/bin/python benchmarks/fault_injection.py --data ../shared/data/bfcl
    .venv/bin/python benchmarks/fault_injection.py --data ../shared/data/bfcl --fault-rate 0.3 --seed 2
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.fault_server import FaultServer
from toolgauge.results import EvalResults

CATEGORIES = "simple_python,multiple,parallel,parallel_multiple,live_simple,live_multiple"


def run_cli(url: str, data: Path, work: Path, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One ``toolgauge eval bfcl`` process; return its figures."""
    store = work / f"{name}.db"
    rows_path = work / f"{name}.jsonl"
    cmd = [
        sys.executable, "-m", "toolgauge.cli", "eval", "bfcl", "--data", str(data), "--categories", args.categories,
        "--model", f"{url}#m", "--store", f"sqlite:///{store}", "-q", "--json", "--samples", str(rows_path),
        "--concurrency", str(args.concurrency), "--timeout", str(args.timeout),
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
    run = EvalResults.model_validate_json(proc.stdout).run if proc.stdout.strip() else None
    run_id = run.id if run is not None else None
    with sqlite3.connect(store) as conn:
        per_key = conn.execute(
            "SELECT sample_key, COUNT(*), SUM(status = 'done') FROM samples WHERE run_id = ? GROUP BY sample_key",
            (run_id,),
        ).fetchall()
        calls = conn.execute(
            "SELECT COUNT(*), SUM(error IS NOT NULL), SUM(attempts), SUM(cached) FROM model_calls WHERE run_id = ?",
            (run_id,),
        ).fetchone()
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    return {
        "exit_code": proc.returncode,
        "status": run.status if run is not None else None,
        "samples": run.samples if run is not None else 0,
        "stored_keys": len(per_key),
        "done_keys": sum(1 for _, _, done in per_key if done),
        "duplicated_keys": sum(1 for _, n, _ in per_key if n > 1),
        "sample_errors": run.sample_errors if run is not None else None,
        "model_call_rows": calls[0],
        "failed_call_rows": calls[1] or 0,
        "attempts": calls[2] or 0,
        "cached_call_rows": calls[3] or 0,
        "wall_s": round(wall, 1),
        "rows": {r["id"]: r for r in rows},
    }


def main() -> None:
    """Run the clean and the faulty pass and print the comparison as JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="BFCL v4 data folder")
    parser.add_argument("--categories", default=CATEGORIES)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=2.0, help="client timeout; a hang costs this long")
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="toolgauge-faults-") as tmp:
        work = Path(tmp)
        with FaultServer() as clean_server:
            clean = run_cli(clean_server.url, args.data, work, "clean", args)
            clean["server_replies"] = clean_server.answered
        with FaultServer(fault_rate=args.fault_rate, seed=args.seed) as faulty_server:
            faulty = run_cli(faulty_server.url, args.data, work, "faulty", args)
            faulty["server_replies"] = faulty_server.answered
            faults = dict(sorted(faulty_server.faults.items()))
            attempts_seen = faulty_server.requests

    expected = set(clean["rows"])
    # A row is one entry's typed score: "value" is 1.0 when BFCL's checker accepts the entry, else 0.0.
    differences = [
        key for key in expected if faulty["rows"].get(key, {}).get("value") != clean["rows"][key].get("value")
    ]
    row_differences = [key for key in expected if faulty["rows"].get(key) != clean["rows"][key]]
    report: dict[str, Any] = {"fault_rate": args.fault_rate, "seed": args.seed, "categories": args.categories}
    for name, run in (("clean", clean), ("faulty", faulty)):
        samples = run["samples"]
        report[name] = {
            "exit_code": run["exit_code"],
            "status": run["status"],
            "samples": samples,
            "lost": samples - run["done_keys"],
            "duplicated": run["duplicated_keys"],
            "sample_errors": run["sample_errors"],
            "model_call_rows": run["model_call_rows"],
            "model_call_rows_expected": samples,  # BFCL: one model call per sample
            "failed_call_rows": run["failed_call_rows"],
            "cached_call_rows": run["cached_call_rows"],
            "server_replies": run["server_replies"],
            # One reply per call row not served from the cache, plus the probe's.
            "server_replies_needed": run["model_call_rows"] - run["cached_call_rows"] + 1,
            "wall_s": run["wall_s"],
        }
    report["faulty"]["http_attempts"] = attempts_seen
    report["faulty"]["faults_injected"] = faults
    report["faults_injected_total"] = sum(faults.values())
    report["verdict_differences"] = len(differences)
    report["row_differences"] = len(row_differences)
    report["clean_accuracy"] = round(sum(r.get("value") == 1.0 for r in clean["rows"].values()) / len(expected), 4)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
