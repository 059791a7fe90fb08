"""Tool-Genesis evaluation end to end: hand-made broken servers, hostile servers, gold on the shared subset.

Hand-derived expectations use a one-hot embedder (a text has cosine 1 with itself and 0 with any other
text), so Schema-F1 matching reduces to exact texts and the embedding half of a soft score is 1 exactly
when the two compared texts are equal. The fixture spec (tests/fixtures/genesis/spec.json) has two tools,
add(a, b) and greet(name, greeting?), and five unit tests: three of add (the third a recorded error,
"Error: b is required") and two of greet.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.headline_units import assert_headline_reproduced
from helpers.paths import FIXTURE_ROOT
from toolgauge.benchmarks.tool_genesis import SPEC as GENESIS
from toolgauge.benchmarks.tool_genesis.loader import load_genesis, load_registry, write_registry
from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
from toolgauge.benchmarks.tool_genesis.protocol import GenesisBenchmark, GenesisSample, pair_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer
from toolgauge.driver import RunOptions, RunResult, run_benchmark
from toolgauge.engine import EngineConfig
from toolgauge.models.base import ModelClient
from toolgauge.models.offline import GoldClient, ScriptedClient
from toolgauge.results import EvalResults, SampleScore
from toolgauge.sandbox import detect_sandbox

FIXTURES = FIXTURE_ROOT / "genesis"
HOSTILE = FIXTURE_ROOT / "hostile"
# Generated code runs only under bubblewrap; elsewhere a launch is refused (tested in test_sandbox.py).
needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
CASES = [
    "correct",
    "wrong_tool_name",
    "missing_argument",
    "wrong_output_shape",
    "crash_on_call",
    "no_start",
    "noncompliant",
]


class OneHotEmbedder:
    """Every distinct text gets its own basis vector."""

    def __init__(self, dim: int = 8192):
        self.dim = dim
        self.index: dict[str, int] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, self.index.setdefault(text, len(self.index) % self.dim)] = 1.0
        return rows


def build_registry(tmp: Path, cases: Sequence[str], source: Path = FIXTURES) -> tuple[Path, Path]:
    """A data file with one copy of the fixture spec per case (slug = case) and a registry of the servers."""
    spec = json.loads((FIXTURES / "spec.json").read_text())
    data = [{**spec, "server_slug": case, "server_name": case} for case in cases]
    data_path = tmp / "data.json"
    data_path.write_text(json.dumps(data))
    servers = []
    for case in cases:
        folder = tmp / "pred" / case
        shutil.copytree(source / case, folder)
        servers.append(GeneratedServer(slug=case, schema_path=folder / "tools.json", code_path=folder / "server.py"))
    registry = write_registry(tmp / "pred", servers)
    return data_path, registry


@dataclass
class Scored:
    """A run's results and its per-server scores (read while the run's store was open)."""

    results: EvalResults
    servers: dict[str, SampleScore]

    def cascade(self) -> dict[str, int | float | None]:
        return {step: self.results.value("servers", step, by="cascade") for step in self.results.groups("cascade")}


async def run_async(
    bench: GenesisBenchmark,
    store: Path,
    *,
    model: str = "registry:test",
    client: ModelClient | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    concurrency: int = 4,
) -> Scored:
    store.parent.mkdir(parents=True, exist_ok=True)  # toolgauge makes no folder for a named store
    options = RunOptions(
        store_url=f"sqlite:///{store}",
        engine=EngineConfig(concurrency=concurrency, show_progress=False, max_retries=0),
    )
    servers: dict[str, SampleScore] = {}

    def keep(result: RunResult[Any]) -> None:
        servers.update((s.id, s) for s in result.scored.iter_samples())

    result = await run_benchmark(bench, model, options, client=client or GoldClient(), roles=roles, on_scored=keep)
    return Scored(result.scored.results, servers)


def run(
    bench: GenesisBenchmark,
    tmp: Path,
    *,
    client: ModelClient | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    concurrency: int = 4,
) -> Scored:
    return asyncio.run(run_async(bench, tmp / "store.db", client=client, roles=roles, concurrency=concurrency))


def bench_for(
    data: Path, registry: Path, variant: str, *, l4: bool = False, call_timeout: float = 30.0, **kwargs: Any
) -> GenesisBenchmark:
    """``registry`` scored on ``data``; ``l4``: L4 runs (with the ``agent`` and ``judge`` roles the run is given)."""
    servers = load_genesis(data)
    samples, warnings = pair_registry(servers, load_registry(registry))
    roles = {"agent_model": "agent", "judge_model": "judge"} if l4 else {}
    options = GenesisOptions(data=data, pred=registry, variant=variant, call_timeout=call_timeout, **roles)
    return GenesisBenchmark(
        samples, options, data_label=str(data), embedder=OneHotEmbedder(), warnings=warnings, **kwargs
    )


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scored]:
    """Both variants over the seven fixture servers (each launched once per variant)."""
    out = {}
    for variant in ("reference", "strict"):
        tmp = tmp_path_factory.mktemp(f"broken-{variant}")
        data, registry = build_registry(tmp, CASES)
        out[variant] = run(bench_for(data, registry, variant), tmp)
    return out


def metrics(scored: Scored, slug: str) -> dict[str, Any]:
    """One server's per-server scores, with the levels it reached and its failures (from the metadata)."""
    server = scored.servers[slug]
    assert server.value == server.scores["ut_hard"]  # the headline per-server score is UT_hard
    return {**server.scores, "reached": server.metadata["reached"], "failures": server.metadata["failures"]}


