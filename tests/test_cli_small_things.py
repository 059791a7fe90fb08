"""Small things a user hit: --limit per split/category, missing BFCL predictions, --version."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import toolgauge
from cli_helpers import invoke, results_of
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
