"""The sweep file: every bad file is one line naming the file, the entry and field, and what is wrong; exit 2;
nothing is written to the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.cli_helpers import invoke
from toolgauge.benchmark import stored_config
from toolgauge.sweep.file import SweepFileError, parse_sweep
from toolgauge.sweep.plan import plan_cells

GOOD = """
epochs = 1
seed = 7
[[model]]
spec = "gold"
[[model]]
spec = "http://127.0.0.1:9/v1#qwen"
temperature = 0.7
concurrency = 3
[[benchmark]]
name = "suite"
limit = 2
variant = "reference"
"""


def test_a_good_file_parses_into_typed_entries():
    sweep = parse_sweep(GOOD, "s.toml")
    assert (sweep.epochs, sweep.seed) == (1, 7)
    assert [m.spec for m in sweep.models] == ["gold", "http://127.0.0.1:9/v1#qwen"]
    assert sweep.models[1].options == {"temperature": 0.7}
    assert sweep.models[1].engine.concurrency == 3
    assert (sweep.benchmarks[0].name, sweep.benchmarks[0].options) == ("suite", {"limit": 2, "variant": "reference"})


def test_cells_take_the_options_of_their_model_and_benchmark():
    cells = plan_cells(parse_sweep(GOOD, "s.toml"), "s.toml")
    assert [(c.task.shown_model, c.task.benchmark) for c in cells] == [
        ("gold", "suite"), ("http://127.0.0.1:9/v1#qwen", "suite")
    ]  # fmt: skip
    gold, http = (c.task for c in cells)
    assert gold.options == {"limit": 2, "variant": "reference"} and gold.endpoint is None
    assert http.options == {"limit": 2, "variant": "reference", "temperature": 0.7}
    assert (http.endpoint, http.endpoint_limit, http.concurrency) == ("http://127.0.0.1:9", 3, 3)
    assert stored_config(cells[1].bench)["temperature"] == 0.7
    assert len(cells[0].sample_keys) == 2


def test_a_model_sets_its_cells_cache_mode_as_evals_cache_does():
    from toolgauge.sweep.cells import engine_config

    text = """