@needs_bwrap
def test_correct_server_scores_full_marks_where_the_rules_allow(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "correct"), metrics(broken["strict"], "correct")
    # The schema file has the reference's names and descriptions -> every tool and argument matched exactly.
    # The live list comes from the function signatures, which carry no argument descriptions: the
    # argument texts "a " and "a First addend" differ (cosine 0), so live args F1 = 0 and live
    # Schema-F1 = (1 + 0) / 2 in reference; strict's exact-name pass for arguments matches them all.
    for m in (ref, strict):
        assert (m["compliance"], m["server_execution"], m["schema_f1"]) == (1.0, 1.0, 1.0)
        assert m["ut_hard"] == 1.0
    assert ref["schema_f1_live"] == 0.5
    assert strict["schema_f1_live"] == 1.0
    # reference: the actual text is the JSON dump of the content list, the expected one the bare text, so
    # struct F1 is 0 (list paths vs no paths / non-JSON) and the one-hot cosine of two different texts is 0.
    assert ref["ut_soft"] == 0.0
    # strict: 4 texts equal the recorded output (soft 1). add(a=1) comes back as an error, as expected
    # (hard pass), but MCPServer words it "Error executing tool add: Error: b is required", which is
    # neither equal to nor JSON like "Error: b is required" -> soft 0. UT_soft = 4/5.
    assert strict["ut_soft"] == pytest.approx(0.8)


@needs_bwrap
def test_wrong_tool_name(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "wrong_tool_name"), metrics(broken["strict"], "wrong_tool_name")
    # Tools: greet matched, sum_numbers unmatched (its text differs from add's, cosine 0 < 0.3).
    # tool F1 = F1({greet, P::sum_numbers}, {add, greet}) = 0.5; args of matched greet: 2/2 -> 1.0.
    assert ref["schema_f1"] == pytest.approx(0.75)
    # reference drops add's 3 tests (tool not built): greet's 2 hard-pass -> 1.0.
    assert ref["ut_hard"] == 1.0
    # strict counts them as failures: 2 passes (soft 1 each) out of 5.
    assert strict["ut_hard"] == pytest.approx(0.4)
    assert strict["ut_soft"] == pytest.approx(0.4)  # greet's two exact texts, 1 each, over 5


