"""``--epochs K``: every sample runs K times as its own try; the cache key, resume, rescore and the statistics.

The real CLI in-process against real HTTP servers on 127.0.0.1 (tests/helpers/chat_stub.py,
tests/helpers/fault_server.py),
with gold and scripted models for exact values.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolgauge
from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of, sample_rows
from helpers.fault_server import FaultServer
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.engine.cache import request_hash
from toolgauge.engine.epochs import epoch_key, split_epoch_key
from toolgauge.errors import UsageError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest
from toolgauge.store.store import _sample_of

SUITE = load_suite(builtin_suite_path())


def turns_of(n: int) -> int:
    """Model calls of one try of the first ``n`` built-in dialogues (one per turn)."""
    return sum(len(d.turns) for d in SUITE[:n])


# -- the key rules ------------------------------------------------------------------------------------------
def test_try_one_keeps_the_sample_key_and_later_tries_get_a_suffix() -> None:
    assert epoch_key("weather-001", 1) == "weather-001"
    assert epoch_key("weather-001", 2) == "weather-001@e2"
    assert split_epoch_key("weather-001@e12") == ("weather-001", 12)
    assert split_epoch_key("weather-001") == ("weather-001", 1)
    # A role's calls are logged under "<try key>#<role>": the role suffix comes off first, the epoch stays.
    assert _sample_of(f"{epoch_key('a#1', 3)}#judge", "judge") == "a#1@e3"
    with pytest.raises(ValueError):
        epoch_key("a", 0)


@given(st.text(min_size=1, max_size=30).filter(lambda k: split_epoch_key(k) == (k, 1)), st.integers(1, 500))
def test_epoch_keys_round_trip(key: str, epoch: int) -> None:
    assert split_epoch_key(epoch_key(key, epoch)) == (key, epoch)


def test_the_cache_key_of_try_one_is_unchanged_and_later_tries_and_settings_change_it() -> None:
    request = ModelRequest(messages=[Message(role="user", content="hi")], options=GenerateOptions(temperature=0.7))
    payload = {"model": "m", **request.cache_payload()}
    before = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()  # the key as computed before epochs existed
    assert request_hash("m", request) == request_hash("m", request, epoch=1) == before
    keys = {request_hash("m", request, epoch=e) for e in (1, 2, 3)}
    hotter = request.model_copy(update={"options": GenerateOptions(temperature=0.8)})
    seeded = request.model_copy(update={"options": GenerateOptions(temperature=0.7, seed=1)})
    effort = request.model_copy(update={"options": GenerateOptions(temperature=0.7, reasoning_effort="low")})
    keys |= {request_hash("m", r) for r in (hotter, seeded, effort)}
    assert len(keys) == 6


def test_a_sample_key_that_looks_like_a_try_is_refused_with_epochs(tmp_path: Path) -> None:
    data = tmp_path / "s.jsonl"
    first = json.loads(builtin_suite_path().read_text().splitlines()[0])
    data.write_text(json.dumps(first) + "\n" + json.dumps({**first, "id": f"{first['id']}@e2"}) + "\n")
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "suite", "--data", data, "-m", "gold", "--epochs", "2", "--store", store)
    assert res.exit_code == 2 and "looks like the key of a repeated try" in res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "s.db").exists()  # nothing stored
    assert invoke("eval", "suite", "--data", data, "-m", "gold", "--store", store).exit_code == 0


# -- runs ---------------------------------------------------------------------------------------------------
def test_gold_with_three_epochs_reports_every_try_and_rescore_and_report_agree(tmp_path: Path) -> None:
    data = tmp_path / "suite.jsonl"
    data.write_bytes(builtin_suite_path().read_bytes())
    store = f"sqlite:///{tmp_path / 's.db'}"
    samples = tmp_path / "rows.jsonl"
    args = ("eval", "suite", "-m", "gold", "--data", data, "--limit", "5", "--epochs", "3", "--store", store)
    res = invoke(*args, "--json", "--samples", samples)
    assert res.exit_code == 0, res.stderr
    results = results_of(res)
    run = results.run
    assert run is not None and (run.samples, run.epochs, run.model_calls) == (5, 3, 3 * turns_of(5))
    assert set(results.summary) == {"tool_accuracy", "parameter_accuracy", "success_rate"}
    for s in results.summary.values():
        assert (s.mean, s.stderr, s.ci_low, s.ci_high, s.n, s.epochs) == (1.0, 0.0, 1.0, 1.0, 5, 3)
    assert results.pass_at_k == results.pass_hat_k == {"1": 1.0, "2": 1.0, "3": 1.0}
    rows = sample_rows(samples)
    assert Counter(r["epoch"] for r in rows) == {1: turns_of(5), 2: turns_of(5), 3: turns_of(5)}
    # Provenance: the data file's sha256, the options, the repeats.
    prov = results.provenance
    assert prov is not None and prov.epochs == 3 and prov.model == "gold" and prov.limit == 5
    assert prov.data_files == {str(data): hashlib.sha256(data.read_bytes()).hexdigest()}
    assert prov.model_options == {"temperature": 0.0, "max_tokens": 512, "tool_choice": "auto"}
    assert prov.toolgauge_version == toolgauge.__version__
    reported = results_of(invoke("report", run.id, "--store", store, "--json"))
    assert reported.provenance == prov and reported.summary == results.summary
    rescored = invoke("rescore", run.id, "--store", store, "--json", "--samples", tmp_path / "again.jsonl")
    assert rescored.exit_code == 0, rescored.stderr
    again = results_of(rescored)
    assert again.metrics == results.metrics and again.summary == results.summary
    assert again.pass_hat_k == results.pass_hat_k and sample_rows(tmp_path / "again.jsonl") == rows
    table = " ".join(invoke(*args).stdout.split())
    assert "over 5 clusters, 3 epochs" in table and "pass^k k=1 100.00 k=2 100.00 k=3 100.00" in table
    assert "5 samples × 3 epochs" in table


def test_pass_at_k_and_pass_hat_k_of_scripted_tries_by_hand(tmp_path: Path) -> None:
    """Dialogue 0 always right (c=3), dialogue 1 right on its first try only (c=1), dialogue 2 never (c=0)."""
    right_tries = {SUITE[0].id: 3, SUITE[1].id: 1, SUITE[2].id: 0}
    asked: Counter[tuple[str, int]] = Counter()
    lock = threading.Lock()

    def policy(request: ModelRequest) -> AssistantTurn:
        with lock:
            asked[(request.sample_key, request.step)] += 1
            nth = asked[(request.sample_key, request.step)]  # which try of this sample asks this step
        if nth <= right_tries[request.sample_key] and request.gold is not None:
            return request.gold
        return AssistantTurn(content="I cannot help with that.", tool_calls=[], finish_reason="stop")

    run = toolgauge.evaluate(
        "suite", ScriptedClient(policy=policy), store=tmp_path / "s.db", limit=3, epochs=3, keep_samples=True
    )
    r = run.results
    assert r.pass_at_k == pytest.approx({"1": 4 / 9, "2": (1 + 2 / 3 + 0) / 3, "3": 2 / 3})
    assert r.pass_hat_k == pytest.approx({"1": 4 / 9, "2": 1 / 3, "3": 1 / 3})
    # success_rate: the mean over epochs of each epoch's share of dialogues fully right.
    assert r.value("success_rate") == pytest.approx(4 / 9)
    assert r.summary["success_rate"].mean == pytest.approx(4 / 9)
    s = r.summary["success_rate"]
    assert (s.n, s.epochs) == (3, 3) and s.ci_low is not None and s.ci_high is not None
    assert s.ci_low <= 4 / 9 <= s.ci_high
    # Every headline metric's summary mean is the metric's own value (the unit scores reproduce it).
    for name, summary in r.summary.items():
        assert summary.mean == pytest.approx(r.value(name)), name
    assert sorted({u.epoch for u in run.samples}) == [1, 2, 3]


def test_one_epoch_fills_the_summary_and_keeps_the_metrics(tmp_path: Path) -> None:
    plain = toolgauge.evaluate("suite", "gold", store=tmp_path / "s.db", limit=4)
    assert plain.results.run is not None and plain.results.run.epochs == 1
    assert {n: s.epochs for n, s in plain.results.summary.items()} == {
        "tool_accuracy": 1, "parameter_accuracy": 1, "success_rate": 1
    }  # fmt: skip
    assert plain.results.summary["success_rate"].n == 4
    assert plain.results.pass_at_k == {"1": 1.0}


def _record_temperatures(seen: list[float]) -> Any:
    def respond(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
        if not is_probe(request):
            seen.append(request.get("temperature"))
        return 200, completion("Sorry, I cannot do that.")

    return respond


def test_repeats_at_temperature_are_real_calls_and_a_rerun_is_served_from_the_cache(tmp_path: Path) -> None:
    seen: list[float] = []
    calls = 3 * turns_of(4)
    with ChatStub(_record_temperatures(seen)) as stub:
        args = ("eval", "suite", "-m", stub.model(), "--limit", "4", "--epochs", "3", "--temperature", "0.7",
                "--store", f"sqlite:///{tmp_path / 's.db'}", "--json", "-c", "2")  # fmt: skip
        first = results_of(invoke(*args)).run
        assert first is not None and len(seen) == calls  # 3x the calls: each try has its own cache key
        assert (first.model_calls, first.cached_calls) == (calls, 0)
        assert (first.input_tokens, first.output_tokens, first.cached_input_tokens) == (calls, calls, 0)
        assert set(seen) == {0.7}

        second = results_of(invoke(*args)).run
        assert second is not None and len(seen) == calls  # nothing new reached the server
        assert (second.model_calls, second.cached_calls) == (0, calls)
        # A cached answer spends no tokens: its tokens are reported apart.
        assert (second.input_tokens, second.output_tokens) == (0, 0)
        assert (second.cached_input_tokens, second.cached_output_tokens) == (calls, calls)

        third = results_of(invoke(*args, "--no-cache")).run
        assert third is not None and len(seen) == 2 * calls and third.model_calls == calls

        table = invoke(*args[:-3])
        assert f"0+0 tokens (+{calls}+{calls} cached)" in " ".join(table.stdout.split())


def _done_tries(store: Path, run_id: str) -> dict[str, int]:
    with sqlite3.connect(store) as conn:
        return dict(
            conn.execute(
                "SELECT sample_key, COUNT(*) FROM samples WHERE run_id = ? AND status = 'done' GROUP BY sample_key",
                (run_id,),
            ).fetchall()
        )


def test_resume_after_the_endpoint_died_repeats_no_finished_try(tmp_path: Path) -> None:
    # No short --timeout: the servers inject no hangs, and a slow answer timed out would reach the server twice.
    common = ("--limit", "6", "--epochs", "3", "--max-retries", "1", "-c", "4", "--json")
    with FaultServer() as clean:
        ok = invoke("eval", "suite", "-m", f"{clean.url}#m", "--store", f"sqlite:///{tmp_path / 'clean.db'}", *common,
                    "--samples", tmp_path / "clean.jsonl")  # fmt: skip
        assert ok.exit_code == 0, ok.stderr
    store = tmp_path / "s.db"
    with FaultServer(down_after=2 * turns_of(6)) as srv:
        args = ("eval", "suite", "-m", f"{srv.url}#m", "--store", f"sqlite:///{store}", *common)
        stopped = invoke(*args)
        assert stopped.exit_code == 75, stopped.stderr
        run_id = stopped.stderr.rsplit("--resume ", 1)[1].split()[0]
        before = _done_tries(store, run_id)
        assert 0 < len(before) < 18
        srv.down_after = None
        answered = srv.answered
        resumed = invoke(*args, "--resume", run_id, "--samples", tmp_path / "resumed.jsonl")
    assert resumed.exit_code == 0, resumed.stderr
    run = results_of(resumed).run
    assert run is not None and run.status == "finished" and run.resumed_samples == len(before)
    after = _done_tries(store, run_id)
    assert len(after) == 18 and set(after.values()) == {1}
    assert {k: v for k, v in after.items() if k in before} == before
    # The finished tries asked nothing again: at most the unfinished tries' turns reached the server.
    unfinished = [split_epoch_key(k)[0] for k in after if k not in before]
    assert srv.answered - answered <= 1 + sum(len(d.turns) for d in SUITE[:6] for k in unfinished if k == d.id)
    assert sample_rows(tmp_path / "resumed.jsonl") == sample_rows(tmp_path / "clean.jsonl")


def test_data_files_hash_files_and_directories_named_in_the_options(tmp_path: Path) -> None:
    from toolgauge.provenance import data_files

    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.json").write_bytes(b"[1]")
    (folder / "sub" / "a.txt").write_bytes(b"x")
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (folder / "b.json", folder / "sub" / "a.txt")}
    listing = f"b.json\0{sha[folder / 'b.json']}\nsub/a.txt\0{sha[folder / 'sub' / 'a.txt']}\n"
    found = data_files({"data": str(folder), "file": [str(folder / "b.json")], "variant": "strict", "n": 3})
    assert found == {
        str(folder): hashlib.sha256(listing.encode()).hexdigest(),
        str(folder / "b.json"): sha[folder / "b.json"],
    }


def test_benchmarks_whose_tries_would_share_files_offer_no_epochs() -> None:
    """ToolGate names candidates by round: no --epochs there. Tool-Genesis gives each try its own folder.

    ``genesis evaluate`` asks no model (it scores a registry, whose tries are entries of their own): no --epochs.
    """
    from toolgauge import api

    for argv in (["gate", "run", "--help"], ["gate", "screen", "--help"], ["genesis", "evaluate", "--help"]):
        res = invoke(*argv)
        assert res.exit_code == 0 and "--time" in res.output, argv  # the help of that very command
        assert "--epochs" not in res.output, argv
    for argv in (["eval", "tool-genesis", "--help"], ["genesis", "generate", "--help"], ["eval", "bfcl", "--help"]):
        assert "--epochs" in invoke(*argv).output, argv
    with pytest.raises(UsageError, match="cannot repeat samples"):
        api.evaluate("toolgate", "gold", epochs=2)
