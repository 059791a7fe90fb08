"""Extra model roles in a sweep file (Tool-Genesis's ``agent_model`` and ``judge_model``): planned as
``eval tool-genesis`` / ``genesis evaluate`` decide them, checked like any other key, and given to the cell's run.

Most runs use a small benchmark whose episodes ask each role once (``AskRoles``) in place of Tool-Genesis's
sandboxed servers: what is checked is that the cell's run (whole, or a Ray shard) gets, and uses, the clients
the file names. One real Tool-Genesis sweep (sandbox and embedding tiers) runs L4 with scripted roles and is
compared with ``eval tool-genesis`` given the same roles.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel
from sqlalchemy import select

from helpers.cli_helpers import invoke
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.tool_genesis.build import role_specs
from toolgauge.benchmarks.tool_genesis.loader import write_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer
from toolgauge.engine import EpisodeContext, SampleOutcome
from toolgauge.records import AssistantTurn, Message
from toolgauge.results import EvalResults, Metric, ScoredRun
from toolgauge.store import open_store, schema
from toolgauge.sweep import cells
from toolgauge.sweep.cells import run_cell, run_shard
from toolgauge.sweep.file import parse_sweep
from toolgauge.sweep.limits import LocalLimiter
from toolgauge.sweep.plan import plan_cells

FIXTURES = FIXTURE_ROOT / "genesis"
STUB = "http://127.0.0.1:9/v1#qwen"  # never called: planning only parses it


@pytest.fixture
def genesis(tmp_path: Path) -> dict[str, Path]:
    """A one-server Tool-Genesis data file, a registry of its generated server, and scripts for the roles."""
    spec = json.loads((FIXTURES / "spec.json").read_text())
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{**spec, "server_slug": "correct", "server_name": "correct"}]))
    folder = tmp_path / "pred" / "correct"
    shutil.copytree(FIXTURES / "correct", folder)
    registry = write_registry(
        tmp_path / "pred", [GeneratedServer(slug="correct", schema_path=folder / "tools.json",
                                            code_path=folder / "server.py")]
    )  # fmt: skip
    agent, judge = tmp_path / "agent.json", tmp_path / "judge.json"
    agent.write_text(json.dumps(["agent answer"] * 4))
    judge.write_text(json.dumps(["judge answer"] * 4))
    return {"data": data, "pred": registry, "agent": agent, "judge": judge, "tmp": tmp_path}


def sweep(models: Sequence[str], bench: str) -> str:
    return "".join(f'[[model]]\nspec = "{m}"\n' for m in models) + f'[[benchmark]]\nname = "tool-genesis"\n{bench}'


def test_cells_get_the_roles_eval_tool_genesis_would_give(genesis: dict[str, Path]):
    agent, judge = f"scripted:{genesis['agent']}", f"scripted:{genesis['judge']}"
    text = sweep(["gold", STUB], f'data = "{genesis["data"]}"\njudge_model = "{judge}"\n')
    gold, http = (c.task for c in plan_cells(parse_sweep(text, "s.toml"), "s.toml"))
    # As eval tool-genesis: gold is no agent, so without --agent-model L4 is skipped and no role is asked for;
    # another model is its own agent (sharing its client) beside the judge.
    assert (gold.options["model"], gold.roles) == ("gold", {})
    assert (http.options["model"], http.roles) == (STUB, {"agent": STUB, "judge": judge})
    for task in (gold, http):
        assert task.roles == role_specs(task.options, task.model_spec)

    text = sweep(["gold"], f'data = "{genesis["data"]}"\nagent_model = "{agent}"\njudge_model = "{judge}"\n')
    (cell,) = plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    assert cell.task.roles == {"agent": agent, "judge": judge}
    assert cell.bench.l4.skip_reason is None  # L4 runs (the stored config holds the options that decide it)

    text = sweep([STUB], f'data = "{genesis["data"]}"\njudge_model = "{judge}"\nskip_l4 = true\n')
    (cell,) = plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    assert cell.task.roles == {} and cell.bench.l4.skip_reason == "--skip-l4 given"

    # Scoring a registry (genesis evaluate): no default agent; the judge may be set on the model's entry
    # when every benchmark of the file takes it.
    text = (f'[[model]]\nspec = "{STUB}"\njudge_model = "{judge}"\n[[benchmark]]\nname = "tool-genesis"\n'
            f'data = "{genesis["data"]}"\npred = "{genesis["pred"]}"\nagent_model = "{agent}"\n')  # fmt: skip
    (cell,) = plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    assert cell.task.roles == {"agent": agent, "judge": judge}


@pytest.mark.parametrize(
    ("bench", "model_extra", "message"),
    [
        ("judge_model = 3\n", "", "s.toml: benchmark[1].judge_model: input should be a valid string"),
        ('judge_model = "nonsense"\n', "", "s.toml: benchmark[1].judge_model: unknown model spec 'nonsense'"),
        (
            'agent_model = "scripted:/nowhere/agent.json"\njudge_model = "gold"\n',
            "",
            "s.toml: benchmark[1].agent_model: /nowhere/agent.json",
        ),
        ("", 'judge_model = "nonsense"\n', "s.toml: model[1].judge_model: unknown model spec 'nonsense'"),
        ('model = "gold"\n', "", "s.toml: benchmark[1].model: not an option here: each cell's model is its [[model]]"),
    ],
    ids=["not-a-string", "unknown-spec", "missing-script", "on-the-model", "model-key"],
)
def test_a_bad_role_is_one_line_exit_2_and_nothing_is_written(genesis, bench, model_extra, message):
    path = genesis["tmp"] / "s.toml"
    path.write_text(
        f'[[model]]\nspec = "{STUB}"\n{model_extra}[[benchmark]]\nname = "tool-genesis"\n'
        f'data = "{genesis["data"]}"\n{bench}'
    )
    store = genesis["tmp"] / "store.db"
    result = invoke("sweep", path, "--store", f"sqlite:///{store}")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {genesis['tmp'] / message}"), result.stderr
    assert "Traceback" not in result.output
    assert not store.exists()


class Asked(BaseModel):
    """What each role answered."""

    answers: dict[str, str | None]


class AskRolesOptions(BaseModel):
    """What the run is stored with."""

    roles: list[str]


class AskRoles:
    """A benchmark of two samples whose episode asks the evaluated model (a gold-like answer) and each role."""

    name = "ask-roles"
    result_type = Asked

    def __init__(self, roles: Sequence[str]):
        self.roles = list(roles)
        self.options = AskRolesOptions(roles=self.roles)

    def samples(self) -> list[tuple[str, str]]:
        return [("a", "first"), ("b", "second")]

    async def episode(self, sample: str, ctx: EpisodeContext) -> Asked:
        answers = {}
        for role in self.roles:
            turn = await ctx.generate([Message(role="user", content=sample)], role=role)
            answers[role] = turn.content
        return Asked(answers=answers)

    def score(self, items: Sequence[tuple[str, str]], outcomes: Sequence[SampleOutcome[Asked]]) -> ScoredRun:
        done = sum(1 for o in outcomes if o.result is not None)
        return ScoredRun(EvalResults(benchmark=self.name, metrics=[Metric(name="done", value=done, n=len(items))]))

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        return {}


def role_calls(store_url: str, run_id: str) -> list[tuple[str, str, str]]:
    c = schema.model_calls.c
    store = open_store(store_url)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(select(c.sample_key, c.role, c.response).where(c.run_id == run_id).order_by(c.id))
            return sorted((key, role, json.loads(response)["content"] or "") for key, role, response in rows)
    finally:
        store.close()


@pytest.mark.parametrize("how", ["cell", "shard"])
async def test_the_cells_run_asks_the_roles_the_file_names(genesis, monkeypatch, how):
    agent, judge = f"scripted:{genesis['agent']}", f"scripted:{genesis['judge']}"
    text = sweep(["gold"], f'data = "{genesis["data"]}"\nagent_model = "{agent}"\njudge_model = "{judge}"\n')
    (cell,) = plan_cells(parse_sweep(text, "s.toml"), "s.toml")
    task = cell.task.model_copy(update={"concurrency": 1})
    bench = AskRoles(sorted(task.roles))
    store_url = f"sqlite:///{genesis['tmp'] / 'runs.db'}"
    run_id = "20261202-000000-cafe01"
    if how == "cell":
        assert await run_cell(task, store_url, run_id, LocalLimiter(), bench=bench) == "finished"
    else:
        monkeypatch.setattr(cells, "build_bench", lambda _task: bench)  # a worker rebuilds the cell's benchmark
        assert await run_shard(task, store_url, run_id, 0, ["a", "b"], LocalLimiter()) == 2
    assert role_calls(store_url, run_id) == [
        ("a#agent", "agent", "agent answer"), ("a#judge", "judge", "judge answer"),
        ("b#agent", "agent", "agent answer"), ("b#judge", "judge", "judge answer"),
    ]  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.embedding
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap sandbox not available here")
def test_a_tool_genesis_sweep_runs_l4_with_the_files_roles_as_eval_does(genesis):
    """A real cell: the gold servers generated and run in the sandbox, L4 asked of the scripted agent and judge.

    The same roles given to ``eval tool-genesis`` give the same headline metrics.
    """
    tmp = genesis["tmp"]
    call = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    # Consumed in order: the generated (gold) server's task first, then the reference server's (the oracle).
    genesis["agent"].write_text(json.dumps([call, "The sum is 5.", call, "The sum is 5."]))
    genesis["judge"].write_text(json.dumps([
        "<response><reasoning>ok</reasoning><rating>mostly complete</rating></response>",
        "<response><reasoning>ok</reasoning><rating>fully complete</rating></response>",
    ]))  # fmt: skip
    agent, judge = f"scripted:{genesis['agent']}", f"scripted:{genesis['judge']}"
    path = tmp / "s.toml"
    path.write_text(
        f'[[model]]\nspec = "gold"\n[[benchmark]]\nname = "tool-genesis"\ndata = "{genesis["data"]}"\n'
        f'out = "{tmp / "swept"}"\nagent_model = "{agent}"\njudge_model = "{judge}"\nconcurrency = 1\n'
    )
    store_url = f"sqlite:///{tmp / 'sweep.db'}"
    swept = invoke("sweep", path, "--store", store_url, "--json")
    assert swept.exit_code == 0, swept.output
    (cell,) = json.loads(swept.stdout)["cells"]
    metrics = {name: m["mean"] for name, m in cell["metrics"].items()}
    # "mostly complete" (4 of 5) on the generated server against 5 on the reference: SR_soft 0.8.
    assert metrics["sr_soft"] == pytest.approx(0.8)
    roles = {role for _, role, _ in role_calls(store_url, cell["run"]) if role != "model"}
    assert roles == {"agent", "judge"}

    evaluated = invoke(
        "eval", "tool-genesis", "--model", "gold", "--data", genesis["data"], "--out", tmp / "evaluated",
        "--agent-model", agent, "--judge-model", judge, "--store", f"sqlite:///{tmp / 'eval.db'}", "--json", "-q",
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output
    results = json.loads(evaluated.stdout)
    assert {name: results["summary"][name]["mean"] for name in metrics} == metrics
