"""Small things a user hit: --limit per split/category, missing BFCL predictions, --version, MTU pairing warnings,
prompt runs without calls, gate seeds and gate run --solver-steps, machine paths in the docs."""

from __future__ import annotations

import json
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
import typer

import toolgauge
from helpers.cli_helpers import invoke, results_of
from helpers.paths import REPO
from toolgauge.benchmarks.toolgate.options import SOLVER_STEPS_HELP, GateRunOptions
from toolgauge.cli import app
from toolgauge.store import open_store


def _jsonl(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def bfcl_data(folder: Path, categories: list[str], per_category: int) -> Path:
    for category in categories:
        questions, answers = [], []
        for i in range(per_category):
            entry_id = f"{category}_{i}"
            questions.append({
                "id": entry_id,
                "question": [[{"role": "user", "content": f"call f with x={i}"}]],
                "function": [{"name": "f", "description": "", "parameters": {
                    "type": "dict", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}],
            })  # fmt: skip
            answers.append({"id": entry_id, "ground_truth": [{"f": {"x": [i]}}]})
        _jsonl(folder / f"BFCL_v4_{category}.json", questions)
        _jsonl(folder / "possible_answer" / f"BFCL_v4_{category}.json", answers)
    return folder


def stored_config(store: str, run_id: str) -> dict[str, object]:
    st = open_store(store)
    try:
        run = st.get_run(run_id)
    finally:
        st.close()
    assert run is not None
    return dict(run.config)


def test_bfcl_limit_takes_n_from_each_category(tmp_path: Path) -> None:
    data = bfcl_data(tmp_path / "bfcl", ["simple_python", "multiple"], per_category=3)
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke(
        "eval", "bfcl", "--data", data, "--categories", "simple_python,multiple", "--limit", "2",
        "--model", "gold", "--store", store, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    assert set(results.groups("category")) == {"simple_python", "multiple"}
    counts = {m.group: m.n for m in results.metrics if m.by == "category" and m.name == "accuracy"}
    assert counts == {"simple_python": 2, "multiple": 2}
    assert results.run is not None and results.run.samples == 4
    config = stored_config(store, results.run.id)
    assert config["categories"] == ["multiple", "simple_python"] and config["n"] == 4


def test_mtu_limit_takes_n_from_each_split(tmp_path: Path) -> None:
    data = tmp_path / "mtu"
    _jsonl(data / "S-S_eval.jsonl", [{"id": f"S-S_{i}", "question": "q", "answer": {"A": {"x": i}}} for i in range(3)])
    _jsonl(
        data / "S-M_eval.jsonl", [{"id": f"S-M_{i}", "question": "q", "answer": {"A": {}, "B": {}}} for i in range(3)]
    )
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke(
        "eval", "mtu-bench", "--data", data, "--splits", "S-S,S-M", "--limit", "1", "--model", "gold",
        "--store", store, "--json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run = results_of(res).run
    assert run is not None and run.samples == 2
    assert stored_config(store, run.id)["splits"] == ["S-M", "S-S"]


def test_score_bfcl_warns_about_missing_predictions(tmp_path: Path) -> None:
    data = bfcl_data(tmp_path / "bfcl", ["simple_python"], per_category=3)
    results = tmp_path / "BFCL_v4_simple_python_result.json"
    _jsonl(results, [{"id": "simple_python_1", "result": [{"f": '{"x": 1}'}]}])
    res = invoke(
        "score", "bfcl", "--data", data, "--predictions", results, "--store", f"sqlite:///{tmp_path / 's.db'}",
        "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    expected = "predictions missing for 2 of 3 samples (scored as wrong); first missing: simple_python_0"
    assert res.stderr.strip() == f"warning: {expected}"
    scored = results_of(res)
    assert expected in scored.warnings
    assert scored.value("correct", "simple_python", by="category") == 1


def test_score_bfcl_with_every_prediction_has_no_warning(tmp_path: Path) -> None:
    data = bfcl_data(tmp_path / "bfcl", ["simple_python"], per_category=2)
    results = tmp_path / "BFCL_v4_simple_python_result.json"
    _jsonl(results, [{"id": f"simple_python_{i}", "result": [{"f": json.dumps({"x": i})}]} for i in range(2)])
    res = invoke(
        "score", "bfcl", "--data", data, "--predictions", results, "--store", f"sqlite:///{tmp_path / 's.db'}",
        "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    scored = results_of(res)
    assert not any("missing" in w for w in scored.warnings)
    assert scored.value("correct", "simple_python", by="category") == 2


def test_version_prints_the_package_version() -> None:
    try:
        expected = version("toolgauge")
    except PackageNotFoundError:
        expected = toolgauge.__version__
    res = invoke("--version")
    assert res.exit_code == 0, res.output
    assert res.stdout == f"toolgauge {expected}\n"


# --- score mtu-bench on the real replies: no word about splits not selected, one line per file ------------------


def test_score_mtu_says_nothing_about_the_replies_of_splits_not_selected(mtu_dir: Path, tmp_path: Path) -> None:
    # The responses folder holds S-S, S-M, M-S and M-M replies: 567 of them are S-M's and M-S's.
    store = f"sqlite:///{tmp_path / 's.db'}"
    args = ("score", "mtu-bench", "--data", mtu_dir, "--predictions", mtu_dir / "responses", "--splits", "S-S,M-M")
    res = invoke(*args, "--store", store, "--json")
    assert res.exit_code == 0, res.output
    scored = results_of(res)
    assert scored.groups("split") == ["S-S", "M-M"]
    assert scored.warnings == [] and res.stderr == ""
    table = invoke(*args, "--store", store)
    assert table.exit_code == 0, table.output
    assert "warning" not in table.stdout and "matches no item" not in table.output


def test_score_mtu_warns_once_per_file_with_a_count(mtu_dir: Path, tmp_path: Path) -> None:
    replies = tmp_path / "replies"
    real = (mtu_dir / "responses" / "S-S_gpt4_response.jsonl").read_text().splitlines()
    stray = [json.dumps({"id": f"S-S_{9000 + n}", "response": "x"}) for n in range(30)]
    (replies / "S-S_mine.jsonl").parent.mkdir()
    (replies / "S-S_mine.jsonl").write_text("\n".join(real + stray) + "\n")
    res = invoke("score", "mtu-bench", "--data", mtu_dir, "--predictions", replies, "--json",
                 "--store", f"sqlite:///{tmp_path / 's.db'}")  # fmt: skip
    assert res.exit_code == 0, res.output
    first = len(real) + 1
    assert results_of(res).warnings == [
        f"{replies / 'S-S_mine.jsonl'}: 30 prediction(s) match no item and are ignored: "
        + ", ".join(f"S-S_{9000 + n} (line {first + n})" for n in range(5))
        + ", ..."
    ]


# --- a prompt-mode run whose replies hold (almost) no call says so ---------------------------------------------

MTU_CALL = 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'


def mtu_weather_data(folder: Path, n: int) -> Path:
    answer = {"get_weather": {"city": "Paris"}}
    items = [{"id": f"S-S_{i}", "question": "What is the weather in Paris?", "answer": answer} for i in range(n)]
    _jsonl(folder / "S-S_eval.jsonl", items)
    return folder


def script(path: Path, replies: list[str]) -> Path:
    path.write_text(json.dumps(replies))
    return path


def few_calls_line(with_call: int, replies: int) -> str:
    return (
        f"prompt mode: only {with_call} of {replies} replies that should make a call hold one the parser can read "
        f"({with_call / replies:.1%}); the scores measure the reply format, not tool use: if the model has native "
        "tool calling, run it with --mode native"
    )


@pytest.mark.parametrize(("with_call", "warned"), [(0, True), (1, True), (2, False)])
def test_prompt_mode_mtu_run_with_fewer_than_a_tenth_of_calls_warns(
    tmp_path: Path, with_call: int, warned: bool
) -> None:
    data = mtu_weather_data(tmp_path / "mtu", 20)
    replies = [MTU_CALL] * with_call + ["I am not sure what you mean."] * (20 - with_call)
    model = f"scripted:{script(tmp_path / 'replies.json', replies)}"
    store = f"sqlite:///{tmp_path / 's.db'}"
    res = invoke("eval", "mtu-bench", "--data", data, "--splits", "S-S", "--model", model, "-c", "1", "-q", "--json",
                 "--store", store)  # fmt: skip
    assert res.exit_code == 0, res.output
    results = results_of(res)
    expected = few_calls_line(with_call, 20)
    assert results.warnings == ([expected] if warned else [])
    assert res.stderr == (f"warning: {expected}\n" if warned else "")
    if warned:  # stored with the run: `report` shows it again
        assert results.run is not None
        report = invoke("report", results.run.id, "--store", store)
        assert report.exit_code == 0 and expected in " ".join(report.stdout.split())


def test_prompt_mode_bfcl_run_without_calls_warns_and_native_mode_does_not(tmp_path: Path) -> None:
    data = bfcl_data(tmp_path / "bfcl", ["simple_python"], per_category=4)
    store = f"sqlite:///{tmp_path / 's.db'}"
    replies = script(tmp_path / "replies.json", ["I would call f, but I will not."] * 4)
    common = ("eval", "bfcl", "--data", data, "--categories", "simple_python", "--model", f"scripted:{replies}")
    res = invoke(*common, "--mode", "prompt", "-c", "1", "-q", "--json", "--store", store)
    assert res.exit_code == 0, res.output
    assert results_of(res).warnings == [few_calls_line(0, 4)]
    assert res.stderr == f"warning: {few_calls_line(0, 4)}\n"
    res = invoke(*common, "--mode", "native", "-c", "1", "-q", "--json", "--store", store)
    assert res.exit_code == 0, res.output
    assert results_of(res).warnings == [] and res.stderr == ""


def test_prompt_mode_gold_run_has_no_warning(tmp_path: Path) -> None:
    data = mtu_weather_data(tmp_path / "mtu", 3)
    res = invoke("eval", "mtu-bench", "--data", data, "--splits", "S-S", "--model", "gold", "-q", "--json",
                 "--store", f"sqlite:///{tmp_path / 's.db'}")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert results_of(res).warnings == [] and res.stderr == ""


# --- gate seeds and gate run --solver-steps ----------------------------------------------------------------------


def test_gate_seeds_prints_the_domain_seed_file_and_writes_it_with_output(tmp_path: Path) -> None:
    from toolgauge.benchmarks.toolgate.domains import get_domain
    from toolgauge.benchmarks.toolgate.loader import load_candidates

    shipped = get_domain("fem").seeds_path.read_text(encoding="utf-8")
    res = invoke("gate", "seeds", "fem")
    assert res.exit_code == 0, res.output
    assert res.stdout == shipped and res.stderr == ""
    written = tmp_path / "out" / "fem-seeds.jsonl"
    written.parent.mkdir()  # toolgauge makes no folder the user did not ask for
    res = invoke("gate", "seeds", "fem", "--output", written)
    assert res.exit_code == 0, res.output
    assert written.read_text(encoding="utf-8") == shipped
    seeds = load_candidates(written, domain="fem")  # what --candidates reads back
    assert res.stdout == f"{len(seeds)} seed items of fem: {written}\n"


def test_gate_seeds_of_an_unknown_domain_is_one_line(tmp_path: Path) -> None:
    res = invoke("gate", "seeds", "chem", "--output", tmp_path / "x.jsonl")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == "error: unknown domain 'chem' (known: fem)\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_gate_run_takes_solver_steps_with_the_meaning_it_has_on_gate_check() -> None:
    gate = typer.main.get_command(app).commands["gate"]  # type: ignore[attr-defined]
    declared = {
        name: next(p for p in gate.commands[name].params if p.name == "solver_steps") for name in ("run", "check")
    }
    assert declared["run"].opts == declared["check"].opts == ["--solver-steps"]
    assert declared["run"].help == declared["check"].help == "The most model calls of one solve."
    assert declared["run"].default == declared["check"].default == 50
    # gate run's options are its model's fields (declared once, with the pool commands' help text).
    assert GateRunOptions.model_fields["solver_steps"].description == SOLVER_STEPS_HELP


# --- no machine's absolute path in what users read or run --------------------------------------------------------


def test_benchmarks_docs_and_scripts_name_no_machine_path() -> None:
    found = []
    for folder in ("benchmarks", "docs", "scripts"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".md", ".sh", ".toml") and path.is_file():
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if re.search(r"/work/|/home/[a-z]|/root/|/Users/[A-Za-z]", line):
                        found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []
