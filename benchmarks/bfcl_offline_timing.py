"""Time BFCL offline: scoring 800 multi-turn entries from result files; a full offline run on a loopback endpoint.

``scoring``: writes a BFCL result file per multi-turn category (every entry's ground truth as prompting text,
each turn closed by a text reply; ``--trajectory changed`` changes one argument of every turn's first call, so
every conversation fails and the per-turn credit replays every turn), then times ``toolgauge score bfcl
--predictions`` (a fresh process: wall time, and the run's own time) and, with ``--bfcl-python``, ``bfcl evaluate``
on the same files.

``full``: every offline category of the data folder (AST, multi-turn, and memory from the wheel: all of BFCL v4
but web search) as three toolgauge runs (they cannot share one) against a loopback OpenAI-compatible endpoint on
127.0.0.1 that answers every request with one fixed text reply, and the same with ``--model gold`` (no endpoint).
With ``--bfcl-python``, ``bfcl generate`` (registry entry ``gpt-4o-2024-11-20``, ``OPENAI_BASE_URL`` at the same
endpoint) and ``bfcl evaluate`` on the categories its venv can run.

    PYTHONPATH=src .venv/bin/python benchmarks/bfcl_offline_timing.py scoring --data ../shared/data/bfcl
    PYTHONPATH=src .venv/bin/python benchmarks/bfcl_offline_timing.py full --data ../shared/data/bfcl \
        --bfcl-python /tmp/bfcl-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bfcl_multi_turn_scoring import _changed

try:  # tests/helpers/ once the tests live in folders, tests/ before
    from helpers.chat_stub import ChatStub, completion
except ImportError:
    from chat_stub import ChatStub, completion
from toolgauge.benchmarks.bfcl.decoders.python_calls import render_python_calls
from toolgauge.benchmarks.bfcl.loader import BFCL_AST_CATEGORIES
from toolgauge.benchmarks.bfcl.memory import BFCL_MEMORY_CATEGORIES
from toolgauge.benchmarks.bfcl.multi_turn_check import BFCL_MULTI_TURN_CATEGORIES, load_multi_turn

MODEL = "gpt-4o-2024-11-20"
REPLY = "I cannot help with that."
ROOT = Path(__file__).resolve().parents[1]


def toolgauge(*args: str, cwd: Path) -> tuple[float, dict[str, Any]]:
    """Run the CLI in a fresh process; return its wall time and its ``--json`` results."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TOOLGAUGE_BFCL_MEMORY_DIR": str(cwd / "memory")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "toolgauge.cli", *args, "--json", "-q"], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"toolgauge {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def write_multi_turn_results(root: Path, data: Path, trajectory: str) -> Path:
    for category in BFCL_MULTI_TURN_CATEGORIES:
        lines = []
        for entry in load_multi_turn(data, category):
            turns = entry.ground_truth_calls(entry.backends())
            if trajectory == "changed":
                turns = [[(t[0][0], _changed(t[0][1])), *t[1:]] if t else [] for t in turns]
            result = [[render_python_calls(t), "Done."] if t else ["I cannot do that."] for t in turns]
            lines.append(json.dumps({"id": entry.id, "result": result}))
        path = root / "result" / MODEL / "multi_turn" / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return root / "result"


def bfcl(bfcl_python: str, root: Path, *args: str, extra_env: dict[str, str] | None = None) -> float:
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(root), "OPENAI_API_KEY": "dummy", **(extra_env or {})}
    started = time.perf_counter()
    done = subprocess.run([str(Path(bfcl_python).parent / "bfcl"), *args], env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bfcl {' '.join(args)} failed:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return wall


def _overall_accuracy(results: dict[str, Any]) -> Any:
    return next((m["value"] for m in results["metrics"] if m["name"] == "accuracy" and m.get("group") is None), None)


def _run_times(results: dict[str, Any]) -> dict[str, Any]:
    run = results.get("run") or {}
    return {k: run.get(k) for k in ("samples", "model_calls", "wall_seconds")}


def scoring(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    result_dir = write_multi_turn_results(work / "bfcl_root", args.data, args.trajectory)
    wall, results = toolgauge("score", "bfcl", "--data", str(args.data), "--predictions", str(result_dir),
                              "--store", f"sqlite:///{work / 'store.db'}", cwd=work)  # fmt: skip
    report: dict[str, Any] = {
        "entries": 800,
        "trajectory": args.trajectory,
        "accuracy": _overall_accuracy(results),
        "run_wall_s": (results.get("run") or {}).get("wall_seconds"),
        "toolgauge_score_wall_s": round(wall, 2),
    }
    if args.bfcl_python:
        categories = ",".join(BFCL_MULTI_TURN_CATEGORIES)
        report["bfcl_evaluate_wall_s"] = round(
            bfcl(args.bfcl_python, work / "bfcl_root", "evaluate", "--model", MODEL, "--test-category", categories), 2
        )
    return report


def full(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    ast = [c for c in BFCL_AST_CATEGORIES if (args.data / f"BFCL_v4_{c}.json").is_file()]
    runs = {"ast": ast, "multi_turn": list(BFCL_MULTI_TURN_CATEGORIES), "memory": list(BFCL_MEMORY_CATEGORIES)}
    report: dict[str, Any] = {"categories": runs}
    with ChatStub(lambda request, headers: (200, completion(REPLY))) as stub:
        for model, label in ((stub.model(), "loopback"), ("gold", "gold")):
            timings: dict[str, Any] = {}
            for name, categories in runs.items():
                wall, results = toolgauge("eval", "bfcl", "--data", str(args.data), "--categories",
                                          ",".join(categories), "--model", model,
                                          "--store", f"sqlite:///{work / f'{label}.db'}", cwd=work)  # fmt: skip
                timings[name] = {"wall_s": round(wall, 2), "accuracy": _overall_accuracy(results),
                                 "run": _run_times(results)}  # fmt: skip
            timings["total_wall_s"] = round(sum(t["wall_s"] for t in timings.values()), 2)
            report[label] = timings
        report["loopback_requests"] = stub.requests
        if args.bfcl_python:
            env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{stub.port}/v1"}
            groups = [*ast, *BFCL_MULTI_TURN_CATEGORIES]
            root = work / "bfcl_root_full"
            generate = bfcl(args.bfcl_python, root, "generate", "--model", MODEL, "--test-category", ",".join(groups),
                            "--num-threads", "4", extra_env=env)  # fmt: skip
            evaluate = bfcl(args.bfcl_python, root, "evaluate", "--model", MODEL, "--test-category", ",".join(groups))
            written = sum(len(f.read_text().splitlines()) for f in (root / "result").rglob("*_result.json"))
            report["bfcl_eval"] = {
                "categories": "ast + multi_turn (its venv lacks the memory backends' torch)",
                "result_lines": written,
                "generate_wall_s": round(generate, 2),
                "evaluate_wall_s": round(evaluate, 2),
            }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["scoring", "full"])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/bfcl"))
    parser.add_argument("--trajectory", choices=["gold", "changed"], default="gold")
    parser.add_argument("--bfcl-python", help="python of a venv with bfcl-eval 2026.3.23 (bfcl evaluate/generate)")
    args = parser.parse_args()
    args.data = args.data.resolve()
    with tempfile.TemporaryDirectory(prefix="bfcl_timing_") as tmp:
        report = scoring(args, Path(tmp)) if args.what == "scoring" else full(args, Path(tmp))
    report["cpus"] = os.cpu_count()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
