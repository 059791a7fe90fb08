"""A run whose store goes away mid-run, then comes back: ``python tests/helpers/full_disk_run.py DIR MODE [N]``.

``scenario`` runs N samples against a store until a write fails, gives the store its room (or its
server) back and reports what a fresh reader finds. MODE ``retry``: the same store writes the rows
it kept. MODE ``resume``: the rows still buffered are abandoned, as when the process exits, and a
fresh store resumes the run.

As a script it is the full-disk case, meant for a private mount namespace (``unshare -m
--propagation private``): it mounts a small tmpfs at DIR for a SQLite store, grows the tmpfs once
the disk is full, and prints one JSON line of findings. MODE ``cli``: the same with the real CLI
(:func:`cli_scenario`): what it printed, the stored status, and a resume. Exits 77 with a reason when no tmpfs can be
mounted. Shared by tests/core/test_store_durability.py, tests/core/test_store_postgres.py and
benchmarks/store_durability.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select

from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import StoreWriteError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import Store, open_store, schema

SMALL_DISK = "640k"
ROOMY_DISK = "64m"


class Answer(BaseModel):
    text: str | None


def answer_for(prompt: str) -> str:
    """A deterministic, bulky answer (about 1.5 kB), so a few hundred samples fill the small disk."""
    return (prompt.upper() + " ") * (1500 // (len(prompt) + 1))


async def episode(sample: str, ctx: EpisodeContext) -> Answer:
    turn = await ctx.generate([Message(role="user", content=sample)])
    return Answer(text=turn.content)


class AuditedStore(Store):
    """A store that remembers which samples it was handed and which of them a flush acknowledged."""

    def __init__(self, base: Store) -> None:
        super().__init__(base.engine, url=base.url)
        self.recorded: list[str] = []
        self.acked: set[str] = set()
        self.calls_recorded = 0
        self.failures = 0
        self.first_error: str | None = None
        self.model_calls_at_first_failure: int | None = None
        self.model_calls = 0

    def record_sample(self, run_id: str, sample_key: str, **kwargs: Any) -> None:
        self.recorded.append(sample_key)
        super().record_sample(run_id, sample_key, **kwargs)

    def record_call(self, row: Any) -> None:
        self.calls_recorded += 1
        super().record_call(row)

    def flush(self) -> None:
        handed = list(self.recorded)
        try:
            super().flush()
        except StoreWriteError as exc:
            self.failures += 1
            if self.first_error is None:
                self.first_error = str(exc)
                self.model_calls_at_first_failure = self.model_calls
            raise
        # A flush that returns has made every sample handed over so far durable: those count as finished.
        self.acked.update(handed)


def mount_tmpfs(where: Path, size: str, *, remount: bool = False) -> None:
    options = f"remount,size={size}" if remount else f"size={size}"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True, capture_output=True)


def stored_rows(url: str, run_id: str) -> dict[str, Any]:
    """What a fresh reader finds: samples by status, model-call rows, rows written twice."""
    reader = open_store(url)
    try:
        samples = reader.finished_samples(run_id)
        c = schema.model_calls.c
        with reader.engine.connect() as conn:
            calls = conn.execute(select(func.count()).where(c.run_id == run_id)).scalar_one()
            doubled = conn.execute(
                select(func.count()).select_from(
                    select(c.sample_key)
                    .where(c.run_id == run_id)
                    .group_by(c.sample_key, c.step, c.created_at)
                    .having(func.count() > 1)
                    .subquery()
                )
            ).scalar_one()
    finally:
        reader.close()
    return {"samples": samples, "calls": int(calls), "doubled_call_rows": int(doubled)}


async def scenario(
    url: str, mode: str, n: int, *, give_back: Callable[[], None], on_model_call: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Run until the store fails, ``give_back`` its room or server, then retry or resume; return the findings.

    ``on_model_call(k)`` is called before the k-th model call of the first process (to take a server away).
    """
    items = [(f"s{i:04d}", f"question {i}") for i in range(n)]
    store = AuditedStore(open_store(url))
    run_id = store.create_run("full-disk", "scripted", {})

    def policy(request: ModelRequest) -> AssistantTurn:
        store.model_calls += 1
        if on_model_call is not None:
            on_model_call(store.model_calls)
        return AssistantTurn(content=answer_for(request.messages[-1].content or ""))

    config = EngineConfig(concurrency=4, show_progress=False)
    error: str | None = None
    try:
        await run_episodes(
            items, episode, Answer, client=ScriptedClient(policy=policy, delay=0.002), store=store, run_id=run_id,
            config=config,
        )  # fmt: skip
    except StoreWriteError as exc:
        error = str(exc)
    acked_while_full = set(store.acked)
    give_back()
    if mode == "retry":
        store.flush()  # the rows it kept, written now that there is room
        store.close()
    else:
        store.engine.dispose()  # the process "exits": rows still buffered are gone, never acknowledged
    after_free = stored_rows(url, run_id)
    present = after_free["samples"]

    asked: list[str] = []

    def resume_policy(request: ModelRequest) -> AssistantTurn:
        asked.append(request.sample_key)
        return AssistantTurn(content=answer_for(request.messages[-1].content or ""))

    resumer = open_store(url)
    outcome = await run_episodes(
        items, episode, Answer, client=ScriptedClient(policy=resume_policy), store=resumer, run_id=run_id,
        config=config,
    )  # fmt: skip
    resumer.close()
    final = stored_rows(url, run_id)
    done_before = {k for k, r in present.items() if r.status == "done"}
    return {
        "mode": mode,
        "samples": n,
        "run_raised": error,
        "flush_failures": store.failures,
        "first_store_error": store.first_error,
        "model_calls_before_failure": store.model_calls_at_first_failure,
        "model_calls_total_first_process": store.model_calls,
        "recorded_samples": len(store.recorded),
        "acked_samples": len(acked_while_full),
        "calls_recorded": store.calls_recorded,
        "present_after_free": len(present),
        "done_after_free": len(done_before),
        "calls_after_free": after_free["calls"],
        "missing_acked": sorted(acked_while_full - set(present)),
        "recorded_but_absent_after_retry": sorted(set(store.recorded) - set(present)) if mode == "retry" else None,
        "resume_asked": len(asked),
        "resume_asked_already_done": sorted(set(asked) & done_before),
        "resumed": outcome.resumed,
        "final_done": sum(1 for r in final["samples"].values() if r.status == "done"),
        "final_wrong": sorted(
            k for k, r in final["samples"].items() if r.result != {"text": answer_for(dict(items)[k])}
        ),
        "doubled_call_rows": final["doubled_call_rows"],
        "final_calls": final["calls"],
    }


