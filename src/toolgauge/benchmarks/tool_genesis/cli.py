"""The ``genesis`` commands (``generate``, ``evaluate``, ``export-sft``); ``eval tool-genesis`` is generated.

``genesis evaluate`` is made from :class:`~.options.GenesisEvaluateOptions` as the generated commands are made from
their models, and runs as ``eval tool-genesis`` does: the same :class:`~.options.GenesisOptions` (with ``pred``),
``build`` and :func:`toolgauge.run_setup.prepare_run`. ``genesis generate`` lives in ``cli_generate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.tool_genesis.cli_generate import add_generate_command
from toolgauge.benchmarks.tool_genesis.cli_sft import add_sft_command
from toolgauge.benchmarks.tool_genesis.options import GenesisEvaluateOptions, GenesisOptions
from toolgauge.cli.common import EngineDefaults, RunFlags, err, execute, run_command
from toolgauge.cli.generated import engine_of, with_signature
from toolgauge.cli.option_params import command_values, option_parameters
from toolgauge.options import validated

if TYPE_CHECKING:
    from toolgauge.models.base import ModelClient

# Scoring a registry asks no model but the L4 roles: their requests take the usual time.
EVALUATE_ENGINE = EngineDefaults(concurrency=2, timeout=120.0)


def genesis_evaluate(*, flags: RunFlags, **values: Any) -> None:
    """Score generated MCP servers (toolgauge's or the official pipeline's registry.json) on L1–L4."""
    from toolgauge.benchmarks.tool_genesis import SPEC
    from toolgauge.benchmarks.tool_genesis.loader import registry_file
    from toolgauge.models.offline import NoModel
    from toolgauge.models.spec import resolve_model
    from toolgauge.run_setup import prepare_run, role_clients, role_specs

    given = validated(GenesisEvaluateOptions, command_values(GenesisEvaluateOptions, values), prefix="--")
    options = GenesisOptions.model_validate(given.model_dump() | {"unsafe_no_sandbox": given.unsafe_no_sandbox})
    label = f"registry:{registry_file(given.pred)}"
    evaluated: ModelClient = NoModel(
        label
    )  # the servers were generated elsewhere: only the agent and judge roles are asked
    roles = role_clients(role_specs(SPEC, options, label), label, evaluated,
                         lambda spec: resolve_model(spec, timeout=flags.timeout))  # fmt: skip
    prepared = prepare_run(SPEC, options, evaluated, engine=engine_of(flags), store=flags.store,
                           roles=roles, show_progress=not flags.quiet, console=err)  # fmt: skip
    execute(prepared.bench, label, flags, client=prepared.client, roles=prepared.roles,
            run_options=prepared.options, unit="server")  # fmt: skip


def add_commands(groups: CommandGroups) -> None:
    """Mount the ``genesis`` group (``generate``, ``evaluate``, ``export-sft``)."""
    genesis_app = typer.Typer(
        help="Tool-Genesis: generate MCP servers from requirements and evaluate them.", no_args_is_help=True
    )
    groups.root.add_typer(genesis_app, name="genesis")
    add_generate_command(genesis_app)
    add_sft_command(genesis_app)
    evaluate = with_signature(genesis_evaluate, option_parameters(GenesisEvaluateOptions))
    genesis_app.command("evaluate")(
        run_command(model=False, engine=EVALUATE_ENGINE, sampling=False, epochs=False, limit=False)(evaluate)
    )
