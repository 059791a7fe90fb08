"""The viewer's sample page says what the sample's try cost: its evaluated-model calls, cached ones $0."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of
from helpers.view_runs import skip_or_fail_without, view_missing
from toolgauge.store import open_store

skip_or_fail_without(view_missing(browser=False))

USAGE_IN, USAGE_OUT = 1000, 100
PER_CALL = (USAGE_IN * 2 + USAGE_OUT * 10) / 1e6  # at --price 2,10


def answer(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
    return 200, completion("no", usage=(1, 1) if is_probe(request) else (USAGE_IN, USAGE_OUT))


def test_the_sample_page_shows_the_tries_cost_and_a_cached_rerun_costs_nothing(tmp_path: Path) -> None:
    from toolgauge.cli.view import registry_benchmarks
    from toolgauge.view.data import ViewData

    url = f"sqlite:///{tmp_path / 's.db'}"
    args = ("eval", "suite", "-m", "", "--limit", "2", "--store", url, "--price", "2,10", "-c", "1", "--json", "-q")
    with ChatStub(answer) as stub:
        runs = []
        for _ in range(2):
            res = invoke(*args[:3], stub.model(), *args[4:])
            assert res.exit_code == 0, res.output
            run = results_of(res).run
            assert run is not None
            runs.append(run)
    first, cached = runs
    assert cached.cached_calls > 0 and cached.model_calls == 0
    with sqlite3.connect(tmp_path / "s.db") as conn:
        key, calls = conn.execute(
            "select sample_key, count(*) from model_calls where run_id = ? group by sample_key limit 1", (first.id,)
        ).fetchone()
    store = open_store(url)
    data = ViewData(store, registry_benchmarks())
    try:
        page = data.sample(first.id, key)
        assert page["cost_usd"] is not None and page["cost_usd"] > 0
        assert page["cost_usd"] == round(calls * PER_CALL, 8)
        assert data.sample(cached.id, key)["cost_usd"] == 0.0
    finally:
        data.close()
        store.close()
