"""``toolgauge export --format inspect``: an Inspect AI eval log that inspect-ai's own reader loads.

inspect-ai is never a dependency of toolgauge: the logs are read back by ``inspect_ai.log.read_eval_log`` in a
subprocess, with the interpreter named by ``TOOLGAUGE_INSPECT_PYTHON`` (a throwaway venv with inspect-ai;
``make test`` makes one). Without it those tests are skipped with the reason, except under ``CI=true``,
where they fail: CI must check the export against the real reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_helpers import invoke
from helpers.export_runs import BFCL_CATEGORIES, BFCL_LIMIT, bfcl_replay_run, rescored_rows, suite_gold_run

INSPECT_ENV = "TOOLGAUGE_INSPECT_PYTHON"

# Runs in the inspect-ai interpreter: load each log with Inspect's reader and print what the test checks.
READER = r"""
import json, sys
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

out = []
for path in sys.argv[1:]:
    log = read_eval_log(path)
    samples = []
    for s in log.samples:
        samples.append({
            "id": s.id,
            "epoch": s.epoch,
            "scores": {k: v.value for k, v in (s.scores or {}).items()},
            "roles": [m.role for m in s.messages],
            "texts": [m.text for m in s.messages],
            "tool_calls": [c.function for m in s.messages if m.role == "assistant" for c in (m.tool_calls or [])],
            "input": s.input if isinstance(s.input, str) else [m.text for m in s.input],
            "output": s.output.completion,
            "usage": {k: v.input_tokens + v.output_tokens for k, v in s.model_usage.items()},
            "error": s.error.message if s.error else None,
            "target": s.target,
            "events": [{"event": e.event, "model": e.model, "tools": [t.name for t in e.tools],
                        "input": len(e.input), "completion": e.output.completion, "cache": e.cache,
                        "temperature": e.config.temperature} for e in s.events],
        })
    out.append({
        "status": log.status,
        "task": log.eval.task,
        "model": log.eval.model,
        "created": log.eval.created,
        "dataset_samples": log.eval.dataset.samples,
        "scores": [{"name": sc.name, "metrics": {k: m.value for k, m in sc.metrics.items()}}
                   for sc in log.results.scores],
        "total_samples": log.results.total_samples,
        "samples": samples,
        "summaries": [[s.id, s.epoch, {k: v.value for k, v in (s.scores or {}).items()}]
                      for s in read_eval_log_sample_summaries(path)] if path.endswith(".eval") else None,
    })
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def inspect_python() -> str:
    """The inspect-ai interpreter, or skip (fail under CI) saying why there is none."""
    python = os.environ.get(INSPECT_ENV)
    reason = None
    if not python:
        reason = f"{INSPECT_ENV} is not set (make test sets it to a throwaway venv with inspect-ai)"
    elif not Path(python).is_file():
        reason = f"{INSPECT_ENV}={python}: no such interpreter (make test could not install inspect-ai there?)"
    else:
        found = subprocess.run([python, "-c", "import inspect_ai.log"], capture_output=True, text=True, timeout=300)
        if found.returncode != 0:
            reason = f"{INSPECT_ENV}={python} cannot import inspect_ai: {found.stderr.strip().splitlines()[-1:]}"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must read the Inspect export back with inspect-ai: {reason}")
        pytest.skip(reason)
    assert python is not None
    return python


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, bfcl_dir: Path) -> dict[str, Any]:
    """A suite gold run and a BFCL run on the real data, each exported as an Inspect log."""
    work = tmp_path_factory.mktemp("export_inspect")
    store = f"sqlite:///{work / 'store.db'}"
    made: dict[str, Any] = {"store": store}
    for name, run_id in (("suite", suite_gold_run(store)), ("bfcl", bfcl_replay_run(store, bfcl_dir, work))):
        out = work / f"{name}_log"
        res = invoke("export", run_id, "--format", "inspect", "--out", out, "--store", store)
        assert res.exit_code == 0, res.output
        (log,) = list(out.iterdir())
        json_out = work / f"{name}_json_log"
        res = invoke(
            "export", run_id, "--format", "inspect", "--log-format", "json", "--out", json_out, "--store", store
        )
        assert res.exit_code == 0, res.output
        (json_log,) = list(json_out.iterdir())
        made[name] = {
            "store": store,
            "run": run_id,
            "log": log,  # Inspect's default format, the .eval zip
            "json_log": json_log,
            "rows": rescored_rows(store, run_id, work / f"{name}.jsonl"),
            "results": json.loads(invoke("report", run_id, "--store", store, "--json").stdout),
        }
    return made


def transcript_calls(store: str, run: str, key: str) -> list[Any]:
    from toolgauge.store import open_store

    opened = open_store(store)
    try:
        return opened.transcript(run, key)
    finally:
        opened.close()


