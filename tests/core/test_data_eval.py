"""``eval``/``score`` without ``--data``: the cached official data, pulled from a loopback mirror of the shared files.

Not cached: one line naming the pull command, exit 2. Cached: the run reads the cache and its provenance
names the dataset and revision; the CLI, the Python API and sweeps all take the same default.

BFCL's wheel, WildToolBench's and Tool-Genesis's files are not in ../shared/data as pinned (the shared BFCL
folder holds 38 of the wheel's 54 data files; the other two hold a sample or a subset), so for those the
test pins what the mirror serves (:func:`pin_served`); BFCL's real pull from PyPI is in test_data_network.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolgauge
from helpers.cli_helpers import invoke, results_of, sample_rows
from helpers.data_mirror import DataMirror, github_path, github_routes, shared_bfcl_members, wheel_routes
from toolgauge.benchmarks.tool_genesis.loader import load_genesis
from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path
from toolgauge.datasets import registry
from toolgauge.datasets.registry import FilePin
from toolgauge.datasets.resolve import data_or_official
from toolgauge.datasets.verify import digests


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def pin_served(monkeypatch: pytest.MonkeyPatch, name: str, files: dict[str, bytes], tmp_path: Path) -> None:
    """Pin dataset ``name`` to exactly ``files`` (their sha256 and size), as served by the test's mirror."""
    pins = dict(registry._pins())
    served = {}
    for file, data in files.items():
        path = tmp_path / "pinned" / name / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        found = digests(path)
        served[file] = FilePin(sha256=found.sha256, size=found.size)
    pins[name] = served
    monkeypatch.setattr(registry, "_pins", lambda: pins)


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (("eval", "bfcl", "--categories", "simple_python"), "bfcl"),
        (("score", "bfcl", "--predictions", "nope.json"), "bfcl"),
        (("eval", "mtu-bench"), "mtu-bench"),
        (("score", "mtu-bench", "--predictions", "{responses}"), "mtu-bench"),
        (("eval", "tool-genesis"), "tool-genesis"),
    ],
)
def test_without_data_and_not_cached_one_line_names_the_pull(command, name, store, data_dir):
    args = [a.replace("{responses}", str(data_dir / "mtu-bench" / "responses")) for a in command]
    res = invoke(*args, "--model", "gold", "--store", store) if args[0] == "eval" else invoke(*args, "--store", store)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"toolgauge data pull {name}`" in lines[0] and "--data PATH" in lines[0]


def test_mtu_bench_without_data_reads_the_cache_and_records_it(monkeypatch, store, data_dir):
    with DataMirror(github_routes("mtu-bench", data_dir)) as mirror:
        monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", mirror.url)
        assert invoke("data", "pull", "mtu-bench").exit_code == 0
    cached = invoke("eval", "mtu-bench", "--model", "gold", "--limit", "3", "--store", store, "--json", "-q")
    assert cached.exit_code == 0, cached.stderr
    shared = invoke(
        "eval", "mtu-bench", "--model", "gold", "--limit", "3", "--store", store, "--json", "-q",
        "--data", data_dir / "mtu-bench",
    )  # fmt: skip
    a, b = results_of(cached), results_of(shared)
    folder = data_or_official("mtu-bench", None)
    assert a.provenance is not None and b.provenance is not None
    assert a.provenance.benchmark_options["data"] == str(folder)
    assert a.provenance.datasets == {"mtu-bench": "d0811f8"} and b.provenance.datasets == {}
    assert [(m.name, m.group, m.value) for m in a.metrics] == [(m.name, m.group, m.value) for m in b.metrics]

    # score without --data: the published GPT-4 responses against the cached eval files
    scored = invoke("score", "mtu-bench", "--predictions", data_dir / "mtu-bench" / "responses", "--splits", "S-S",
                    "--store", store, "--json", "-q")  # fmt: skip
    assert scored.exit_code == 0, scored.stderr
    assert results_of(scored).provenance.datasets == {"mtu-bench": "d0811f8"}

    # The Python API and a sweep without data take the same default.
    api = toolgauge.evaluate("mtu-bench", "gold", store=store, limit=2)
    assert api.results.provenance.datasets == {"mtu-bench": "d0811f8"}
    sweep = Path(store.removeprefix("sqlite:///")).with_name("SWEEP.toml")
    sweep.write_text('[[model]]\nspec = "gold"\n[[benchmark]]\nname = "mtu-bench"\nsplits = ["S-S"]\nlimit = 2\n')
    swept = invoke("sweep", sweep, "--store", store, "--json")
    assert swept.exit_code == 0, swept.stderr
    assert json.loads(swept.stdout)["status"] == "finished"


