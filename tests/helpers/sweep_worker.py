"""A sweep worker for the concurrency test.

``python tests/helpers/sweep_worker.py URL SWEEP_ID CELL RUN_ID SHARD KEYS``.

Runs the shard ``SHARD`` (the comma list of sample keys ``KEYS``) of the gold model on the built-in suite into
``RUN_ID``, as a Ray task would, then marks cell ``CELL`` of ``SWEEP_ID`` with how many samples it saw done.
"""

from __future__ import annotations

import asyncio
import sys

from toolgauge.store import open_store
from toolgauge.store.sweeps import set_cell
from toolgauge.sweep.cells import run_shard
from toolgauge.sweep.file import parse_sweep
from toolgauge.sweep.plan import plan_cells

SWEEP = '[[model]]\nspec = "gold"\n[[benchmark]]\nname = "suite"\nconcurrency = 2\n'


def main(url: str, sweep_id: str, cell: int, run_id: str, shard: int, keys: list[str]) -> None:
    [planned] = plan_cells(parse_sweep(SWEEP, "worker"), "worker")
    done = asyncio.run(run_shard(planned.task, url, run_id, shard, keys, None, lease_patience=120.0))
    store = open_store(url)
    try:
        set_cell(store, sweep_id, cell, f"done-{done}")
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6].split(","))
