"""``gate seeds DOMAIN [--output FILE]``: a domain's expert-written seed items, without looking for them under src/.

The seeds are candidate JSONL (``domains/<name>/seeds.jsonl``, shipped with the package): a model to compare
with, a starting pool for ``gate check --candidates``, the format by example. The file is checked as any
``--candidates`` file is before it is printed or written, and is given byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolgauge.cli.common import guarded, out
from toolgauge.errors import UsageError
from toolgauge.jsonl import read_text


def gate_seeds(
    domain: Annotated[str, typer.Argument(help="The domain (a folder of toolgate/domains, e.g. fem).")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the seeds to this file instead of stdout.")
    ] = None,
) -> None:
    """Print (or write) a domain's seed items, in the candidate format."""

    def body() -> None:
        from toolgauge.benchmarks.toolgate.domains import get_domain
        from toolgauge.report.export import write_atomic

        found = get_domain(domain)
        seeds = found.seeds()  # a broken seed file is one line naming its line, as for --candidates
        text = read_text(found.seeds_path)
        if output is None:
            typer.echo(text, nl=False)
            return
        try:
            write_atomic(output, text)
        except OSError as exc:
            raise UsageError(f"--output {output}: cannot write the file: {exc.strerror or exc}") from None
        out.print(f"{len(seeds)} seed items of {domain}: {output}", highlight=False, markup=False, soft_wrap=True)

    guarded(body)


def add_seeds_command(gate_app: typer.Typer) -> None:
    """Mount ``gate seeds`` on the ``gate`` group."""
    gate_app.command("seeds")(gate_seeds)