def assert_nothing_lost(found: dict[str, Any], mode: str) -> None:
    """The checks every store-failure scenario must pass, on its findings: nothing acknowledged is lost or doubled."""
    assert 0 < found["acked_samples"] < found["samples"], "the store must fail in the middle of the run"
    assert found["missing_acked"] == []
    if mode == "retry":
        # Everything the store was handed, written once the store took writes again.
        assert found["recorded_but_absent_after_retry"] == []
        assert found["calls_after_free"] == found["calls_recorded"]
    assert found["resume_asked_already_done"] == []
    assert found["resume_asked"] == found["samples"] - found["done_after_free"]
    assert found["final_done"] == found["samples"] and found["final_wrong"] == []
    assert found["doubled_call_rows"] == 0


def cli_scenario(where: Path, url: str) -> dict[str, Any]:
    """``toolgauge eval suite`` (4 epochs of bulky answers) until the disk is full; then room, status, resume.

    Returns the first run's exit code and stderr, the run's stored status once the disk has room again, and the
    resume's exit code and done rows per try.
    """
    script = where.parent / "bulky.json"  # beside the small disk, not on it
    script.write_text(json.dumps(["x" * 20_000] * 2000))
    run = [sys.executable, "-m", "toolgauge.cli", "eval", "suite", "--model", f"scripted:{script}", "--store", url,
           "-q", "-c", "8", "--epochs", "4"]  # fmt: skip
    first = subprocess.run(run, capture_output=True, text=True, timeout=240, check=False)
    mount_tmpfs(where, ROOMY_DISK, remount=True)
    reader = open_store(url, create=False)
    try:
        [only] = reader.list_runs(2)
    finally:
        reader.close()
    resumed = subprocess.run([*run, "--resume", only.id], capture_output=True, text=True, timeout=240, check=False)
    reader = open_store(url, create=False)
    try:
        c = schema.samples.c
        with reader.engine.connect() as conn:
            done = conn.execute(
                select(c.sample_key, func.count())
                .where((c.run_id == only.id) & (c.status == "done"))
                .group_by(c.sample_key)
            ).all()
        final = reader.get_run(only.id)
    finally:
        reader.close()
    return {
        "code": first.returncode,
        "stderr": first.stderr,
        "run_id": only.id,
        "status_after": only.status,
        "resume_code": resumed.returncode,
        "resume_stderr": resumed.stderr,
        "final_status": final.status if final is not None else None,
        "done_rows": {str(k): int(n) for k, n in done},
    }


def main() -> None:
    where, mode = Path(sys.argv[1]), sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    try:
        mount_tmpfs(where, SMALL_DISK)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        print(f"cannot mount a tmpfs at {where}: {exc} {detail.decode().strip()}", file=sys.stderr)
        sys.exit(77)
    url = f"sqlite:///{where / 'store.db'}"
    if mode == "cli":
        findings = cli_scenario(where, url)
    else:
        findings = asyncio.run(scenario(url, mode, n, give_back=lambda: mount_tmpfs(where, ROOMY_DISK, remount=True)))
    print(json.dumps(findings))


if __name__ == "__main__":
    main()
