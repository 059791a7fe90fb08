"""``gate run``: the construction loop on the command line (:mod:`.construction` does the work).

``toolgate/cli.py`` creates the ``gate`` group and calls :func:`add_run_command` to mount this command. Its options
are generated from :class:`~toolgauge.benchmarks.toolgate.options.GateRunOptions` (as ``eval NAME`` is from its
model), and the validated model is what :func:`build` and the benchmark take. Roles:
``generator``, ``screen:<name>`` per screen and ``solver``, each a client resolved from its model spec; equal
specs share one client (started, probed and closed once). ``--resume RUN_ID`` reads the run's finished rounds
from the store and gives them to the generator's prompt; the engine skips them and the gate records skip the
gates that finished in an unfinished round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import typer

from toolgauge.benchmark import lazy
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
from toolgauge.benchmarks.toolgate.generator import ROLE as GENERATOR_ROLE
from toolgauge.benchmarks.toolgate.options import GateRunOptions
from toolgauge.benchmarks.toolgate.screens import ScreenSpec
from toolgauge.cli.common import EngineDefaults, RunFlags, check_isolation, execute, run_command
from toolgauge.cli.generated import with_signature
from toolgauge.cli.option_params import command_values, option_parameters
from toolgauge.errors import UsageError
from toolgauge.models.base import ModelClient
from toolgauge.options import validated

# Seams for tests (and the merge): how a --screen SPEC is parsed, and the gates a round calls.
parse_screen_spec: Callable[[str], Any] = lazy("toolgauge.benchmarks.toolgate.screens", "parse_screen_spec")
gate_functions: Callable[[], GateFunctions] = real_gates

# A round asks a generator for a whole candidate and a solution script: longer replies and requests than a
# tool call; rounds are CPU-heavy (solutions, solver runs), so few at once.
ENGINE = EngineDefaults(concurrency=2, timeout=600.0, max_tokens=DEFAULT_MAX_TOKENS)


def build(
    options: GateRunOptions, *, history: Sequence[RoundResult] = (), gates: GateFunctions | None = None
) -> ConstructionBenchmark:
    """The construction run of ``options`` for the CLI and the API (its screens parsed from their ``--screen`` texts).

    Raises:
        UsageError: an unknown domain, a domain whose libraries are not installed (the pip hint), no screen.
    """
    from toolgauge.benchmarks.toolgate.domains import get_domain

    found = get_domain(options.domain)
    found.require_installed()
    # A --screen text through the parser; a screen's record (the API, a stored config) as a screen.
    parsed = [parse_screen_spec(s) if isinstance(s, str) else validated(ScreenSpec, s, prefix="screen ")
              for s in options.screens]  # fmt: skip
    if not parsed:
        raise UsageError("give at least one --screen")
    return ConstructionBenchmark(options, domain=found, screens=parsed, history=history, gates=gates)


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


def gate_run(*, flags: RunFlags, **values: Any) -> None:
    """Run the construction loop: each round the generator proposes a candidate and the gates decide.

    Gates, cheapest first: local verification in the sandbox, each no-tool screen, the tool-enabled solve. Every
    round, gate record and model call goes to the store as it happens; --resume repeats no finished round or gate.
    --temperature and --max-tokens set the generator's sampling.
    """
    from toolgauge.benchmarks.toolgate.domains import get_domain
    from toolgauge.models.offline import NoModel
    from toolgauge.models.spec import resolve_model

    settings = flags.call_settings()
    given = {**command_values(GateRunOptions, values), "temperature": settings.temperature,
             "max_tokens": settings.max_tokens}  # fmt: skip
    options = validated(GateRunOptions, given, prefix="--")
    get_domain(options.domain).require_installed()  # before anything else: one line with the pip hint
    check_isolation(options.unsafe_no_sandbox)  # solutions and the agents' code run only under bubblewrap
    history = resumed_history(flags.store, flags.resume) if flags.resume else []
    bench = build(options, history=history, gates=gate_functions())
    roles = role_clients(options.generator, bench.screens, options.solver,
                         lambda spec: resolve_model(spec, timeout=flags.timeout))  # fmt: skip
    label = run_label(options.generator, bench.screens, options.solver)
    execute(bench, label, flags, client=NoModel(label), roles=roles, unit="round")


def add_run_command(gate_app: typer.Typer) -> None:
    """Mount ``gate run`` on the ``gate`` group."""
    command = with_signature(gate_run, option_parameters(GateRunOptions))
    gate_app.command("run")(run_command(model=False, engine=ENGINE, limit=False, epochs=False)(command))
