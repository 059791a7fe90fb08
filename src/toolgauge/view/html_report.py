"""``report RUN --html OUT.html``: one run's viewer page as one self-contained file (``report SWEEP``: a sweep's).

The file holds the viewer's own front end (its script and style inlined) and the run's data as JSON in a
non-executed ``<script type="application/json">`` block: metrics, every breakdown, the charts as SVG
rendered here, every unit's verdict, and the transcripts of the first failing samples. It loads nothing:
its Content-Security-Policy allows only the inlined script and style (by hash) and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from toolgauge.store.store import Store
from toolgauge.view.app import static_dir
from toolgauge.view.charts import error_class_chart, render_svg, run_charts
from toolgauge.view.data import VERDICTS, Benchmarks, ViewData, unit_row

# Transcripts included by default: those of the first failing samples (the others are listed, verdicts only).
DEFAULT_TRANSCRIPTS = 20
# In a sweep's report, per run (a sweep has many runs; the file stays small enough to attach).
SWEEP_TRANSCRIPTS = 5
FAILING = ("fail", "partial", "error")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _json_for_html(value: Any) -> str:
    # Inside a <script> element only "</script" (or "<!--") could end it early: no "<" is left in the text.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def report_data(
    store: Store, run_id: str, benchmarks: Benchmarks, *, transcripts: int, data: ViewData | None = None
) -> dict[str, Any]:
    """The JSON the report embeds: what the viewer's API answers for this run, all at once."""
    data = data if data is not None else ViewData(store, benchmarks)
    page = data.run(run_id)
    run = data.run_info(run_id)
    specs = run_charts(run.results, benchmarks.headline(run.benchmark)) if run.results is not None else []
    page["charts"] = [{"name": c.name, "title": c.title} for c in specs]
    units, note = data.scored_units(run_id)
    rows = [unit_row(u) for u in units]
    counts = {v: sum(1 for r in rows if r.verdict == v) for v in VERDICTS}
    classes: dict[str, int] = {}
    for r in rows:
        if r.error_class:
            classes[r.error_class] = classes.get(r.error_class, 0) + 1
    failing: list[str] = []
    for r in rows:
        if r.verdict in FAILING and r.sample not in failing:
            failing.append(r.sample)
        if len(failing) >= transcripts:
            break
    errors = error_class_chart(classes)
    return {
        "run": page,
        "charts": {c.name: render_svg(c.spec) for c in [*specs, *([errors] if errors is not None else [])]},
        "units": {
            "rows": [r.model_dump(mode="json") for r in rows],
            "verdicts": {v: n for v, n in counts.items() if n},
            "error_classes": dict(sorted(classes.items(), key=lambda kv: -kv[1])),
            "note": note,
        },
        "samples": {key: data.sample(run_id, key) for key in failing},
        "panels": data.run_panels(run_id),
        "transcripts": transcripts,
    }


def sweep_report_data(
    store: Store, sweep_id: str, benchmarks: Benchmarks, *, transcripts: int = SWEEP_TRANSCRIPTS
) -> dict[str, Any]:
    """The JSON a sweep's report embeds: its leaderboard, and for each cell's run what a run's report holds.

    Each run (``runs[ID]``, as :func:`report_data`): its page, its charts as SVG, every unit's verdict, its
    views, and the transcripts of its first ``transcripts`` failing samples.
    """
    data = ViewData(store, benchmarks)
    board = data.sweep(sweep_id)
    runs = {}
    for cell in (c for b in board["boards"] for c in b["cells"]):
        if store.get_run(cell["run"]) is not None:  # a cell not started yet has no run
            runs[cell["run"]] = report_data(store, cell["run"], benchmarks, transcripts=transcripts, data=data)
    return {"sweep": board, "runs": runs}


def render_html(payload: dict[str, Any]) -> str:
    """The self-contained page: the front end inlined, ``payload`` embedded, a CSP that allows nothing else.

    ``payload`` is a run's (:func:`report_data`) or a sweep's (:func:`sweep_report_data`).
    """
    script = (static_dir() / "app.js").read_text()
    style = (static_dir() / "app.css").read_text()
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    if "sweep" in payload:
        title = html.escape(f"toolgauge · sweep {payload['sweep']['sweep']}")
    else:
        run = payload["run"]["run"]
        title = html.escape(f"toolgauge · {run['benchmark']} · {run['model']} · {run['id']}")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=False)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        '<header class="top"><span class="brand">toolgauge report</span><span id="crumbs"></span>'
        '<span id="live" class="live" hidden>live</span></header>\n'
        '<main id="main"><p class="muted">loading…</p></main>\n'
        f'<script type="application/json" id="toolgauge-data">{_json_for_html(payload)}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_html_report(
    store: Store, run_id: str, out: Path, benchmarks: Benchmarks, *, transcripts: int = DEFAULT_TRANSCRIPTS
) -> None:
    """Write the run's report to ``out`` atomically (a reader never sees half a file)."""
    write_atomic(out, render_html(report_data(store, run_id, benchmarks, transcripts=transcripts)))


def write_sweep_report(store: Store, sweep_id: str, out: Path, benchmarks: Benchmarks) -> None:
    """Write the sweep's report (its leaderboard, each run's report) to ``out`` atomically."""
    write_atomic(out, render_html(sweep_report_data(store, sweep_id, benchmarks)))


def write_atomic(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` through a temporary file in the same folder, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
