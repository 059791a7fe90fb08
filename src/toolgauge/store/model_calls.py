"""The model_calls table: each model call of a sample (every role), with its request kept as blobs.

A call's request is buffered as content-addressed blobs (:mod:`toolgauge.store.transcripts`) and committed with the
call's row in the next group commit; ``transcript`` rebuilds a sample's calls from the store alone.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, union_all
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolSpec, Usage
from toolgauge.redact import SecretMasker
from toolgauge.store import schema
from toolgauge.store.access import StoreAccess, StorePart
from toolgauge.store.transcripts import MessageChain, ModelCallRecord, RequestWriter, TranscriptReader, unpack
from toolgauge.store.write_buffer import WriteBuffer

# Keys per ``IN (...)`` query: well under SQLite's bound-parameter limit.
READ_CHUNK = 500
# What a call row leaves out is stored as this (every row of a group commit has the same keys).
CALL_DEFAULTS: dict[str, Any] = {
    "role": "model", "request_hash": None, "messages_hash": None, "tools_hash": None, "options_hash": None,
    "response": None, "error": None, "input_tokens": 0, "output_tokens": 0, "latency_s": 0.0, "attempts": 1,
    "cached": False,
}  # fmt: skip


class ModelCalls(StorePart):
    """Buffers model calls and their requests, reads transcripts back, forgets the calls of abandoned attempts.

    Args:
        access: the store's engine, flush (a read sees the calls buffered before it) and write errors.
        buffer: the store's write buffer.
        masker: masks secrets in the request's blobs.
    """

    def __init__(self, access: StoreAccess, buffer: WriteBuffer, masker: SecretMasker):
        super().__init__(access)
        self._buffer = buffer
        self._masker = masker
        self._requests: RequestWriter | None = None

    def put_request(self, chain: MessageChain, request: ModelRequest) -> dict[str, str]:
        """Buffer the new blobs of a call's request; return its blob hashes (see ``Store.put_request``)."""
        if self._requests is None:
            self._requests = RequestWriter(self._buffer.blobs, self._masker)
        with self._buffer.lock:
            return self._requests.refs(chain, request.messages, request.tools, request.options)

    def record(self, row: Mapping[str, Any]) -> None:
        """Buffer one model call (the fields it leaves out take ``CALL_DEFAULTS``)."""
        self._buffer.add_call({**CALL_DEFAULTS, "created_at": time.time(), **row})

    def forget(
        self,
        run_id: str,
        keep: Collection[str],
        *,
        only: Collection[str] | None = None,
        kept_through: Mapping[str, int] | None = None,
    ) -> None:
        """Delete the model calls of every sample of a run not in ``keep``; see ``Store.forget_calls``.

        ``kept_through``: per sample, the last call id its finished steps made (``store.steps``); those calls and
        the ones before them stay (a resumed sample reuses those steps), the later ones go.
        """
        self._flush()
        c = schema.model_calls.c
        through = kept_through or {}
        try:
            with self._engine.begin() as conn:
                pairs = conn.execute(select(c.sample_key, c.role).where(c.run_id == run_id).distinct()).all()
                stale: dict[tuple[str, int | None], list[str]] = {}
                for key, role in sorted(pairs):
                    sample = sample_of(key, role)
                    if sample not in keep and (only is None or sample in only):
                        stale.setdefault((role, through.get(sample)), []).append(key)
                # By role too: sample "a"'s judge and sample "a#judge" share a key.
                for (role, last_kept), keys in stale.items():
                    for start in range(0, len(keys), READ_CHUNK):
                        chunk = keys[start : start + READ_CHUNK]
                        where = (c.run_id == run_id) & (c.role == role) & c.sample_key.in_(chunk)
                        if last_kept is not None:
                            where = where & (c.id > last_kept)
                        conn.execute(delete(schema.model_calls).where(where))
        except SQLAlchemyError as exc:
            raise self._write_error(f"forgetting the model calls of unfinished samples of run {run_id}", exc) from exc

    def transcript(self, run_id: str, sample_key: str) -> list[ModelCallRecord]:
        """Every stored model call of one sample of a run, of every role, in the order they were recorded."""
        self._flush()
        c = schema.model_calls.c
        columns = (c.id, c.sample_key, c.role, c.step, c.request_hash, c.messages_hash, c.tools_hash, c.options_hash,
                   c.response, c.error, c.input_tokens, c.output_tokens, c.latency_s, c.attempts, c.cached)  # fmt: skip
        query = union_all(
            select(*columns).where((c.run_id == run_id) & (c.sample_key == sample_key)),
            select(*columns).where((c.run_id == run_id) & roles_of(self._engine, sample_key)),
        ).order_by("id")
        with self._engine.connect() as conn:
            rows = [r for r in conn.execute(query).mappings() if sample_of(r["sample_key"], r["role"]) == sample_key]
            reader = TranscriptReader(lambda keys: _fetch_blobs(conn, keys))
            heads = {r["messages_hash"] for r in rows if r["messages_hash"]}
            others = {r[k] for r in rows for k in ("tools_hash", "options_hash") if r[k]}
            try:
                reader.load(heads | others)
            except LookupError as exc:
                raise UsageError(f"run {run_id}, sample {sample_key}: {exc}") from exc
        return [_call_record(r, reader) for r in rows]


def roles_of(engine: Engine, sample_key: str) -> ColumnElement[bool]:
    """The model-call keys of a sample's extra roles (``<key>#<role>``), found on the (run_id, sample_key) index.

    A byte-wise range on SQLite; LIKE elsewhere (a PostgreSQL collation may not sort "#" byte-wise).
    """
    c = schema.model_calls.c
    if engine.dialect.name == "sqlite":
        return (c.sample_key > sample_key + "#") & (c.sample_key < sample_key + "$")
    return c.sample_key.startswith(sample_key + "#", autoescape=True)


def sample_of(call_key: str, role: str) -> str:
    """The sample a model-call row belongs to (calls of an extra role are stored under ``<sample>#<role>``)."""
    suffix = "#" + role
    if role != "model" and call_key.endswith(suffix):
        return call_key[: -len(suffix)]
    return call_key


def _fetch_blobs(conn: Connection, keys: set[str]) -> dict[str, Any]:
    b = schema.blobs.c
    found: dict[str, Any] = {}
    ordered = sorted(keys)
    for start in range(0, len(ordered), READ_CHUNK):
        chunk = ordered[start : start + READ_CHUNK]
        for key, data in conn.execute(select(b.hash, b.data).where(b.hash.in_(chunk))):
            found[key] = unpack(data)
    return found


def _call_record(row: Any, reader: TranscriptReader) -> ModelCallRecord:
    try:
        response = AssistantTurn.model_validate_json(row["response"]) if row["response"] else None
    except ValueError as exc:
        raise UsageError(f"model call {row['id']}: its stored response is not a model turn: {exc}") from exc
    messages: list[Message] | None = reader.messages(row["messages_hash"]) if row["messages_hash"] else None
    tools: list[ToolSpec] | None = reader.tools(row["tools_hash"]) if row["tools_hash"] else None
    options: GenerateOptions | None = reader.options(row["options_hash"]) if row["options_hash"] else None
    return ModelCallRecord(
        step=row["step"],
        role=row["role"],
        messages=messages,
        tools=tools,
        options=options,
        response=response,
        usage=Usage(input_tokens=row["input_tokens"], output_tokens=row["output_tokens"]),
        latency_s=row["latency_s"],
        cached=bool(row["cached"]),
        attempts=row["attempts"],
        error=row["error"],
        request_hash=row["request_hash"],
    )