def expected_scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per sample, the value its Inspect score must have: the unit's, or the mean of its units'."""
    units: dict[str, list[float]] = {}
    for row in rows:
        units.setdefault(row["sample"], []).append(row["value"])
    return {sample: sum(values) / len(values) for sample, values in units.items()}


def test_log_file_is_named_and_shaped_as_inspects(runs):
    for name in ("suite", "bfcl"):
        assert runs[name]["log"].name.endswith(f"_{name}_{runs[name]['run']}.eval")
        with zipfile.ZipFile(runs[name]["log"]) as zf:
            members = zf.namelist()
            header = json.loads(zf.read("header.json"))
            summaries = json.loads(zf.read("summaries.json"))
        samples = [m for m in members if m.startswith("samples/")]
        assert {"_journal/start.json", "header.json", "summaries.json"} <= set(members)
        assert "samples" not in header and len(samples) == len(summaries) == len(expected_scores(runs[name]["rows"]))
        assert sorted(samples) == sorted(f"samples/{s['id']}_epoch_{s['epoch']}.json" for s in summaries)
        log: Path = runs[name]["json_log"]
        assert log.name.endswith(f"_{name}_{runs[name]['run']}.json")
        document = json.loads(log.read_text())
        assert header == {k: v for k, v in document.items() if k != "samples"}
        assert document["version"] == 2 and document["status"] == "success"
        assert {"eval", "results", "stats", "samples"} <= set(document)
        assert document["eval"]["task"] == name
        model = document["eval"]["model"]
        assert model == "gold" if name == "suite" else model.startswith("replay:")
        assert len(document["samples"]) == len(expected_scores(runs[name]["rows"]))


@pytest.mark.timeout(900)  # importing inspect-ai and reading the logs back takes minutes on a busy machine
def test_inspect_reads_the_logs_back(runs, inspect_python: str):
    logs = [runs[name][kind] for kind in ("log", "json_log") for name in ("suite", "bfcl")]
    done = subprocess.run(
        [inspect_python, "-c", READER, *map(str, logs)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    suite, bfcl, suite_json, bfcl_json = json.loads(done.stdout)
    for zipped, plain in ((suite, suite_json), (bfcl, bfcl_json)):  # the .eval zip reads back as the .json file
        by_id = {(s["id"], s["epoch"]): s for s in plain["samples"]}
        assert [by_id[(s["id"], s["epoch"])] for s in zipped["samples"]] == zipped["samples"]
        assert len(by_id) == len(zipped["samples"])
        assert {**zipped, "samples": None, "summaries": None} == {**plain, "samples": None}
        # what inspect view lists without opening the samples
        assert sorted(zipped["summaries"]) == sorted([s["id"], s["epoch"], s["scores"]] for s in zipped["samples"])

    for name, read in (("suite", suite), ("bfcl", bfcl)):
        want = expected_scores(runs[name]["rows"])
        assert read["status"] == "success" and read["task"] == name
        assert read["total_samples"] == read["dataset_samples"] == len(read["samples"]) == len(want)
        assert {s["id"]: s["scores"][name] for s in read["samples"]} == pytest.approx(want)
        headline = next(m for m in runs[name]["results"]["metrics"] if m["group"] is None)
        assert read["scores"][0]["name"] == name
        assert read["scores"][0]["metrics"][headline["name"]] == pytest.approx(headline["value"])

    assert suite["model"] == "gold" and len(suite["samples"]) == 24
    weather = next(s for s in suite["samples"] if s["id"] == "weather-001")
    assert weather["roles"][:3] == ["system", "user", "assistant"]
    assert weather["texts"][1] == "What's the weather in Lisbon right now?"
    assert weather["tool_calls"][0] == "get_current_weather"
    # One model event per stored call: its input, its tools, its settings and its answer.
    calls = transcript_calls(runs["suite"]["store"], runs["suite"]["run"], "weather-001")
    assert len(weather["events"]) == len(calls) > 0
    first_event = weather["events"][0]
    assert first_event["event"] == "model" and first_event["model"] == "gold" and first_event["cache"] is None
    assert first_event["tools"] == [t.name for t in calls[0].tools or []]
    assert "get_current_weather" in first_event["tools"]
    assert first_event["input"] == len(calls[0].messages or []) and first_event["temperature"] == 0.0
    # The target is the gold calls as JSON text: one turn's as a string, several turns' as a list.
    assert [call["name"] for call in json.loads(weather["target"])] == ["get_current_weather"]
    forecast = next(s for s in suite["samples"] if s["id"] == "weather-002")  # three turns with tool results
    assert forecast["roles"].count("tool") >= 2 and "get_forecast" in forecast["tool_calls"]
    assert forecast["output"] and forecast["roles"][-1] == "assistant"
    assert isinstance(forecast["target"], list) and len(forecast["target"]) == len(forecast["events"]) == 3

    assert len(bfcl["samples"]) == BFCL_LIMIT * len(BFCL_CATEGORIES)
    first = next(s for s in bfcl["samples"] if s["id"] == "simple_python_0")
    assert first["scores"]["bfcl"] == 1.0
    assert first["roles"] == ["system", "user", "assistant"]  # prompting mode: the docs in the system prompt
    assert "calculate_triangle_area" in first["texts"][0]
    assert first["output"].startswith("[calculate_triangle_area(")
    failed = next(s for s in bfcl["samples"] if s["id"] == "simple_python_1")
    assert failed["scores"]["bfcl"] == 0.0 and failed["output"] == "I cannot help with that."


def test_tool_schemas_are_put_in_the_json_schema_subset_inspect_reads():
    from toolgauge.export.inspect_log import inspect_schema

    bfcl_style = {
        "type": "dict",
        "properties": {
            "side": {"type": "float", "description": "length", "minimum": "0"},
            "tags": {"type": "tuple", "items": {"type": "string", "enum": "a|b"}},
            "extra": {"type": "any", "x-custom": True},
            "mode": {"type": ["string", "null"], "default": None},
        },
        "required": ["side"],
        "additionalProperties": False,
        "$defs": {},
    }
    assert inspect_schema(bfcl_style) == {
        "type": "object",
        "properties": {
            "side": {"type": "number", "description": "length"},  # a minimum of the wrong type is dropped
            "tags": {"type": "array", "items": {"type": "string"}},
            "extra": {},
            "mode": {"type": ["string", "null"], "default": None},
        },
        "required": ["side"],
        "additionalProperties": False,
    }
