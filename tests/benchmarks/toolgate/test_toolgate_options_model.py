"""ToolGate's typed options (issue 23): options -> the stored config -> the same options -> rescore, same scores.

``eval toolgate``, ``api.evaluate("toolgate", ...)`` and the ``gate`` pool commands build a pool run from one
model (:class:`~toolgauge.benchmarks.toolgate.options.ToolgateOptions`); runs stored by the code before it
(tests/fixtures/old_store/toolgate.db) and ``gate run``'s configs rescore through the same model.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT
from toolgauge import api
from toolgauge.benchmark import rebuild, same_run, stored_config, stored_options
from toolgauge.benchmarks.toolgate import SPEC
from toolgauge.benchmarks.toolgate.build import roles
from toolgauge.benchmarks.toolgate.construction import ConstructionBenchmark
from toolgauge.benchmarks.toolgate.options import ToolgateOptions
from toolgauge.benchmarks.toolgate.protocol import PoolBenchmark
from toolgauge.benchmarks.toolgate.records import RecordedCandidate
from toolgauge.errors import UsageError
from toolgauge.sweep.file import SweepFileError, parse_sweep

SEEDS = (Path(__file__).resolve().parents[3] / "src/toolgauge/benchmarks/toolgate/domains/fem/seeds.jsonl").resolve()
SCREENS = ["gold", "gold,temperature=0.5,name=warm"]


def same_scores(a: api.Evaluation, b: api.Evaluation) -> None:
    assert a.results.metrics and a.results.metrics == b.results.metrics
    assert a.results.details["counts"] == b.results.details["counts"]
    assert sorted((s.id, s.value, str(s.scores)) for s in a.samples) == sorted(
        (s.id, s.value, str(s.scores)) for s in b.samples
    )
    assert a.samples


def test_pool_options_round_trip_through_the_store(tmp_path: Path) -> None:
    options = ToolgateOptions(candidates=SEEDS, command="screen", screen=SCREENS, all_screens=True, seed=7, limit=3)
    store = tmp_path / "store.db"
    first = api.evaluate("toolgate", "gold", store=store, keep_samples=True, **options.model_dump(exclude_unset=True))
    stored = api.read_run(first.run_id, store=store)
    assert stored.config["n"] == 3 and stored.model == "screen:gold + screen:warm"
    assert stored_options(SPEC, stored.config) == options
    again = api.rescore(first.run_id, store=store, keep_samples=True)
    same_scores(first, again)
    # Gold screens answer every item: all three rejected as too easy.
    assert first.results.details["counts"]["rejected"] == 3 and first.results.details["counts"]["total"] == 3


def test_eval_toolgate_and_gate_screen_store_the_same_options(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    given = ["--candidates", str(SEEDS), "--limit", "2", "--seed", "3", "--store", store, "--json"]
    screens = [arg for s in SCREENS for arg in ("--screen", s)]
    evaluated = invoke("eval", "toolgate", "--model", "gold", "--command", "screen", *screens, *given)
    assert evaluated.exit_code == 0, evaluated.output
    gated = invoke("gate", "screen", *screens, *given)
    assert gated.exit_code == 0, gated.output
    runs = api.list_runs(store=store)
    assert len(runs) == 2
    configs = [api.read_run(run.id, store=store).config for run in runs]
    assert configs[0] == configs[1]
    assert stored_options(SPEC, configs[0]) == ToolgateOptions(
        candidates=SEEDS, command="screen", screen=SCREENS, seed=3, limit=2
    )
    for run in runs:
        stored = api.read_run(run.id, store=store)
        assert stored.results is not None
        assert api.rescore(run.id, store=store).results.metrics == stored.results.metrics
    first, second = (api.read_run(run.id, store=store).results for run in runs)
    assert first is not None and second is not None and first.metrics == second.metrics


def test_roles_come_from_the_typed_options() -> None:
    options = ToolgateOptions(candidates=SEEDS, screen=SCREENS, solver="scripted:/x.jsonl,temperature=0.2")
    assert roles(options.model_dump(), "gold") == {
        "screen:gold": "gold",
        "screen:warm": "gold",
        "solver": "scripted:/x.jsonl",
    }
    screen_only = options.model_copy(update={"command": "screen"})
    assert roles(screen_only.model_dump(), "gold") == {"screen:gold": "gold", "screen:warm": "gold"}


def test_a_stored_config_masks_model_passwords() -> None:
    options = ToolgateOptions(candidates=SEEDS, screen=["http://user:s3cret@127.0.0.1:9/v1#m,name=remote"])
    stored = json.dumps(options.model_dump(mode="json"))
    assert "s3cret" not in stored and "127.0.0.1:9/v1#m" in stored
    assert options.screen[0].spec == "http://user:s3cret@127.0.0.1:9/v1#m"  # the run itself asks the real server


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"candidates": str(SEEDS), "solver": "gold"}, "--solver gold: the reference has no tool calls"),
        ({"candidates": str(SEEDS), "screen": ["gold", "gold"]}, "two screens are named 'gold'"),
        ({"candidates": str(SEEDS), "time_limit": float("inf")}, "time_limit: input should be a finite number"),
        ({"candidates": str(SEEDS), "screens": ["gold"]}, "screens: not an option; did you mean 'screen'?"),
        ({"screen": ["gold"], "command": "screen"}, "give the candidates file"),
    ],
)
def test_bad_options_are_one_usage_error(tmp_path: Path, values: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        api.evaluate("toolgate", "gold", store=tmp_path / "s.db", **values)
    assert message in str(raised.value)
    assert not (tmp_path / "s.db").exists() or not api.list_runs(store=tmp_path / "s.db")


# -- runs stored by the code before the options model -------------------------------------------------------------
def old_toolgate_store(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of tests/fixtures/old_store/toolgate.db, its candidates file pointed at this checkout's seeds."""
    copy = tmp_path / "toolgate.db"
    copy.write_bytes((FIXTURE_ROOT / "old_store" / "toolgate.db").read_bytes())
    with sqlite3.connect(copy) as conn:
        rows = conn.execute("select id, config from runs order by id").fetchall()
        for run_id, config in rows:
            values = json.loads(config)
            if not str(values["candidates"]).startswith("run:"):
                values["candidates"] = str(SEEDS)
                conn.execute("update runs set config = ? where id = ?", (json.dumps(values, sort_keys=True), run_id))
    return copy, [run_id for run_id, _ in rows]


