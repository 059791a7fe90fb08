"""kill -9 in the middle of a run, then resume: no finished sample runs twice.

No timing: the killed run's model answers ANSWERED_CALLS calls and then blocks forever, and the test kills it only
once the store shows finished samples, so the kill always lands mid-run whatever the machine's load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from helpers.killable_run import N_SAMPLES, Echo, samples
from helpers.paths import HELPERS
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message
from toolgauge.store import open_store

HERE = HELPERS  # the scripts its children run
ANSWERED_CALLS = 40


def test_resume_after_sigkill_repeats_no_finished_sample(tmp_path):
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    run_id = "kill-run"
    # The store is made before the child opens it: no two processes creating its tables at once.
    store = open_store(url)
    proc = subprocess.Popen([sys.executable, str(HERE / "killable_run.py"), url, run_id, str(ANSWERED_CALLS)])
    try:
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline:
            time.sleep(0.1)
            done = len(store.finished_samples(run_id)) if store.get_run(run_id) else 0
            if done >= 20:
                break
        assert done >= 20, "the run never got going"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = store.finished_samples(run_id)
    assert 20 <= len(finished) <= ANSWERED_CALLS < N_SAMPLES
    assert all(r.status == "done" and r.result == {"text": f"Q{int(k[1:])}"} for k, r in finished.items())

    asked: list[str] = []

    def policy(request):
        asked.append(request.sample_key)
        return AssistantTurn(content=(request.messages[-1].content or "").upper())

    async def episode(sample: str, ctx: EpisodeContext) -> Echo:
        turn = await ctx.generate([Message(role="user", content=sample)])
        return Echo(text=turn.content)

    import asyncio

    out = asyncio.run(
        run_episodes(
            samples(),
            episode,
            Echo,
            client=ScriptedClient(policy=policy),
            store=store,
            run_id=run_id,
            config=EngineConfig(concurrency=4, show_progress=False),
        )
    )
    assert set(asked).isdisjoint(finished)
    assert len(asked) == N_SAMPLES - len(finished)
    assert out.resumed == len(finished)
    assert [o.result.text for o in out.outcomes] == [s.upper() for _, s in samples()]
    assert len(store.finished_samples(run_id)) == N_SAMPLES
    store.close()
