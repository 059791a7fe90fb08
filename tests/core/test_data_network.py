"""The real BFCL pull: the pinned bfcl-eval wheel from PyPI (or pip's configured index), end to end.

Marked ``network``: skipped with the reason when the index cannot be reached (CI reaches it and must run it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.data_mirror import cli, cli_env
from toolgauge.datasets.registry import dataset_named
from toolgauge.datasets.verify import digests

pytestmark = pytest.mark.network


def test_pull_bfcl_from_the_package_index_then_eval_without_data(tmp_path: Path, data_dir: Path):
    bfcl = dataset_named("bfcl")
    assert bfcl is not None
    cache = tmp_path / "cache"
    env = {**cli_env(cache, None), "TOOLGAUGE_STORE": f"sqlite:///{tmp_path / 'store.db'}"}
    pulled = cli("data", "pull", "bfcl", env=env, timeout=600)
    assert pulled.returncode == 0, pulled.stderr
    folder = cache / "bfcl" / "2026.3.23"
    # On disk: exactly the pinned data files (no wheel, no code, no temporary folder) and the manifest.
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == sorted([*bfcl.pins, ".toolgauge-data.json"])
    assert not any(name.endswith((".py", ".whl")) for name in files)
    assert sorted(p.name for p in (cache / "bfcl").iterdir()) == [".lock", "2026.3.23"]
    for name, pin in bfcl.pins.items():
        assert digests(folder / name).sha256 == pin.sha256
    # The shared copy's files are byte for byte the wheel's.
    shared = data_dir / "bfcl"
    for path in shared.rglob("*.json"):
        assert (folder / path.relative_to(shared)).read_bytes() == path.read_bytes()

    ran = cli("eval", "bfcl", "--model", "gold", "--categories", "simple_python", "--json", "-q", env=env)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    accuracy = [m["value"] for m in doc["metrics"] if m["name"] == "accuracy" and m["group"] == "simple_python"]
    assert accuracy == [1.0]
    assert doc["provenance"]["datasets"] == {"bfcl": "2026.3.23"}
    assert doc["provenance"]["benchmark_options"]["data"] == str(folder)