def test_old_toolgate_runs_rescore_to_their_stored_scores(tmp_path: Path) -> None:
    store, (screened, rescreened) = old_toolgate_store(tmp_path)
    for run_id in (screened, rescreened):
        stored = api.read_run(run_id, store=store)
        assert stored.results is not None and stored.results.metrics
        assert api.rescore(run_id, store=store).results.metrics == stored.results.metrics
    first = stored_options(SPEC, api.read_run(screened, store=store).config)
    # The gates they stored are their commands' own, which the options leave unsaid.
    assert first == ToolgateOptions(
        candidates=SEEDS, command="screen", screen=SCREENS, all_screens=True, seed=7, limit=3
    )
    second = stored_options(SPEC, api.read_run(rescreened, store=store).config)
    assert second == ToolgateOptions(
        command="rescreen", screen=["gold,name=again"], source_run=screened, pool="all",
        ids=("fem-seed-01", "fem-seed-02", "fem-seed-03"),
    )  # fmt: skip
    assert second.source() == f"run:{screened} (all)"


def _stored_result(store: Path, run_id: str, key: str) -> dict[str, Any] | None:
    with sqlite3.connect(store) as conn:
        row = conn.execute("select result from samples where run_id = ? and sample_key = ?", (run_id, key)).fetchone()
    return json.loads(row[0]) if row is not None else None


def test_old_toolgate_runs_resume_through_the_migration(tmp_path: Path) -> None:
    store, (screened, rescreened) = old_toolgate_store(tmp_path)
    before = {run_id: api.read_run(run_id, store=store) for run_id in (screened, rescreened)}
    lost = {run_id: _stored_result(store, run_id, "fem-seed-03") for run_id in (screened, rescreened)}
    with sqlite3.connect(store) as conn:  # as if both runs had stopped before their third candidate
        conn.execute("delete from samples where sample_key = 'fem-seed-03'")
        conn.execute("update runs set status = 'interrupted'")
    url = f"sqlite:///{store}"
    screens = [arg for s in SCREENS for arg in ("--screen", s)]
    resumed = invoke("gate", "screen", "--candidates", str(SEEDS), *screens, "--all-screens", "--seed", "7",
                     "--limit", "3", "--no-cache", "--store", url, "--resume", screened, "--json")  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    rescreen = invoke("gate", "rescreen", screened, "--screen", "gold,name=again", "--pool", "all", "--no-cache",
                      "--store", url, "--resume", rescreened, "--json")  # fmt: skip
    assert rescreen.exit_code == 0, rescreen.output
    assert [run.id for run in api.list_runs(store=store)] == [rescreened, screened]  # no new run
    for run_id in (screened, rescreened):
        after = api.read_run(run_id, store=store)
        assert after.status == "finished" and after.config == before[run_id].config  # the stored config is kept
        assert after.results is not None and before[run_id].results is not None
        assert after.results.details["counts"] == before[run_id].results.details["counts"]
        again = _stored_result(store, run_id, "fem-seed-03")
        assert again is not None and lost[run_id] is not None
        assert again["outcome"]["outcome"] == lost[run_id]["outcome"]["outcome"] == "rejected"
    # The screened run's seeds derive from --seed 7: the resumed candidate's record and every score are the stored.
    records = [
        RecordedCandidate.model_validate(r) for r in (_stored_result(store, screened, "fem-seed-03"), lost[screened])
    ]
    assert records[0] == records[1]
    assert api.read_run(screened, store=store).results.metrics == before[screened].results.metrics  # type: ignore[union-attr]


