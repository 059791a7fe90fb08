"""A Tool-Genesis run of one fixture server: its data file and registry, as `genesis evaluate` reads them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.paths import FIXTURE_ROOT

FIXTURES = FIXTURE_ROOT / "genesis"


def stage_server(folder: Path, fixture: str) -> tuple[Path, Path]:
    """``tests/fixtures/genesis/FIXTURE`` as the server ``mini-calc`` of a registry under ``folder``: (data, pred)."""
    pred = folder / "pred"
    shutil.copytree(FIXTURES / fixture, pred / "mini-calc")
    (pred / "registry.json").write_text(json.dumps(
        {"mini-calc": {"json_schema_path": "mini-calc/tools.json", "env_code_path": "mini-calc/server.py"}}
    ))  # fmt: skip
    data = folder / "data.json"
    data.write_text("[" + (FIXTURES / "spec.json").read_text() + "]")
    return data, pred
