"""``--epochs K`` for Tool-Genesis generation: each try has its own folder and registry entry; resume repeats none.

Try 1 keeps the server's folder ``<out>/<slug>/`` and entry ``<slug>``; try e >= 2 writes ``<out>/<slug>@e<e>/``
and the entry ``<slug>@e<e>``. The evaluation of such runs (sandboxed, with the embedder) is tested in
tests/benchmarks/tool_genesis/test_cli_genesis.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_genesis_generate import CODE, GOOD_ANSWER, SERVER, write_data

from helpers.cli_helpers import invoke, results_of, sample_rows
from toolgauge.benchmarks.tool_genesis.generate import GenesisGenerateBenchmark
from toolgauge.benchmarks.tool_genesis.loader import load_registry
from toolgauge.benchmarks.tool_genesis.registry_file import generated_servers
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.offline import ScriptedClient, as_turn
from toolgauge.records import AssistantTurn, ModelRequest


def test_cli_generate_with_two_epochs_writes_two_folders_and_two_entries(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([GOOD_ANSWER, "no code today"]))  # try 1 answers with a server, try 2 not
    out, rows, store = tmp_path / "gen", tmp_path / "rows.jsonl", f"sqlite:///{tmp_path / 'runs.db'}"
    data = write_data(tmp_path / "data.json")
    args: list[str | Path] = ["genesis", "generate", "--data", data, "--model", f"scripted:{script}", "--out", out,
                              "--store", store, "--concurrency", "1", "--epochs", "2", "--json", "-q"]  # fmt: skip
    result = invoke(*args, "--samples", rows)
    assert result.exit_code == 0, result.output
    results = results_of(result)
    assert results.run is not None and (results.run.epochs, results.run.samples) == (2, 1)
    assert results.value("generated") == 0.5  # the mean over the epochs of 1 and 0
    assert (results.pass_at_k, results.pass_hat_k) == ({"1": 0.5, "2": 1.0}, {"1": 0.5, "2": 0.0})
    assert [(r["id"], r["epoch"], r["value"]) for r in sample_rows(rows)] == [("adder", 1, 1.0), ("adder", 2, 0.0)]
    registry = load_registry(out, check_schemas=False)
    assert list(registry) == ["adder", "adder@e2"]
    assert registry["adder"].error is None and registry["adder"].code_path == out / "adder" / "server.py"
    assert (out / "adder" / "server.py").read_text() == CODE
    assert registry["adder@e2"].error is not None and registry["adder@e2"].code_path == out / "adder@e2" / "server.py"
    assert (out / "adder@e2" / "raw_answer.txt").read_text() == "no code today"
    assert not (out / "adder@e2" / "server.py").exists()

    # Resumed, the finished run asks no model and touches no try's folder or entry.
    before = (out / "registry.json").read_text()
    (out / "adder" / "mark").write_text("try 1")
    (out / "adder@e2" / "mark").write_text("try 2")
    script.write_text(json.dumps(["not a server"]))  # a call would now rewrite a folder
    again = invoke(*args, "--resume", results.run.id)
    assert again.exit_code == 0, again.output
    run = results_of(again).run
    assert run is not None and (run.model_calls, run.resumed_samples) == (0, 2)
    assert (out / "adder" / "mark").is_file() and (out / "adder@e2" / "mark").is_file()
    assert (out / "registry.json").read_text() == before


async def test_resume_of_two_epochs_runs_only_the_failed_try_into_its_own_folder(tmp_path: Path) -> None:
    calls = 0

    def falls_over_once(request: ModelRequest) -> AssistantTurn:
        nonlocal calls
        calls += 1
        if calls == 2:  # try 2 (concurrency 1: epoch 1's try runs first)
            raise RuntimeError("the client fell over")
        return as_turn(GOOD_ANSWER)

    out = tmp_path / "out"

    async def run(client: ScriptedClient, resume: str | None = None):  # type: ignore[no-untyped-def]
        bench = GenesisGenerateBenchmark([SERVER], out_dir=out, strategy="direct", data_label="test")
        options = RunOptions(
            store_url=f"sqlite:///{tmp_path / 'runs.db'}",
            resume=resume,
            engine=EngineConfig(concurrency=1, show_progress=False, epochs=2),
        )
        return await run_benchmark(bench, "scripted", options, client=client)

    first = await run(ScriptedClient(policy=falls_over_once))
    assert first.scored.results.run is not None and first.scored.results.run.sample_errors == 1
    assert list(load_registry(out, check_schemas=False)) == ["adder"]  # the failed try has no entry
    (out / "adder" / "mark").write_text("try 1")

    client = ScriptedClient([GOOD_ANSWER])
    second = await run(client, resume=first.run_id)
    assert client.request_count == 1  # only try 2 ran again
    assert second.scored.results.run is not None and second.scored.results.run.resumed_samples == 1
    assert (out / "adder" / "mark").read_text() == "try 1"  # try 1's folder was not emptied
    assert (out / "adder@e2" / "server.py").read_text() == CODE
    registry = load_registry(out, check_schemas=False)
    assert list(registry) == ["adder", "adder@e2"]
    assert registry["adder@e2"].code_path == out / "adder@e2" / "server.py"
    # The final registry write (genesis generate's output step) makes the same entries from the scores.
    assert [(s.slug, s.code_path, s.error) for s in generated_servers(second.scored)] == [
        ("adder", out / "adder" / "server.py", None),
        ("adder@e2", out / "adder@e2" / "server.py", None),
    ]
