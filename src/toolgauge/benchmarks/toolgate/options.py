"""The options of a ToolGate pool run (``eval toolgate``, the ``gate`` pool commands, the API, sweeps), once.

:class:`ToolgateOptions` is what defines a pool run: the candidates, the gates, the screens and the solver with
their settings, the gates' limits. ``eval toolgate`` is generated from it; the ``gate verify|screen|solve|check|
rescreen`` commands build their runs from it (their options are its fields, declared in :mod:`.cli_options` with
these descriptions); a run is stored as ``options.model_dump(mode="json")`` (model specs with passwords masked) and
``rescore`` validates that back. A ``gate run`` (the construction loop) is defined by :class:`GateRunOptions`, which
``gate run``'s options are generated from; ``rescore`` reads its stored config under ``run`` (``command="run"``).
No typer here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PlainSerializer, model_validator

from toolgauge.benchmarks.toolgate.generator import DEFAULT_MAX_STEPS
from toolgauge.benchmarks.toolgate.protocol import DEFAULT_SOLVER_STEPS, SOLVER_ROLE, Gate, PoolCommand
from toolgauge.benchmarks.toolgate.screens import ScreenSpec, check_screen_names, parse_screen_spec
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT
from toolgauge.errors import UsageError
from toolgauge.options import Cli, CommaList, LimitOptions, OptionsModel

DOMAIN_HELP = (
    "Only the candidates of this domain (a folder of toolgate/domains); the others are left out. "
    "Where scripts run, its libraries are checked first."
)
TIME_LIMIT_HELP = (
    "Seconds of wall clock for one solution script (gate 1, interpreter start and imports included) "
    "and for one whole solve (gate 3)."
)
SCREEN_HELP = (
    "A no-tool screen, SPEC[,temperature=T][,max_tokens=N][,reasoning_effort=E][,name=X] "
    "(SPEC as for --model: gold, openai:MODEL, URL#MODEL, scripted:PATH); repeat for several, run in order."
)
SOLVER_HELP = "The tool-enabled solver, SPEC[,temperature=T][,max_tokens=N][,reasoning_effort=E]."
FIXED_ORDER_HELP = "Screens see the original option order (the paper's biased protocol)."
ALL_SCREENS_HELP = "Run every screen even after one rejected the candidate (agreement audits)."
SEED_HELP = "Derive the screens' permutation seeds from this number (default: fresh seeds)."
SOLVER_STEPS_HELP = "The most model calls of one solve."
DOMAIN_CHECKS_HELP = (
    "After gate 1 passed, run the candidate's domain semantic check (fem: refine every mesh once; the "
    "answer must move by less than the options' spacing). Failing items are rejected; undecided ones flagged."
)
CANDIDATES_HELP = "A candidates JSONL file (one candidate per line; see docs/toolgate.md)."
UNSAFE_NO_SANDBOX_HELP = (
    "DANGEROUS: run generated code even without bubblewrap (it can then read and write your files and secrets). "
    "Without it, generated code runs only under bubblewrap. See docs/sandbox.md."
)

COMMAND_GATES: dict[str, tuple[Gate, ...]] = {
    "verify": ("verify",),
    "screen": ("screens",),
    "rescreen": ("screens",),
    "solve": ("solve",),
    "check": ("verify", "screens", "solve"),
}


def _as_screen(value: Any) -> Any:
    """A ``--screen`` text (``SPEC[,key=value...]``) as a :class:`ScreenSpec`; a stored one (a mapping) as is.

    A bad text is a ``UsageError`` saying what is wrong with that screen (pydantic lets it through).
    """
    if isinstance(value, str):
        return parse_screen_spec(value)
    if isinstance(value, dict) and "model" in value and "spec" not in value:  # a record of the old config
        return {**{k: v for k, v in value.items() if k != "model"}, "spec": value["model"]}
    return value


def _as_screens(value: Any) -> Any:
    if isinstance(value, str | dict):
        value = [value]
    return [_as_screen(item) for item in value] if isinstance(value, list | tuple) else value


def _as_solver(value: Any) -> Any:
    screen = _as_screen(value)
    if isinstance(screen, ScreenSpec):
        if screen.spec == "gold":
            raise UsageError("--solver gold: the reference has no tool calls to make; give a model")
        return screen.model_copy(update={"name": SOLVER_ROLE})
    if isinstance(screen, dict):
        return {**screen, "name": SOLVER_ROLE}
    return screen


def _masked(screen: ScreenSpec) -> dict[str, Any]:
    """A screen as a stored config keeps it: its model spec with any password masked."""
    from toolgauge.models.spec import display_spec

    return {**screen.model_dump(), "spec": display_spec(screen.spec)}


# A screen is given as its --screen text and stored as its fields (password masked).
StoredScreenSpec = Annotated[ScreenSpec, PlainSerializer(_masked, when_used="json")]
Screens = Annotated[tuple[StoredScreenSpec, ...], BeforeValidator(_as_screens), Cli(repeatable=True, metavar="SPEC")]
Solver = Annotated[StoredScreenSpec | None, BeforeValidator(_as_solver), Cli(metavar="SPEC")]
TimeLimit = Annotated[float, Field(ge=0.1, allow_inf_nan=False)]
Steps = Annotated[int, Field(ge=1)]


class GateRunOptions(OptionsModel):
    """What defines a ``gate run`` (the construction loop): ``gate run``'s own options, and what a run stores.

    ``gate run``'s options are generated from these fields (:func:`toolgauge.cli.option_params.option_parameters`);
    the generator's sampling comes from the shared ``--temperature`` and ``--max-tokens``. A screen is given as its
    ``--screen`` text and stored as its record (name, model spec and setting).
    """

    generator: str = Field(description="Model spec of the generator (role generator).")
    screens: Annotated[tuple[str | dict[str, Any], ...], Cli(names=("--screen",), repeatable=True, metavar="SPEC")] = (
        Field(description="A no-tool screen (model spec and setting); repeat for several, cheapest first.")
    )
    solver: str = Field(description="Model spec of the tool-enabled solver (role solver).")
    rounds: Steps = Field(description="How many rounds (candidates) to run.")
    domain: str = Field("fem", description="The domain to build items in (a folder of toolgate/domains).")
    time_limit: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = Field(
        DEFAULT_TIME_LIMIT,
        description="Seconds of wall clock for one solution run (imports included), each generator run_python, "
        "and the whole solve.",
    )
    generator_steps: Steps = Field(DEFAULT_MAX_STEPS, description="At most this many generator model calls per round.")
    solver_steps: Steps = Field(DEFAULT_SOLVER_STEPS, description=SOLVER_STEPS_HELP)
    prompt_seeds: int | None = Field(
        None, ge=0, description="Show only the first N seed items in the prompt (default: all)."
    )
    temperature: Annotated[float, Cli(hidden=True)] = Field(0.0, description="The generator's sampling temperature.")
    max_tokens: Annotated[int | None, Cli(hidden=True)] = Field(None, description="The generator's reply length.")
    # How the run may run its code, not what defines it: not stored with the run.
    unsafe_no_sandbox: bool = Field(False, exclude=True, description=UNSAFE_NO_SANDBOX_HELP)


class ToolgateOptions(LimitOptions):
    """Run ToolGate's gates on a candidate pool (verify, no-tool screens, tool-enabled solve).

    The screens and the solver are the models asked (--screen, --solver); --model answers only the roles of its own
    spec (as the run's other roles, one client per spec).
    """

    candidates: Annotated[Path | None, Cli(required=True)] = Field(None, description=CANDIDATES_HELP)
    command: Annotated[
        Literal["verify", "screen", "solve", "check", "rescreen", "run"],
        Cli(choices=("verify", "screen", "solve", "check")),
    ] = Field("check", description="The gates to run: verify, screen, solve, or check (all three, cheapest first).")
    gates: CommaList | None = Field(None, description="Comma list of verify,screens,solve (default: the command's).")
    domain: str | None = Field(None, description=DOMAIN_HELP)
    time_limit: TimeLimit = Field(DEFAULT_TIME_LIMIT, description=TIME_LIMIT_HELP)
    screen: Screens = Field((), description=SCREEN_HELP)
    solver: Solver = Field(None, description=SOLVER_HELP)
    fixed_order: bool = Field(False, description=FIXED_ORDER_HELP)
    all_screens: bool = Field(False, description=ALL_SCREENS_HELP)
    seed: int | None = Field(None, description=SEED_HELP)
    solver_steps: Steps = Field(DEFAULT_SOLVER_STEPS, description=SOLVER_STEPS_HELP)
    domain_checks: bool = Field(False, description=DOMAIN_CHECKS_HELP)
    # How the run may run its code, not what defines it: not stored with the run.
    unsafe_no_sandbox: bool = Field(False, exclude=True, description=UNSAFE_NO_SANDBOX_HELP)
    # A pool taken from a stored run (gate rescreen, gate solve --run): the run, which of its candidates, their keys.
    source_run: Annotated[str | None, Cli(hidden=True)] = Field(
        None, description="The stored run whose candidates the pool is (gate rescreen, gate solve --run)."
    )
    pool: Annotated[str | None, Cli(hidden=True)] = Field(
        None, description="Which candidates of source_run: verified, survivors, accepted or all."
    )
    ids: Annotated[tuple[str, ...] | None, Cli(hidden=True)] = Field(
        None, description="The sample keys of a pool taken from source_run (set by the gate commands)."
    )
    # A gate run (command "run"): what defines it.
    run: Annotated[GateRunOptions | None, Cli(hidden=True)] = Field(
        None, description="What defines a gate run (command run; set by gate run, read back by rescore)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> ToolgateOptions:
        if self.command == "run":
            if self.run is None:
                raise ValueError("command run needs the gate run's options")
            return self
        if self.gates is not None:
            unknown = [g for g in self.gates if g not in COMMAND_GATES["check"]]
            if unknown or not self.gates:
                raise ValueError(f"gates must be some of verify, screens, solve, got {self.gates}")
        if self.candidates is None and self.source_run is None:
            raise ValueError("give the candidates file (--candidates FILE)")
        check_screen_names(self.screen)
        return self

    def chosen_gates(self) -> tuple[Gate, ...]:
        """The gates to run, in the fixed order verify, screens, solve (default: the command's)."""
        given = self.gates if self.gates is not None else COMMAND_GATES[self.command]
        return tuple(g for g in COMMAND_GATES["check"] if g in given)

    def source(self) -> str:
        """Where the candidates come from, as the run shows it: the file, or ``run:ID (pool)``."""
        if self.source_run is not None:
            return f"run:{self.source_run} ({self.pool or 'all'})"
        return str(self.candidates)


__all__ = ["GateRunOptions", "PoolCommand", "ToolgateOptions"]
