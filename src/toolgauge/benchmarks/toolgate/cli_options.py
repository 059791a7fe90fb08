"""The options of the ``gate`` commands, declared once.

Every ``gate`` command accepts ``--domain``, ``--time-limit``, ``--concurrency``, ``--store`` and ``--json``
(issue 10), but ``seeds``, which only prints a file of the package (its domain is its argument). The commands
that run gates on a pool (``verify``, ``screen``, ``solve``, ``check``, ``rescreen``) and ``run`` get ``--store``,
``--concurrency``, ``--json`` and the engine's other options from :func:`toolgauge.cli.common.run_command`; the
commands that read a stored pool without running anything (``audit``, ``export``) get those three from
:func:`gate_command` with ``offline=True``. The gate options proper (``--domain``, ``--time-limit``, the screens,
the solver...) are :class:`GateFlags`, added by :func:`gate_command` from :data:`GATE_OPTIONS` by name, so each
option has one declaration and one meaning: the fields of the pool run's options model
(:class:`~toolgauge.benchmarks.toolgate.options.ToolgateOptions`, which ``eval toolgate`` is generated from), made
typer options as ``eval toolgate``'s are (:func:`toolgauge.cli.option_params.option_parameters`); a command turns
them into that model (``cli.gate_options``) and builds its run from it. ``gate run``'s options are generated from
its own model (:mod:`.cli_run`).

What the shared options mean where a command runs no script or no sample is said in their help: ``--time-limit``
has no effect on ``screen``, ``rescreen``, ``audit`` and ``export``; ``--concurrency`` has none on ``audit`` and
``export``. ``--domain`` is a filter wherever a command reads a pool (only the candidates of that domain), and an
unknown domain is one line and exit 2.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Annotated, Any

import typer

from toolgauge.benchmarks.toolgate.options import ToolgateOptions
from toolgauge.benchmarks.toolgate.protocol import DEFAULT_SOLVER_STEPS
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT
from toolgauge.cli.common import JsonOpt, RunFlags, StoreOpt, guarded
from toolgauge.cli.option_params import option_parameters

NO_SCRIPT = "Accepted by every gate command; this one runs no script, so it has no effect here."

VerifyTimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=0.1,
        help="Seconds of wall clock for one solution script (interpreter start and imports included).",
    ),
]
SolveTimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit", min=0.1, help="Seconds of wall clock for one whole solve (every run_python call included)."
    ),
]
NoScriptTimeLimitOpt = Annotated[float, typer.Option("--time-limit", min=0.1, help=NO_SCRIPT)]
OfflineConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--concurrency",
        "-c",
        min=1,
        help="Accepted by every gate command; this one reads the store and runs no sample, so it has no effect here.",
    ),
]


@dataclass(frozen=True)
class GateFlags:
    """The gate options of one command, as the user gave them (a command reads the ones it declared).

    Attributes:
        domain: only the candidates of this domain (None: all).
        time_limit: wall clock of one solution script and of one whole solve.
        screen: the ``--screen`` texts, in order.
        solver: the ``--solver`` text.
        fixed_order: screens show the original option order.
        all_screens: every screen runs even after one rejected.
        seed: the base of reproducible screen seeds (None: fresh).
        solver_steps: the most model calls of one solve.
        unsafe_no_sandbox: run scripts without bubblewrap.
    """

    domain: str | None = None
    time_limit: float = DEFAULT_TIME_LIMIT
    screen: tuple[str, ...] = ()
    solver: str | None = None
    fixed_order: bool = False
    all_screens: bool = False
    seed: int | None = None
    solver_steps: int = DEFAULT_SOLVER_STEPS
    unsafe_no_sandbox: bool = False


def _model_options() -> dict[str, tuple[Any, Any]]:
    """Each gate option's typer declaration and default: its field of the pool run's options model."""
    declared = {p.name: p for p in option_parameters(ToolgateOptions)}
    return {f.name: (declared[f.name].annotation, declared[f.name].default) for f in fields(GateFlags)}


# Each gate option: its annotation (the typer declaration) and default. The field names of GateFlags.
GATE_OPTIONS: dict[str, tuple[Any, Any]] = _model_options()
# What audit and export take in place of run_command's options (into a RunFlags).
OFFLINE_OPTIONS: dict[str, tuple[Any, Any]] = {
    "store": (StoreOpt, None),
    "concurrency": (OfflineConcurrencyOpt, 4),
    "as_json": (JsonOpt, False),
}
assert set(GATE_OPTIONS) == {f.name for f in fields(GateFlags)}


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _flags(values: dict[str, Any]) -> GateFlags:
    if "screen" in values:
        values["screen"] = tuple(values["screen"] or ())  # typer gives None for a list option not given
    return GateFlags(**values)


def gate_command(
    *names: str, offline: bool = False, annotations: dict[str, Any] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the named gate options; it receives them as ``gate: GateFlags``.

    Args:
        names: the :data:`GATE_OPTIONS` the command takes, in the order ``--help`` lists them (after its own).
        offline: the command runs no sample (``audit``, ``export``): add ``--store``, ``--concurrency`` and
            ``--json`` too, pass them as ``flags: RunFlags``, and turn every failure into one line
            (:func:`~toolgauge.cli.common.guarded`). Without it, wrap the result in ``run_command``, which adds
            those and the engine's options.
        annotations: another declaration of an option for this command (its help says what it means here).
    """
    unknown = [n for n in names if n not in GATE_OPTIONS]
    if unknown:
        raise ValueError(f"not gate options: {unknown}")
    chosen = {**{n: GATE_OPTIONS[n] for n in names}, **(OFFLINE_OPTIONS if offline else {})}
    for name, annotation in (annotations or {}).items():
        chosen[name] = (annotation, chosen[name][1])

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name not in ("gate", "flags")]
        clash = {p.name for p in own} & set(chosen)
        if clash:  # one name, two options: the command's own would be taken for the shared one
            raise ValueError(f"{fn.__name__}: its own options {sorted(clash)} clash with the shared ones")
        added = [_parameter(name, annotation, default) for name, (annotation, default) in chosen.items()]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            gate = _flags({k: kwargs.pop(k) for k in names})
            if offline:
                flags = RunFlags(**{k: kwargs.pop(k) for k in OFFLINE_OPTIONS})
                guarded(lambda: fn(**kwargs, gate=gate, flags=flags))
            else:
                fn(**kwargs, gate=gate)  # run_command passes flags on and guards the body

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in [*own, *added]]
        if not offline:
            # run_command reads the signature and passes flags: declare it (typer never sees this wrapper).
            params.append(_parameter("flags", RunFlags, inspect.Parameter.empty))
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer (or run_command) must read the new signature
        return command

    return wrap
