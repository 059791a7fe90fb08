"""Reading a model's answer: the tool schema (JSON) and the server code (Python) in its fenced blocks.

Tolerant by design: prose and extra blocks around the two blocks are ignored, the last schema wins,
a bare tool list is wrapped, unfenced JSON is tried, and a code block cut off by ``max_tokens`` is kept
(and said to be cut). Never raises: what is missing is named in ``ParsedAnswer.error``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block of a model answer; ``closed`` is False when the answer ended inside it."""

    lang: str
    body: str
    closed: bool


class ParsedAnswer(BaseModel):
    """The schema payload and server code found in an answer, or why they were not found."""

    schema_payload: dict[str, Any] | None = None
    code: str | None = None
    error: str | None = None


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced block (```lang ... ```) of ``text``; a block left open runs to the end."""
    blocks: list[FencedBlock] = []
    lang: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if lang is None:
            if stripped.startswith("```"):
                lang = stripped[3:].strip().split(" ")[0].lower()
                body = []
        elif stripped == "```":
            blocks.append(FencedBlock(lang, "\n".join(body), True))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        blocks.append(FencedBlock(lang, "\n".join(body), False))
    return blocks


def as_schema_payload(value: Any) -> dict[str, Any] | None:
    """The ``{"tools": [...]}`` payload in a decoded JSON value; a bare tool list is wrapped."""
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        return value
    if isinstance(value, list) and value and all(isinstance(t, dict) and "name" in t for t in value):
        return {"tools": value}
    return None


def _json_candidates(text: str) -> list[Any]:
    """Top-level JSON objects and arrays found anywhere in ``text`` (for answers without fences)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while pos < len(text):
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found.append(value)
        pos = end
    return found


_PY_LANGS = {"python", "py", "python3"}
_JSON_LANGS = {"json", "jsonc", "json5"}


def parse_answer(text: str | None) -> ParsedAnswer:
    """Pull the schema payload and the server code out of a model answer.

    The last JSON block holding a tool list wins (models often draft, then correct); without fences,
    JSON objects anywhere in the text are tried. The code is the last Python block that uses ``mcp``,
    else the last Python block. Never raises: what is missing is named in ``error``.
    """
    if not text or not text.strip():
        return ParsedAnswer(error="empty answer")
    blocks = fenced_blocks(text)
    payload: dict[str, Any] | None = None
    for block in blocks:
        if block.lang in _PY_LANGS:
            continue
        try:
            found = as_schema_payload(json.loads(block.body))
        except (ValueError, RecursionError):  # not JSON, or beyond the parser's limits
            found = None
        if found is not None:
            payload = found
    if payload is None:
        for value in _json_candidates(text):
            found = as_schema_payload(value)
            if found is not None:
                payload = found
    python = [b for b in blocks if b.lang in _PY_LANGS or (b.lang == "" and _looks_like_python(b.body))]
    with_mcp = [b for b in python if "mcp" in b.body.lower()]
    chosen = (with_mcp or python)[-1] if python else None
    code = chosen.body.strip("\n") + "\n" if chosen is not None and chosen.body.strip() else None
    problems = []
    if payload is None:
        problems.append('no JSON schema with a "tools" list in the answer')
    if code is None:
        problems.append("no Python code block in the answer")
    elif chosen is not None and not chosen.closed:
        problems.append("the Python block is not closed (answer cut off?)")
    return ParsedAnswer(schema_payload=payload, code=code, error="; ".join(problems) or None)


def _looks_like_python(body: str) -> bool:
    head = body.lstrip()
    return head.startswith(("import ", "from ", "def ", "class ", "#!")) or "\ndef " in body