@needs_bwrap
def test_missing_argument(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "missing_argument"), metrics(broken["strict"], "missing_argument")
    # args: gold {add.a, add.b, greet.name, greet.greeting}, pred {add.a, greet.name, greet.greeting}
    # -> P = 1, R = 3/4, F1 = 6/7; tool F1 = 1 -> Schema-F1 = (1 + 6/7) / 2 = 13/14.
    assert ref["schema_f1"] == pytest.approx(13 / 14)
    # b is dropped on the way in; add answers {"sum": a}. No error word anywhere -> 5/5 hard in reference.
    assert ref["ut_hard"] == 1.0
    # strict: add(2,3) and add(10,-4) differ (struct {sum} vs {sum} = 1, cosine 0 -> soft 0.5 each);
    # add(1) was expected to fail and did not (hard fail; struct 0, cosine 0 -> soft 0); greet 2 x 1.
    assert strict["ut_hard"] == pytest.approx(2 / 5)
    assert strict["ut_soft"] == pytest.approx((0.5 + 0.5 + 0 + 1 + 1) / 5)


@needs_bwrap
def test_wrong_output_shape(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "wrong_output_shape"), metrics(broken["strict"], "wrong_output_shape")
    assert ref["schema_f1"] == 1.0
    # reference only gates on error words: the 2 sums, the expected error (both sides say "error") and the
    # 2 greetings all pass.
    assert ref["ut_hard"] == 1.0
    # strict: only add(1) passes (expected an error, got isError); {"total"} vs {"sum"} and
    # {"message": ...} vs plain text share no key path and differ as text -> soft 0 everywhere.
    assert strict["ut_hard"] == pytest.approx(1 / 5)
    assert strict["ut_soft"] == 0.0


@needs_bwrap
def test_crash_on_call_aborts_the_remaining_tests(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "crash_on_call"), metrics(broken["strict"], "crash_on_call")
    assert ref["server_execution"] == 1.0 and ref["schema_f1"] == 1.0
    # The first test (add) kills the server: 1 failed call; the other 4 are not run.
    # reference counts only the called test (0/1); strict counts all 5 (0/5). Both are 0.
    assert (ref["ut_hard"], ref["ut_soft"], strict["ut_hard"]) == (0.0, 0.0, 0.0)
    assert ref["failures"]["L3"] == "no unit test passed"


@needs_bwrap
def test_no_start_fails_l1_and_zeroes_the_rest(broken: dict[str, Scored]) -> None:
    for variant in ("reference", "strict"):
        m = metrics(broken[variant], "no_start")
        assert m["compliance"] == 1.0 and m["server_execution"] == 0.0
        assert m["schema_f1"] == m["ut_hard"] == m["ut_soft"] == 0.0
        assert m["reached"] == ["L1"]
        assert "did not start in 3 attempt(s)" in m["failures"]["L1"]
        assert "mini_calc_backend_that_does_not_exist" in m["failures"]["L1"]


@needs_bwrap
def test_noncompliant_schema_zeroes_l2_in_reference_only(broken: dict[str, Scored]) -> None:
    ref, strict = metrics(broken["reference"], "noncompliant"), metrics(broken["strict"], "noncompliant")
    # The data's own schemas (anyOf, no additionalProperties) fail the official check but are valid MCP.
    assert ref["compliance"] == 0.0 and ref["compliance_mcp_valid"] == 1.0 and ref["server_execution"] == 1.0
    assert ref["schema_f1"] == 0.0 and ref["ut_hard"] == 0.0 and "not compliant" in ref["failures"]["L1"]
    # strict goes on as for the correct server (same code): 5/5 hard, 4/5 soft.
    assert strict["schema_f1"] == 1.0 and strict["ut_hard"] == 1.0
    assert strict["ut_soft"] == pytest.approx(0.8)


