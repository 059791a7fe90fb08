"""``report RUN --html OUT.html``: one run's viewer page as one self-contained file (``report SWEEP``: a sweep's).

The file holds the viewer's own front end (its script and style inlined) and the run's data as JSON in a
non-executed ``<script type="application/json">`` block: metrics, every breakdown, the charts as SVG
rendered here, the counts of every verdict and error class, the first units of each verdict (at most
``ROWS_PER_VERDICT``) and the transcripts of the first failing samples. Its size does not grow with the
run's past that; ``--all-samples`` writes every sample as a page of its own into a folder beside it
(:mod:`toolgauge.view.sample_pages`). It loads nothing: its Content-Security-Policy allows only the inlined
script and style (by hash) and no network at all.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from toolgauge.store.store import Store
from toolgauge.store.verdicts import UnitFilter
from toolgauge.view.app import static_dir
from toolgauge.view.charts import ERROR_CLASSES, render_svg, run_charts
from toolgauge.view.csp import csp_hash
from toolgauge.view.data import VERDICTS, Benchmarks, ViewData, board_chart, unit_row

# Transcripts included by default: those of the first failing samples (the others are listed, verdicts only).
DEFAULT_TRANSCRIPTS = 20
# In a sweep's report, per run (a sweep has many runs; the file stays small enough to attach).
SWEEP_TRANSCRIPTS = 5
FAILING = ("fail", "partial", "error")
# Units listed per verdict (the first ones in the run's order): the counts and charts cover every unit.
ROWS_PER_VERDICT = 200


def _json_for_html(value: Any) -> str:
    # Inside a <script> element only "</script" (or "<!--") could end it early: no "<" is left in the text.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def report_data(
    store: Store,
    run_id: str,
    benchmarks: Benchmarks,
    *,
    transcripts: int,
    data: ViewData | None = None,
    sample_files: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON the report embeds: what the viewer's API answers for this run, bounded in size.

    ``sample_files`` (``--all-samples``): the folder of the samples' own pages, named for the report's
    links (``{"dir", "index", "files": {sample key: file name}}``, the names of the listed samples only).
    """
    data = data if data is not None else ViewData(store, benchmarks)
    page = data.run(run_id)
    run = data.run_info(run_id)
    specs = run_charts(run.results, benchmarks.headline(run.benchmark)) if run.results is not None else []
    page["charts"] = [{"name": c.name, "title": c.title} for c in specs]
    made = data.unit_set(run_id)
    listed = []
    for verdict in VERDICTS:  # the first units of each verdict, shown in the run's order
        if made.verdicts.get(verdict):
            listed += data.verdict_table().page(made, UnitFilter(verdict=verdict), 0, ROWS_PER_VERDICT)[1]
    rows = [unit_row(u.score).model_dump(mode="json") for u in sorted(listed, key=lambda u: u.seq)]
    failing: list[str] = []
    for r in rows:
        if r["verdict"] in FAILING and r["sample"] not in failing and len(failing) < transcripts:
            failing.append(r["sample"])
    errors = data.error_chart(run_id)
    epochs = max(1, int(run.config.get("epochs", 1) or 1))
    samples = {}
    for key in failing:
        shown = data.sample(run_id, key)
        if epochs > 1:  # the report switches between the tries without a server
            shown["calls_by_epoch"] = {
                str(e): shown["calls"] if e == 1 else data.sample(run_id, key, epoch=e)["calls"]
                for e in range(1, epochs + 1)
            }
        samples[key] = shown
    if sample_files is not None:
        from toolgauge.view.sample_pages import sample_file_name

        sample_files = {**sample_files, "files": {r["sample"]: sample_file_name(r["sample"]) for r in rows}}
    return {
        "run": page,
        "charts": {**{c.name: render_svg(c.spec) for c in specs}, **({ERROR_CLASSES: errors} if errors else {})},
        "units": {
            "rows": rows,
            "units": made.units,
            "rows_per_verdict": ROWS_PER_VERDICT,
            "verdicts": made.verdicts,
            "error_classes": made.error_classes,
            "note": made.note,
        },
        "samples": samples,
        "sample_files": sample_files,
        "panels": data.run_panels(run_id),
        "transcripts": transcripts,
    }


def sweep_report_data(
    store: Store, sweep_id: str, benchmarks: Benchmarks, *, transcripts: int = SWEEP_TRANSCRIPTS
) -> dict[str, Any]:
    """The JSON a sweep's report embeds: its leaderboard, and for each cell's run what a run's report holds.

    ``sweep_charts``: each board's interval chart as SVG, by benchmark. Each run (``runs[ID]``, as
    :func:`report_data`): its page, its charts as SVG, its verdict counts and first units, its views, and
    the transcripts of its first ``transcripts`` failing samples.
    """
    data = ViewData(store, benchmarks)
    board = data.sweep(sweep_id)
    runs = {}
    for cell in (c for b in board["boards"] for c in b["cells"]):
        if store.get_run(cell["run"]) is not None:  # a cell not started yet has no run
            runs[cell["run"]] = report_data(store, cell["run"], benchmarks, transcripts=transcripts, data=data)
    charts = {}
    for each in board["boards"]:
        made = board_chart(each)
        if made is not None:
            charts[each["benchmark"]] = render_svg(made.spec)
    return {"sweep": board, "sweep_charts": charts, "runs": runs}


def render_html(payload: dict[str, Any]) -> str:
    """The self-contained page: the front end inlined, ``payload`` embedded, a CSP that allows nothing else.

    ``payload`` is a run's (:func:`report_data`) or a sweep's (:func:`sweep_report_data`).
    """
    script = (static_dir() / "app.js").read_text()
    style = (static_dir() / "app.css").read_text()
    csp = (
        f"default-src 'none'; script-src {csp_hash(script)}; style-src {csp_hash(style)}; img-src data:; "
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
    store: Store,
    run_id: str,
    out: Path,
    benchmarks: Benchmarks,
    *,
    transcripts: int = DEFAULT_TRANSCRIPTS,
    all_samples: bool = False,
) -> Path | None:
    """Write the run's report to ``out`` atomically (a reader never sees half a file).

    With ``all_samples``, first every sample's own page into the folder beside it (returned; see
    :func:`toolgauge.view.sample_pages.write_sample_pages`).
    """
    data = ViewData(store, benchmarks)
    files = None
    folder = None
    if all_samples:
        from toolgauge.view.sample_pages import sample_folder, write_sample_pages

        folder = sample_folder(out)
        write_sample_pages(data, run_id, folder, report_name=out.name)
        files = {"dir": folder.name, "index": "index.html"}
    payload = report_data(store, run_id, benchmarks, transcripts=transcripts, data=data, sample_files=files)
    write_atomic(out, render_html(payload))
    return folder


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
