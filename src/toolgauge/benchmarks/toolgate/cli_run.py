"""``gate run``: the construction loop on the command line (:mod:`.construction` does the work).

``toolgate/cli.py`` creates the ``gate`` group and calls :func:`add_run_command` to mount this command. Roles:
``generator``, ``screen:<name>`` per screen and ``solver``, each a client resolved from its model spec; equal
specs share one client (started, probed and closed once). ``--resume RUN_ID`` reads the run's finished rounds
from the store and gives them to the generator's prompt; the engine skips them and the gate records skip the
gates that finished in an unfinished round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from toolgauge.benchmark import lazy
from toolgauge.benchmarks.toolgate.cli_options import RunDomainOpt, RunTimeLimitOpt, SolverStepsOpt
from toolgauge.benchmarks.toolgate.construction import (
    DEFAULT_MAX_TOKENS,
    SOLVER_ROLE,
    ConstructionBenchmark,
    GateFunctions,
    RoundResult,
    ScreenLike,
    prepare_resume,
    real_gates,
    screen_role,
)
from toolgauge.benchmarks.toolgate.generator import DEFAULT_MAX_STEPS
from toolgauge.benchmarks.toolgate.generator import ROLE as GENERATOR_ROLE
from toolgauge.benchmarks.toolgate.options import run_help
from toolgauge.benchmarks.toolgate.protocol import DEFAULT_SOLVER_STEPS
from toolgauge.benchmarks.toolgate.verify import DEFAULT_TIME_LIMIT
from toolgauge.cli.common import EngineDefaults, RunFlags, UnsafeNoSandboxOpt, check_isolation, execute, run_command
from toolgauge.errors import UsageError
from toolgauge.models.base import ModelClient

# Seams for tests (and the merge): how a --screen SPEC is parsed, and the gates a round calls.
parse_screen_spec: Callable[[str], Any] = lazy("toolgauge.benchmarks.toolgate.screens", "parse_screen_spec")
gate_functions: Callable[[], GateFunctions] = real_gates

# A round asks a generator for a whole candidate and a solution script: longer replies and requests than a
# tool call; rounds are CPU-heavy (solutions, solver runs), so few at once.
ENGINE = EngineDefaults(concurrency=2, timeout=600.0, max_tokens=DEFAULT_MAX_TOKENS)


def build(
    *,
    domain: str = "fem",
    generator: str,
    screens: Sequence[str | ScreenLike],
    solver: str,
    rounds: int,
    time_limit: float = DEFAULT_TIME_LIMIT,
    generator_steps: int = DEFAULT_MAX_STEPS,
    solver_steps: int = DEFAULT_SOLVER_STEPS,
    prompt_seeds: int | None = None,
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    history: Sequence[RoundResult] = (),
    gates: GateFunctions | None = None,
) -> ConstructionBenchmark:
    """The construction run for the CLI and the API (screens as ``--screen`` texts or parsed specs).

    Raises:
        UsageError: an unknown domain, a domain whose libraries are not installed (the pip hint), bad numbers.
    """
    from toolgauge.benchmarks.toolgate.domains import get_domain
    from toolgauge.models.spec import display_spec

    found = get_domain(domain)
    found.require_installed()
    parsed = [parse_screen_spec(s) if isinstance(s, str) else s for s in screens]
    if not parsed:
        raise UsageError("give at least one --screen")
    return ConstructionBenchmark(
        domain=found,
        rounds=rounds,
        generator=display_spec(generator),
        screens=parsed,
        solver=display_spec(solver),
        time_limit=time_limit,
        generator_steps=generator_steps,
        solver_steps=solver_steps,
        prompt_seeds=prompt_seeds,
        temperature=temperature,
        max_tokens=max_tokens,
        history=history,
        gates=gates,
    )


def run_label(generator: str, screens: Sequence[ScreenLike], solver: str) -> str:
    """What the run's model column shows: ``generator=X; screens=a,b; solver=Y`` (passwords masked)."""
    from toolgauge.models.spec import display_spec

    names = ",".join(s.name for s in screens)
    return f"generator={display_spec(generator)}; screens={names}; solver={display_spec(solver)}"


