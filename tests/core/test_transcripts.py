"""Stored transcripts: every model call's request and response, rebuilt from the store alone."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import zlib

import pytest
from pydantic import BaseModel
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    func,
    inspect,
    select,
)

from helpers.cli_helpers import invoke
from toolgauge.benchmarks.suite.build import build
from toolgauge.benchmarks.suite.loader import builtin_suite_path, load_suite
from toolgauge.driver import RunOptions, run_benchmark
from toolgauge.engine import EngineConfig, EpisodeContext, run_episodes
from toolgauge.errors import EndpointDown, ModelError, UsageError
from toolgauge.models.offline import ScriptedClient
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolCall, ToolSpec
from toolgauge.redact import MASK, needs_redaction, redact
from toolgauge.store import open_store, schema
from toolgauge.store.schema import SCHEMA_VERSION
from toolgauge.store.transcripts import pack, unpack

FAST = EngineConfig(concurrency=4, show_progress=False, max_retries=0)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    return str(request.getfixturevalue("pg_url"))


def gold_with_a_mark(request: ModelRequest) -> AssistantTurn:
    """The gold answer, with the sample and step in its text so each response is told apart."""
    assert request.gold is not None
    return request.gold.model_copy(update={"content": f"{request.sample_key}/{request.step}: {request.gold.content}"})


def blob_texts(url: str) -> list[str]:
    reader = open_store(url, create=False)
    with reader.engine.connect() as conn:
        texts = [json.dumps(unpack(data)) for data in conn.execute(select(schema.blobs.c.data)).scalars()]
    reader.close()
    return texts


# -- the transcript is what the model was sent and answered ------------------------------------------------


async def test_every_suite_dialogue_is_rebuilt_from_the_store_as_sent_and_answered(store_url):
    client = ScriptedClient(policy=gold_with_a_mark, record_requests=True)
    result = await run_benchmark(build(), "scripted", RunOptions(store_url=store_url, engine=FAST), client=client)
    dialogues = load_suite(builtin_suite_path())
    assert len(client.requests) == sum(d.n_turns for d in dialogues) == 55
    store = open_store(store_url, create=False)
    for dialogue in dialogues:
        sent = sorted((r for r in client.requests if r.sample_key == dialogue.id), key=lambda r: r.step)
        calls = store.transcript(result.run_id, dialogue.id)
        assert [c.step for c in calls] == list(range(dialogue.n_turns))
        assert [c.messages for c in calls] == [r.messages for r in sent]
        assert [c.tools for c in calls] == [r.tools for r in sent]
        assert [c.options for c in calls] == [r.options for r in sent]
        assert [c.response for c in calls] == [gold_with_a_mark(r) for r in sent]
        assert {(c.role, c.cached, c.attempts, c.error) for c in calls} == {("model", False, 1, None)}
    store.close()


async def test_a_multi_step_dialogue_shows_its_real_history_tools_and_answers(store_url):
    result = await run_benchmark(
        build(),
        "scripted",
        RunOptions(store_url=store_url, engine=FAST),
        client=ScriptedClient(policy=gold_with_a_mark),
    )
    store = open_store(store_url, create=False)
    calls = store.transcript(result.run_id, "travel-001")
    store.close()
    assert len(calls) == 4
    first, last = calls[0], calls[-1]
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[1].content == "Find flights from Boston to Denver on 2025-08-09."
    assert [t.name for t in first.tools] == ["search_flights", "book_flight", "search_hotels"]
    assert first.tools[0].parameters["required"] == ["origin", "destination", "date"]
    assert first.response.tool_calls == [
        ToolCall(name="search_flights", arguments={"origin": "Boston", "destination": "Denver", "date": "2025-08-09"})
    ]
    # The last step was sent the whole gold history: 3 earlier turns of user, call, result, answer.
    assert [m.role for m in last.messages] == ["system", *(["user", "assistant", "tool", "assistant"] * 3), "user"]
    assert last.messages[:10] == calls[2].messages  # the previous request is its prefix
    assert last.messages[7].name == "book_flight" and '"booking_ref": "QX7T2L"' in last.messages[7].content
    assert last.messages[-1].content == "Perfect, thank you."
    assert last.response == AssistantTurn(
        content="travel-001/3: You're welcome, have a good trip to Denver!", finish_reason="stop"
    )


class Pair(BaseModel):
    text: str | None


async def test_history_edited_between_calls_is_stored_as_sent_each_time(store_url):
    """The stored chain follows each request exactly: a message changed in place, a message replaced in the
    middle (the ones after it, though equal, now follow another message), a tool call's arguments edited."""
    sent: list[list[Message]] = []

    async def episode(sample: str, ctx: EpisodeContext) -> Pair:
        call = ToolCall(name="f", arguments={"x": 1}, id="c1")
        messages = [
            Message(role="system", content="S"),
            Message(role="user", content="first question"),
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", content="result", tool_call_id="c1"),
        ]
        for edit in range(4):
            if edit == 1:
                messages[1].content = "edited in place"
            elif edit == 2:
                messages[1] = Message(role="user", content="replaced")
            elif edit == 3:
                call.arguments["x"] = 2
            await ctx.generate(messages)
            sent.append([m.model_copy(deep=True) for m in messages])
        return Pair(text="done")

    store = open_store(store_url)
    run_id = store.create_run("t", "m", {})
    client = ScriptedClient(policy=lambda r: AssistantTurn(content="ok"))
    await run_episodes([("s", "x")], episode, Pair, client=client, store=store, run_id=run_id, config=FAST)
    calls = store.transcript(run_id, "s")
    store.close()
    assert [c.messages for c in calls] == sent
    assert [c.messages[1].content for c in calls] == ["first question", "edited in place", "replaced", "replaced"]
    assert [c.messages[2].tool_calls[0].arguments for c in calls] == [{"x": 1}] * 3 + [{"x": 2}]


