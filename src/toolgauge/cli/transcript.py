"""``transcript``: what each model call of one stored sample was sent and what it answered (no model is asked)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolgauge.cli.common import RunArg, StoreOpt, guarded, out
from toolgauge.cost import Price, format_usd
from toolgauge.errors import UsageError
from toolgauge.records import AssistantTurn, Message, ToolCall
from toolgauge.store.transcripts import ModelCallRecord

# How many of a run's sample keys an error about an unknown one lists.
SHOWN_KEYS = 5


def transcript_cmd(
    run_id: RunArg,
    sample_key: Annotated[str, typer.Argument(help="The sample's key: the 'sample' field of its --samples rows.")],
    store: StoreOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every call in full as a JSON list (ModelCallRecord).")
    ] = False,
) -> None:
    """Print one sample's model calls: the messages, tools and options each was sent, and its answer.

    Each call shows the messages new since its role's previous call; --json prints every call in full.
    """

    def body() -> None:
        from toolgauge.store import open_store  # SQLAlchemy: loaded only by a command that opens the store

        st = open_store(store, create=False)
        try:
            rid = st.resolve_run_id(run_id)
            st_run = st.get_run(rid)
            records = st.transcript(rid, sample_key)
            if not records:
                keys = sorted(st.sample_states(rid))
                if sample_key in keys:
                    raise UsageError(f"sample {sample_key!r} of run {rid} has no stored model call")
                shown = ", ".join(keys[:SHOWN_KEYS]) + (", …" if len(keys) > SHOWN_KEYS else "")
                raise UsageError(
                    f"run {rid} has no model call of a sample {sample_key!r}"
                    + (f" (its samples include: {shown})" if keys else " (it has no stored samples)")
                )
        finally:
            st.close()
        if as_json:
            sys.stdout.write(json.dumps([r.model_dump(mode="json") for r in records], indent=2) + "\n")
            return
        run = st_run.results.run if st_run is not None and st_run.results is not None else None
        print_transcript(out, rid, sample_key, records, price=run.unit_price if run is not None else None)

    guarded(body)


def print_transcript(
    console: Console, run_id: str, sample_key: str, records: Sequence[ModelCallRecord], *, price: Price | None = None
) -> None:
    """Print a transcript as plain text (model and data text is never read as rich markup).

    ``price``: the evaluated model's (the run's ``unit_price``): each of its calls shows its cost, and the
    first line the sample's (calls from the cache cost nothing; other roles' calls are not priced here).
    """
    calls = f"{len(records)} model call" + ("" if len(records) == 1 else "s")
    costs = [r.cost(price) for r in records]
    priced = [c for c in costs if c is not None]
    total = f" · {format_usd(sum(priced))} (the evaluated model's calls)" if priced else ""
    console.print(Text(f"run {run_id} · sample {sample_key} · {calls}{total}", style="bold"), highlight=False)
    last: dict[str, ModelCallRecord] = {}
    for record, cost in zip(records, costs, strict=True):
        console.print()
        console.print(_header(record, cost), highlight=False)
        previous = last.get(record.role)
        last[record.role] = record
        if record.messages is None:
            console.print(Text("  request not stored (recorded by a toolgauge before transcripts)", style="dim"))
        else:
            _print_request(console, record, previous)
        if record.response is not None:
            _print_message(console, "→ assistant", _turn_lines(record.response), style="bold green")
        if record.error:
            _print_message(console, "✗ error", [record.error], style="bold red")


def _header(record: ModelCallRecord, cost: float | None = None) -> Text:
    parts = [f"step {record.step}", record.role]
    if record.cached:
        parts.append("from the cache")
    else:
        parts.append(f"{record.latency_s * 1000:.1f} ms")
    if record.attempts > 1:
        parts.append(f"{record.attempts} attempts")
    parts.append(f"{record.usage.input_tokens} in / {record.usage.output_tokens} out tokens")
    if cost is not None:
        parts.append(format_usd(cost))
    return Text("── " + " · ".join(parts) + " ──", style="cyan")


def _print_request(console: Console, record: ModelCallRecord, previous: ModelCallRecord | None) -> None:
    if record.tools is not None:
        if previous is not None and previous.tools == record.tools:
            tools = f"as in step {previous.step}"  # the role's previous call
        else:
            tools = ", ".join(t.name for t in record.tools) or "none"
        console.print(Text(f"  tools: {tools}", style="dim"), highlight=False)
    if record.options is not None:
        if previous is not None and previous.options == record.options:
            shown = f"as in step {previous.step}"
        else:
            shown = ", ".join(f"{k}={v}" for k, v in record.options.model_dump().items() if v is not None) or "none"
        console.print(Text(f"  options: {shown}", style="dim"), highlight=False)
    messages = record.messages or []
    start = 0
    if previous is not None and previous.messages and messages[: len(previous.messages)] == previous.messages:
        start = len(previous.messages)
        console.print(Text(f"  … {start} messages as in step {previous.step}", style="dim"), highlight=False)
    for message in messages[start:]:
        _print_message(console, _label(message), _message_lines(message))


def _label(message: Message) -> str:
    if message.role == "tool":
        who = " ".join(x for x in (message.name, f"({message.tool_call_id})" if message.tool_call_id else "") if x)
        return f"tool {who}".strip()
    return message.role


def _message_lines(message: Message) -> list[str]:
    lines = [message.content] if message.content else []
    lines.extend(_call_text(c) for c in message.tool_calls)
    return lines or ["(empty)"]


def _turn_lines(turn: AssistantTurn) -> list[str]:
    lines = [turn.content] if turn.content else []
    lines.extend(_call_text(c) for c in turn.tool_calls)
    if not lines:
        lines.append("(empty reply)")
    if turn.finish_reason:
        lines.append(f"[finish: {turn.finish_reason}]")
    return lines


def _call_text(call: ToolCall) -> str:
    ident = f"  (id {call.id})" if call.id else ""
    if call.parse_error:
        return f"call {call.name}: {call.raw!r} (arguments not decoded: {call.parse_error}){ident}"
    return f"call {call.name}({json.dumps(call.arguments, ensure_ascii=False)}){ident}"


def _print_message(console: Console, label: str, lines: list[str], style: str = "bold") -> None:
    """``label │ text``, later lines indented under the first; printed as Text, never parsed as markup."""
    pad = " " * (len(label) + 2)
    for i, chunk in enumerate(lines):
        for j, line in enumerate(chunk.splitlines() or [""]):
            text = Text("  ")
            if i == 0 and j == 0:
                text.append(label, style=style)
                text.append(" │ ")
            else:
                text.append(pad + "│ ")
            text.append(line)
            console.print(text, highlight=False, soft_wrap=True)