def role_clients(
    generator: str, screens: Sequence[Any], solver: str, resolve: Callable[[str], ModelClient]
) -> dict[str, ModelClient]:
    """The client of each role; equal specs share one client."""
    made: dict[str, ModelClient] = {}

    def client(spec: str) -> ModelClient:
        if spec not in made:
            made[spec] = resolve(spec)
        return made[spec]

    roles = {GENERATOR_ROLE: client(generator)}
    for screen in screens:
        roles[screen_role(screen.name)] = client(str(screen.spec))
    roles[SOLVER_ROLE] = client(solver)
    return roles


def resumed_history(store_url: str | None, run_id: str) -> list[RoundResult]:
    """The finished rounds of the run to resume, oldest first (none when the store or the run is missing).

    The unfinished rounds resume from their saved gates (:func:`.construction.prepare_resume`).
    """
    from toolgauge.store import open_store

    store = open_store(store_url)
    try:
        if store.get_run(run_id) is None:
            return []  # the driver says "no such run"
        return prepare_resume(store, run_id)
    finally:
        store.close()


def gate_run(
    generator: Annotated[str, typer.Option("--generator", help=run_help("generator"))],
    screen: Annotated[
        list[str],
        typer.Option("--screen", help=run_help("screens")),
    ],
    solver: Annotated[str, typer.Option("--solver", help=run_help("solver"))],
    rounds: Annotated[int, typer.Option("--rounds", min=1, help=run_help("rounds"))],
    domain: RunDomainOpt = "fem",
    time_limit: RunTimeLimitOpt = DEFAULT_TIME_LIMIT,
    generator_steps: Annotated[
        int, typer.Option("--generator-steps", min=1, help=run_help("generator_steps"))
    ] = DEFAULT_MAX_STEPS,
    solver_steps: SolverStepsOpt = DEFAULT_SOLVER_STEPS,
    prompt_seeds: Annotated[
        int | None,
        typer.Option("--prompt-seeds", min=0, help=run_help("prompt_seeds")),
    ] = None,
    unsafe_no_sandbox: UnsafeNoSandboxOpt = False,
    *,
    flags: RunFlags,
) -> None:
    """Run the construction loop: each round the generator proposes a candidate and the gates decide.

    Gates, cheapest first: local verification in the sandbox, each no-tool screen, the tool-enabled solve. Every
    round, gate record and model call goes to the store as it happens; --resume repeats no finished round or gate.
    --temperature and --max-tokens set the generator's sampling.
    """
    from toolgauge.benchmarks.toolgate.domains import get_domain
    from toolgauge.models.offline import NoModel
    from toolgauge.models.spec import resolve_model

    get_domain(domain).require_installed()  # before anything else: one line with the pip hint
    check_isolation(unsafe_no_sandbox)  # solutions and the agents' code run only under bubblewrap
    screens = [parse_screen_spec(s) for s in screen]
    history = resumed_history(flags.store, flags.resume) if flags.resume else []
    settings = flags.call_settings()
    bench = build(
        domain=domain,
        generator=generator,
        screens=screens,
        solver=solver,
        rounds=rounds,
        time_limit=time_limit,
        generator_steps=generator_steps,
        solver_steps=solver_steps,
        prompt_seeds=prompt_seeds,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        history=history,
        gates=gate_functions(),
    )
    roles = role_clients(generator, screens, solver, lambda spec: resolve_model(spec, timeout=flags.timeout))
    label = run_label(generator, screens, solver)
    execute(bench, label, flags, client=NoModel(label), roles=roles, unit="round")


def add_run_command(gate_app: typer.Typer) -> None:
    """Mount ``gate run`` on the ``gate`` group."""
    gate_app.command("run")(run_command(model=False, engine=ENGINE, limit=False, epochs=False)(gate_run))