def test_resuming_an_old_run_with_other_options_is_refused(tmp_path: Path) -> None:
    store, (screened, _) = old_toolgate_store(tmp_path)
    screens = [arg for s in SCREENS for arg in ("--screen", s)]
    # As stored but for --all-screens: not the run it was.
    res = invoke("gate", "screen", "--candidates", str(SEEDS), *screens, "--seed", "7", "--limit", "3",
                 "--store", f"sqlite:///{store}", "--resume", screened)  # fmt: skip
    assert res.exit_code == 2
    assert f"--resume {screened}: the run was started with other settings" in res.output


def test_same_run_matches_an_old_config_by_its_migrated_options_and_count(tmp_path: Path) -> None:
    store, (screened, _) = old_toolgate_store(tmp_path)
    old = api.read_run(screened, store=store).config
    options = ToolgateOptions(candidates=SEEDS, command="screen", screen=SCREENS, all_screens=True, seed=7, limit=3)
    today = {**options.model_dump(mode="json"), "n": 3}
    assert old != today and same_run(SPEC, old, today)
    assert not same_run(SPEC, old, {**today, "n": 2})  # another sample count
    assert not same_run(SPEC, old, {**today, "seed": 8})
    assert not same_run(None, old, today)  # no benchmark, no migration: only equal configs
    assert same_run(None, today, dict(today))


# A ``gate run``'s config as the code before the options model stored it (no ``n``; solver_steps only when not 8).
GATE_RUN_CONFIG = {
    "kind": "construction", "command": "run", "domain": "fem", "rounds": 2, "generator": "scripted:/g.jsonl",
    "screens": [{"name": "gold", "spec": "gold", "temperature": None, "max_tokens": None, "reasoning_effort": None}],
    "solver": "scripted:/s.jsonl", "time_limit": 60.0, "generator_steps": 5, "prompt_seeds": 1,
    "temperature": 0.0, "max_tokens": 4096,
}  # fmt: skip


def test_a_gate_run_stored_without_its_sample_count_resumes_on_its_options() -> None:
    config = GATE_RUN_CONFIG
    today = stored_config(rebuild(SPEC, {**config, "n": 2}))
    assert "n" not in config and today["n"] == 2
    assert same_run(SPEC, config, today)  # stored before gate runs kept ``n``: their options decide
    assert not same_run(SPEC, config, {**today, "rounds": 3, "n": 3})
    assert not same_run(SPEC, {**config, "n": 1}, today)  # a stored count still has to match


def test_every_route_to_a_run_resumes_an_old_config_alike() -> None:
    # The CLI, api.evaluate and sweep cells all make their driver options with run_setup.run_options.
    from toolgauge.options import EngineOptions
    from toolgauge.run_setup import run_options

    today = stored_config(rebuild(SPEC, {**GATE_RUN_CONFIG, "n": 2}))
    made = run_options(SPEC, None, EngineOptions(), store=None)
    assert made.same_run is not None and made.same_run(GATE_RUN_CONFIG, today)
    assert run_options(None, None, EngineOptions(), store=None).same_run is None


def test_a_gate_run_config_rescores_through_the_options_model() -> None:
    config = {**GATE_RUN_CONFIG, "solver_steps": 9}
    options = stored_options(SPEC, {**config, "n": 2})
    assert options.model_dump()["command"] == "run"
    bench = rebuild(SPEC, {**config, "n": 2})
    assert isinstance(bench, ConstructionBenchmark)
    assert stored_config(bench) == {**config, "n": 2}


def test_build_makes_a_pool_benchmark_whose_config_is_its_options() -> None:
    options = ToolgateOptions(candidates=SEEDS, command="verify", limit=2, domain="fem", domain_checks=True)
    bench = SPEC.build(options)
    assert isinstance(bench, PoolBenchmark)
    assert stored_config(bench) == {**options.model_dump(mode="json"), "n": 2}
    assert bench.settings.gates == ("verify",) and bench.settings.domain_checks


def test_a_sweep_entry_is_checked_by_toolgates_model() -> None:
    head = f"[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'toolgate'\ncandidates = '{SEEDS}'\n"
    sweep = parse_sweep(head + "command = 'screen'\nscreen = ['gold']\nlimit = 2\n", "s.toml")
    assert sweep.benchmarks[0].options["screen"] == ["gold"]
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(head + "command = 'audit'\n", "s.toml")
    assert str(caught.value).startswith("s.toml: benchmark[1].command: input should be")


@pytest.mark.slow
def test_api_evaluate_of_a_pool_imports_no_typer(tmp_path: Path) -> None:
    code = (
        "import sys; import toolgauge.api as a; "
        f"a.evaluate('toolgate', 'gold', candidates={str(SEEDS)!r}, command='screen', screen=['gold'], limit=1, "
        f"store={str(tmp_path / 's.db')!r}); "
        "print('typer' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"
