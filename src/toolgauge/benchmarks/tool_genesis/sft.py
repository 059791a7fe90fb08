"""Finetuning data from Code-Agent trajectories (paper App. E.1): filters, Direct and Repair examples, splits.

Pure: a server's stored verdict (its ``SampleScore``), its data record and the evaluated model's calls in
order (request messages and response) in; chat-format examples out. ``genesis export-sft``
(:mod:`.cli_sft`) reads them from the store and writes the JSONL files.

- **Filter** (E.1): the server's schema file is compliant, it launched, its unit tests pass where it has
  any counted (UT_hard at least ``min_ut_hard``, 1.0 by default: every counted test), it does not need
  external credentials (``requires_api`` false) and no text of the trajectory holds a credential
  (:func:`toolgauge.redact.redact` would change it).
- **Direct example**: the direct strategy's request (:func:`~.prompts.direct_messages`) and, as the
  answer, the final ``tools.json`` and ``server.py`` the agent wrote, in the direct answer format.
- **Repair examples**: one per model step that follows execution feedback containing an error (a failed
  launch, a tool error, a failed call) and writes a file: the agent's opening messages plus the files as
  they were and the feedback (truncated to ``feedback_chars``) in one user message; the answer is the step's
  reply with its tool calls.
- **Splits**: server-disjoint: every example of a server goes to the same split, chosen by a seeded hash of
  its slug (the ``validation`` fraction of the servers, at least one when there are two or more).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.code_agent import AGENT_TOOLS
from toolgauge.benchmarks.tool_genesis.prompts import direct_messages
from toolgauge.benchmarks.tool_genesis.records import GenesisServer
from toolgauge.benchmarks.tool_genesis.server_files import CODE_FILE, SCHEMA_FILE
from toolgauge.records import AssistantTurn, Message
from toolgauge.redact import redact
from toolgauge.results import SampleScore

ExampleKind = Literal["direct", "repair"]
Split = Literal["train", "validation"]
FEEDBACK_CHARS = 2000
# Feedback that reports a failure: what a repair step answers (the code agent's own observation prefixes).
FAILURE_MARKS = ("Error", "Launch failed", "Tool error", "Call failed", "Traceback")


class SftExample(BaseModel):
    """One training example: chat messages (the last one the assistant's target) and, for tool calls, the tools."""

    server: str
    kind: ExampleKind
    step: int | None = None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The JSONL line: ``messages`` (OpenAI chat format), with ``tools`` when the target calls tools."""
        return {"messages": self.messages, **({"tools": self.tools} if self.tools else {})}


class ModelStep(BaseModel):
    """One call of the evaluated model: what it was sent and what it answered."""

    messages: list[Message]
    response: AssistantTurn


def keep_reason(
    score: SampleScore, server: GenesisServer, texts: Sequence[str], min_ut_hard: float = 1.0
) -> str | None:
    """Why the server's trajectory is dropped (E.1's filters), or None when it is kept."""
    s = score.scores
    if s.get("compliance") != 1.0:
        return "schema file not compliant"
    if s.get("server_execution") != 1.0:
        return "server did not launch"
    counted = s.get("unit_tests_counted")
    ut_hard = s.get("ut_hard")
    if isinstance(counted, int) and counted > 0 and isinstance(ut_hard, float | int) and ut_hard < min_ut_hard:
        return f"unit tests fail (UT_hard {ut_hard:.2f})"
    if server.requires_api:
        return "the server needs external credentials (requires_api)"
    if any(redact(text) != text for text in texts):
        return "a credential in the trajectory"
    return None


def message_dict(message: Message) -> dict[str, Any]:
    """A message in the OpenAI chat format (tool-call arguments as JSON text)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": call.id or f"call_{i}", "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
            for i, call in enumerate(message.tool_calls)
        ]  # fmt: skip
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def _written(response: AssistantTurn) -> dict[str, str]:
    """The files a reply writes (``write_file`` calls), by path."""
    return {
        str(call.arguments["path"]): str(call.arguments.get("content", ""))
        for call in response.tool_calls
        if call.name == "write_file" and isinstance(call.arguments.get("path"), str)
    }


def _feedback(messages: Sequence[Message]) -> str:
    """The tool observations after the last assistant message of a request: the feedback of the step before."""
    texts: list[str] = []
    for message in reversed(messages):
        if message.role == "assistant":
            break
        if message.role == "tool" and message.content:
            texts.append(message.content)
    return "\n".join(reversed(texts))


def truncated(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]"


def _files_block(files: dict[str, str]) -> str:
    if not files:
        return "(no file written yet)"
    return "\n\n".join(f"### {path}\n```\n{content}\n```" for path, content in sorted(files.items()))


def direct_example(server: GenesisServer, files: dict[str, str]) -> SftExample | None:
    """The requirement mapped to the final schema and server in one answer; None without both files."""
    schema, code = files.get(SCHEMA_FILE), files.get(CODE_FILE)
    if schema is None or code is None:
        return None
    answer = f"```json\n{schema.strip()}\n```\n\n```python\n{code.rstrip()}\n```"
    messages = [*(message_dict(m) for m in direct_messages(server)), {"role": "assistant", "content": answer}]
    return SftExample(server=server.server_slug, kind="direct", messages=messages)


def examples_of(
    server: GenesisServer, steps: Sequence[ModelStep], feedback_chars: int = FEEDBACK_CHARS
) -> list[SftExample]:
    """The Direct example and one Repair example per repair iteration of a kept trajectory."""
    files: dict[str, str] = {}
    repairs: list[SftExample] = []
    tools = [{"type": "function", "function": t.model_dump(mode="json")} for t in AGENT_TOOLS]
    for index, step in enumerate(steps):
        feedback = _feedback(step.messages)
        writes = _written(step.response)
        if index > 0 and writes and any(mark in feedback for mark in FAILURE_MARKS):
            opening = [m for m in step.messages[:2] if m.role in ("system", "user")]
            context = (
                f"## Your files now\n{_files_block(files)}\n\n## Execution feedback (truncated)\n"
                f"{truncated(feedback, feedback_chars)}\n\nFix the server."
            )
            messages = [*(message_dict(m) for m in opening), {"role": "user", "content": context},
                        message_dict(step.response.as_message())]  # fmt: skip
            repairs.append(SftExample(server=server.server_slug, kind="repair", step=index, messages=messages,
                                      tools=tools))  # fmt: skip
        files.update(writes)
    direct = direct_example(server, files)
    return ([direct] if direct is not None else []) + repairs


def split_of(slug: str, servers: Sequence[str], validation: float, seed: int) -> Split:
    """The split of a server: the ``validation`` fraction of ``servers`` (by a seeded hash) is validation."""
    ranked = sorted(set(servers), key=lambda s: hashlib.sha256(f"{seed}:{s}".encode()).hexdigest())
    count = math.ceil(validation * len(ranked)) if len(ranked) >= 2 else 0
    count = min(count, len(ranked) - 1) if ranked else 0
    return "validation" if slug in ranked[:count] else "train"
