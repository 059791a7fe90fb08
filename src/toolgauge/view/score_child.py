"""The viewer's scoring process: ``python -m toolgauge.view.score_child RUN KEY`` writes a run's verdicts.

Scoring a run of 100,000 samples holds all of them in memory at once; in a process of its own that memory
goes back to the system when it exits, so the viewer stays small however large the runs it shows. The
store's URL and the verdicts' database URL come in the environment (``STORE_ENV``, ``VERDICTS_ENV``: never on
a command line, which other users can read); it prints ``{"gen": N}``, the generation it wrote.
"""

from __future__ import annotations

import json
import os
import sys

from sqlalchemy import create_engine

from toolgauge.cli.view import registry_benchmarks
from toolgauge.store import open_store
from toolgauge.store.verdicts import VerdictTable
from toolgauge.view.data import STORE_ENV, VERDICTS_ENV, keep_error_chart, write_verdicts


def main(argv: list[str]) -> int:
    """Score run ``argv[0]`` and write its verdicts as the set for key ``argv[1]``."""
    run_id, key = argv
    store = open_store(os.environ[STORE_ENV], create=False)
    try:
        run = store.get_run(run_id)
        if run is None:
            print(f"no run {run_id!r} in the store", file=sys.stderr)
            return 2
        target = os.environ[VERDICTS_ENV]
        same = target == os.environ[STORE_ENV]
        engine = store.engine if same else create_engine(target)
        table = VerdictTable(engine)
        made = write_verdicts(table, store, registry_benchmarks(), run, key)
        keep_error_chart(table, made)  # drawn here too: the viewer's first sample list need not wait for it
        print(json.dumps({"gen": made.gen}))
        return 0
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
