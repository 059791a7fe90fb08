"""``toolgauge paper``'s output: the blocks as terminal tables, as JSON, or as one self-contained HTML page.

The page draws each block's figure with the viewer's own charts (:mod:`toolgauge.view.charts`: the same
grouped bars and funnels a run page shows, rendered to SVG offline) and inlines the viewer's style; it loads
nothing and runs no script (its Content-Security-Policy allows the inlined style only).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from toolgauge.redact import redact, redact_tree
from toolgauge.report.paper_tables import PaperBlock, PaperCell
from toolgauge.report.terminal import MISSING, esc, interval, number
from toolgauge.results import Metric


def cell_text(cell: PaperCell, *, with_interval: bool = True) -> str:
    """A cell as the tables show it: rates in percent (two decimals), counts whole, its 95% interval after it."""
    value = cell.value
    if value is None:
        return MISSING
    if cell.unit == "text" or isinstance(value, str):
        return str(value)
    if cell.unit == "percent":
        shown = number(value, "rate")
        ci = interval(cell.ci_low, cell.ci_high, "rate") if with_interval else ""
    elif cell.unit == "count":
        shown, ci = number(value, "count"), ""
    elif cell.unit == "usd":
        shown, ci = f"${value:,.2f}", ""
    elif cell.unit == "tokens":
        shown, ci = f"{value:,.0f}", ""
    elif cell.unit in ("seconds", "hours"):
        shown, ci = f"{value:.2f}", ""
    else:
        shown = f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else number(value, "mean")
        ci = f"[{cell.ci_low:.3f}, {cell.ci_high:.3f}]" if with_interval and _has_ci(cell) else ""
    return f"{shown} {ci}" if ci else shown


def _has_ci(cell: PaperCell) -> bool:
    return cell.ci_low is not None and cell.ci_high is not None


def heading(block: PaperBlock) -> str:
    """``tool-genesis · Table 2 · Direct vs ...``, with ``(reconstructed)`` when not the paper's exact definition."""
    made = "" if block.exact else " (reconstructed)"
    return f"{block.paper} · {block.ref}{made} · {block.title}"


def print_blocks(blocks: Sequence[PaperBlock], console: Console) -> None:
    """Each block as a table under its heading, its notes under it; a block with ``missing`` as one line."""
    for i, block in enumerate(blocks):
        if i:
            console.print()
        if block.missing is not None:
            console.print(f"[bold]{esc(heading(block))}[/]: [yellow]{esc(redact(block.missing))}[/]")
            continue
        table = Table(title=esc(heading(block)), title_justify="left", box=box.SIMPLE_HEAD)
        for j, column in enumerate(block.columns):
            table.add_column(esc(column), justify="left" if j == 0 else "right")
        for row in block.rows:
            table.add_row(esc(redact(row.label)), *(esc(cell_text(c)) for c in row.cells))
        console.print(table)
        for note in block.notes:
            console.print(f"  [dim]{esc(note)}[/]", highlight=False)


def blocks_document(blocks: Sequence[PaperBlock]) -> list[dict[str, Any]]:
    """The blocks as ``--json`` prints them (secrets masked)."""
    return [redact_tree(b.model_dump(mode="json")) for b in blocks]


# -- the HTML page ---------------------------------------------------------------------------------------
def block_metrics(block: PaperBlock) -> list[Metric]:
    """A block's rate cells as the viewer's chart input: one breakdown, a group per row, a metric per column."""
    found: list[Metric] = []
    for row in block.rows:
        for column, cell in zip(block.columns[1:], row.cells, strict=False):
            if cell.unit == "percent" and isinstance(cell.value, int | float) and not isinstance(cell.value, bool):
                found.append(Metric(name=column, value=cell.value, group=row.label, by=block.ref, n=cell.n))
    return found


def block_charts(block: PaperBlock) -> list[tuple[str, str]]:
    """The block's figure as ``(caption, SVG)`` pairs, drawn with the viewer's charts (none: nothing to draw).

    A funnel block (the cascade) gives one funnel per row, as a run page draws it; any other chart, one
    grouped-bar chart of its rate cells (a group per row, a bar per column).
    """
    from toolgauge.view.charts import FUNNELS, breakdown_chart, funnel_chart, render_svg

    if block.missing is not None or block.chart is None:
        return []
    if block.chart == "funnel" and block.data.get("steps"):
        drawn = []
        for label, steps in block.data["steps"].items():
            metrics = [
                Metric(name=FUNNELS["cascade"], value=count, group=step, by="cascade", n=steps[0][1] if steps else 0)
                for step, count in steps
            ]
            funnel = funnel_chart(metrics)
            if funnel is not None:
                drawn.append((str(label), render_svg(funnel.spec)))
        return drawn
    bars = breakdown_chart(block.ref, block_metrics(block))
    return [(block.ref, render_svg(bars.spec))] if bars is not None else []


def _cell_html(cell: PaperCell) -> str:
    return html.escape(cell_text(cell))


def paper_html(title: str, blocks: Sequence[PaperBlock], *, charts: bool = True) -> str:
    """One self-contained page: every block as a table with its figure; no script, no network."""
    from toolgauge.view.app import static_dir
    from toolgauge.view.csp import csp_hash

    style = (static_dir() / "app.css").read_text() + _PAGE_STYLE
    csp = f"default-src 'none'; style-src {csp_hash(style)}; img-src data:; base-uri 'none'; form-action 'none'"
    parts = []
    for block in blocks:
        parts.append(f"<section><h2>{html.escape(heading(block))}</h2>")
        if block.missing is not None:
            parts.append(f'<p class="muted">{html.escape(redact(block.missing))}</p></section>')
            continue
        head = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
        body = "".join(
            f"<tr><th>{html.escape(redact(r.label))}</th>{''.join(f'<td>{_cell_html(c)}</td>' for c in r.cells)}</tr>"
            for r in block.rows
        )
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        parts.extend(f'<p class="muted">{html.escape(note)}</p>' for note in block.notes)
        for caption, svg in block_charts(block) if charts else []:
            parts.append(f'<figure class="chart"><figcaption>{html.escape(caption)}</figcaption>{svg}</figure>')
        parts.append("</section>")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=False)}">\n'
        f"<title>{html.escape(redact(title))}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        f'<header class="top"><span class="brand">toolgauge paper</span> {html.escape(redact(title))}</header>\n'
        f'<main id="main">{"".join(parts)}</main>\n</body>\n</html>\n'
    )


_PAGE_STYLE = """
section{margin:1.5em 0}
section table{border-collapse:collapse}
section th,section td{padding:2px 10px;text-align:right;white-space:nowrap}
section thead th:first-child{text-align:left}
section thead th{border-bottom:1px solid #999}
section tbody th{text-align:left;font-weight:normal}
figure{display:inline-block;margin:0 1em 1em 0}
"""
