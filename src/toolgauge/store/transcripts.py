"""Stored transcripts: what each model call was sent and what it returned, rebuilt from the store alone.

A call's request is stored by reference to content-addressed blobs (``schema.blobs``: keyed by a
digest of their JSON, zlib-compressed):

- its **messages** as a chain: one node per message, ``{"m": message, "p": hash of the node before}``;
  the call row keeps the hash of the last node. A multi-turn dialogue adds only its new messages at
  each step, and samples that open with the same messages (a system prompt) share those nodes;
- its **tools** (the whole list) and its **options**, each one blob, stored once for every call
  that sends the same list or options.

Secrets are masked (:class:`toolgauge.redact.SecretMasker`, the store's one masking function) before anything
is hashed and compressed, so the store never holds them.
The writer avoids repeated work: a message already sent in this sample's previous request is not
masked, hashed or stored again, a tool list or options object already stored is looked up by
identity, and a blob this store wrote recently is not sent to the database again.
"""

from __future__ import annotations

import hashlib
import json
import operator
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from toolgauge.cost import Price, evaluated_call_cost
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolSpec, Usage
from toolgauge.redact import SecretMasker

# Blobs this store wrote or found recently, kept so they are not sent to the database again
# (a bounded cache: a blob evicted from it is only checked again, never duplicated).
KNOWN_BLOBS = 8192
# Tool lists remembered by identity (the loaders share one tuple of tools between samples).
KNOWN_TOOL_LISTS = 256


class ModelCallRecord(BaseModel):
    """One stored model call of a sample, as rebuilt from the store.

    ``messages``, ``tools`` and ``options`` are what the model was sent (secrets masked); they are
    None for a call stored without its request (by a toolgauge before transcripts). ``response`` is
    what it returned, None when the call failed (``error`` says why). ``step`` counts the calls of
    one ``role`` within the sample: ``model`` is the evaluated model, other roles (``agent``,
    ``judge``) are the extra clients a benchmark uses. ``cached``: answered from the response cache.
    """

    step: int
    role: str
    messages: list[Message] | None
    tools: list[ToolSpec] | None
    options: GenerateOptions | None
    response: AssistantTurn | None
    usage: Usage
    latency_s: float
    cached: bool
    attempts: int
    error: str | None
    request_hash: str | None = None

    def cost(self, price: Price | None) -> float | None:
        """USD this call adds to its sample (:func:`toolgauge.cost.evaluated_call_cost`)."""
        return evaluated_call_cost(
            price, role=self.role, cached=self.cached, input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
        )  # fmt: skip


def blob_hash(data: bytes) -> str:
    """The content address of a blob: the 128-bit BLAKE2b digest of its uncompressed JSON, in hex (32 characters).

    128 bits keep the store's keys short; two different blobs of one store share a digest with a
    probability of about n^2 / 2^129 (1e-21 for a billion blobs).
    """
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def pack(data: bytes) -> bytes:
    """The stored form of a blob's JSON: zlib-compressed, or as it is when that is not smaller."""
    # A small window and hash table: setting up zlib's defaults costs more than compressing a message.
    compressor = zlib.compressobj(6, zlib.DEFLATED, 12, 4)
    packed = compressor.compress(data) + compressor.flush()
    return packed if len(packed) < len(data) else data


def unpack(data: bytes) -> Any:
    """Decode one stored blob (JSON starts with ``{`` or ``[``, a zlib stream never does)."""
    return json.loads(data if data[:1] in (b"{", b"[") else zlib.decompress(data))


class BlobBuffer:
    """Blobs waiting for the next group commit, and the hashes known to be stored already."""

    def __init__(self, known_limit: int = KNOWN_BLOBS):
        self.pending: dict[str, bytes] = {}
        self._known: OrderedDict[str, None] = OrderedDict()
        self._limit = known_limit

    def put(self, text: str) -> str:
        """Buffer a blob (unless stored or buffered already) and return its hash."""
        data = text.encode()
        key = blob_hash(data)
        if key in self.pending:
            return key
        if key in self._known:
            self._known.move_to_end(key)
            return key
        self.pending[key] = pack(data)
        return key

    def committed(self, keys: Sequence[str]) -> None:
        """Remember blobs a commit just made durable; forget the least recently used beyond the limit."""
        for key in keys:
            self._known[key] = None
            self._known.move_to_end(key)
        while len(self._known) > self._limit:
            self._known.popitem(last=False)


@dataclass(slots=True)
class _Link:
    """One message of a sample's previous request: the object and its field values, its JSON, its chain node."""

    message: Message
    fields: tuple[Any, ...]
    raw: str
    node: str