@needs_bwrap
def test_aggregates_and_cascade(broken: dict[str, Scored]) -> None:
    ref = broken["reference"].results
    # L1 passes: all but no_start and noncompliant (5 of 7); all 5 have Schema-F1 > 0; L3 (UT_hard > 0)
    # loses crash_on_call -> 4; L4 was not run -> 0.
    assert broken["reference"].cascade() == {"Start": 7, "L1": 5, "L2": 5, "L3": 4, "L4": 0}
    # server execution: 6 of 7 launched (no_start did not).
    assert ref.value("server_execution") == pytest.approx(6 / 7)
    # UT_hard over all 7 (0 for the two L1 failures and crash_on_call): (1+1+1+1)/7.
    assert ref.value("ut_hard") == pytest.approx(4 / 7)
    assert ref.value("ut_hard", "L3", by="reached") == pytest.approx(4 / 5)
    assert ref.details["l4"].startswith("skipped")
    # The per-server headline (UT_hard) averages to the run's UT_hard; stops are listed for the report.
    servers = broken["reference"].servers
    assert sum(s.value or 0.0 for s in servers.values()) / len(servers) == pytest.approx(4 / 7)
    assert ref.details["stopped"]["no_start"]["level"] == "L1"
    assert servers["crash_on_call"].explanation == "passed L1, L2; stopped at L3: no unit test passed"
    # Every headline metric is the mean of the per-server scores (L4 was skipped: no server carries sr_soft).
    for scored in broken.values():
        assert_headline_reproduced(scored.results, list(scored.servers.values()), GENESIS.headline)
        assert all("sr_soft" not in s.scores for s in scored.servers.values())


# Servers that attack while starting never answer initialize; the others attack, then serve one report tool.
STARTUP_ATTACKS = {
    "big_file": ("No space left", "File too large"),
    "cpu_spin": ("no answer within",),
    "fd_exhaust": ("Too many open files",),
    "fork_bomb": ("",),
    "huge_stdout": ("no answer within",),
    "invalid_utf8": ("invalid UTF-8 on the server's stdout",),
    "memory_bomb": ("MemoryError",),
    "sleep_forever": ("no answer within",),
}


@needs_bwrap
def test_hostile_servers_are_recorded_failures(tmp_path: Path) -> None:
    """Every hostile server of the sandbox fixtures is evaluated; each ends as a scored outcome with a reason.

    All of them are paired with the mini-calc spec and claim its tools in their schema file. In strict,
    a call of a tool the server does not have comes back as an error, so only the one test that expects
    an error (add without b) can pass: UT_hard is 0 or 1/5.
    """
    names = sorted(p.stem for p in HOSTILE.glob("*.py"))
    # Two runs: the attacks that never start get a short startup deadline (they would each wait it out);
    # the servers that must start get a long one, so that a loaded machine cannot fail them.
    groups = {
        "attacks": ([n for n in names if n in STARTUP_ATTACKS], 10.0),
        "starting": ([n for n in names if n not in STARTUP_ATTACKS], 120.0),
    }
    assert all(servers for servers, _ in groups.values())
    for label, (servers, startup_timeout) in groups.items():
        folder = tmp_path / label
        staged = folder / "hostile"
        for name in servers:
            (staged / name).mkdir(parents=True)
            shutil.copy2(HOSTILE / f"{name}.py", staged / name / "server.py")
            shutil.copy2(FIXTURES / "correct" / "tools.json", staged / name / "tools.json")
        data, registry = build_registry(folder, servers, source=staged)
        bench = bench_for(
            data, registry, "strict", startup_timeout=startup_timeout, launch_attempts=1, call_timeout=5.0
        )
        scored = run(bench, folder, concurrency=4)
        assert set(scored.servers) == set(servers)
        assert scored.results.run is not None
        assert scored.results.run.sample_errors == 0  # no episode crashed: every failure is a scored outcome
        for name in scored.servers:
            row = metrics(scored, name)
            assert row["failures"], name  # stopped at some level, with a reason
            if name in STARTUP_ATTACKS:
                assert row["server_execution"] == 0.0, name
                reason = row["failures"]["L1"]
                # Under load an attack may still be running at the startup deadline; that is contained too.
                allowed = (*STARTUP_ATTACKS[name], "no answer within")
                assert "did not start" in reason and any(word in reason for word in allowed), (name, reason)
            else:
                assert row["server_execution"] == 1.0, name
                assert row["ut_hard"] in (0.0, 0.2), name


