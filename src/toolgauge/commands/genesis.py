"""``genesis evaluate`` and ``eval tool-genesis``; ``genesis generate`` lives in ``genesis_generate``."""

from __future__ import annotations

import typer

from toolgauge.cli import app

genesis_app = typer.Typer(
    help="Tool-Genesis: generate MCP servers from requirements and evaluate them.", no_args_is_help=True
)
app.add_typer(genesis_app, name="genesis")
