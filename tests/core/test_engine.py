"""The runner engine: concurrency, retries, cache, resume, failures as data."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from sqlalchemy import select

from helpers.episode_helpers import ClientWithoutLifecycle, Echo, echo_episode
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.engine.retry import backoff_delay
from toolgauge.errors import ModelError, TransientModelError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, Message, ModelRequest
from toolgauge.store import open_store, schema


def store_at(tmp_path):
    return open_store(f"sqlite:///{tmp_path / 'runs.db'}")


class CountingClient(ClientWithoutLifecycle):
    """A cacheable client that answers with the prompt reversed, counting calls."""

    name = "counting"
    cacheable = True
    cache_id = "counting-v1"

    def __init__(self, fail_first: int = 0, error: Exception | None = None, delay: float = 0.0):
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail_first = fail_first
        self.error = error
        self.delay = delay

    async def generate(self, request: ModelRequest) -> AssistantTurn:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if self.calls <= self.fail_first:
                raise self.error or TransientModelError("HTTP 429", retry_after=0.0)
            text = request.messages[-1].content or ""
            return AssistantTurn(content=text[::-1])
        finally:
            self.in_flight -= 1


FAST = EngineConfig(concurrency=4, backoff_base=0.001, backoff_cap=0.01, show_progress=False)


async def test_results_come_back_in_input_order_and_are_stored(tmp_path):
    store = store_at(tmp_path)
    run_id = store.create_run("t", "counting", {})
    samples = [(f"s{i}", f"abc{i}") for i in range(20)]
    out = await run_episodes(
        samples, echo_episode, Echo, client=CountingClient(), store=store, run_id=run_id, config=FAST
    )
    assert [o.key for o in out.outcomes] == [k for k, _ in samples]
    assert [o.result.text for o in out.outcomes] == [s[::-1] for _, s in samples]
    stored = store.finished_samples(run_id)
    assert len(stored) == 20 and stored["s3"].result == {"text": "3cba"}
    assert store.call_stats(run_id)["calls"] == 20


async def test_concurrency_is_bounded(tmp_path):
    store = store_at(tmp_path)
    client = CountingClient(delay=0.01)
    cfg = EngineConfig(concurrency=3, show_progress=False)
    await run_episodes(
        [(str(i), "x") for i in range(12)],
        echo_episode,
        Echo,
        client=client,
        store=store,
        run_id=store.create_run("t", "m", {}),
        config=cfg,
    )
    assert client.max_in_flight == 3


async def test_transient_errors_are_retried_then_succeed(tmp_path):
    store = store_at(tmp_path)
    client = CountingClient(fail_first=2)
    run_id = store.create_run("t", "m", {})
    out = await run_episodes([("a", "hi")], echo_episode, Echo, client=client, store=store, run_id=run_id, config=FAST)
    assert out.outcomes[0].result == Echo(text="ih")
    assert client.calls == 3
    stats = store.call_stats(run_id)
    assert stats["calls"] == 1  # one recorded call, with its attempt count


async def test_giving_up_is_recorded_on_the_sample_and_the_run_goes_on(tmp_path):
    store = store_at(tmp_path)
    cfg = EngineConfig(concurrency=1, max_retries=1, backoff_base=0.001, show_progress=False, use_cache=False)
    client = CountingClient(fail_first=2)  # first sample exhausts its two attempts
    run_id = store.create_run("t", "m", {})
    out = await run_episodes(
        [("a", "x"), ("b", "yz")], echo_episode, Echo, client=client, store=store, run_id=run_id, config=cfg
    )
    assert out.outcomes[0].result is None
    assert out.outcomes[0].error.startswith("model_error: gave up after 2 attempts")
    assert out.outcomes[1].result == Echo(text="zy")
    assert store.finished_samples(run_id)["a"].status == "error"


async def test_permanent_errors_are_not_retried(tmp_path):
    store = store_at(tmp_path)
    client = CountingClient(fail_first=1, error=ModelError("HTTP 400: bad request"))
    out = await run_episodes(
        [("a", "x")], echo_episode, Echo, client=client, store=store, run_id=store.create_run("t", "m", {}), config=FAST
    )
    assert client.calls == 1
    assert out.outcomes[0].error == "model_error: HTTP 400: bad request"


async def test_timeouts_are_transient(tmp_path):
    store = store_at(tmp_path)
    client = CountingClient(delay=0.2)
    cfg = EngineConfig(timeout=0.01, max_retries=1, backoff_base=0.001, show_progress=False)
    out = await run_episodes(
        [("a", "x")], echo_episode, Echo, client=client, store=store, run_id=store.create_run("t", "m", {}), config=cfg
    )
    assert client.calls == 2
    assert "timed out after 0.01 s" in out.outcomes[0].error


async def test_crashing_episode_is_recorded_and_others_finish(tmp_path):
    async def sometimes_crash(sample: str, ctx: EpisodeContext) -> Echo:
        if sample == "boom":
            raise ValueError("tool exploded")
        return await echo_episode(sample, ctx)

    store = store_at(tmp_path)
    out = await run_episodes(
        [("1", "ok"), ("2", "boom"), ("3", "fine")],
        sometimes_crash,
        Echo,
        client=CountingClient(),
        store=store,
        run_id=store.create_run("t", "m", {}),
        config=FAST,
    )
    assert [o.error for o in out.outcomes] == [None, "ValueError: tool exploded", None]


async def test_second_run_is_served_from_cache_with_zero_model_calls(tmp_path):
    store = store_at(tmp_path)
    samples = [(str(i), f"q{i}") for i in range(10)]
    first = CountingClient()
    await run_episodes(
        samples, echo_episode, Echo, client=first, store=store, run_id=store.create_run("t", "m", {}), config=FAST
    )
    second = CountingClient()
    out = await run_episodes(
        samples, echo_episode, Echo, client=second, store=store, run_id=store.create_run("t", "m", {}), config=FAST
    )
    assert second.calls == 0
    assert out.cached_calls == 10
    assert [o.result.text for o in out.outcomes] == [f"q{i}"[::-1] for i in range(10)]


async def test_no_cache_option_calls_the_model_again(tmp_path):
    store = store_at(tmp_path)
    samples = [("a", "q")]
    await run_episodes(
        samples,
        echo_episode,
        Echo,
        client=CountingClient(),
        store=store,
        run_id=store.create_run("t", "m", {}),
        config=FAST,
    )
    again = CountingClient()
    cfg = EngineConfig(use_cache=False, show_progress=False)
    await run_episodes(
        samples, echo_episode, Echo, client=again, store=store, run_id=store.create_run("t", "m", {}), config=cfg
    )
    assert again.calls == 1


async def test_resume_repeats_no_finished_sample_and_reruns_failed_ones(tmp_path):
    store = store_at(tmp_path)
    run_id = store.create_run("t", "m", {})
    samples = [(str(i), f"q{i}") for i in range(6)]
    done = asyncio.Event()
    seen: list[str] = []

    async def hang_after_three(sample: str, ctx: EpisodeContext) -> Echo:
        if len(seen) == 3:
            done.set()
            await asyncio.sleep(3600)  # the "Ctrl-C" arrives while this sample is in flight
        seen.append(sample)
        return Echo(text=sample)

    task = asyncio.create_task(
        run_episodes(
            samples,
            hang_after_three,
            Echo,
            client=CountingClient(),
            store=store,
            run_id=run_id,
            config=EngineConfig(concurrency=1, show_progress=False),
        )
    )
    await done.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    store.record_sample(run_id, "5", result=None, error="model_error: boom", latency_s=0.0)
    assert sorted(store.finished_samples(run_id)) == ["0", "1", "2", "5"]

    rerun: list[str] = []

    async def record(sample: str, ctx: EpisodeContext) -> Echo:
        rerun.append(sample)
        return Echo(text=sample)

    out = await run_episodes(
        samples,
        record,
        Echo,
        client=CountingClient(),
        store=store,
        run_id=run_id,
        config=EngineConfig(concurrency=1, show_progress=False),
    )
    assert rerun == ["q3", "q4", "q5"]
    assert out.resumed == 3
    assert [o.result.text for o in out.outcomes] == [s for _, s in samples]
    assert store.finished_samples(run_id)["5"].status == "done"


async def test_scripted_client_serves_outputs_in_order_then_raises():
    client = ScriptedClient(["one", {"tool_calls": [{"name": "f", "arguments": {"x": 1}}]}])
    req = ModelRequest(messages=[Message(role="user", content="hi")])
    first, second = [await client.generate(req) for _ in range(2)]
    assert first.content == "one"
    assert second.tool_calls[0].name == "f" and second.tool_calls[0].arguments == {"x": 1}
    # A script too short is the test's mistake: it is said, never served as an empty reply to score.
    with pytest.raises(ModelError, match="the script has 2 outputs and call 3 asked for one more"):
        await client.generate(req)


async def test_scripted_client_cycles_when_asked():
    client = ScriptedClient(["a", "b"], cycle=True)
    req = ModelRequest(messages=[Message(role="user", content="hi")])
    assert [(await client.generate(req)).content for _ in range(5)] == ["a", "b", "a", "b", "a"]


async def test_scripted_policy_sees_the_request():
    client = ScriptedClient(policy=lambda r: AssistantTurn(content=str(len(r.messages))))
    turn = await client.generate(ModelRequest(messages=[Message(role="user", content="a")] * 3))
    assert turn.content == "3"


def test_backoff_grows_is_capped_and_honours_retry_after():
    rng = random.Random(0)
    delays = [backoff_delay(a, base=1.0, cap=8.0, retry_after=None, rng=rng) for a in range(1, 8)]
    assert all(
        0.5 * min(8.0, 2 ** (a - 1)) <= d < min(8.0, 2 ** (a - 1)) for a, d in zip(range(1, 8), delays, strict=True)
    )
    assert backoff_delay(3, base=1.0, cap=8.0, retry_after=2.5, rng=rng) == 2.5
    assert backoff_delay(3, base=1.0, cap=8.0, retry_after=100.0, rng=rng) == 8.0


def test_many_processes_can_open_a_new_store_at_once(tmp_path):
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    code = f"from toolgauge.store import open_store; s = open_store({url!r}); s.create_run('t', 'm', {{}}); s.close()"
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate()[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    assert len(open_store(url).list_runs()) == 6


async def one_sample_and_its_calls(
    tmp_path, episode, model: ScriptedClient, **roles: ScriptedClient
) -> tuple[Echo | None, list[str]]:
    """Run ``episode`` on sample ``s1``; its result and the sample keys of the model calls logged, in order."""
    store = store_at(tmp_path)
    run_id = store.create_run("t", "scripted", {})
    out = await run_episodes(
        [("s1", "hi")], episode, Echo, client=model, store=store, run_id=run_id, roles=roles, config=FAST
    )
    store.flush()
    with store.engine.connect() as conn:
        logged = [row[0] for row in conn.execute(select(schema.model_calls.c.sample_key))]
    return out.outcomes[0].result, logged


async def test_roles_reach_their_own_client_and_count_their_own_steps(tmp_path):
    model = ScriptedClient(policy=lambda r: AssistantTurn(content=f"model step {r.step}"))
    judge = ScriptedClient(policy=lambda r: AssistantTurn(content=f"judge step {r.step}"))

    async def episode(sample: str, ctx: EpisodeContext) -> Echo:
        texts = []
        for role in ["model", "judge", "model", "judge", "judge"]:
            turn = await ctx.generate([Message(role="user", content=sample)], role=role)
            texts.append(turn.content)
        return Echo(text="|".join(texts))

    result, logged = await one_sample_and_its_calls(tmp_path, episode, model, judge=judge)
    # Interleaved roles must not shift the evaluated model's step numbers (replay tables key on them).
    assert result == Echo(text="model step 0|judge step 0|model step 1|judge step 1|judge step 2")
    assert sorted(logged) == ["s1", "s1", "s1#judge", "s1#judge", "s1#judge"]


async def test_unknown_role_fails_the_sample_with_a_clear_error(tmp_path):
    async def episode(sample: str, ctx: EpisodeContext) -> Echo:
        await ctx.generate([Message(role="user", content=sample)], role="judge")
        return Echo(text="unreachable")

    store = store_at(tmp_path)
    run_id = store.create_run("t", "scripted", {})  # a sample of a run not in the store cannot be stored
    out = await run_episodes(
        [("s1", "hi")], episode, Echo, client=ScriptedClient(outputs=[]), store=store, run_id=run_id
    )
    assert out.outcomes[0].error is not None and "no model client for role 'judge'" in out.outcomes[0].error


class TimeUp(ModelError):
    """The error the test's deadlines end model calls with."""