@needs_bwrap
def test_l4_agent_and_judge_on_generated_and_reference_servers(tmp_path: Path) -> None:
    """One task, solved with the generated server and with the reference server (the oracle), both judged."""
    data, registry = build_registry(tmp_path, ["correct"])
    call = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "c1"}]}
    # The agent script is consumed in order: generated server first (call, answer), then the reference.
    agent = ScriptedClient([call, "The sum is 5.", call, "The sum is 5."], name="agent", record_requests=True)
    judge = ScriptedClient(
        [
            "<response><reasoning>ok</reasoning><rating>mostly complete</rating></response>",
            "<response><reasoning>ok</reasoning><rating>fully complete</rating></response>",
        ],
        name="judge",
    )
    bench = bench_for(data, registry, "reference", l4=True)
    scored = run(bench, tmp_path, roles={"agent": agent, "judge": judge}, concurrency=1)
    row = metrics(scored, "correct")
    # Generated: "mostly complete" = 4 -> soft 4/5, hard (>= 3) 1. Oracle: the reference got 5 (score 1),
    # so SR_j = min(1, 0.8 / (1 + 1e-6)) with the official epsilon.
    assert row["sr_soft"] == pytest.approx(0.8)
    assert row["sr_hard"] == 1.0
    assert row["sr_oracle_normalized"] == pytest.approx(0.8 / (1 + 1e-6))
    assert scored.cascade()["L4"] == 1
    tasks = scored.servers["correct"].metadata["L4"]["tasks"]
    assert [(t["rating"], t["reference_rating"]) for t in tasks] == [(4, 5)]
    # Both agents saw a tool result: the second request of each run carries the add output.
    tool_messages = [m.content for r in agent.requests for m in r.messages if m.role == "tool"]
    assert tool_messages and all('{"sum": 5}' in (m or "") for m in tool_messages)


@pytest.mark.realdata
@needs_bwrap
def test_gold_on_the_shared_subset(data_dir: Path, tmp_path: Path) -> None:
    """--model gold on the 20 shared servers, both variants (one-hot embedder; see the module docstring).

    Schema-F1 of the gold is decided by exact names and identical argument texts, so it does not depend
    on the embedder; reference UT_hard only looks at error words; strict UT_soft compares equal texts.
    """
    path = data_dir / "tool-genesis" / "tool_genesis_v3_subset.json"
    servers = load_genesis(path)

    async def one(variant: str) -> Scored:
        options = GenesisOptions(data=path, variant=variant, model="gold", out=tmp_path / f"gold-{variant}")
        bench = GenesisBenchmark(
            [GenesisSample(server=s) for s in servers], options, data_label=str(path), embedder=OneHotEmbedder()
        )
        return await run_async(bench, tmp_path / f"{variant}.db", model="gold", concurrency=3)

    async def both() -> list[Scored]:
        # Both variants at once: strict's stateful server restarts before each of its 55 tests.
        return list(await asyncio.gather(one("reference"), one("strict")))

    reference_run, strict_run = asyncio.run(both())
    out = {"reference": reference_run, "strict": strict_run}
    for variant, scored in out.items():
        assert scored.results.value("server_execution") == 1.0, variant
        assert scored.results.value("compliance") == 1.0, variant
    ref, strict = out["reference"], out["strict"]
    assert strict.results.value("schema_f1") == 1.0
    # reference: datetime-context-provider's only tool takes no arguments. The official args F1 of two
    # empty lists is 0 (no true positive), so that server scores (1 + 0) / 2 = 0.5 even for the gold, and
    # the mean over 20 servers is (19 + 0.5) / 20 = 0.975.
    assert ref.servers["datetime-context-provider"].scores["schema_f1"] == 0.5
    assert all(s.scores["schema_f1"] == 1.0 for slug, s in ref.servers.items() if slug != "datetime-context-provider")
    assert ref.results.value("schema_f1") == pytest.approx(0.975)
    # A few official tests use argument keys that are not in the schema: dropped on the way in, the call
    # matches no recording and the reference server answers "Error: no recorded answer ..." (a hard fail).
    ref_ut_hard, strict_ut_soft = ref.results.value("ut_hard"), strict.results.value("ut_soft")
    assert ref_ut_hard is not None and ref_ut_hard > 0.9
    assert strict_ut_soft is not None and strict_ut_soft > 0.9
    # datetime-context-provider's tool takes no arguments but its 15 tests carry some: all arrive as {},
    # and only the recording made with {} (if any) can come back.
    low = {slug: s.scores["ut_hard"] for slug, s in strict.servers.items() if (s.scores["ut_hard"] or 0.0) <= 0.5}
    assert set(low) <= {"datetime-context-provider"}, low
    # The headline metrics are the means of the per-server scores (the servers are the clusters).
    for scored in out.values():
        assert_headline_reproduced(scored.results, list(scored.servers.values()), GENESIS.headline)
        assert all(s.cluster == slug for slug, s in scored.servers.items())


