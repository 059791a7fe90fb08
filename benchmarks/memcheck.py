"""CI's memory check: the peak RSS of a 30,000-dialogue gold suite run against the ceiling in baselines.json.

Runs ``benchmarks/memory.py``'s gold measurement (``toolgauge eval suite --model gold`` in a fresh child
process, SQLite store, concurrency 8) once, prints the figure beside the committed baseline and ceiling,
and exits 1 above the ceiling. The child runs whatever ``toolgauge`` is on ``PYTHONPATH``, so an older
tree can be checked with this script::

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/memcheck.py
    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/memcheck.py      # another tree's code

``make test`` runs it after lint and typecheck (``make memcheck``). Figures: docs/benchmarks/memory.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from memory import measure, write_suite

BASELINES = Path(__file__).with_name("baselines.json")


def memory_baseline(path: Path = BASELINES) -> dict[str, Any]:
    """The committed memory figure: ``{"dialogues", "model", "peak_rss_mb", "ceiling_mb", "commit"}``."""
    try:
        entry: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["memory"]
        missing = [f for f in ("dialogues", "model", "peak_rss_mb", "ceiling_mb", "commit") if f not in entry]
        if missing:
            raise KeyError(missing[0])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {path}: no usable memory baseline ({exc.__class__.__name__}: {exc})", file=sys.stderr)
        raise SystemExit(2) from None
    return entry


def peak_rss_mb(dialogues: int, model: str) -> float:
    """Peak RSS in MB of one suite run of ``dialogues`` dialogues (see ``benchmarks/memory.py``)."""
    with tempfile.TemporaryDirectory(prefix="toolgauge-memcheck-") as tmp:
        data = Path(tmp) / f"suite-{dialogues}.jsonl"
        write_suite(data, dialogues)
        work = Path(tmp) / model
        work.mkdir()
        return float(measure(model, data, work, None)["peak_rss_mb"])


def main() -> int:
    """Measure, print the figure either way, and return 1 above the ceiling."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines", type=Path, default=BASELINES, help="the committed baselines file")
    args = parser.parse_args()
    base = memory_baseline(args.baselines)
    dialogues, model = int(base["dialogues"]), str(base["model"])
    peak = peak_rss_mb(dialogues, model)
    verdict = "ok" if peak <= base["ceiling_mb"] else "FAILED: above the ceiling"
    print(
        f"memory check: a {dialogues:,}-dialogue {model} suite run peaked at {peak:.0f} MB "
        f"(baseline {base['peak_rss_mb']} MB at {base['commit']}, ceiling {base['ceiling_mb']} MB): {verdict}",
        flush=True,
    )
    return 0 if peak <= base["ceiling_mb"] else 1


if __name__ == "__main__":
    sys.exit(main())
