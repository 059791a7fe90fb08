"""Gate 1 (local verification) in the real sandbox: precedence, the ANSWER rules end to end, hostile solutions
contained and recorded as failed gates, and every fem seed item passing with the real libraries.

Sandbox tests are skipped where bubblewrap is unavailable (the refusal there has its own test). The seed tests
need the ``fem`` extra: skipped without it, except in CI (``CI=true``), where a skip would hide a missing install.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO
from toolgauge.benchmarks.toolgate import verify as verify_module
from toolgauge.benchmarks.toolgate.audit import answer_rank, middle_value
from toolgauge.benchmarks.toolgate.domains import get_domain
from toolgauge.benchmarks.toolgate.records import LETTERS, Candidate
from toolgauge.benchmarks.toolgate.verify import (
    DEFAULT_TIME_LIMIT,
    SandboxSetupError,
    judge,
    verify_candidate,
    verify_limits,
)
from toolgauge.errors import UsageError
from toolgauge.sandbox import SandboxLimits, SandboxResult, SandboxStatus, detect_sandbox, policy

needs_bwrap = pytest.mark.skipif(detect_sandbox() != "bwrap", reason="bubblewrap sandbox not available here")
FEM = get_domain("fem")


def candidate(solution: str, *, answer: str = "B", options: list[str] | None = None, **meta: object) -> Candidate:
    return Candidate(
        id=f"t-{uuid.uuid4().hex[:8]}",
        domain="fem",
        question="Which option?",
        options=options or ["0.1", "0.2", "0.3", "0.4"],
        answer=answer,  # type: ignore[arg-type]
        solution=textwrap.dedent(solution),
        meta=dict(meta),
    )


def run(c: Candidate, time_limit: float = 30.0, **kw: object):
    return asyncio.run(verify_candidate(c, time_limit=time_limit, **kw))  # type: ignore[arg-type]


# --- pure: precedence and limits ---------------------------------------------------------------------------


def result(**kw: object) -> SandboxResult:
    fields: dict[str, object] = {
        "returncode": 0,
        "stdout": "",
        "stderr": "",
        "timed_out": False,
        "reason": None,
        "seconds": 1.0,
    }
    fields.update(kw)
    return SandboxResult.model_validate(fields)


def test_precedence_timeout_then_crash_then_answer_rules():
    c = candidate("pass")
    # The wall clock wins even over a right answer.
    timed = judge(c, result(returncode=-9, stdout="ANSWER: B\n", timed_out=True, reason="timed out"), 300)
    assert (timed.passed, timed.reason, timed.detail) == (False, "timeout", "wall clock of 300 s exceeded")
    # A non-zero exit is a crash even with a right answer; the detail has the exit code and last stderr lines.
    stderr = "".join(f"line {i}\n" for i in range(30)) + "ValueError: bad mesh\n"
    crash = judge(c, result(returncode=1, stdout="ANSWER: B\n", stderr=stderr, reason="exited with code 1"), 300)
    assert (crash.passed, crash.reason, crash.exit_code) == (False, "crashed", 1)
    assert crash.detail is not None
    assert crash.detail.startswith("exit code 1; exited with code 1\n")
    assert crash.detail.endswith("line 29\nValueError: bad mesh")
    assert "line 20" not in crash.detail  # only the last 10 lines
    # A limit that stopped it (output cap) is a crash too, whatever the exit code.
    capped = judge(c, result(returncode=0, stdout="ANSWER: B\n", reason="output limit: more than 10 bytes"), 300)
    assert capped.reason == "crashed" and "output limit" in (capped.detail or "")
    # Then the answer rules.
    assert judge(c, result(stdout="ANSWER: B\n"), 300).passed
    assert judge(c, result(stdout="ANSWER: 0.3\n"), 300).reason == "mismatch"
    assert judge(c, result(stdout=""), 300).reason == "no_answer"
    # A sandbox that never started is not the solution's fault: no verdict.
    with pytest.raises(SandboxSetupError):
        judge(c, result(returncode=125, reason="sandbox failed to start: bwrap: oops"), 300)


def test_the_cpu_limit_sits_above_the_time_limit():
    limits = verify_limits(DEFAULT_TIME_LIMIT)
    assert limits.wall_seconds == 300
    assert limits.cpu_seconds > 300 * (os.cpu_count() or 1)
    assert verify_limits(2.5).cpu_seconds > 2.5 * (os.cpu_count() or 1)


def test_without_bubblewrap_the_solution_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(policy, "sandbox_status", lambda: SandboxStatus(kind="namespaces", why="bwrap not found"))
    monkeypatch.delenv(policy.UNSAFE_ENV, raising=False)
    policy.allow_unisolated(False)
    marker = tmp_path / "ran"
    c = candidate(f"open({str(marker)!r}, 'w').write('x')\nprint('ANSWER: B')\n")
    with pytest.raises(UsageError, match="run only under bubblewrap"):
        run(c)
    assert not marker.exists()


# --- the real sandbox: the rules end to end ---------------------------------------------------------------


@needs_bwrap
def test_question_json_and_workdir():
    c = candidate(
        """
        import json, os
        q = json.load(open("question.json"))
        assert sorted(q) == ["domain", "id", "meta", "options", "question"], sorted(q)
        assert sorted(os.listdir(".")) == ["question.json", "solution.py"], os.listdir(".")
        assert __name__ == "__main__"
        # Answer by value, read from the options the script was given.
        print("ANSWER:", q["options"][1])
        """,
        topic="probe",
    )
    record = run(c)
    assert record.passed, record
    assert (record.selected, record.answer, record.exit_code) == ("B", "0.2", 0)
    assert record.time_limit == 30.0 and record.seconds is not None and record.seconds > 0


@needs_bwrap
@pytest.mark.parametrize(
    ("solution", "reason", "selected"),
    [
        ("print('ANSWER: 0.2000004')", None, "B"),
        ("print('ANSWER: 2.0e-1')", None, "B"),
        ("print('ANSWER: C')", "mismatch", "C"),
        ("print('ANSWER: B')\nprint('ANSWER: B')", "several_answers", None),
        ("print('0.2')", "no_answer", None),
        ("import sys\nprint('ANSWER: B', file=sys.stderr)", "no_answer", None),  # only stdout counts
        ("print('ANSWER: 0.25')", "ambiguous_option", None),  # within half a unit of 0.2 and 0.3
        ("print('ANSWER: 0.47')", "no_matching_option", None),  # 0.4 accepts [0.35, 0.45]
        ("print('ANSWER: B')\nraise SystemExit(3)", "crashed", None),
        ("print('ANSWER: B')\nraise ValueError('diverged')", "crashed", None),
    ],
)
def test_each_reason_end_to_end(solution, reason, selected):
    record = run(candidate(solution))
    assert (record.reason, record.selected) == (reason, selected), record
    assert record.passed == (reason is None)
    if reason == "crashed":
        assert record.detail and record.detail.startswith("exit code ")
        if "ValueError" in solution:
            assert record.detail.endswith("ValueError: diverged")


@needs_bwrap
def test_slow_and_cpu_bound_scripts_are_timeouts():
    sleeping = run(candidate("import time\nprint('ANSWER: B', flush=True)\ntime.sleep(60)"), time_limit=2)
    spinning = run(candidate("while True:\n    pass"), time_limit=2)
    for record in (sleeping, spinning):
        assert (record.passed, record.reason) == (False, "timeout"), record
        assert record.detail == "wall clock of 2 s exceeded"


@needs_bwrap
def test_two_verifications_run_side_by_side(monkeypatch):
    # Both verifications reach the sandbox before either runs its script (an event, not a sleep: a verification
    # that waited for the other's end would leave the first one waiting here, and the count below at 1), and then
    # both sandboxed runs are under way at once (a run that blocked the event loop would end before the other began).
    sandbox = verify_module.run_sandboxed
    arrived = running = most = 0
    both_arrived = asyncio.Event()

    async def counting(*args: Any, **kwargs: Any) -> SandboxResult:
        nonlocal arrived, running, most
        arrived += 1
        if arrived == 2:
            both_arrived.set()
        with contextlib.suppress(TimeoutError):  # broken: the assertions below fail, nothing hangs
            await asyncio.wait_for(both_arrived.wait(), 120)
        running += 1
        most = max(most, running)
        try:
            return await sandbox(*args, **kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(verify_module, "run_sandboxed", counting)
    plain = candidate("print('ANSWER: B')")

    async def both():
        return await asyncio.gather(verify_candidate(plain, time_limit=60), verify_candidate(plain, time_limit=60))

    first, second = asyncio.run(both())
    assert both_arrived.is_set() and most == 2
    assert (first.passed, first.selected) == (second.passed, second.selected) == (True, "B")  # the real scripts ran


# --- hostile solutions: contained, and a failed gate --------------------------------------------------------


@pytest.fixture
def host_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on the host's 127.0.0.1 that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@needs_bwrap
def test_network_is_refused(host_listener):
    port, accepted = host_listener
    # If the connection went through, the script would print the right answer and pass.
    record = run(
        candidate(
            f"""
            import socket, sys
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"ESCAPED")
            except OSError as error:
                sys.exit(f"contained: {{error}}")
            print("ANSWER: B")
            """
        )
    )
    assert (record.passed, record.reason) == (False, "crashed"), record
    assert "contained" in (record.detail or "")
    assert accepted == []


def pids_with(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@needs_bwrap
def test_fork_bomb_is_capped_and_every_process_dies():
    tag = "tgbomb-" + uuid.uuid4().hex
    bomb = candidate(
        f"""
        import os, sys, time
        children = 0
        while children < 2000:  # a cap, so that a sandbox without the process limit cannot take the machine down
            try:
                pid = os.fork()
            except OSError as error:
                print(f"fork refused after {{children}} children: {{error}}", flush=True)
                break
            if pid == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "{tag}"])
            children += 1
        else:
            print("ANSWER: B", flush=True)  # escaped: 2000 children and no refusal
        time.sleep(120)
        """
    )
    limits = verify_limits(6).model_copy(update={"processes": 16})
    record = run(bomb, limits=limits)
    assert (record.passed, record.reason) == (False, "timeout"), record
    assert "fork refused after" in record.stdout_tail
    refused_after = int(record.stdout_tail.split("fork refused after ")[1].split()[0])
    assert refused_after <= 15
    deadline = time.monotonic() + 5
    while pids_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with(tag) == []


@needs_bwrap
def test_writes_outside_never_reach_the_host(tmp_path):
    tag = uuid.uuid4().hex
    canary = tmp_path / "canary"
    canary.mkdir()
    canary.chmod(0o777)  # writable by anyone: only the isolation stops the write
    markers = [Path(p) / f"toolgauge-verify-canary-{tag}" for p in ("/tmp", "/var/tmp", "/dev/shm")]
    targets = [canary / "pwned", *markers, REPO / f"pwned-{tag}"]
    try:
        record = run(
            candidate(
                f"""
                import sys
                failed = 0
                for target in {[str(t) for t in targets]!r}:
                    try:
                        with open(target, "w") as handle:
                            handle.write("pwned")
                        print("wrote", target)
                    except OSError as error:
                        failed += 1
                        print("refused", target, error)
                if failed:
                    sys.exit(f"contained: {{failed}} writes refused")
                print("ANSWER: B")
                """
            )
        )
        assert (record.passed, record.reason) == (False, "crashed"), record
        for target in targets:
            assert not target.exists(), f"{target} reached the host"
        assert list(canary.iterdir()) == []
    finally:
        for target in targets[1:]:
            target.unlink(missing_ok=True)


@needs_bwrap
def test_secrets_are_not_readable(tmp_path, monkeypatch):
    secret = "env-secret-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("TOOLGAUGE_API_KEY", secret)
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o755)
    token = "file-secret-" + uuid.uuid4().hex
    (private / "id_rsa").write_text(token)
    (private / "id_rsa").chmod(0o644)  # world-readable: only the mount isolation hides it
    readme = REPO / "README.md"
    # The script answers right only when it found a secret; contained, it crashes.
    record = run(
        candidate(
            f"""
            import os, sys
            found = [k for k, v in os.environ.items() if "secret" in v or k.endswith("API_KEY")]
            for path in ({str(private / "id_rsa")!r}, {str(readme)!r}, "/proc/1/environ", "/etc/shadow"):
                try:
                    found.append(open(path).read()[:200])
                except OSError as error:
                    print("refused", path, error)
            print("environment:", sorted(os.environ))
            if found:
                print("ANSWER: B")
                print(found)
            else:
                sys.exit("contained: nothing found")
            """
        )
    )
    assert (record.passed, record.reason) == (False, "crashed"), record
    seen = record.stdout_tail + record.stderr_tail + (record.detail or "")
    assert secret not in seen and token not in seen
    assert readme.read_text().splitlines()[0] not in seen


@needs_bwrap
def test_the_harness_is_not_importable_but_the_domain_libraries_are(fem_installed):
    record = run(
        candidate(
            """
            import importlib.util
            import basix, skfem, ufl
            assert importlib.util.find_spec("toolgauge") is None, "the harness leaked into the sandbox"
            print("ANSWER: B")
            """
        ),
        time_limit=120,
    )
    assert record.passed, record


# --- the fem seed items ------------------------------------------------------------------------------------


def test_fem_seeds_are_balanced_and_leak_nothing():
    seeds = FEM.seeds()
    assert len(seeds) >= 8
    assert len({s.id for s in seeds}) == len(seeds)
    # The proposed answer's rank among the numeric values is balanced: no middle-value cue.
    figures = middle_value(seeds)
    assert figures.numeric == len(seeds)
    assert max(figures.rank_counts.values()) - min(figures.rank_counts.values()) <= 1, figures.rank_counts
    assert figures.middle_value_accuracy is not None and figures.middle_value_accuracy <= 0.3
    letters = [s.answer for s in seeds]
    assert max(letters.count(x) for x in LETTERS) - min(letters.count(x) for x in LETTERS) <= 1, letters
    assert len({s.topic for s in seeds}) == len(seeds)  # one topic each
    for seed in seeds:
        assert answer_rank(seed) is not None
        # question.json shows meta: it must not reveal the answer.
        assert seed.answer_value not in str(seed.meta)
        assert len(seed.meta["distractor_errors"]) == 3
        assert "ANSWER:" in seed.solution


@needs_bwrap
def test_every_fem_seed_passes_gate_1_with_the_real_libraries(fem_installed):
    seeds = FEM.seeds()

    async def all_seeds():
        gate = asyncio.Semaphore(2)

        async def one(seed: Candidate):
            async with gate:
                return await verify_candidate(seed, time_limit=DEFAULT_TIME_LIMIT)

        return await asyncio.gather(*(one(s) for s in seeds))

    records = asyncio.run(all_seeds())
    failed = {s.id: (r.reason, r.detail) for s, r in zip(seeds, records, strict=True) if not r.passed}
    assert failed == {}
    assert [r.selected for r in records] == [s.answer for s in seeds]


@needs_bwrap
def test_a_seed_with_a_wrong_proposed_answer_is_a_mismatch(fem_installed):
    seed = next(s for s in FEM.seeds() if s.id == "fem-seed-04")
    wrong = seed.model_copy(update={"answer": "B" if seed.answer != "B" else "C"})
    record = run(wrong, time_limit=DEFAULT_TIME_LIMIT)
    assert (record.reason, record.selected) == ("mismatch", seed.answer)
    assert record.detail == f"selected {seed.answer} ({seed.answer_value!r}), proposed {wrong.answer}"


def test_sandbox_python_is_this_interpreter():
    # The domain check looks modules up in this interpreter because the sandbox runs this same one.
    from toolgauge.sandbox import sandbox_python

    assert sandbox_python() == sys.executable
    assert SandboxLimits().memory_mb < verify_limits().memory_mb  # imports of numpy/scipy/basix need room
