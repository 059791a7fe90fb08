"""Inspect's ``.eval`` log file: the same log as the ``.json`` format, as the zip Inspect writes by default.

The layout is Inspect's eval recorder's (``inspect_ai/log/_recorders/eval.py``, inspect-ai 0.3.285):

* ``_journal/start.json``: ``{version, eval, plan}``, what Inspect writes when a run starts;
* ``samples/<id>_epoch_<epoch>.json``: one ``EvalSample`` each;
* ``summaries.json``: one ``EvalSampleSummary`` per sample (what ``inspect view`` lists without opening
  the samples): the sample's ids, input, target, scores without their metadata, usage and error text;
* ``header.json``: the log without its samples (status, eval, plan, results, stats, error).

Inspect's reader reads ``header.json`` and every ``samples/*.json``; the summaries feed its sample list.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

JOURNAL_START = "_journal/start.json"
HEADER = "header.json"
SUMMARIES = "summaries.json"
SAMPLES_DIR = "samples"


def write_eval_file(path: Path, document: dict[str, Any]) -> None:
    """Write the log ``document`` (an ``EvalLog`` as JSON, samples included) as an ``.eval`` zip at ``path``."""
    header = {k: v for k, v in document.items() if k != "samples"}
    samples: list[dict[str, Any]] = list(document.get("samples") or [])
    start = {k: header[k] for k in ("version", "eval", "plan") if k in header}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(JOURNAL_START, _json(start))
        for sample in samples:
            zf.writestr(f"{SAMPLES_DIR}/{sample['id']}_epoch_{sample['epoch']}.json", _json(sample))
        zf.writestr(SUMMARIES, _json([sample_summary(s) for s in samples]))
        zf.writestr(HEADER, _json(header))


def sample_summary(sample: dict[str, Any]) -> dict[str, Any]:
    """An ``EvalSampleSummary`` of a sample (``EvalSample`` as JSON)."""
    scores = sample.get("scores")
    error = sample.get("error")
    summary: dict[str, Any] = {
        "id": sample["id"],
        "epoch": sample["epoch"],
        "input": sample.get("input", ""),
        "target": sample.get("target", ""),
        "scores": {name: {k: v for k, v in score.items() if k != "metadata"} for name, score in scores.items()}
        if scores
        else None,
        "model_usage": sample.get("model_usage", {}),
        "role_usage": sample.get("role_usage", {}),
        "total_time": sample.get("total_time"),
        "error": error.get("message") if isinstance(error, dict) else None,
        "completed": True,
        "message_count": len(sample.get("messages") or []),
    }
    return {k: v for k, v in summary.items() if v is not None}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