[[model]]
spec = "gold"
cache = "read"
[[model]]
spec = "http://127.0.0.1:9/v1#a"
no_cache = true
[[model]]
spec = "http://127.0.0.1:9/v1#b"
[[benchmark]]
name = "suite"
limit = 1
"""
    cells = plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    assert [c.task.cache for c in cells] == ["read", "off", "on"]
    assert [engine_config(c.task).cache_mode for c in cells] == ["read", "off", "on"]
    written = plan_cells(parse_sweep(text.replace('"read"', '"write"'), "s.toml"), "s.toml")[0]
    assert engine_config(written.task).cache_mode == "write"


BAD = [
    ("epochs = 1\n[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\nlimit = 'ten'\n",
     "s.toml: benchmark[1].limit: input should be a valid integer"),
    ("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n[[benchmark]]\nname = 'nope'\n",
     "s.toml: benchmark[2].name: unknown benchmark 'nope' (known: suite,"),
    ("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\nlimt = 3\n",
     "s.toml: benchmark[1].limt: not an option of suite; did you mean 'limit'? (options: data, limit,"),
    ("[[model]]\nspec = 'gold'\ntemprature = 0.5\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: model[1].temprature: not an option of benchmark suite, which this model runs; "
     "did you mean 'temperature'?"),
    ("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\nvariant = 'loose'\n",
     "s.toml: benchmark[1].variant: input should be 'reference' or 'strict'"),
    ("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'bfcl'\ncategories = ['simple_python']\n",
     "s.toml: benchmark[1].data: no data given and the official bfcl data is not in the cache"),
    ("[[model]]\nspec = 'gold'\nlanguage = 'en'\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: model[1].language: not an option of benchmark suite, which this model runs"),
    ("[[model]]\nspec = 'gold'\ntemperature = 0.5\n[[benchmark]]\nname = 'suite'\ntemperature = 0.1\n",
     "s.toml: model[1].temperature: also set by benchmark[1] (suite); set it in one place"),
    ("[[model]]\nspec = 'gold'\nconcurrency = 0\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: model[1].concurrency: input should be greater than or equal to 1"),
    ("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\nepochs = 2\n",
     "s.toml: benchmark[1].epochs: set it at the top of the file, for the whole sweep"),
    ("epochs = 0\n[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: epochs: input should be greater than or equal to 1, got 0"),
    ("seed = 1.5\n[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: seed: input should be a valid integer, got 1.5"),
    ("[[model]]\nspec = 'gold'\n", "s.toml: benchmark: no [[benchmark]] entry; a sweep needs at least one"),
    ("[[model]]\n[[benchmark]]\nname = 'suite'\n", "s.toml: model[1].spec: missing"),
    ("models = 1\n", "s.toml: models: unknown key; did you mean 'model'? (a sweep file has epochs, seed, model, "
     "benchmark)"),
    ("colour = 1\n", "s.toml: colour: unknown key (a sweep file has epochs, seed, model, benchmark)"),
    ("[[model]\nspec = 'gold'\n", "s.toml: not valid TOML: "),
    ("[[model]]\nspec = 'gold'\ncache = 'sometimes'\n[[benchmark]]\nname = 'suite'\n",
     "s.toml: model[1].cache: input should be 'off', 'read', 'write' or 'on'"),
    ("[[model]]\nspec = 'gold'\nno_cache = true\ncache = 'read'\n[[benchmark]]\nname = 'suite'\n",
     's.toml: model[1].cache: "read" disagrees with no_cache = true (no_cache is cache = "off")'),
    ("[[model]]\nspec = 'gold'\nno_cache = true\n[[benchmark]]\nname = 'suite'\ncache = 'on'\n",
     "s.toml: model[1].no_cache: also set by benchmark[1] (suite); set it in one place"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_files_are_one_line_naming_the_field(text: str, message: str):
    with pytest.raises(SweepFileError) as caught:
        parse_sweep(text, "s.toml")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_planning_names_the_entry_whose_data_or_model_is_wrong(tmp_path: Path):
    missing = tmp_path / "nowhere"
    text = (
        f"[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'bfcl'\ndata = '{missing}'\ncategories = ['simple_python']\n"
    )
    with pytest.raises(SweepFileError, match=r"^s\.toml: benchmark\[1\] \(bfcl\): "):
        plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    text = "[[model]]\nspec = 'gold'\n[[model]]\nspec = 'nonsense-model'\n[[benchmark]]\nname = 'suite'\n"
    with pytest.raises(SweepFileError, match=r"^s\.toml: model\[2\]\.spec: unknown model spec 'nonsense-model'"):
        plan_cells(parse_sweep(text, "s.toml"), "s.toml")


def test_the_command_prints_one_line_exits_2_and_writes_nothing(tmp_path: Path):
    sweep = tmp_path / "SWEEP.toml"
    sweep.write_text("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\nlimit = 'ten'\n")
    store = tmp_path / "store" / "s.db"
    res = invoke("sweep", sweep, "--store", f"sqlite:///{store}")
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [f"error: {sweep}: benchmark[1].limit: input should be a valid integer, got 'ten'"]
    assert not store.parent.exists()


def test_sqlite_is_refused_for_a_ray_cluster(tmp_path: Path):
    sweep = tmp_path / "SWEEP.toml"
    sweep.write_text("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\n")
    res = invoke("sweep", sweep, "--executor", "ray", "--address", "127.0.0.1:6379",
                 "--store", f"sqlite:///{tmp_path / 's.db'}")  # fmt: skip
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "error: --executor ray --address runs cells on other machines, which cannot share a SQLite store: use "
        "PostgreSQL, e.g. --store postgresql://USER@HOST/DB (docs/sweeps.md)"
    ]
    assert not (tmp_path / "s.db").exists()


def test_relative_data_paths_are_taken_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    sweep = parse_sweep("[[model]]\nspec = 'gold'\n[[benchmark]]\nname = 'suite'\ndata = 'mine.jsonl'\nlimit = 1\n",
                        "s.toml")  # fmt: skip
    assert sweep.benchmarks[0].options == {"data": str(tmp_path / "mine.jsonl"), "limit": 1}