def test_bfcl_without_data_gives_the_same_verdicts_as_the_shared_folder(monkeypatch, store, tmp_path, data_dir):
    members = shared_bfcl_members(data_dir / "bfcl")
    real = registry._pins()["bfcl"]
    # The shared folder's files are the wheel's files: the same sha256 as pinned from bfcl-eval 2026.3.23.
    assert len(members) == 38 and all(digests_of(data) == real[name].sha256 for name, data in members.items())
    pin_served(monkeypatch, "bfcl", members, tmp_path)
    with DataMirror(wheel_routes(members)) as mirror:
        monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", mirror.url)
        assert invoke("data", "pull", "bfcl").exit_code == 0
    rows = {}
    for label, extra in (("cache", ()), ("shared", ("--data", str(data_dir / "bfcl")))):
        samples = tmp_path / f"{label}.jsonl"
        res = invoke("eval", "bfcl", "--model", "gold", "--categories", "simple_python", "--store", store, "--json",
                     "-q", "--samples", samples, *extra)  # fmt: skip
        assert res.exit_code == 0, res.stderr
        assert results_of(res).value("accuracy", group="simple_python") == 1.0
        rows[label] = {r["id"]: r["value"] for r in sample_rows(samples)}
    assert len(rows["cache"]) == 400 and rows["cache"] == rows["shared"]


def digests_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_wildtoolbench_without_data_reads_the_pulled_file(monkeypatch, store, tmp_path):
    sample = builtin_wild_path().read_bytes()
    pin_served(monkeypatch, "wildtoolbench", {"Wild-Tool-Bench.jsonl": sample}, tmp_path)
    before = invoke("eval", "wildtoolbench", "--model", "gold", "--store", store, "--json", "-q", "--limit", "1")
    assert results_of(before).settings["data"] == "builtin:wild_sample"  # not pulled: the built-in sample
    with DataMirror({github_path("wildtoolbench", "Wild-Tool-Bench.jsonl"): sample}) as mirror:
        monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", mirror.url)
        assert invoke("data", "pull", "wildtoolbench", "--accept-terms").exit_code == 0
    res = invoke("eval", "wildtoolbench", "--model", "gold", "--store", store, "--json", "-q", "--limit", "1")
    assert res.exit_code == 0, res.stderr
    results = results_of(res)
    assert results.settings["data"] == str(data_or_official("wildtoolbench", None))
    assert results.provenance.datasets == {"wildtoolbench": "80a5f42"}


def test_tool_genesis_default_is_the_pulled_file(monkeypatch, tmp_path, data_dir):
    files = {
        "tool_genesis_v3.json": (data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_bytes(),
        "LICENSE": (data_dir / "tool-genesis" / "LICENSE").read_bytes(),
    }
    pin_served(monkeypatch, "tool-genesis", files, tmp_path)
    routes = {github_path("tool-genesis", name): data for name, data in files.items()}
    with DataMirror(routes) as mirror:
        monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", mirror.url)
        assert invoke("data", "pull", "tool-genesis").exit_code == 0
    path = Path(data_or_official("tool-genesis", None))
    assert path.name == "tool_genesis_v3.json" and path.parent.name == "dc44e5e"
    assert len(load_genesis(path)) == 20