async def test_roles_failures_usage_and_cached_answers_are_recorded(tmp_path):
    class Cacheable(ScriptedClient):
        cacheable = True

    def policy(request: ModelRequest) -> AssistantTurn:
        if request.messages[-1].content == "fail":
            raise ModelError("HTTP 400: bad request")
        return AssistantTurn(content=f"{request.messages[-1].content}!", usage={"input_tokens": 7, "output_tokens": 2})

    judge = ScriptedClient(policy=lambda r: AssistantTurn(content="fair"))

    async def episode(sample: str, ctx: EpisodeContext) -> Pair:
        answer = await ctx.generate([Message(role="user", content=sample)])
        verdict = await ctx.generate([Message(role="user", content=f"judge: {answer.content}")], role="judge")
        with contextlib.suppress(ModelError):
            await ctx.generate([Message(role="user", content="fail")], options=GenerateOptions(max_tokens=9))
        return Pair(text=verdict.content)

    url = f"sqlite:///{tmp_path / 's.db'}"
    for expect_cached in (False, True):
        store = open_store(url)
        run_id = store.create_run("t", "m", {})
        client = Cacheable(policy=policy)
        await run_episodes(
            [("s1", "hi")],
            episode,
            Pair,
            client=client,
            store=store,
            run_id=run_id,
            config=FAST,
            roles={"judge": judge},
        )
        calls = store.transcript(run_id, "s1")
        store.close()
        assert [(c.role, c.step) for c in calls] == [("model", 0), ("judge", 0), ("model", 1)]
        model, verdict, failed = calls
        assert model.messages == [Message(role="user", content="hi")] and verdict.messages[0].content == "judge: hi!"
        assert model.response.content == "hi!" and model.cached is expect_cached
        assert (model.usage.input_tokens, model.usage.output_tokens) == (7, 2)
        assert model.request_hash is not None and verdict.request_hash is None  # the judge is not cacheable
        assert failed.response is None and failed.error == "HTTP 400: bad request" and failed.options.max_tokens == 9
        assert not failed.cached  # a failure is never served from the cache


