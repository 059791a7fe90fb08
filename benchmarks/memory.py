"""Peak memory of ``toolgauge eval suite`` as the number of dialogues grows.

Writes N suite dialogues (the built-in sample suite's 24 dialogues repeated, each copy with its
own id) into a temporary folder, runs one evaluation per (model, N) in a fresh child process and
reads that child's peak RSS from ``os.wait4``. Two models:

- ``gold``: the real CLI, ``toolgauge eval suite --model gold``.
- ``scripted``: the CLI's own ``eval suite`` body (``execute`` of ``toolgauge.cli.common``) with a ``ScriptedClient``
  policy, because ``--model scripted:PATH`` serves a finite list and 100,000 dialogues need an
  answer per request: gold calls for most dialogues, wrong arguments for some, a text reply for
  others (decided by a CRC of the dialogue id, so the scores do not depend on scheduling).

Both use ``--store sqlite:///<tmp>/store.db -q --concurrency 8 --json``. The typed results (with
run ids, timings and the temporary path removed) and the peaks are written to ``--out`` so two
checkouts can be compared::

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/memory.py --sizes 1000,10000 --out /tmp/mem
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/memory.py --sizes 100000 --models gold --out /tmp/mem

Figures: docs/benchmarks/memory.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.suite.loader import builtin_suite_path
from toolgauge.records import AssistantTurn, ModelRequest, ToolCall
from toolgauge.results import EvalResults

# Fields of the run record that differ between two runs of the same data.
_VOLATILE_RUN_FIELDS = {"id": "", "wall_seconds": 0.0}


def write_suite(path: Path, n: int) -> int:
    """Write ``n`` dialogues (the sample suite repeated, ids made unique); return the file size."""
    base = [json.loads(line) for line in builtin_suite_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as out:
        for index in range(n):
            dialogue = dict(base[index % len(base)])
            dialogue["id"] = f"{dialogue['id']}-{index:06d}"
            out.write(json.dumps(dialogue, ensure_ascii=False) + "\n")
    return path.stat().st_size


def scripted_answer(request: ModelRequest) -> AssistantTurn:
    """A deterministic stand-in model: right, wrong arguments, or a text reply, by dialogue and step."""
    gold = request.gold or AssistantTurn(content=None, finish_reason="stop")
    kind = zlib.crc32(f"{request.sample_key}#{request.step}".encode()) % 5
    if kind == 3 and gold.tool_calls:
        first = gold.tool_calls[0]
        wrong = ToolCall(name=first.name, arguments={**first.arguments, "unit": "kelvin"})
        return AssistantTurn(content=None, tool_calls=[wrong, *gold.tool_calls[1:]], finish_reason="tool_calls")
    if kind == 4:
        return AssistantTurn(content="I cannot do that.", finish_reason="stop")
    return gold


def _child_scripted(data: Path, store_url: str, samples: Path | None, epochs: int = 1) -> None:
    """Run the ``eval suite`` command body with a scripted policy client (mirrors ``eval_suite``)."""
    from toolgauge.benchmarks.suite.build import build
    from toolgauge.benchmarks.suite.options import SuiteOptions
    from toolgauge.cli.common import RunFlags, execute, guarded
    from toolgauge.models.offline import ScriptedClient

    model = "scripted:memory"
    flags = RunFlags(
        model=model, store=store_url, concurrency=8, timeout=120.0, max_retries=4, no_cache=False, quiet=True,
        as_json=True, samples=samples, **({"epochs": epochs} if epochs != 1 else {}),
    )  # fmt: skip

    def body() -> None:
        client = ScriptedClient(policy=scripted_answer, name=model)
        execute(build(SuiteOptions(data=data)), model, flags, client=client)

    guarded(body)


def measure(model: str, data: Path, work: Path, samples: Path | None, epochs: int = 1) -> dict[str, Any]:
    """Run one evaluation in a child process; return its peak RSS, wall time and results.

    ``--epochs`` is passed only when it is not 1, so the script also measures trees from before epochs.
    """
    store_url = f"sqlite:///{work / 'store.db'}"
    if model == "gold":
        command = [sys.executable, "-c", "from toolgauge.cli import main; main()", "eval", "suite"]
        command += ["--data", str(data), "--model", "gold", "--store", store_url, "-q", "--concurrency", "8", "--json"]
        if samples is not None:
            command += ["--samples", str(samples)]
        if epochs != 1:
            command += ["--epochs", str(epochs)]
    else:
        command = [sys.executable, __file__, "--child-scripted", str(data), "--child-store", store_url]
        if samples is not None:
            command += ["--child-samples", str(samples)]
        if epochs != 1:
            command += ["--child-epochs", str(epochs)]
    stdout = work / "stdout.json"
    started = time.perf_counter()
    with stdout.open("wb") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE)
        assert child.stderr is not None
        errors = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{model} run failed ({child.returncode}): {errors.decode(errors='replace')[-2000:]}")
    results = EvalResults.model_validate_json(stdout.read_text(encoding="utf-8"))
    if results.run is not None:
        results.run = results.run.model_copy(update=_VOLATILE_RUN_FIELDS)
    results.settings["data"] = data.name  # the temporary folder differs between runs
    # ... and so do the data paths the provenance names.
    dumped = json.loads(json.dumps(results.model_dump(mode="json")).replace(str(data.parent), "<tmp>"))
    return {"peak_rss_mb": usage.ru_maxrss / 1024, "wall_s": round(wall, 1), "results": dumped}


def main() -> None:
    """Parse arguments, run every (model, size) and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma list of dialogue counts")
    parser.add_argument("--models", default="scripted,gold", help="comma list of scripted, gold")
    parser.add_argument("--out", type=Path, help="folder for results.json, per-run results and samples files")
    parser.add_argument("--samples", action="store_true", help="also write --samples files (into --out)")
    parser.add_argument("--epochs", type=int, default=1, help="tries of every dialogue (--epochs)")
    parser.add_argument("--child-scripted", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-store", help=argparse.SUPPRESS)
    parser.add_argument("--child-samples", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-epochs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_scripted is not None:
        _child_scripted(args.child_scripted, args.child_store, args.child_samples, args.child_epochs)
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    models = [m.strip() for m in args.models.split(",")]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores", flush=True)
    print(f"{'model':<9} {'N':>8} {'file MB':>8} {'peak RSS MB':>12} {'wall s':>7}", flush=True)
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="toolgauge-memory-") as tmp:
            data = Path(tmp) / f"suite-{n}.jsonl"
            size = write_suite(data, n)
            for model in models:
                work = Path(tmp) / model
                work.mkdir()
                samples = args.out / f"samples-{model}-{n}.jsonl" if args.out is not None and args.samples else None
                row = measure(model, data, work, samples, args.epochs)
                row.update(model=model, n=n, epochs=args.epochs, file_mb=round(size / 2**20, 1))
                results.append(row)
                print(
                    f"{model:<9} {n:>8} {row['file_mb']:>8} {row['peak_rss_mb']:>12.0f} {row['wall_s']:>7}", flush=True
                )
                if args.out is not None:
                    (args.out / f"results-{model}-{n}.json").write_text(
                        json.dumps(row["results"], indent=2, sort_keys=True) + "\n", encoding="utf-8"
                    )
    if args.out is not None:
        table = [{k: v for k, v in r.items() if k != "results"} for r in results]
        (args.out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
