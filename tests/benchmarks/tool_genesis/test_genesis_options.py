"""Tool-Genesis on its typed options model (issue 23): options -> stored config -> rescore, and the commands' help.

The round trips build the run and score made-up per-server results with the built and the rebuilt benchmark (no
server is launched): the sandbox and embedder checks of ``build`` are stubbed out, they are tested in
test_cli_genesis.py. Old stores (written before the model) are rescored in tests/core/test_options_models.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.cli_helpers import app, runner
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmark import rebuild, stored_config, stored_options
from toolgauge.benchmarks.tool_genesis import SPEC
from toolgauge.benchmarks.tool_genesis import build as genesis_build
from toolgauge.benchmarks.tool_genesis.build import role_specs
from toolgauge.benchmarks.tool_genesis.metrics.compliance import Verdict
from toolgauge.benchmarks.tool_genesis.options import GenesisEvaluateOptions, GenesisOptions
from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisEvalResult
from toolgauge.engine import SampleOutcome
from toolgauge.errors import UsageError
from toolgauge.options import cli_of


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text("[" + (FIXTURE_ROOT / "genesis" / "spec.json").read_text() + "]")
    return path


@pytest.fixture(autouse=True)
def no_run_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(genesis_build, "_check_isolation", lambda unsafe: None)
    monkeypatch.setattr(genesis_build, "_check_embeddings", lambda: None)


def scored(bench: GenesisBenchmark, variant: str) -> object:
    outcomes = []
    for key, _ in bench.samples():
        result = GenesisEvalResult(slug=key, variant=variant, source=bench.source)  # type: ignore[arg-type]
        result.compliance = Verdict(ok=True)
        outcomes.append(SampleOutcome(key=key, result=result, error=None, latency_s=0.1))
    return bench.score(bench.samples(), outcomes).results


@pytest.mark.parametrize(
    "values",
    [
        {"model": "gold", "skip_l4": True, "variant": "strict", "call_timeout": 12.5, "limit": 1},
        {"model": "scripted:agent.json", "judge_model": "scripted:judge.json", "strategy": "code-agent"},
    ],
)
def test_genesis_options_round_trip_through_the_stored_config(data: Path, tmp_path: Path, values: dict) -> None:
    options = GenesisOptions(data=data, out=tmp_path / "out", **values)
    bench = genesis_build.build(options)
    assert isinstance(bench, GenesisBenchmark)
    config = json.loads(json.dumps(stored_config(bench)))  # as the store keeps it
    assert config["n"] == 1 and "source" not in config and "l4" not in config  # the options, not the run's facts
    read_back = stored_options(SPEC, config)
    assert read_back == bench.options
    assert read_back == options.model_copy(update={"data": data, "out": (tmp_path / "out").resolve()})
    again = rebuild(SPEC, config)
    assert isinstance(again, GenesisBenchmark)
    assert stored_config(again) == stored_config(bench) and again.samples() == bench.samples()
    assert (again.source, again.l4, again.call_timeout) == (bench.source, bench.l4, bench.call_timeout)
    variant = str(values.get("variant", "reference"))
    assert scored(again, variant) == scored(bench, variant)
    assert not (tmp_path / "out").exists()  # building a run writes nothing


def test_the_roles_and_l4_come_from_the_same_options(data: Path, tmp_path: Path) -> None:
    options = GenesisOptions(data=data, out=tmp_path / "out", model="scripted:a.json", judge_model="scripted:j.json")
    bench = genesis_build.build(options)
    assert isinstance(bench, GenesisBenchmark) and bench.l4.skip_reason is None
    assert role_specs(options.model_dump(), "scripted:a.json") == {
        "agent": "scripted:a.json",
        "judge": "scripted:j.json",
    }
    gold = genesis_build.build(options.model_copy(update={"model": "gold"}))
    assert isinstance(gold, GenesisBenchmark) and gold.l4.skip_reason == "no agent model (give --agent-model)"


def test_rescoring_another_variant_says_the_servers_must_run_again(data: Path, tmp_path: Path) -> None:
    bench = genesis_build.build(GenesisOptions(data=data, out=tmp_path / "out", model="gold"))
    assert isinstance(bench, GenesisBenchmark)
    other = rebuild(SPEC, json.loads(json.dumps(stored_config(bench))), "strict")
    assert isinstance(other, GenesisBenchmark)
    with pytest.raises(UsageError, match=r"evaluated with --variant reference; the strict variant .* run again"):
        scored_with_reference_results(other)


def scored_with_reference_results(bench: GenesisBenchmark) -> None:
    outcomes = [
        SampleOutcome(key=k, result=GenesisEvalResult(slug=k, variant="reference"), error=None, latency_s=0.1)
        for k, _ in bench.samples()
    ]
    bench.score(bench.samples(), outcomes)


def test_a_run_without_a_registry_or_a_model_is_a_usage_error(data: Path) -> None:
    with pytest.raises(UsageError, match="give a registry to score"):
        genesis_build.build(GenesisOptions(data=data))


@pytest.mark.parametrize(
    ("command", "model"),
    [(["eval", "tool-genesis"], GenesisOptions), (["genesis", "evaluate"], GenesisEvaluateOptions)],
)
def test_the_genesis_commands_offer_every_option_of_their_model(command: list[str], model: type) -> None:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())
    assert model.__doc__.split("\n")[0] in text
    for name, field in model.model_fields.items():
        option = "--" + name.replace("_", "-")
        if cli_of(field.metadata, field.annotation).hidden:
            assert name == "model" or option not in text, name  # --model is the shared option, the evaluated model
            continue
        assert option in text and " ".join(field.description.split()[:4]) in text, name
    # Servers are slow samples: the engine's defaults of the old hand-written commands.
    assert "--concurrency" in text and "[default: 2]" in text
