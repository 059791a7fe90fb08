"""ToolGate's pool runs on a real PostgreSQL store: stored, reported, rescored, audited and exported from it."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli_helpers import invoke, results_of
from toolgauge.benchmarks.toolgate.domains import get_domain


def test_a_pool_run_on_postgresql_is_read_back_by_report_rescore_audit_and_export(pg_url: str, tmp_path: Path):
    pool = get_domain("fem").seeds_path
    # The gold screen picks the proposed option: every candidate is too easy.
    res = invoke("gate", "screen", "--candidates", pool, "--screen", "gold", "--seed", "7", "--store", pg_url, "--json")
    assert res.exit_code == 0, res.output
    document = json.loads(res.stdout)
    n = len(document["candidates"])
    assert n >= 8
    for candidate in document["candidates"]:
        verdict = (candidate["outcome"], candidate["rejected_by"], candidate["reason"])
        assert verdict == ("rejected", "screen", "too_easy")
    run_id = json.loads(invoke("runs", "--store", pg_url, "--json").stdout)[0]["id"]
    stored = results_of(invoke("report", run_id, "--store", pg_url, "--json"))
    assert results_of(invoke("rescore", run_id, "--store", pg_url, "--json")).metrics == stored.metrics
    audit = json.loads(invoke("gate", "audit", run_id, "--store", pg_url, "--json").stdout)
    assert audit["middle_value_share"] == 0.5  # the seeds' balanced answer ranks
    out = tmp_path / "release"
    assert invoke("gate", "export", run_id, "--out", out, "--store", pg_url).exit_code == 0
    assert (out / "accepted.jsonl").read_text() == ""  # nothing passed the screen
    assert len((out / "rejections.jsonl").read_text().splitlines()) == n
