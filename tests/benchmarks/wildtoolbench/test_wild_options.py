"""WildToolBench's options model (issue 23): options -> stored config -> rescore, old stores, generated commands.

A run stores ``WildOptions.model_dump(mode="json")`` (and its session count); ``rescore`` validates it back into
the model and scores the stored logs again. ``--predictions-out`` and ``--steps-out`` are files the commands write
(``WildLogFiles``), not options of the run: neither stored nor taken by the API.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from helpers.cli_helpers import app, runner
from helpers.paths import FIXTURE_ROOT
from toolgauge import api
from toolgauge.benchmark import BenchmarkSpec, stored_options
from toolgauge.benchmarks.registry import spec_named
from toolgauge.benchmarks.wildtoolbench.build import migrate_wild_config
from toolgauge.benchmarks.wildtoolbench.options import BUILTIN, WildLogFiles, WildOptions, WildScoreOptions
from toolgauge.errors import UsageError
from toolgauge.options import cli_of, literal_choices

FIXTURES = FIXTURE_ROOT / "wildtoolbench"
SESSIONS = FIXTURES / "sessions.jsonl"
OFFICIAL = FIXTURES / "official_result.jsonl"
OLD_STORE = FIXTURE_ROOT / "old_store" / "wildtoolbench.db"


def wild_spec() -> BenchmarkSpec:
    spec = spec_named("wildtoolbench")
    assert spec is not None
    return spec


def same_scores(a: api.Evaluation, b: api.Evaluation) -> None:
    assert a.samples
    assert a.results.metrics == b.results.metrics and a.results.settings == b.results.settings
    assert [(s.id, s.value, str(s.scores)) for s in a.samples] == [(s.id, s.value, str(s.scores)) for s in b.samples]


def test_eval_options_round_trip_through_the_store(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    options = WildOptions(data=SESSIONS, language="zh", limit=2, variant="strict", tool_choice="expected",
                          temperature=0.3, top_p=0.9, seed=7)  # fmt: skip
    first = api.evaluate("wildtoolbench", "gold", store=store, keep_samples=True,
                         **options.model_dump(exclude_unset=True))  # fmt: skip
    config = api.read_run(first.run_id, store=store).config
    assert config["n"] == 2 and config["sessions"] is None and "recorded" not in config
    assert stored_options(wild_spec(), config) == options
    again = api.rescore(first.run_id, store=store, keep_samples=True)
    same_scores(first, again)
    assert {s.id.split("#")[0] for s in first.samples} == {"wild_tool_bench_0", "wild_tool_bench_1"}
    # The sampling options reach the requests' provenance (the model's options), as every benchmark's do.
    provenance = first.results.provenance
    assert provenance is not None and provenance.model_options["top_p"] == 0.9 and provenance.model_options["seed"] == 7


def test_a_run_of_the_builtin_sample_stores_it_by_its_label(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    first = api.evaluate("wildtoolbench", "gold", store=store, limit=1)
    config = api.read_run(first.run_id, store=store).config
    assert config["data"] == BUILTIN
    assert stored_options(wild_spec(), config) == WildOptions(data=Path(BUILTIN), limit=1)
    assert api.rescore(first.run_id, store=store).results.metrics == first.results.metrics


def test_a_score_run_of_an_official_file_stores_its_sessions_and_rescores_without_it(tmp_path: Path) -> None:
    official = tmp_path / "result.jsonl"
    official.write_text(OFFICIAL.read_text(encoding="utf-8"), encoding="utf-8")
    store = tmp_path / "s.db"
    first = api.score("wildtoolbench", official, data=SESSIONS, format="official", store=store, keep_samples=True)
    official.unlink()  # the stored logs are what a rescore scores
    config = api.read_run(first.run_id, store=store).config
    assert stored_options(wild_spec(), config) == WildOptions(
        data=SESSIONS, sessions=["wild_tool_bench_0", "wild_tool_bench_1"]
    )
    same_scores(first, api.rescore(first.run_id, store=store, keep_samples=True))
    strict = api.rescore(first.run_id, store=store, variant="strict")
    assert strict.results.settings["variant"] == "strict"


def test_the_log_files_are_no_option_of_the_run(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^predictions_out: not an option"):
        api.evaluate("wildtoolbench", "gold", store=tmp_path / "s.db", predictions_out=tmp_path / "r.jsonl")
    assert not (tmp_path / "s.db").exists()


# -- configs stored before the options model ------------------------------------------------------------------------
def test_the_old_store_migrates_to_the_options_it_was_run_with(tmp_path: Path) -> None:
    import json
    import sqlite3

    copy = tmp_path / "old.db"
    copy.write_bytes(OLD_STORE.read_bytes())
    with sqlite3.connect(copy) as conn:
        run_id, config = conn.execute("select id, config from runs").fetchone()
        values = json.loads(config)
        assert values["recorded"] is False and values["n"] == 2 and "limit" not in values  # the old shape
        values["data"] = str(SESSIONS)  # the same file, where this checkout has it
        conn.execute("update runs set config = ? where id = ?", (json.dumps(values), run_id))
    stored = api.read_run(run_id, store=copy)
    assert stored_options(wild_spec(), stored.config) == WildOptions(data=SESSIONS, limit=2)
    again = api.rescore(run_id, store=copy)
    assert stored.results is not None and again.results.metrics == stored.results.metrics


def test_old_configs_of_every_shape_migrate() -> None:
    old = {"data": str(SESSIONS), "language": "en", "variant": "strict", "temperature": 0.0, "max_tokens": 512,
           "tool_choice": "auto"}  # fmt: skip
    # The whole file (3 sessions): no limit; fewer: the first n; a result file's run: its sessions, no limit.
    assert migrate_wild_config({**old, "n": 3, "recorded": False})["limit"] is None
    assert migrate_wild_config({**old, "n": 1, "recorded": False})["limit"] == 1
    chosen = migrate_wild_config({**old, "n": 2, "recorded": True, "sessions": ["wild_tool_bench_1"]})
    assert "limit" not in chosen and "recorded" not in chosen and chosen["sessions"] == ["wild_tool_bench_1"]
    assert WildOptions.model_validate(chosen) == WildOptions(data=SESSIONS, variant="strict",
                                                              sessions=["wild_tool_bench_1"])  # fmt: skip
    # A config of today is left as it is.
    today = WildOptions(data=SESSIONS, limit=3).model_dump(mode="json")
    assert migrate_wild_config(today) == today


# -- the generated commands -------------------------------------------------------------------------------------------
def option_help(command: list[str]) -> str:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())


@pytest.mark.parametrize(("command", "model"), [("eval", WildOptions), ("score", WildScoreOptions)])
def test_generated_help_has_every_option_and_the_log_files(command: str, model: type[BaseModel]) -> None:
    text = option_help([command, "wildtoolbench"])
    assert model.__doc__ is not None and model.__doc__.split("\n")[0] in text
    for fields in (model.model_fields, WildLogFiles.model_fields):
        for name, field in fields.items():
            option = "--" + name.replace("_", "-")
            if cli_of(field.metadata, field.annotation).hidden:  # sessions: set by a result file's run
                assert option + " " not in text, name
                continue
            assert option in text, name
            assert field.description is not None and " ".join(field.description.split()[:4]) in text, name
            choices = literal_choices(field.annotation)
            if choices is not None:
                assert f"<{'|'.join(choices)}>" in text, name