class MessageChain:
    """The chain nodes of the last request one role of one sample sent.

    The next request usually repeats those messages and adds a few. The repeated prefix reuses its
    nodes: a message is the same as last time when it is the same object with the same field values
    and no tool calls (all its fields are then strings or None), or else when its JSON is the same.
    Only the messages after the prefix are masked, hashed and stored.
    """

    def __init__(self) -> None:
        self._links: list[_Link] = []

    def head(self, messages: Sequence[Message], put_node: Callable[[str, str | None], str]) -> str | None:
        """Return the hash of the chain for ``messages`` (None for no messages).

        ``put_node(message_json, parent)`` stores a new node and returns its hash.
        """
        before = self._links
        links: list[_Link] = []
        parent: str | None = None
        shared = True  # still on the prefix the last request sent
        for i, message in enumerate(messages):
            fields = tuple(message.__dict__.values())
            old = before[i] if shared and i < len(before) else None
            if old is not None and message is old.message and not message.tool_calls and _same(fields, old.fields):
                link = old  # serializing it again would cost more than all of this
            else:
                raw = message.model_dump_json(exclude_defaults=True)
                if old is not None and raw == old.raw:
                    link = _Link(message, fields, raw, old.node)
                else:
                    shared = False
                    link = _Link(message, fields, raw, put_node(raw, parent))
            links.append(link)
            parent = link.node
        self._links = links
        return parent


def _same(fields: tuple[Any, ...], old: tuple[Any, ...]) -> bool:
    return len(fields) == len(old) and all(map(operator.is_, fields, old))


class RequestWriter:
    """Turns a request into blob hashes for its ``model_calls`` row, buffering the blobs that are new."""

    def __init__(self, blobs: BlobBuffer, masker: SecretMasker):
        self._blobs = blobs
        self._masker = masker
        self._tool_lists: OrderedDict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str]] = OrderedDict()
        self._options: dict[GenerateOptions | str, str] = {}

    def refs(
        self, chain: MessageChain, messages: Sequence[Message], tools: Sequence[ToolSpec], options: GenerateOptions
    ) -> dict[str, str]:
        """The ``messages_hash``, ``tools_hash`` and ``options_hash`` of a request."""
        head = chain.head(messages, self._node)
        return {
            "messages_hash": head if head is not None else self._blobs.put("[]"),
            "tools_hash": self._tools(tools),
            "options_hash": self._options_hash(options),
        }

    def _node(self, message_json: str, parent: str | None) -> str:
        masked = self._masker.json_text(message_json)
        link = '"' + parent + '"' if parent else "null"
        return self._blobs.put('{"m":' + masked + ',"p":' + link + "}")

    def _tools(self, tools: Sequence[ToolSpec]) -> str:
        # ToolSpec is frozen: the same objects are the same list. The tuple held here keeps their ids valid.
        key = tuple(id(t) for t in tools)
        known = self._tool_lists.get(key)
        if known is not None:
            self._tool_lists.move_to_end(key)
            return known[1]
        text = "[" + ",".join(t.model_dump_json() for t in tools) + "]"
        digest = self._blobs.put(self._masker.json_text(text))
        self._tool_lists[key] = (tuple(tools), digest)
        if len(self._tool_lists) > KNOWN_TOOL_LISTS:
            self._tool_lists.popitem(last=False)
        return digest

    def _options_hash(self, options: GenerateOptions) -> str:
        # Options with an ``extra_body`` (a dict) cannot be a dict key: their JSON text is.
        key: GenerateOptions | str = options if options.extra_body is None else options.model_dump_json()
        digest = self._options.get(key)
        if digest is None:
            digest = self._blobs.put(self._masker.json_text(options.model_dump_json()))
            if len(self._options) < KNOWN_TOOL_LISTS:
                self._options[key] = digest
        return digest


class TranscriptReader:
    """Rebuilds requests from blobs, fetching each blob once (``fetch(hashes) -> {hash: decoded}``)."""

    def __init__(self, fetch: Callable[[set[str]], dict[str, Any]]):
        self._fetch = fetch
        self._values: dict[str, Any] = {}
        self._messages: dict[str, Message] = {}

    def load(self, keys: set[str]) -> None:
        """Fetch these blobs and, for message chains, every node before them."""
        todo = {k for k in keys if k not in self._values}
        while todo:
            found = self._fetch(todo)
            missing = todo - found.keys()
            if missing:
                raise LookupError(f"blob {min(missing)} is missing from the store")
            self._values.update(found)
            todo = {v["p"] for v in found.values() if isinstance(v, dict) and v.get("p") and v["p"] not in self._values}

    def messages(self, head: str) -> list[Message]:
        """The message list whose chain ends at ``head``."""
        chain: list[Message] = []
        node: str | None = head
        while node is not None:
            value = self._values[node]
            if isinstance(value, list):  # the empty list
                break
            message = self._messages.get(node)
            if message is None:
                message = self._messages[node] = Message.model_validate(value["m"])
            chain.append(message)
            node = value["p"]
        chain.reverse()
        return chain

    def tools(self, key: str) -> list[ToolSpec]:
        """The tool list stored under ``key``."""
        return [ToolSpec.model_validate(t) for t in self._values[key]]

    def options(self, key: str) -> GenerateOptions:
        """The options stored under ``key``."""
        return GenerateOptions.model_validate(self._values[key])