@needs_bwrap
def test_strict_restarts_a_stateful_server_before_every_test(tmp_path: Path) -> None:
    """Three tests of a counter, each recorded on a fresh server ("1")."""
    spec = json.loads((FIXTURES / "spec.json").read_text())
    counter = {
        **spec,
        "server_slug": "stateful_counter",
        "server_class": "stateful",
        "tool_definitions": [{"name": "increment", "description": "Add one to the counter and return its value.",
                              "input_schema": {"type": "object", "properties": {}}}],
        "unit_test": {"increment": [{"function_name": "increment", "arguments": {},
                                     "function_output_content": "1"}] * 3},
    }  # fmt: skip
    data = tmp_path / "data.json"
    data.write_text(json.dumps([counter]))
    folder = tmp_path / "pred" / "stateful_counter"
    shutil.copytree(FIXTURES / "stateful_counter", folder)
    registry = write_registry(
        tmp_path / "pred",
        [GeneratedServer(slug="stateful_counter", schema_path=folder / "tools.json", code_path=folder / "server.py")],
    )
    strict = metrics(run(bench_for(data, registry, "strict"), tmp_path / "strict"), "stateful_counter")
    reference = metrics(run(bench_for(data, registry, "reference"), tmp_path / "reference"), "stateful_counter")
    # strict: a fresh process per test answers "1" three times -> 3/3, soft 1 each.
    assert (strict["ut_hard"], strict["ut_soft"]) == (1.0, 1.0)
    # reference never restarts (the official path bug): "1", "2", "3". No error words, so all 3 hard-pass;
    # soft: the JSON dump of the content list vs "1" has no common key path and differs as text -> 0.
    assert (reference["ut_hard"], reference["ut_soft"]) == (1.0, 0.0)


@needs_bwrap
def test_model_output_failures_are_scored_not_raised(tmp_path: Path) -> None:
    """Generated servers (not user input): a non-JSON schema, a generation error, a missing entry."""
    data_path = tmp_path / "data.json"
    spec = json.loads((FIXTURES / "spec.json").read_text())
    data_path.write_text(json.dumps([{**spec, "server_slug": slug} for slug in ("not_json", "no_code", "absent")]))
    servers = load_genesis(data_path)
    (tmp_path / "tools.json").write_text("{'tools': oops")
    samples = [
        GenesisSample(servers[0], GeneratedServer(slug="not_json", schema_path=tmp_path / "tools.json",
                                                  code_path=tmp_path / "missing.py")),
        GenesisSample(servers[1], GeneratedServer(slug="no_code", schema_path=tmp_path / "x.json",
                                                  code_path=tmp_path / "y.py", error="parse failure: no code")),
        GenesisSample(servers[2], None),
    ]  # fmt: skip
    options = GenesisOptions(data=data_path, pred=tmp_path)
    bench = GenesisBenchmark(samples, options, data_label="t", embedder=OneHotEmbedder())
    scored = run(bench, tmp_path)
    assert scored.results.run is not None and scored.results.run.sample_errors == 0
    failures = {slug: s.metadata["failures"]["L1"] for slug, s in scored.servers.items()}
    assert failures["not_json"].startswith("schema file not compliant: schema file is not JSON")
    assert failures["no_code"] == "schema file not compliant: generation failed: parse failure: no code"
    assert failures["absent"] == "schema file not compliant: the server is not in the registry"
    assert scored.cascade()["L1"] == 0 and scored.results.value("server_execution") == 0.0


