"""``compare`` warns, one line per difference, when two runs were made differently (from their provenance)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli_helpers import invoke, results_of
from toolgauge.provenance_diff import provenance_differences
from toolgauge.results import Provenance


def _prov(**changes: object) -> Provenance:
    base = Provenance(
        toolgauge_version="0.1.0",
        model="m",
        model_options={"temperature": 0.0, "max_tokens": 512},
        benchmark_options={"data": "/a/d.jsonl", "variant": "strict", "temperature": 0.0},
        data_files={"/a/d.jsonl": "1" * 64},
    )
    return base.model_copy(update=changes)


def test_identical_runs_and_a_moved_but_unchanged_data_file_give_no_warning() -> None:
    assert provenance_differences(_prov(), _prov()) == []
    moved = _prov(benchmark_options={"data": "/b/d.jsonl", "variant": "strict", "temperature": 0.0},
                  data_files={"/b/d.jsonl": "1" * 64})  # fmt: skip
    assert provenance_differences(_prov(), moved) == []
    assert provenance_differences(_prov(), _prov(model="other")) == []  # the model is what is being compared


def test_each_difference_is_one_line() -> None:
    other = _prov(
        model_options={"temperature": 0.7, "max_tokens": 512},
        benchmark_options={"data": "/a/d.jsonl", "variant": "reference", "temperature": 0.7},
        data_files={"/a/d.jsonl": "2" * 64},
        epochs=3,
        toolgauge_version="0.2.0",
    )
    assert provenance_differences(_prov(), other) == [
        "model option temperature: A 0.0, B 0.7",
        "benchmark option variant: A strict, B reference",
        "data files differ: A /a/d.jsonl (sha256 111111111111), B /a/d.jsonl (sha256 222222222222)",
        "epochs: A 1, B 3",
        "toolgauge version: A 0.1.0, B 0.2.0",
    ]
    assert provenance_differences(None, other) == [
        "run A has no stored provenance (an older toolgauge): its settings cannot be compared"
    ]


def test_compare_warns_on_stderr_and_in_its_json(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    ids = []
    for extra in ((), ("--temperature", "0.7", "--epochs", "2")):
        res = invoke("eval", "suite", "-m", "gold", "--limit", "3", "--store", store, "--json", *extra)
        run = results_of(res).run
        assert run is not None
        ids.append(run.id)
    res = invoke("compare", *ids, "--store", store, "--json")
    assert res.exit_code == 0
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: runs {ids[0]} and {ids[1]} differ: model option temperature: A 0.0, B 0.7",
        f"warning: runs {ids[0]} and {ids[1]} differ: epochs: A 1, B 2",
    ]
    assert json.loads(res.stdout)["warnings"] == ["model option temperature: A 0.0, B 0.7", "epochs: A 1, B 2"]
    same = invoke("compare", ids[0], ids[0], "--store", store)
    assert same.exit_code == 0 and "warning" not in same.stderr
