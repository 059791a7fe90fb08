"""The options every ``gate`` command shares (``--domain``, ``--time-limit``, ``--concurrency``, ``--store``,
``--json``): each command accepts each of them, and each has its effect there.

- ``--domain`` filters wherever a command reads a pool: a pool of ``fem`` and ``chem`` candidates keeps only the
  ``fem`` ones; an unknown domain is one line and exit 2; a domain with no candidate in the pool too.
- ``--time-limit`` bounds a solution script (verify, check) and a whole solve (solve, check); the commands that run
  no script (screen, rescreen, audit, export) accept it and say in ``--help`` that it has no effect there.
- ``--concurrency`` is the number of candidates in flight (a real endpoint on 127.0.0.1 counts the requests it
  holds at once); audit and export run no sample and say so in ``--help``.
- ``--store`` is where the run goes or is read from; ``--json`` prints each command's documented shape.

The gate commands on a pool run the real gates: scripts in the real sandbox (bubblewrap), screens and solver
through real HTTP endpoints (tests/helpers/chat_stub.py).
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_stub import ChatStub, completion, is_probe
from helpers.cli_helpers import invoke
from toolgauge.benchmarks.toolgate.answers import permutation_from_seed, present
from toolgauge.benchmarks.toolgate.cli_options import GATE_OPTIONS, GateFlags, gate_command
from toolgauge.benchmarks.toolgate.loader import load_candidates
from toolgauge.benchmarks.toolgate.records import Candidate
from toolgauge.sandbox import detect_sandbox

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
OPTIONS = ["0.1", "0.2", "0.3", "0.4"]
COMMANDS = ("verify", "screen", "solve", "check", "rescreen", "audit", "export", "run")
SHARED = ("--domain", "--time-limit", "--concurrency", "--store", "--json")
COUNT_KEYS = {
    "total", "accepted", "rejected", "flagged", "passed",
    "rejected_by_format", "rejected_by_verify", "rejected_by_screen", "errors",
}  # fmt: skip


def candidate(cid: str, domain: str, solution: str = 'print("ANSWER: 0.2")\n') -> Candidate:
    return Candidate(
        id=cid,
        domain=domain,
        question=f"Question {cid}: which value does the computation give?",
        options=OPTIONS,
        answer="B",
        solution=solution,
        meta={"topic": f"{domain}-topic"},
    )


MIXED = [candidate("f1", "fem"), candidate("c1", "chem"), candidate("f2", "fem"), candidate("c2", "chem")]
FEM_IDS = ["f1", "f2"]


def write_pool(path: Path, candidates: list[Candidate]) -> Path:
    path.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in candidates))
    return path


@pytest.fixture()
def pool(tmp_path: Path) -> Path:
    return write_pool(tmp_path / "mixed.jsonl", MIXED)


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def one_line_error(res: Any, text: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], res.stderr


def latest_run(store: str) -> dict[str, Any]:
    return json.loads(invoke("runs", "--store", store, "--json").stdout)[0]


def gate_json(res: Any) -> dict[str, Any]:
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data) == {"candidates", "counts"} and set(data["counts"]) == COUNT_KEYS
    return data


class InFlight:
    """A real endpoint that counts how many requests it holds at once.

    Until ``target`` requests have been in flight together, each request waits (up to 20 s) for the others; from then
    on it answers at once. ``answer(request)`` gives the reply body.
    """

    def __init__(self, answer: Any, target: int):
        self.answer = answer
        self.target = target
        self.inflight = 0
        self.most = 0
        self.reached = target <= 1
        self.cond = threading.Condition()

    def respond(self, request: dict[str, Any], headers: Any) -> tuple[int, bytes]:
        if is_probe(request):
            return 200, completion("OK")
        with self.cond:
            self.inflight += 1
            self.most = max(self.most, self.inflight)
            if self.inflight >= self.target:
                self.reached = True
                self.cond.notify_all()
            self.cond.wait_for(lambda: self.reached, timeout=20)
            self.inflight -= 1
        return 200, self.answer(request)


def unsure(request: dict[str, Any]) -> bytes:
    return completion("I cannot tell.")


def tool_call(name: str, arguments: dict[str, Any]) -> bytes:
    body = {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{name}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip
    return json.dumps(body).encode()


def submitting(request: dict[str, Any]) -> bytes:
    """A solver that submits B at once (a screen's request, without tools, gets no answer it can use)."""
    if "tools" not in request:
        return completion("I cannot tell.")
    return tool_call("submit_answer", {"answer": "B"})


def sleeping(request: dict[str, Any]) -> bytes:
    """A solver whose code runs past any short time limit."""
    if "tools" not in request:
        return completion("I cannot tell.")
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_call("run_python", {"code": "import time\ntime.sleep(120)\n"})
    return tool_call("submit_answer", {"answer": "B"})


# --- every command declares the five, with honest help ------------------------------------------------------


def help_text(command: str) -> str:
    res = invoke("gate", command, "--help")
    assert res.exit_code == 0, res.output
    return " ".join(re.sub(r"[│╭╰─╮╯]", " ", res.stdout).split())


@pytest.mark.parametrize("command", COMMANDS)
def test_every_gate_command_declares_the_shared_options(command: str):
    text = help_text(command)
    for option in SHARED:
        assert option in text, (command, option)


@pytest.mark.parametrize("command", ["screen", "rescreen", "audit", "export"])
def test_time_limit_says_it_has_no_effect_where_no_script_runs(command: str):
    assert "this one runs no script, so it has no effect here" in help_text(command)


@pytest.mark.parametrize("command", ["audit", "export"])
def test_concurrency_says_it_has_no_effect_where_no_sample_runs(command: str):
    assert "runs no sample, so it has no effect here" in help_text(command)


def test_the_shared_declaration_passes_the_options_it_declared_and_refuses_a_clash():
    seen: list[GateFlags] = []

    @gate_command("domain", "screen", offline=True)
    def command(*, gate: GateFlags, flags: Any) -> None:
        seen.append(gate)

    command(domain="fem", screen=None, store=None, concurrency=1, as_json=False)
    assert seen == [GateFlags(domain="fem")]  # a list option not given is no screen
    with pytest.raises(ValueError, match="clash"):

        @gate_command("seed")
        def clashing(seed: int, *, gate: GateFlags, flags: Any) -> None:
            pass

    with pytest.raises(ValueError, match="not gate options"):
        gate_command("store")
    assert set(GATE_OPTIONS) == set(GateFlags.__dataclass_fields__)


# --- --domain: a filter wherever a command reads a pool -----------------------------------------------------


NOWHERE = "http://127.0.0.1:9/v1#m"  # never asked: the command stops before any model is
GATE_ARGS = {
    "verify": [],
    "screen": ["--screen", "gold"],
    "solve": ["--solver", NOWHERE],
    "check": ["--screen", "gold", "--solver", NOWHERE],
}


@pytest.mark.parametrize("command", list(GATE_ARGS))
def test_pool_commands_refuse_an_unknown_domain_and_a_domain_with_no_candidate(command, pool, store, tmp_path):
    args = ["gate", command, *GATE_ARGS[command], "--store", store, "--candidates"]
    one_line_error(invoke(*args, pool, "--domain", "chem"), "unknown domain 'chem' (known: fem)")
    only_chem = write_pool(tmp_path / "chem.jsonl", [c for c in MIXED if c.domain == "chem"])
    empty = invoke(*args, only_chem, "--domain", "fem")
    one_line_error(empty, f"{only_chem}: no candidates of domain 'fem' (the file has: chem 2)")
    assert json.loads(invoke("runs", "--store", store, "--json").stdout or "[]") == []  # nothing was run


def test_screen_domain_filter_store_concurrency_and_json(pool, store, tmp_path):
    stub = InFlight(unsure, target=2)
    with ChatStub(stub.respond) as server:
        res = invoke("gate", "screen", "--candidates", pool, "--screen", f"{server.model()},name=unsure", "--domain",
                     "fem", "--time-limit", "5", "--concurrency", "2", "--store", store, "--json")  # fmt: skip
    data = gate_json(res)
    assert [c["id"] for c in data["candidates"]] == FEM_IDS  # the chem candidates are left out
    assert all(set(c["gates"]) == {"screens"} and c["outcome"] == "passed" for c in data["candidates"])
    assert stub.most == 2  # two candidates in flight at once
    run = latest_run(store)  # the run went to --store
    assert run["benchmark"] == "toolgate" and run["samples"] == 2
    stored = json.loads(invoke("report", run["id"], "--store", store, "--json").stdout)
    assert stored["settings"]["time_limit"] == 5.0  # recorded, though no script ran
    # Rescoring reads the file again and keeps the same domain's candidates: the same figures.
    again = json.loads(invoke("rescore", run["id"], "--store", store, "--json").stdout)
    assert again["metrics"] == stored["metrics"] and again["details"]["counts"]["total"] == 2
    # One at a time with --concurrency 1 (the endpoint never holds two).
    single = InFlight(unsure, target=1)
    with ChatStub(single.respond) as server:
        res = invoke("gate", "screen", "--candidates", pool, "--screen", f"{server.model()},name=unsure", "--domain",
                     "fem", "--concurrency", "1", "--store", store, "--json")  # fmt: skip
    assert gate_json(res)["counts"]["passed"] == 2 and single.most == 1


@needs_bwrap
def test_verify_domain_filter_time_limit_and_json(store, tmp_path, fem_installed):
    # A limit far above what a sandboxed script needs to start, and a slow candidate far past it.
    slow = candidate("f3", "fem", solution="import time\ntime.sleep(600)\nprint('ANSWER: 0.2')\n")
    path = write_pool(tmp_path / "pool.jsonl", [*MIXED, slow])
    res = invoke("gate", "verify", "--candidates", path, "--domain", "fem", "--time-limit", "20", "--concurrency", "3",
                 "--store", store, "--json")  # fmt: skip
    data = gate_json(res)
    outcomes = {c["id"]: (c["outcome"], c["reason"], c["gates"]["verify"]["time_limit"]) for c in data["candidates"]}
    assert outcomes == {
        "f1": ("passed", None, 20.0),
        "f2": ("passed", None, 20.0),
        "f3": ("rejected", "timeout", 20.0),  # the script's wall clock is --time-limit
    }
    assert latest_run(store)["samples"] == 3


@needs_bwrap
def test_solve_domain_filter_concurrency_time_limit_and_json(pool, store, tmp_path, fem_installed):
    stub = InFlight(submitting, target=2)
    with ChatStub(stub.respond) as server:
        res = invoke("gate", "solve", "--candidates", pool, "--solver", server.model("solver"), "--domain", "fem",
                     "--time-limit", "60", "--concurrency", "2", "--store", store, "--json")  # fmt: skip
    data = gate_json(res)
    assert [c["id"] for c in data["candidates"]] == FEM_IDS
    assert all(c["outcome"] == "accepted" and c["gates"]["solve"]["time_limit"] == 60.0 for c in data["candidates"])
    assert stub.most == 2
    # The release re-shuffles with fresh seeds: two exports of the run draw different permutation seeds, and each
    # item's options and answer letter follow its own seed.
    run_id = latest_run(store)["id"]
    releases = []
    for name in ("one", "two"):
        assert invoke("gate", "export", run_id, "--out", tmp_path / name, "--store", store).exit_code == 0
        records = [json.loads(line) for line in (tmp_path / name / "records.jsonl").read_text().splitlines()]
        items = load_candidates(tmp_path / name / "accepted.jsonl")
        for record, item in zip(records, items, strict=True):
            permutation = record["release"]["permutation"]
            assert permutation == permutation_from_seed(record["release"]["seed"])
            assert item.options == present(OPTIONS, permutation) and item.answer_value == "0.2"
        releases.append({r["id"]: r["release"]["seed"] for r in records})
    assert set(releases[0]) == set(releases[1]) == set(FEM_IDS)
    assert all(releases[0][i] != releases[1][i] for i in FEM_IDS)  # 63 random bits each
    # The whole solve has the time limit: a solver whose code sleeps past it is stopped.
    with ChatStub(InFlight(sleeping, target=1).respond) as server:
        res = invoke("gate", "solve", "--candidates", pool, "--solver", server.model("solver"), "--domain", "fem",
                     "--time-limit", "2", "--limit", "1", "--store", store, "--json")  # fmt: skip
    (entry,) = gate_json(res)["candidates"]
    assert (entry["outcome"], entry["reason"], entry["gates"]["solve"]["time_limit"]) == ("flagged", "timeout", 2.0)


@needs_bwrap
def test_check_domain_filter_concurrency_time_limit_and_json(pool, store, fem_installed):
    stub = InFlight(submitting, target=2)
    with ChatStub(stub.respond) as server:
        res = invoke("gate", "check", "--candidates", pool, "--screen", f"{server.model()},name=unsure", "--solver",
                     server.model("solver"), "--domain", "fem", "--time-limit", "30", "--concurrency", "2", "--store",
                     store, "--json")  # fmt: skip
    data = gate_json(res)
    assert [c["id"] for c in data["candidates"]] == FEM_IDS
    for entry in data["candidates"]:
        assert set(entry["gates"]) == {"verify", "screens", "solve"} and entry["outcome"] == "accepted"
        assert entry["gates"]["verify"]["time_limit"] == entry["gates"]["solve"]["time_limit"] == 30.0
    assert stub.most == 2


# --- stored pools: rescreen, audit, export ------------------------------------------------------------------


@pytest.fixture()
def stored_mixed(pool: Path, store: str) -> str:
    """A stored run over the mixed pool (every candidate passes an unsure screen); its id."""
    with ChatStub(InFlight(unsure, target=1).respond) as server:
        res = invoke("gate", "screen", "--candidates", pool, "--screen", f"{server.model()},name=unsure", "--store",
                     store, "--json")  # fmt: skip
    assert gate_json(res)["counts"]["passed"] == 4
    return str(latest_run(store)["id"])


def test_rescreen_domain_filter_concurrency_time_limit_and_json(stored_mixed, store):
    stub = InFlight(unsure, target=2)
    with ChatStub(stub.respond) as server:
        res = invoke("gate", "rescreen", stored_mixed, "--screen", f"{server.model()},name=again", "--pool",
                     "all", "--domain", "fem", "--time-limit", "9", "--concurrency", "2", "--store", store,
                     "--json")  # fmt: skip
    data = gate_json(res)
    assert [c["id"] for c in data["candidates"]] == FEM_IDS
    assert stub.most == 2
    run = latest_run(store)
    settings = json.loads(invoke("report", run["id"], "--store", store, "--json").stdout)["settings"]
    assert (settings["command"], settings["source_run"], settings["time_limit"]) == ("rescreen", stored_mixed, 9.0)
    one_line_error(invoke("gate", "rescreen", stored_mixed, "--screen", "gold", "--domain", "chem", "--store", store),
                   "unknown domain 'chem' (known: fem)")  # fmt: skip


def test_audit_domain_filter_on_a_run_and_a_file(stored_mixed, store, pool):
    res = invoke("gate", "audit", stored_mixed, "--domain", "fem", "--time-limit", "1", "--concurrency", "3",
                 "--store", store, "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["domain"] == "fem" and report["pool"] == 2
    assert report["topics"]["counts"] == {"fem-topic": 2}
    assert {"middle_value_share", "middle_value_accuracy", "position_bias", "funnel", "source"} <= set(report)
    everything = json.loads(invoke("gate", "audit", stored_mixed, "--store", store, "--json").stdout)
    assert everything["pool"] == 4 and everything["domain"] is None
    from_file = json.loads(invoke("gate", "audit", "--candidates", pool, "--domain", "fem", "--json").stdout)
    assert from_file["pool"] == 2 and from_file["topics"]["counts"] == {"fem-topic": 2}
    one_line_error(invoke("gate", "audit", stored_mixed, "--domain", "chem", "--store", store),
                   "unknown domain 'chem' (known: fem)")  # fmt: skip
    text = invoke("gate", "audit", stored_mixed, "--domain", "fem", "--store", store)
    assert text.exit_code == 0 and "domain fem · pool 2" in text.stdout


def test_export_domain_filter_store_and_json(stored_mixed, store, tmp_path):
    out = tmp_path / "release"
    res = invoke("gate", "export", stored_mixed, "--out", out, "--domain", "fem", "--time-limit", "1", "--concurrency",
                 "3", "--store", store, "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = json.loads(res.stdout)
    assert manifest["domain"] == "fem" and manifest["run"] == stored_mixed
    assert manifest["counts"] == {"accepted": 0, "rejected": 0, "flagged": 0, "passed": 2, "errors": 0}
    log = [json.loads(line) for line in (out / "rejections.jsonl").read_text().splitlines()]
    assert [e["id"] for e in log] == FEM_IDS  # the chem candidates are not exported
    assert json.loads((out / "manifest.json").read_text()) == manifest
    one_line_error(invoke("gate", "export", stored_mixed, "--out", tmp_path / "x", "--domain", "chem", "--store",
                          store), "unknown domain 'chem' (known: fem)")  # fmt: skip
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_a_stored_pool_without_candidates_of_the_domain_is_one_line(store, tmp_path):
    only_chem = write_pool(tmp_path / "chem.jsonl", [c for c in MIXED if c.domain == "chem"])
    invoke("gate", "screen", "--candidates", only_chem, "--screen", "gold", "--store", store)
    run_id = latest_run(store)["id"]
    for args in (["audit", run_id], ["export", run_id, "--out", tmp_path / "out"]):
        res = invoke("gate", *args, "--domain", "fem", "--store", store)
        one_line_error(res, f"run {run_id} has no candidates of domain 'fem' (it has: chem 2)")