async def test_a_deadline_ends_the_episodes_model_calls_with_its_error(tmp_path):
    model = ScriptedClient(policy=lambda r: AssistantTurn(content=f"step {r.step}"))
    silent = ScriptedClient(policy=lambda r: AssistantTurn(content="never sent back"), delay=600.0)
    ask = [Message(role="user", content="hi")]

    async def reply(ctx: EpisodeContext, role: str = "model") -> str:
        try:
            return (await ctx.generate(ask, role=role)).content or ""
        except TimeUp as exc:
            return f"raised {exc}"

    async def episode(sample: str, ctx: EpisodeContext) -> Echo:
        texts = []
        with ctx.deadline(time.monotonic() + 600, lambda: TimeUp("far")):
            texts.append(await reply(ctx))  # answered before the deadline: as without one
        with ctx.deadline(time.monotonic() + 0.05, lambda: TimeUp("cut")):
            texts.append(await reply(ctx, "silent"))  # a reply that never comes is cut at the deadline
        with ctx.deadline(time.monotonic() - 1, lambda: TimeUp("past")):
            texts.append(await reply(ctx))  # asked after the deadline: never sent, no step taken
        texts.append(await reply(ctx))  # out of the block: no deadline
        return Echo(text="|".join(texts))

    result, logged = await one_sample_and_its_calls(tmp_path, episode, model, silent=silent)
    assert result == Echo(text="step 0|raised cut|raised past|step 1")
    assert (model.request_count, silent.request_count) == (2, 1)
    assert logged == ["s1", "s1"]  # the call cut short is not recorded
