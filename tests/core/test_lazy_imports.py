"""Heavy libraries load only where they are needed (issue 11, "Imports"), checked in fresh interpreters.

- SQLAlchemy (about 0.4 s of CPU) loads when a command opens the store, not for ``toolgauge --help``, and not
  by importing the driver, the engine or the commands that read stored runs;
- the openai SDK (about 1 s and 40 MB) loads for HTTP model specs only, never for gold, replay or scripted models;
- the anthropic and google-genai SDKs load for their own specs only (``anthropic:``, ``google:``).

Each check runs ``python -c`` with this tree's ``src`` first on the path and reads ``sys.modules`` at the end;
each also has a control that must see the library loaded, so a broken check cannot pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.paths import SRC

WATCHED = ("sqlalchemy", "openai", "httpx", "anthropic", "google.genai")


def loaded_after(code: str, cwd: Path) -> dict[str, bool]:
    """Which of ``WATCHED`` are in ``sys.modules`` after running ``code`` (a ``SystemExit`` it raises is fine)."""
    script = textwrap.dedent(
        f"""
        import json, sys
        try:
        {textwrap.indent(textwrap.dedent(code), "    ")}
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        print(json.dumps({{name: name in sys.modules for name in {WATCHED!r}}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    env.pop("TOOLGAUGE_STORE", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def cli(*args: str) -> str:
    return f"import sys; from toolgauge.cli import main; sys.argv = ['toolgauge', *{list(args)!r}]; main()"


def test_importing_the_driver_and_the_engine_loads_no_sqlalchemy(tmp_path):
    code = "import toolgauge.driver, toolgauge.engine, toolgauge.store"
    assert loaded_after(code, tmp_path)["sqlalchemy"] is False
    # Control: opening a store does load it.
    opened = loaded_after("from toolgauge.store import open_store; open_store('sqlite:///s.db').close()", tmp_path)
    assert opened["sqlalchemy"] is True


def test_the_stored_run_commands_load_no_sqlalchemy(tmp_path):
    code = "import toolgauge.cli.runs, toolgauge.cli.transcript"
    assert loaded_after(code, tmp_path)["sqlalchemy"] is False


def test_help_loads_no_sqlalchemy_and_no_openai(tmp_path):
    loaded = loaded_after(cli("--help"), tmp_path)
    assert loaded == dict.fromkeys(WATCHED, False)


@pytest.mark.parametrize("model", ["gold", "scripted"])
def test_an_offline_eval_loads_no_openai_sdk(tmp_path, model):
    spec = model
    if model == "scripted":
        (tmp_path / "script.json").write_text(json.dumps(["no tool call"] * 100))
        spec = f"scripted:{tmp_path / 'script.json'}"
    loaded = loaded_after(
        cli("eval", "suite", "--model", spec, "--store", f"sqlite:///{tmp_path / 's.db'}", "-q"), tmp_path
    )
    assert loaded["sqlalchemy"] is True  # control: this command did run and open its store
    assert loaded["openai"] is False
    assert loaded["httpx"] is False


def test_replay_resolves_without_openai_and_an_http_spec_loads_it(tmp_path):
    replay = "from toolgauge.models.spec import resolve_model; resolve_model('replay:.', replay_loader=lambda p: {})"
    assert loaded_after(replay, tmp_path)["openai"] is False
    http = "from toolgauge.models.spec import resolve_model; resolve_model('http://127.0.0.1:9/v1#m')"
    assert loaded_after(http, tmp_path)["openai"] is True  # control


def test_each_provider_sdk_loads_for_its_own_spec_only(tmp_path):
    def resolve(spec: str) -> str:
        keys = "os.environ.update(ANTHROPIC_API_KEY='k-0123456789', GEMINI_API_KEY='k-0123456789')"
        return f"import os; {keys}; from toolgauge.models.spec import resolve_model; resolve_model({spec!r})"

    http = loaded_after(resolve("http://127.0.0.1:9/v1#m"), tmp_path)
    assert http["anthropic"] is False and http["google.genai"] is False
    claude = loaded_after(resolve("anthropic:claude-x"), tmp_path)
    assert claude["anthropic"] is True and claude["google.genai"] is False and claude["openai"] is False
    gemini = loaded_after(resolve("google:gemini-x"), tmp_path)
    assert gemini["google.genai"] is True and gemini["anthropic"] is False and gemini["openai"] is False