async def test_a_sample_key_holding_a_hash_sign_gets_only_its_own_calls(store_url):
    judge = ScriptedClient(policy=lambda r: AssistantTurn(content="judged " + (r.messages[0].content or "")))

    async def episode(sample: str, ctx: EpisodeContext) -> Pair:
        await ctx.generate([Message(role="user", content=sample)])
        verdict = await ctx.generate([Message(role="user", content=sample)], role="judge")
        return Pair(text=verdict.content)

    store = open_store(store_url)
    run_id = store.create_run("t", "m", {})
    samples = [("a", "a"), ("a#b", "a#b"), ("a#judge", "a#judge"), ("a$", "a$"), ("a%", "a%")]
    client = ScriptedClient(policy=lambda r: AssistantTurn(content=r.messages[0].content))
    await run_episodes(samples, episode, Pair, client=client, store=store, run_id=run_id, config=FAST,
                       roles={"judge": judge})  # fmt: skip
    for key, _ in samples:
        calls = store.transcript(run_id, key)
        assert [(c.role, c.response.content) for c in calls] == [("model", key), ("judge", f"judged {key}")], key
    # Sample "a#judge" runs again (its row is gone), "a" is done: only the first one's calls go.
    store.forget_samples(run_id, ["a#judge"])
    store.forget_calls(run_id, keep={"a", "a#b", "a$", "a%"})
    assert store.transcript(run_id, "a#judge") == [] and len(store.transcript(run_id, "a")) == 2
    store.close()


# -- what is stored: once, compressed, masked ------------------------------------------------------------------


def big_tools(n: int) -> list[ToolSpec]:
    return [
        ToolSpec(
            name=f"tool_{k}",
            description=f"Tool {k} looks things up in a system that has a long description. " * 8,
            parameters={
                "type": "object",
                "properties": {f"p{j}": {"type": "string", "description": "x" * 60} for j in range(8)},
            },
        )
        for k in range(n)
    ]


TOOLS = big_tools(20)


async def tool_episode(sample: str, ctx: EpisodeContext) -> Pair:
    messages = [Message(role="system", content="You use tools."), Message(role="user", content=sample)]
    for _ in range(3):  # a growing dialogue: each request repeats the last one and adds two messages
        turn = await ctx.generate(messages, [ToolSpec.model_validate(t.model_dump()) for t in TOOLS])
        messages += [turn.as_message(), Message(role="tool", content=f"result for {sample}", tool_call_id="c")]
    return Pair(text=turn.content)


async def blob_bytes_after(tmp_path, n: int) -> tuple[int, int, int]:
    url = f"sqlite:///{tmp_path / f'{n}.db'}"
    store = open_store(url)
    run_id = store.create_run("t", "m", {})
    client = ScriptedClient(policy=lambda r: AssistantTurn(tool_calls=[ToolCall(name="tool_1", id="c")]))
    samples = [(f"s{i}", f"question {i}") for i in range(n)]
    await run_episodes(samples, tool_episode, Pair, client=client, store=store, run_id=run_id, config=FAST)
    with store.engine.connect() as conn:
        blobs, size = conn.execute(select(func.count(), func.sum(func.length(schema.blobs.c.data)))).one()
        tool_lists = conn.execute(select(func.count(schema.model_calls.c.tools_hash.distinct()))).scalar_one()
    assert len(store.transcript(run_id, "s0")) == 3
    store.close()
    return int(blobs), int(size), int(tool_lists)


async def test_repeated_tools_and_dialogue_prefixes_are_stored_once(tmp_path):
    tools_json = len(json.dumps([t.model_dump() for t in TOOLS]))
    blobs_10, bytes_10, lists_10 = await blob_bytes_after(tmp_path, 10)
    blobs_100, bytes_100, lists_100 = await blob_bytes_after(tmp_path, 100)
    # Every call sends the same 20 tools (new objects each time): one blob for the list in each run.
    assert lists_10 == lists_100 == 1
    # Per sample 5 nodes: its user message, then the answer and the tool result that each later request adds
    # (the chain stores only a request's new messages; answers are in the call rows). The system prompt, the
    # tool list and the options are 3 blobs shared by all samples.
    assert blobs_10 == 10 * 5 + 3 and blobs_100 == 100 * 5 + 3
    grown = bytes_100 - bytes_10
    assert tools_json > 20_000 and grown < 90 * 1_000  # the 90 more samples cost < 1 kB each, not 3 tool lists
    assert bytes_10 < tools_json  # the tool list is stored compressed


