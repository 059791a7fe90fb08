"""Cost in USD (toolgauge/cost.py): prices from the genai-prices table read offline, ``--price``, and where it shows."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke, results_of
from toolgauge import cost
from toolgauge.cost import Price, call_cost, calls_cost, cost_per_point, format_usd, parse_price, price_for
from toolgauge.errors import UsageError

USAGE_IN, USAGE_OUT = 1000, 100


def answer(request: dict[str, Any], _headers: Mapping[str, str]) -> tuple[int, bytes]:
    """A text reply that reports USAGE_IN prompt and USAGE_OUT completion tokens."""
    return 200, completion("no", usage=(1, 1) if is_probe(request) else (USAGE_IN, USAGE_OUT))


# -- the pure module ----------------------------------------------------------------------------------------
def test_price_is_parsed_as_usd_per_million_tokens() -> None:
    price = parse_price("0.15, 0.6")
    assert (price.input_per_mtok, price.output_per_mtok, price.source) == (0.15, 0.6, "given")
    assert call_cost(price, 1_000_000, 2_000_000) == pytest.approx(0.15 + 1.2)
    for bad in ("1", "a,b", "1,2,3", "-1,2", "nan,1", "inf,1"):
        with pytest.raises(UsageError, match="--price"):
            parse_price(bad)


def test_a_provider_api_is_priced_from_the_table_and_a_server_of_your_own_is_not() -> None:
    from genai_prices import Usage, calc_price

    price = price_for("openai:gpt-4o")
    assert price is not None and price.source == "genai-prices" and price.model == "gpt-4o"
    expected = calc_price(Usage(input_tokens=1234, output_tokens=56), "gpt-4o", provider_id="openai").total_price
    assert call_cost(price, 1234, 56) == pytest.approx(float(expected))
    # The same name served at a URL of your own, or a URL spec: no list price.
    assert price_for("openai:gpt-4o@http://127.0.0.1:8000/v1") is None
    assert price_for("http://127.0.0.1:8000/v1#gpt-4o") is None
    assert price_for("openai:no-such-model-anywhere") is None
    # --price wins, and offline models cost nothing.
    given = parse_price("1,2")
    assert price_for("openai:gpt-4o", given) is given
    for offline in ("gold", "local", "scripted:x.json", "replay:x.jsonl"):
        found = price_for(offline)
        assert found is not None and found.source == "offline" and call_cost(found, 10, 10) == 0.0


def test_the_table_is_read_with_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("genai-prices tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    cost._table_price.cache_clear()
    price = price_for("anthropic:claude-sonnet-4-5")
    assert price is not None and price.input_per_mtok > 0 and price.output_per_mtok > 0


def test_a_tiered_price_prices_each_call_in_its_own_tier() -> None:
    price = price_for("google:gemini-2.5-pro")
    assert price is not None and price.tiered
    short, long = call_cost(price, 1000, 10), call_cost(price, 300_000, 10)
    assert long / 300_000 > short / 1000  # above 200k prompt tokens a token costs more
    assert calls_cost(price, [(1000, 10, 3), (300_000, 10, 1)]) == pytest.approx(3 * short + long)
    linear = parse_price("1,2")
    assert calls_cost(linear, [(10, 1, 2), (20, 3, 1)]) == pytest.approx((40 * 1 + 5 * 2) / 1e6)


def test_costs_are_shown_readably_and_per_headline_point() -> None:
    assert format_usd(None) == "price unknown"
    assert format_usd(0) == "$0"
    assert format_usd(0.01234) == "$0.0123"
    assert format_usd(12.5) == "$12.50"
    assert cost_per_point(1.0, 0.5) == pytest.approx(0.02)
    assert cost_per_point(1.0, 0.0) is None and cost_per_point(None, 0.5) is None


# -- a run ---------------------------------------------------------------------------------------------------
def test_a_run_counts_its_cost_and_a_rerun_from_the_cache_costs_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ChatStub(answer) as stub:
        args = ("eval", "suite", "-m", stub.model(), "--limit", "3", "--store", store, "--price", "2,10", "-c", "1")
        first = results_of(invoke(*args, "--json")).run
        assert first is not None and first.model_calls > 0
        assert (first.input_tokens, first.output_tokens) == (
            USAGE_IN * first.model_calls,
            USAGE_OUT * first.model_calls,
        )
        assert first.cost_usd == pytest.approx(first.model_calls * (USAGE_IN * 2 + USAGE_OUT * 10) / 1e6)
        assert first.price == Price(source="given", input_per_mtok=2, output_per_mtok=10).describe()

        again = results_of(invoke(*args, "--json")).run
        assert again is not None and again.model_calls == 0 and again.cached_calls == first.model_calls
        assert again.cost_usd == 0.0

        table = " ".join(invoke(*args).stdout.split())
        assert "$0 ·" in table and "mostly cached" in table


def test_a_model_with_no_known_price_says_so_once(tmp_path: Path) -> None:
    with ChatStub(answer) as stub:
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "2", "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert res.exit_code == 0
    text = " ".join((res.stdout + res.stderr).split())
    assert text.count("price unknown") == 1
    runs = json.loads(invoke("runs", "--store", f"sqlite:///{tmp_path / 's.db'}", "--json").stdout)
    assert runs[0]["cost_usd"] is None


def test_a_bad_price_is_one_line_and_nothing_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    res = invoke("eval", "suite", "-m", "gold", "--limit", "1", "--store", f"sqlite:///{db}", "--price", "cheap")
    assert res.exit_code == 2
    assert res.stderr.strip().startswith("error: --price 'cheap'") and len(res.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_the_transcript_prices_each_call_and_the_sample(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with ChatStub(answer) as stub:
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "1", "--store", store, "--price", "2,10", "--json")
    run = results_of(res).run
    assert run is not None and run.unit_price is not None and run.unit_price.input_per_mtok == 2
    with sqlite3.connect(tmp_path / "s.db") as conn:
        key, calls = conn.execute("select sample_key, count(*) from model_calls group by sample_key").fetchone()
    text = " ".join(invoke("transcript", run.id, key, "--store", store).stdout.split())
    per_call = (USAGE_IN * 2 + USAGE_OUT * 10) / 1e6
    assert text.count(f"{USAGE_IN} in / {USAGE_OUT} out tokens · {format_usd(per_call)}") == calls
    assert f"{format_usd(per_call * calls)} (the evaluated model's calls)" in text


def test_a_sweep_prices_a_model_by_its_price_key_and_says_when_a_price_is_unknown(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    sweep_file = tmp_path / "SWEEP.toml"
    with ChatStub(answer) as stub:
        sweep_file.write_text(
            f'[[model]]\nspec = "{stub.model("priced")}"\nprice = "2,10"\n'
            f'[[model]]\nspec = "{stub.model("unpriced")}"\n'
            '[[benchmark]]\nname = "suite"\nlimit = 2\n'
        )
        res = invoke("sweep", sweep_file, "--store", store, "--json")
    assert res.exit_code == 0, res.stderr
    priced, unpriced = json.loads(res.stdout)["cells"]
    run = results_of(invoke("report", priced["run"], "--store", store, "--json")).run
    assert run is not None and run.model_calls > 0
    assert priced["cost_usd"] == pytest.approx(run.model_calls * (USAGE_IN * 2 + USAGE_OUT * 10) / 1e6)
    assert unpriced["cost_usd"] is None and unpriced["cost_per_point"] is None
    board = " ".join(invoke("report", json.loads(res.stdout)["sweep"], "--store", store).stdout.split())
    assert board.count("price unknown") == 1

    sweep_file.write_text('[[model]]\nspec = "gold"\nprice = "free"\n[[benchmark]]\nname = "suite"\n')
    bad = invoke("sweep", sweep_file, "--store", store)
    assert bad.exit_code == 2 and "model[1].price: 'free'" in bad.stderr


def test_samples_rows_carry_each_samples_cost_and_cached_ones_cost_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    per_call = (USAGE_IN * 2 + USAGE_OUT * 10) / 1e6
    with ChatStub(answer) as stub:
        for n, path in enumerate([tmp_path / "first.jsonl", tmp_path / "cached.jsonl"]):
            res = invoke("eval", "suite", "-m", stub.model(), "--limit", "3", "--store", store, "--price", "2,10",
                         "-c", "1", "--samples", path, "--json")  # fmt: skip
            assert res.exit_code == 0, res.output
            run = results_of(res).run
            assert run is not None
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            assert rows, "the run wrote sample rows"
            if n == 0:
                with sqlite3.connect(tmp_path / "s.db") as conn:
                    calls = dict(conn.execute("select sample_key, count(*) from model_calls where run_id = ? "
                                              "group by sample_key", (run.id,)).fetchall())  # fmt: skip
                for row in rows:
                    assert row["sample_cost_usd"] == pytest.approx(calls.get(row["sample"], 0) * per_call)
                assert sum({r["sample"]: r["sample_cost_usd"] for r in rows}.values()) == pytest.approx(run.cost_usd)
                assert any(r["sample_cost_usd"] > 0 for r in rows)
            else:
                assert run.cached_calls > 0 and [r["sample_cost_usd"] for r in rows] == [0.0] * len(rows)


def test_samples_rows_say_an_unknown_price_as_null(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    with ChatStub(answer) as stub:
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "1", "--store", f"sqlite:///{tmp_path / 's.db'}",
                     "--samples", path)  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows and all(r["sample_cost_usd"] is None for r in rows)


def test_rescore_samples_rows_carry_the_stored_runs_sample_costs(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    first, again = tmp_path / "first.jsonl", tmp_path / "rescored.jsonl"
    with ChatStub(answer) as stub:
        res = invoke("eval", "suite", "-m", stub.model(), "--limit", "2", "--store", store, "--price", "2,10",
                     "--samples", first, "--json", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None
    res = invoke("rescore", run.id, "--store", store, "--samples", again)
    assert res.exit_code == 0, res.output

    def costs_in(path: Path) -> dict[str, float]:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return {row["id"]: row["sample_cost_usd"] for row in rows}

    rescored = costs_in(again)
    assert rescored and any(c > 0 for c in rescored.values())
    assert rescored == costs_in(first)
