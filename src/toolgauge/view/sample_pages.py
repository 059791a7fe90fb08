"""``report RUN --html OUT.html --all-samples``: every sample of the run as a page of its own, in a folder beside.

The report itself stays bounded (:mod:`toolgauge.view.html_report`); the folder ``OUT_samples/`` holds one
static page per sample (its verdicts, every epoch's, and every epoch's transcript) and ``index.html``
listing every unit. The pages have no script at all: all text is escaped here, the style is inlined and
allowed by hash, and they load nothing. Samples are read from the store one at a time, and the folder is
written beside its final place and renamed into it, so an interrupted write leaves no half folder.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from toolgauge.engine.epochs import epoch_key
from toolgauge.redact import redact, redact_tree
from toolgauge.store.store import RunInfo
from toolgauge.view.app import static_dir
from toolgauge.view.csp import csp_hash
from toolgauge.view.data import ViewData, unit_row

INDEX = "index.html"
# Characters of a sample key kept in its file name (the rest of the name is a digest of the whole key).
NAME_CHARS = 60


def sample_folder(report: Path) -> Path:
    """The folder beside ``report`` (``r.html`` -> ``r_samples``) that holds its samples' pages."""
    return report.with_name(report.stem + "_samples")


def sample_file_name(key: str) -> str:
    """A sample's page: its key's safe characters, then a digest of the whole key (keys differing in case too)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)[:NAME_CHARS].lstrip(".") or "sample"
    return f"{safe}-{hashlib.blake2b(key.encode(), digest_size=6).hexdigest()}.html"


def write_sample_pages(data: ViewData, run_id: str, folder: Path, *, report_name: str) -> int:
    """Write each sample's page and the index into ``folder`` (replacing it); return how many samples."""
    run = data.run_info(run_id)
    made = data.unit_set(run_id)
    style = (static_dir() / "app.css").read_text()
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        count = 0
        with (tmp / INDEX).open("w", encoding="utf-8") as index:
            index.write(_head(f"samples of run {run.id}", style))
            note = f'<p class="warning">{_text(made.note)}</p>' if made.note else ""
            index.write(f'<p><a href="../{_attr(report_name)}">← the report</a></p>\n<h1>samples of run {_text(run.id)}'
                        f" ({made.units} units)</h1>\n{note}"
                        '<table class="grid units"><thead><tr><th>unit</th><th>epoch</th><th>verdict</th>'
                        "<th>error class</th><th>why</th></tr></thead><tbody>\n")  # fmt: skip
            keys = _ordered_samples(data, index, made)
            previous: str | None = None
            current = next(keys, None)
            while current is not None:
                following = next(keys, None)
                page = _sample_page(data, run, made, current, previous, following, report_name, style)
                (tmp / sample_file_name(current)).write_text(page, encoding="utf-8")
                count += 1
                previous, current = current, following
            index.write("</tbody></table>\n</main>\n</body>\n</html>\n")
        old = folder.with_name(f".{folder.name}.old")
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return count


def _ordered_samples(data: ViewData, index: TextIO, made: Any) -> Iterator[str]:
    """The run's sample keys in the sample list's order, each once; writes every unit's index row on the way."""
    seen: set[str] = set()
    for score in data.verdict_table().scores(made):
        row = unit_row(score)
        index.write(
            f'<tr><td><a href="{_attr(sample_file_name(row.sample))}">{_text(row.id)}</a></td>'
            f'<td class="num">{row.epoch}</td><td><span class="badge v-{row.verdict}">{row.verdict}</span></td>'
            f"<td>{_text(row.error_class or '')}</td>"
            f'<td class="wrap">{_text(row.error or row.explanation or "")}</td></tr>\n'
        )
        if row.sample not in seen:
            seen.add(row.sample)
            yield row.sample


