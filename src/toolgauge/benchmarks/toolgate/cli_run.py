"""Placeholder for ``gate run`` (the construction loop), which the construction-loop branch provides."""

from __future__ import annotations

import typer


def add_run_command(gate_app: typer.Typer) -> None:
    """Mounted by the construction-loop branch."""
