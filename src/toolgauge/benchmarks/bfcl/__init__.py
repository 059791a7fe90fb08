"""BFCL (Berkeley Function Calling Leaderboard) v4, single-turn AST categories, with BFCL's checker rules.

``eval bfcl`` asks a model as BFCL's function-calling (``native``) or prompting handlers do;
``score bfcl`` rescores BFCL's own result files. The checker agrees with bfcl-eval 2026.3.23's
on every verdict and error type (docs/metrics/bfcl.md, docs/benchmarks/bfcl-agreement.md).

The CLI module is imported when it is first used, not with the package: importing the loader or
the checker must not import the command line (whose app, built on import, reads this ``SPEC``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolgauge.benchmark import BenchmarkSpec, CommandGroups
from toolgauge.benchmarks.bfcl.report import render_bfcl

if TYPE_CHECKING:
    from toolgauge.benchmarks.bfcl.protocol import BfclBenchmark


def _add_commands(groups: CommandGroups) -> None:
    from toolgauge.benchmarks.bfcl.cli import add_commands

    add_commands(groups)


def _build(**options: Any) -> BfclBenchmark:
    from toolgauge.benchmarks.bfcl.cli import build

    return build(**options)


def _rescore(config: Mapping[str, Any], variant: str | None) -> BfclBenchmark:
    from toolgauge.benchmarks.bfcl.cli import rescore

    return rescore(config, variant)


SPEC = BenchmarkSpec(
    name="bfcl",
    title="BFCL (Berkeley Function Calling Leaderboard) AST categories, with BFCL's checker rules",
    run_names=("bfcl",),
    add_commands=_add_commands,
    build=_build,
    render=render_bfcl,
    rescore=_rescore,
    headline=("accuracy",),
    variants=(),
)