# -- registry paths are confined to the prediction folder -----------------------------------------
def _unsafe_registry(tmp: Path) -> tuple[Path, Path, str]:
    """A data file of three servers whose registry paths leave the prediction folder, and a planted secret."""
    secret = "planted-secret-" + uuid.uuid4().hex
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "tools.json").write_text(json.dumps({"tools": [{"name": secret, "description": secret}]}))
    (outside / "server.py").write_text(f"# {secret}\n")
    pred = tmp / "pred"
    shutil.copytree(FIXTURES / "correct", pred / "fine")
    (pred / "escape").symlink_to(outside)
    entries = {
        "dotdot": {"json_schema_path": "../outside/tools.json", "env_code_path": "fine/server.py"},
        "absolute": {"json_schema_path": "fine/tools.json", "env_code_path": str(outside / "server.py")},
        "symlink": {"json_schema_path": "escape/tools.json", "env_code_path": "escape/server.py"},
    }
    (pred / "registry.json").write_text(json.dumps(entries))
    spec = json.loads((FIXTURES / "spec.json").read_text())
    data = tmp / "data.json"
    data.write_text(json.dumps([{**spec, "server_slug": slug, "server_name": slug} for slug in entries]))
    return data, pred / "registry.json", secret


def test_registry_paths_outside_the_prediction_folder_are_refused(tmp_path: Path) -> None:
    data, registry, secret = _unsafe_registry(tmp_path)
    servers = load_registry(registry)
    reasons = {slug: server.error for slug, server in servers.items()}
    assert reasons["dotdot"] == (
        "unsafe path: json_schema_path '../outside/tools.json': a '..' component "
        "(paths must stay inside the registry's folder)"
    )
    assert reasons["absolute"] is not None and reasons["absolute"].startswith("unsafe path: env_code_path '/")
    assert "an absolute path" in reasons["absolute"]
    assert reasons["symlink"] is not None and "leads out of the registry's folder" in reasons["symlink"]
    for server in servers.values():  # the refused files are never pointed at
        assert tmp_path / "outside" not in (server.schema_path.resolve().parent, server.code_path.resolve().parent)

    # The evaluation records each refusal as an L1 failure and reads nothing from outside (no launch needed).
    scored = run(bench_for(data, registry, "strict"), tmp_path)
    assert scored.results.run is not None and scored.results.run.sample_errors == 0
    for slug in ("dotdot", "absolute", "symlink"):
        row = metrics(scored, slug)
        assert row["server_execution"] == 0.0 and "unsafe path:" in row["failures"]["L1"], row
    assert secret not in scored.results.model_dump_json()
    assert all(secret not in s.model_dump_json() for s in scored.servers.values())
    assert secret.encode() not in (tmp_path / "store.db").read_bytes()


def test_a_hard_linked_registry_file_is_refused(tmp_path: Path) -> None:
    pred = tmp_path / "pred"
    shutil.copytree(FIXTURES / "correct", pred / "mini-calc")
    secret = tmp_path / "secret.json"
    secret.write_text('{"tools": []}')
    os.link(secret, pred / "mini-calc" / "linked.json")
    (pred / "registry.json").write_text(
        json.dumps({"mini-calc": {"json_schema_path": "mini-calc/linked.json", "env_code_path": "mini-calc/server.py"}})
    )
    error = load_registry(pred)["mini-calc"].error
    assert error is not None and error.startswith("unsafe path: json_schema_path") and "a hard link" in error
