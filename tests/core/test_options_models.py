"""One typed options model per benchmark (issue 23): the stored config, rescore, the generated commands, the API.

Each converted benchmark's options go round the whole way: options -> the run's stored config -> the same options
-> ``rescore`` with the same scores. The commands' help is generated from the models, and a bad value is one line
wherever it is given (command line, sweep file, ``api.evaluate``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from helpers.cli_helpers import app, invoke, runner
from helpers.paths import FIXTURE_ROOT, REPO
from toolgauge import api
from toolgauge.benchmark import stored_options
from toolgauge.benchmarks.bfcl.options import BfclOptions, BfclScoreOptions
from toolgauge.benchmarks.mtu.options import MtuOptions, MtuScoreOptions
from toolgauge.benchmarks.registry import spec_named
from toolgauge.benchmarks.suite.options import SuiteOptions
from toolgauge.benchmarks.toolgate.options import ToolgateOptions
from toolgauge.errors import UsageError
from toolgauge.options import EngineOptions, cli_of, literal_choices
from toolgauge.sweep.file import SweepFileError, parse_sweep


def round_trip(name: str, options: BaseModel, tmp_path: Path) -> tuple[BaseModel, api.Evaluation, api.Evaluation]:
    """Run ``options`` on the gold model; return the options read back from the stored run, the run, its rescore."""
    spec = spec_named(name)
    assert spec is not None
    store = tmp_path / "store.db"
    values = options.model_dump(exclude_unset=True)
    first = api.evaluate(name, "gold", store=store, keep_samples=True, **values)
    stored = api.read_run(first.run_id, store=store)
    again = api.rescore(first.run_id, store=store, keep_samples=True)
    return stored_options(spec, stored.config), first, again


def same_scores(a: api.Evaluation, b: api.Evaluation) -> None:
    assert a.results.metrics == b.results.metrics and a.results.settings == b.results.settings
    # Unit by unit (a rescore may list them in another order: BFCL stores its categories sorted, as it always did).
    assert sorted((s.id, s.value, str(s.scores)) for s in a.samples) == sorted(
        (s.id, s.value, str(s.scores)) for s in b.samples
    )
    assert a.samples


def test_suite_options_round_trip_through_the_store(tmp_path: Path) -> None:
    options = SuiteOptions(limit=3, variant="reference", temperature=0.5, top_p=0.9, stop=("END",), seed=7)
    read_back, first, again = round_trip("suite", options, tmp_path)
    assert read_back == options
    same_scores(first, again)
    # The sampling options are in the run's provenance too (and so in what the cache key sees).
    provenance = first.results.provenance
    assert provenance is not None
    assert provenance.model_options["top_p"] == 0.9 and provenance.model_options["stop"] == ["END"]
    assert provenance.model_options["seed"] == 7


@pytest.mark.realdata
def test_mtu_options_round_trip_through_the_store(mtu_dir: Path, tmp_path: Path) -> None:
    options = MtuOptions(data=mtu_dir, splits=["M-M", "S-S"], limit=3, mode="native", variant="strict")
    read_back, first, again = round_trip("mtu-bench", options, tmp_path)
    assert read_back == options
    same_scores(first, again)
    # The official data (no data given) is stored as the folder it resolved to, so rescore reads the same files.
    assert read_back.model_dump(mode="json")["data"] == str(mtu_dir)


@pytest.mark.realdata
@pytest.mark.parametrize("categories", [["simple_python", "multiple"], ["multi_turn_base"]])
def test_bfcl_options_round_trip_through_the_store(bfcl_dir: Path, tmp_path: Path, categories: list[str]) -> None:
    if categories == ["multi_turn_base"]:
        pytest.importorskip("bfcl_eval", reason="BFCL's multi-turn backends need bfcl-eval")
    options = BfclOptions(data=bfcl_dir, categories=categories, limit=2, mode="prompt", temperature=0.3)
    read_back, first, again = round_trip("bfcl", options, tmp_path)
    assert read_back == options.model_copy(update={"categories": sorted(categories)})  # stored sorted, as before
    same_scores(first, again)


@pytest.mark.realdata
def test_a_bfcl_score_run_rescores_without_its_result_files(bfcl_dir: Path, tmp_path: Path) -> None:
    from toolgauge.benchmarks.bfcl.loader import load_bfcl

    entries = load_bfcl(bfcl_dir, ["simple_python"])[:3]
    results = tmp_path / "BFCL_v4_simple_python_result.json"
    # Two entries answered (wrongly: the scores do not matter here), the third left out.
    lines = [{"id": e.id, "result": [{"f": '{"x": 1}'}]} for e in entries[:2]]
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = tmp_path / "store.db"
    first = api.score("bfcl", results, data=bfcl_dir, categories="simple_python", store=store)
    results.unlink()  # the stored outputs are what a rescore scores
    assert api.rescore(first.run_id, store=store).results.metrics == first.results.metrics
    spec = spec_named("bfcl")
    assert spec is not None
    options = stored_options(spec, api.read_run(first.run_id, store=store).config)
    assert options == BfclOptions(data=bfcl_dir, categories=["simple_python"], mode="replay")


@pytest.mark.realdata
def test_mtu_score_run_stores_eval_options_that_rescore(mtu_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    first = api.score("mtu-bench", mtu_dir / "responses", data=mtu_dir, splits="S-S", store=store)
    stored = api.read_run(first.run_id, store=store)
    spec = spec_named("mtu-bench")
    assert spec is not None
    assert stored_options(spec, stored.config) == MtuOptions(data=mtu_dir, splits=["S-S"], mode="prompt")
    assert api.rescore(first.run_id, store=store).results.metrics == first.results.metrics


# -- runs stored by the code before the options models --------------------------------------------------------------
OLD_STORE = FIXTURE_ROOT / "old_store"


def old_store(name: str, tmp_path: Path, data: Path | None = None) -> tuple[Path, str]:
    """A copy of the old store of ``name``, its run's data path pointed at this machine's copy of the data."""
    import sqlite3

    copy = tmp_path / f"{name}.db"
    copy.write_bytes((OLD_STORE / f"{name}.db").read_bytes())
    with sqlite3.connect(copy) as conn:
        run_id, config = conn.execute("select id, config from runs").fetchone()
        if data is not None:
            import json

            values = json.loads(config)
            values["data"] = str(data)
            conn.execute("update runs set config = ? where id = ?", (json.dumps(values, sort_keys=True), run_id))
    return copy, run_id


def rescores_as_stored(store: Path, run_id: str) -> None:
    stored = api.read_run(run_id, store=store)
    assert stored.results is not None and stored.results.metrics
    again = api.rescore(run_id, store=store)
    # Every stored metric comes back equal; analyses added since (issue 22's MTU breakdowns, BFCL's overall score)
    # are new metrics beside them.
    rescored = {(m.name, m.group, m.by): m for m in again.results.metrics}
    assert {(m.name, m.group, m.by): m for m in stored.results.metrics}.items() <= rescored.items()


def test_an_old_suite_run_rescores_to_its_stored_scores(tmp_path: Path) -> None:
    store, run_id = old_store("suite", tmp_path)
    rescores_as_stored(store, run_id)
    spec = spec_named("suite")
    assert spec is not None
    options = stored_options(spec, api.read_run(run_id, store=store).config)
    assert options == SuiteOptions(limit=3, variant="reference", temperature=0.5)


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "folder"), [("mtu-bench", "mtu-bench"), ("bfcl", "bfcl")])
def test_an_old_run_on_real_data_rescores_to_its_stored_scores(
    data_dir: Path, tmp_path: Path, name: str, folder: str
) -> None:
    store, run_id = old_store(name, tmp_path, data_dir / folder)
    rescores_as_stored(store, run_id)


@pytest.mark.realdata
def test_an_old_mtu_run_migrates_its_item_count_to_a_limit(mtu_dir: Path, tmp_path: Path) -> None:
    store, run_id = old_store("mtu-bench", tmp_path, mtu_dir)
    spec = spec_named("mtu-bench")
    assert spec is not None
    options = stored_options(spec, api.read_run(run_id, store=store).config)
    assert options == MtuOptions(data=mtu_dir, splits=["M-M", "S-S"], limit=2, mode="native", variant="strict")


def test_an_old_wildtoolbench_run_rescores_to_its_stored_scores(tmp_path: Path) -> None:
    sessions = FIXTURE_ROOT / "wildtoolbench" / "sessions.jsonl"
    store, run_id = old_store("wildtoolbench", tmp_path, sessions)
    rescores_as_stored(store, run_id)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # eval tool-genesis --model gold --skip-l4: the model that made the run is kept (gold), L4 skipped again.
        ("tool-genesis", {"model": "gold", "out": Path("/tmp/old-genesis-out"), "skip_l4": True}),
        # genesis evaluate --pred: the registry's path was not stored (rescoring does not read it).
        ("tool-genesis-registry", {"pred": Path("unrecorded")}),
    ],
)
def test_an_old_tool_genesis_run_rescores_to_its_stored_scores(
    tmp_path: Path, name: str, expected: dict[str, Any]
) -> None:
    from toolgauge.benchmarks.tool_genesis.options import GenesisOptions

    data = tmp_path / "data.json"  # the data file the run read: the one server of the fixture
    data.write_text("[" + (FIXTURE_ROOT / "genesis" / "spec.json").read_text() + "]")
    store, run_id = old_store(name, tmp_path, data)
    rescores_as_stored(store, run_id)
    stored = api.read_run(run_id, store=store)
    assert stored.results is not None
    assert api.rescore(run_id, store=store).results.details == stored.results.details  # L4's skip reason too
    spec = spec_named("tool-genesis")
    assert spec is not None
    assert stored_options(spec, stored.config) == GenesisOptions(data=data, limit=1, **expected)


# -- generated commands ----------------------------------------------------------------------------------------------
def option_help(command: list[str]) -> str:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"})  # wide: one line per option
    assert res.exit_code == 0, res.output
    # The help's table folded into one line of words (a description wrapped over lines reads as one).
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())


@pytest.mark.parametrize(
    ("command", "model"),
    [
        (["eval", "suite"], SuiteOptions),
        (["eval", "mtu-bench"], MtuOptions),
        (["score", "mtu-bench"], MtuScoreOptions),
        (["eval", "bfcl"], BfclOptions),
        (["score", "bfcl"], BfclScoreOptions),
        (["eval", "toolgate"], ToolgateOptions),
    ],
)
def test_generated_help_has_every_option_its_description_and_choices(
    command: list[str], model: type[BaseModel]
) -> None:
    text = option_help(command)
    assert model.__doc__ is not None and model.__doc__.split("\n")[0] in text
    for name, field in model.model_fields.items():
        cli = cli_of(field.metadata, field.annotation)
        if cli.hidden:  # set by another command (score's --predictions)
            assert "--" + name.replace("_", "-") not in text, name
            continue
        assert "--" + name.replace("_", "-") in text, name
        assert field.description is not None and " ".join(field.description.split()[:4]) in text, name
        choices = cli.choices or literal_choices(field.annotation)
        if choices is not None:  # a Literal offers its choices (or those the command narrows it to)
            assert f"<{'|'.join(choices)}>" in text, name


def test_every_eval_command_with_a_model_has_the_engine_options() -> None:
    text = option_help(["eval", "suite"])
    for name, field in EngineOptions.model_fields.items():
        assert "--" + name.replace("_", "-") in text and field.description is not None
        assert " ".join(field.description.split()[:3]) in text, name


def test_sampling_flags_reach_the_stored_run(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "suite", "--model", "gold", "--limit", "1", "--store", store, "-q", "--top-p", "0.5",
                 "--stop", "A", "--stop", "B", "--extra-body", '{"k": 1}', "--reasoning-effort", "low",
                 "--provider-defaults")  # fmt: skip
    assert res.exit_code == 0, res.output
    config = api.read_run("latest", store=store).config
    assert config["top_p"] == 0.5 and config["stop"] == ["A", "B"] and config["extra_body"] == {"k": 1}
    assert config["reasoning_effort"] == "low" and config["provider_defaults"] is True


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--extra-body", "{"], "error: --extra-body: not JSON: "),
        (["--top-p", "0"], "error: --top-p: input should be greater than 0, got 0.0"),
    ],
)
def test_a_bad_sampling_flag_is_one_line_and_nothing_is_stored(tmp_path: Path, args: list[str], line: str) -> None:
    db = tmp_path / "s.db"
    res = invoke("eval", "suite", "--model", "gold", "--store", f"sqlite:///{db}", *args)
    assert res.exit_code == 2, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(line), res.stderr
    assert not db.exists()


# -- the API and sweep files are checked by the same models ----------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temprature": 0.5}, "temprature: not an option; did you mean 'temperature'?"),
        ({"limit": 0}, "limit: input should be greater than or equal to 1, got 0"),
        ({"limit": True}, "limit: input should be a valid integer, got true"),
        ({"variant": "loose"}, "variant: input should be 'reference' or 'strict', got 'loose'"),
        ({"top_p": 1.5}, "top_p: input should be less than or equal to 1, got 1.5"),
    ],
)
def test_api_evaluate_with_a_bad_option_is_a_usage_error(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        api.evaluate("suite", "gold", store=tmp_path / "s.db", **options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert not (tmp_path / "s.db").exists()


SWEEP_HEAD = "[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("temprature = 0.5", "s.toml: benchmark[1].temprature: not an option of suite; did you mean 'temperature'?"),
        ("variant = 3", "s.toml: benchmark[1].variant: input should be 'reference' or 'strict', got 3"),
        ("top_p = 2.0", "s.toml: benchmark[1].top_p: input should be less than or equal to 1, got 2.0"),
        ("stop = 'x'", "s.toml: benchmark[1].stop: input should be a valid tuple, got 'x'"),
    ],
)
def test_a_sweep_key_is_checked_by_the_benchmarks_model(line: str, message: str) -> None:
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(SWEEP_HEAD + line + "\n", "s.toml")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_bad_sweep_key_is_one_line_exit_2(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP_HEAD + "top_p = 5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "sweep", str(sweep), "--store", f"sqlite:///{tmp_path / 's.db'}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {sweep}: benchmark[1].top_p: input should be less than or equal to 1, got 5"
    assert not (tmp_path / "s.db").exists()


@pytest.mark.slow
def test_api_evaluate_imports_no_typer(tmp_path: Path) -> None:
    code = (
        "import sys; import toolgauge.api as a; "
        f"a.evaluate('suite', 'gold', limit=1, store={str(tmp_path / 's.db')!r}); "
        "print('typer' in sys.modules, 'click' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_the_api_page_has_the_tables_the_models_generate() -> None:
    from toolgauge.benchmarks.registry import specs
    from toolgauge.options_docs import with_tables

    page = (REPO / "docs" / "api.md").read_text()
    assert with_tables(page, specs()) == page, "docs/api.md is out of date: run python scripts/gen_api_docs.py"