def _sample_page(
    data: ViewData,
    run: RunInfo,
    made: Any,
    key: str,
    previous: str | None,
    following: str | None,
    report_name: str,
    style: str,
) -> str:
    epochs = max(1, int(run.config.get("epochs", 1) or 1))
    nav = [f'<a href="../{_attr(report_name)}">the report</a>', f'<a href="{INDEX}">all samples</a>']
    if previous is not None:
        nav.append(f'<a href="{_attr(sample_file_name(previous))}" id="prev">← previous</a>')
    if following is not None:
        nav.append(f'<a href="{_attr(sample_file_name(following))}" id="next">next →</a>')
    parts = [_head(f"sample {key} · run {run.id}", style), f'<p class="pager">{" · ".join(nav)}</p>',
             f'<h1>sample <span class="key">{_text(key)}</span></h1>',
             f'<p class="muted">run {_text(run.id)} · {_text(run.benchmark)} · {_text(redact(run.model))}</p>',
             "<h2>verdicts</h2>"]  # fmt: skip
    units = data.verdict_table().of_sample(made, key)
    for stored in units:
        u = stored.score
        row = unit_row(u)
        label = f"epoch {row.epoch} · " if epochs > 1 else ""
        parts.append(f'<div class="unit"><h3><span class="badge v-{row.verdict}">{row.verdict}</span> {label}'
                     f"{_text(row.id)}</h3>")  # fmt: skip
        if row.explanation:
            parts.append(f"<p><b>why: </b>{_text(row.explanation)}</p>")
        if row.error:
            parts.append(f'<pre class="text error">run error: {_text(row.error)}</pre>')
        if u.scores:
            scores = " ".join(
                f'<span class="score"><b>{_text(k)}</b> {_text(str(v))}</span>' for k, v in u.scores.items()
            )
            parts.append(f'<p class="scores">{scores}</p>')
        if u.metadata:
            parts.append(f'<details><summary>details</summary><pre class="text">{_json(u.metadata)}</pre></details>')
        parts.append("</div>")
    if not units:
        parts.append('<p class="muted">no verdict on this sample</p>')
    for epoch in range(1, epochs + 1):
        try_key = epoch_key(key, epoch)
        try:
            calls = data.store.transcript(run.id, try_key)
        except Exception as exc:  # a store without transcripts: said on the page
            parts.append(f'<p class="muted">{_text(str(exc))}</p>')
            continue
        heading = f"transcript of epoch {epoch}" if epochs > 1 else "transcript"
        parts.append(f'<h2 id="epoch-{epoch}">{heading} ({len(calls)} model calls)</h2><div class="transcript">')
        for call in calls:
            title = f"step {call.step} · {call.role}" + (" · from the cache" if call.cached else "")
            parts.append(f'<div class="call-block"><div class="call-title">{_text(title)}</div>')
            if call.messages is None:
                parts.append('<p class="muted">request not stored</p>')
            for message in call.messages or []:
                parts.append(_message(message.model_dump(mode="json", exclude_none=True)))
            if call.response is not None:
                parts.append(_message({"role": "assistant", **call.response.model_dump(mode="json", exclude_none=True)},
                                      answer=True))  # fmt: skip
            if call.error:
                parts.append(f'<pre class="text error">error: {_text(call.error)}</pre>')
            parts.append("</div>")
        parts.append("</div>")
    parts.append("</main>\n</body>\n</html>\n")
    return "\n".join(parts)


def _message(message: dict[str, Any], *, answer: bool = False) -> str:
    role = str(message.get("role", ""))
    label = "→ assistant (answer)" if answer else role
    out = [f'<div class="msg role-{_attr(re.sub(r"[^a-z]", "", role))}{" answer" if answer else ""}">'
           f'<div class="msg-role">{_text(label)}</div>']  # fmt: skip
    if message.get("content"):
        out.append(f'<pre class="text">{_text(str(message["content"]))}</pre>')
    for call in message.get("tool_calls") or []:
        out.append(f'<div class="call"><b class="call-name">{_text(str(call.get("name", "")))}</b>'
                   f'<pre class="text args">{_json(call.get("arguments"))}</pre></div>')  # fmt: skip
    return "".join(out) + "</div>"


def _head(title: str, style: str) -> str:
    csp = f"default-src 'none'; style-src {csp_hash(style)}; base-uri 'none'; form-action 'none'"
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_attr(csp)}">\n'
        f"<title>{_text(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n<main>\n"
    )


def _text(value: str) -> str:
    return html.escape(redact(value), quote=False)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def _json(value: Any) -> str:
    return html.escape(json.dumps(redact_tree(value), indent=2, ensure_ascii=False), quote=False)