async def test_secrets_in_messages_tools_and_answers_are_masked_in_the_store(tmp_path, monkeypatch):
    secret = "tok-planted-transcript-9f8e7d6c"
    monkeypatch.setenv("TOOLGAUGE_TEST_SERVICE_TOKEN", secret)
    header = "Authorization: Bearer abcdefgh12345678"

    async def episode(sample: str, ctx: EpisodeContext) -> Pair:
        messages = [
            Message(role="user", content=f"my token is {secret}"),
            Message(role="tool", content=f'{{"sent": "{header}", "quoted": "say \\"{secret}\\""}}'),
        ]
        tools = [ToolSpec(name="login", description=f"logs in with {secret}")]
        turn = await ctx.generate(messages, tools)
        return Pair(text=turn.content)

    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    run_id = store.create_run("t", "m", {})
    client = ScriptedClient(
        policy=lambda r: AssistantTurn(
            content="ok",
            tool_calls=[ToolCall(name="login", arguments={"token": secret}, raw=json.dumps({"token": secret}))],
        )
    )
    await run_episodes([("s1", "x")], episode, Pair, client=client, store=store, run_id=run_id, config=FAST)
    (call,) = store.transcript(run_id, "s1")
    store.close()
    assert call.messages[0].content == f"my token is {MASK}"
    assert json.loads(call.messages[1].content) == {"sent": f"Authorization: Bearer {MASK}", "quoted": f'say "{MASK}"'}
    assert call.tools[0].description == f"logs in with {MASK}"
    assert call.response.tool_calls[0].arguments == {"token": MASK} and secret not in call.response.tool_calls[0].raw
    stored = blob_texts(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        stored += [str(v) for row in conn.execute(select(schema.model_calls)) for v in row]
    engine.dispose()
    assert stored and not [t for t in stored if secret in t or "abcdefgh12345678" in t]


def test_redaction_skips_only_text_no_pattern_can_match():
    secrets = ["planted-secret-value-1"]
    leaky = [
        "AUTHORIZATION: Bearer abcdefgh12345678",
        "x-API-key=abcd1234efgh",
        "see postgresql://u:pw1234@db/x",
        "Basic dXNlcjpwYXNzd29yZA==",
        "key sk-ABCDEFGHIJKLMNOPQRSTU",
        "value planted-secret-value-1 here",
        "ſome baſic dXNlcjpwYXNzd29yZA==",  # long s: the pattern matches case-insensitively, so must the test
    ]
    for text in leaky:
        assert needs_redaction(text, secrets), text
        assert redact(text, secrets=secrets) != text, text
    plain = "The weather in Lisbon is sunny, 22 degrees; the task-free desk is booked."
    assert not needs_redaction(plain.replace("task-", "task "), secrets)
    assert redact(plain, secrets=secrets) == plain


def test_blobs_are_compressed_only_where_that_is_smaller_and_read_back_either_way():
    small = b'{"temperature":0.0}'
    large = json.dumps({"m": {"role": "tool", "content": "the same words again " * 50}, "p": None}).encode()
    assert pack(small) == small  # zlib's header and checksum would make it longer
    assert len(pack(large)) < len(large) / 5 and pack(large)[:1] not in (b"{", b"[")
    for data in (small, large, b"[]"):
        assert unpack(pack(data)) == json.loads(data)
    assert unpack(zlib.compress(b'{"a": 1}')) == {"a": 1}  # any zlib stream, whatever its settings


# -- resume, PostgreSQL, the CLI, old stores -------------------------------------------------------------------


async def test_a_resumed_run_keeps_one_transcript_per_call(store_url):
    dialogues = load_suite(builtin_suite_path())

    def dies_at_call_30(request: ModelRequest) -> AssistantTurn:
        dying.count += 1
        if dying.count == 30:
            raise EndpointDown("the model server went away")
        return gold_with_a_mark(request)

    dying = ScriptedClient(policy=dies_at_call_30)
    dying.count = 0  # type: ignore[attr-defined]
    store = open_store(store_url)
    run_id = store.create_run("suite", "scripted", {})
    bench = build()
    config = EngineConfig(concurrency=4, show_progress=False, max_retries=0)
    with pytest.raises(EndpointDown):
        await run_episodes(
            bench.samples(), bench.episode, bench.result_type, client=dying, store=store, run_id=run_id, config=config
        )
    store.close()
    store = open_store(store_url)
    done = {k for k, s in store.sample_states(run_id).items() if s.status == "done"}
    with store.engine.connect() as conn:
        keys = list(conn.execute(select(schema.model_calls.c.sample_key).where(schema.model_calls.c.run_id == run_id)))
    abandoned = {k for (k,) in keys if k not in done}
    assert done and abandoned  # samples in flight at the stop had stored some of their calls
    out = await run_episodes(
        bench.samples(),
        bench.episode,
        bench.result_type,
        client=ScriptedClient(policy=gold_with_a_mark),
        store=store,
        run_id=run_id,
        config=config,
    )
    assert out.resumed == len(done) and not out.failed
    for dialogue in dialogues:
        calls = store.transcript(run_id, dialogue.id)
        assert [c.step for c in calls] == list(range(dialogue.n_turns)), dialogue.id
        assert [c.response.content.split(":")[0] for c in calls] == [f"{dialogue.id}/{k}" for k in range(len(calls))]
    with store.engine.connect() as conn:
        rows = conn.execute(select(func.count()).where(schema.model_calls.c.run_id == run_id)).scalar_one()
    assert rows == sum(d.n_turns for d in dialogues)
    store.close()


async def test_the_transcript_command_prints_json_and_readable_text_with_model_text_literal(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    hostile = "[bold red]not markup[/] and [/x] and [link=http://e.x]y[/link]"

    async def episode(sample: str, ctx: EpisodeContext) -> Pair:
        messages = [Message(role="system", content="Be brief."), Message(role="user", content=sample)]
        first = await ctx.generate(messages, [ToolSpec(name="lookup")])
        messages += [
            first.as_message(),
            Message(role="tool", content="[/tool] found", tool_call_id="c1", name="lookup"),
        ]
        second = await ctx.generate(messages, [ToolSpec(name="lookup")])
        return Pair(text=second.content)

    outputs = [AssistantTurn(tool_calls=[ToolCall(name="lookup", arguments={"q": "[b]x[/b]"}, id="c1")]), hostile]
    store = open_store(url)
    run_id = store.create_run("t", "scripted", {})
    await run_episodes(
        [("d[/x]", "Find [red]it[/red]")],
        episode,
        Pair,
        client=ScriptedClient(outputs),
        store=store,
        run_id=run_id,
        config=EngineConfig(concurrency=1, show_progress=False),
    )
    expected = [c.model_dump(mode="json") for c in store.transcript(run_id, "d[/x]")]
    store.close()

    res = invoke("transcript", run_id[:10], "d[/x]", "--store", url, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == expected and len(expected) == 2

    res = invoke("transcript", "latest", "d[/x]", "--store", url)
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert f"run {run_id} · sample d[/x] · 2 model calls" in text
    assert "user │ Find [red]it[/red]" in text
    assert 'call lookup({"q": "[b]x[/b]"})' in text
    assert "tool lookup (c1) │ [/tool] found" in text
    assert f"→ assistant │ {hostile}" in text
    assert "… 2 messages as in step 0" in text and "tools: as in step 0" in text


def test_the_transcript_command_says_what_is_missing_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    run_id = store.create_run("t", "m", {})
    store.record_sample(run_id, "quiet", result={"x": 1}, error=None, latency_s=0.0)
    store.close()
    res = invoke("transcript", run_id, "nope", "--store", url)
    assert res.exit_code == 2
    assert (
        res.stderr.strip() == f"error: run {run_id} has no model call of a sample 'nope' (its samples include: quiet)"
    )
    res = invoke("transcript", run_id, "quiet", "--store", url)
    assert (res.exit_code, res.stderr.strip()) == (2, f"error: sample 'quiet' of run {run_id} has no stored model call")
    res = invoke("transcript", "no-such-run", "quiet", "--store", url)
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "no-such-run" in res.stderr


def make_v1_store(url: str) -> None:
    """A store as toolgauge wrote it before transcripts (schema 1), with one run and two calls."""
    old = MetaData()
    Table("toolgauge_meta", old, Column("key", String(64), primary_key=True), Column("value", Text, nullable=False))
    Table(
        "runs",
        old,
        Column("id", String(64), primary_key=True),
        Column("benchmark", String(64), nullable=False),
        Column("model", Text, nullable=False),
        Column("status", String(16), nullable=False),
        Column("config", Text, nullable=False),
        Column("n_samples", Integer, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("finished_at", Float),
        Column("summary", Text),
    )
    Table(
        "model_calls",
        old,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(64), nullable=False, index=True),
        Column("sample_key", String(255), nullable=False),
        Column("step", Integer, nullable=False),
        Column("request_hash", String(64)),
        Column("response", Text),
        Column("error", Text),
        Column("input_tokens", Integer, nullable=False),
        Column("output_tokens", Integer, nullable=False),
        Column("latency_s", Float, nullable=False),
        Column("attempts", Integer, nullable=False),
        Column("cached", Boolean, nullable=False),
        Column("created_at", Float, nullable=False),
    )
    engine = create_engine(url)
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(old.tables["toolgauge_meta"].insert().values(key="schema_version", value="1"))
        conn.execute(
            old.tables["runs"]
            .insert()
            .values(id="r1", benchmark="suite", model="m", status="finished", config="{}", n_samples=1, created_at=1.0)
        )
        turn = AssistantTurn(content="old answer").model_dump_json()
        for key in ("a", "a#judge"):
            conn.execute(
                old.tables["model_calls"]
                .insert()
                .values(
                    run_id="r1",
                    sample_key=key,
                    step=0,
                    response=turn,
                    input_tokens=3,
                    output_tokens=4,
                    latency_s=0.5,
                    attempts=1,
                    cached=False,
                    created_at=1.0,
                )
            )
    engine.dispose()


def test_an_old_store_is_read_with_one_clear_line_and_migrated_by_the_first_write(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_v1_store(url)
    res = invoke("transcript", "r1", "a", "--store", url)
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "has schema version 1, from before transcripts were stored" in res.stderr
    assert invoke("runs", "--store", url).exit_code == 0  # read-only commands still read it as it is

    store = open_store(url)  # a command that writes: migrates
    assert store.schema_version == SCHEMA_VERSION == 3
    with store.engine.connect() as conn:
        version = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).scalar_one()
        roles = dict(conn.execute(select(schema.model_calls.c.sample_key, schema.model_calls.c.role)).all())
        indexes = {ix["name"] for ix in inspect(conn).get_indexes("model_calls")}
    assert version == "3" and roles == {"a": "model", "a#judge": "judge"}
    assert indexes == {"ix_model_calls_run_sample"}
    calls = store.transcript("r1", "a")
    assert [(c.role, c.messages, c.tools, c.response.content) for c in calls] == [
        ("model", None, None, "old answer"),
        ("judge", None, None, "old answer"),
    ]
    store.close()
    open_store(url).close()  # a second open finds nothing to do
    res = invoke("transcript", "r1", "a", "--store", url)
    assert res.exit_code == 0 and "request not stored" in res.stdout


def test_a_migration_stopped_halfway_is_finished_by_the_next_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    make_v1_store(url)
    engine = create_engine(url)
    with engine.begin() as conn:  # SQLite commits each ALTER TABLE on its own: one landed, then the process died
        conn.exec_driver_sql("ALTER TABLE model_calls ADD COLUMN role VARCHAR(64) NOT NULL DEFAULT 'model'")
    engine.dispose()
    store = open_store(url)
    assert [c.role for c in store.transcript("r1", "a")] == ["model", "judge"]
    store.close()


def test_processes_opening_an_old_store_at_once_migrate_it_once(store_url):
    make_v1_store(store_url.replace("postgresql://", "postgresql+psycopg://", 1))
    code = (
        "import sys; from toolgauge.store import open_store; s = open_store(sys.argv[1]); "
        "print([(c.role, c.response.content) for c in s.transcript('r1', 'a')]); s.close()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, store_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in results]
    assert {out.strip() for out, _ in results} == {"[('model', 'old answer'), ('judge', 'old answer')]"}
    store = open_store(store_url)
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schema.model_calls)).scalar_one() == 2
        columns = [col["name"] for col in inspect(conn).get_columns("model_calls")]
    assert all(columns.count(name) == 1 for name in ("role", "messages_hash", "tools_hash", "options_hash"))
    store.close()


def test_a_store_newer_than_this_toolgauge_is_refused_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    open_store(url).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(schema.meta.update().values(value=str(SCHEMA_VERSION + 1)))
    engine.dispose()
    for create in (True, False):
        with pytest.raises(UsageError, match=f"store schema version {SCHEMA_VERSION + 1} is newer than this"):
            open_store(url, create=create)
