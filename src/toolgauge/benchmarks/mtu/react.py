"""ReAct replies (``Thought`` / ``Action`` / ``Action Input``) parsed the way MTU-Bench's scorer does.

The published scorer (MTU-Bench-Team/MTU-Bench, ``MTU-Eval/util.py``) has two parsers:
``get_predict_SIN`` for single-call splits and ``get_target_SIN_MUL`` for multi-call splits. The
functions here reproduce their string handling step by step, quirks included, because the
reference metrics depend on exactly what they extract. Only the inputs that crash the original
get a defined result (noted where it happens). See ``docs/metrics/mtu-bench.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from toolgauge.records import ToolCall

_FIRST_OBJECT = re.compile(r"\{.*?\}")
NO_CALL_THOUGHT = "Thought: No tool call is needed for this turn."
CALL_THOUGHT = "Thought: I will make the tool call(s) below."
# Strings inside an Action Input that the reference parsers would act on (the line-splitting
# replaces, the True/False rewrite, the multi parser's skip and cut markers). render_react writes
# their first letter as a JSON escape so the text still decodes to the same value.
_RENDER_ESCAPES = (
    ("Action", "\\u0041ction"),
    ("Thought", "\\u0054hought"),
    ("True", "\\u0054rue"),
    ("False", "\\u0046alse"),
    ("Please provide your", "\\u0050lease provide your"),
    ("The name of the API", "\\u0054he name of the API"),
    ("}", "\\u007d"),
)


def parse_react_single(text: str) -> list[ToolCall]:
    """Parse a single-call reply as ``get_predict_SIN`` does.

    Returns ``[]`` for "no call" and at most one call. Reference behaviour kept on purpose:
    ``Action`` / ``Action Input`` are moved onto their own lines first; the name is the text between
    the first ``Action:`` and the next ``Action Input:``; the input is the first non-greedy ``{...}``
    after the first ``Action Input:`` (so a nested object is cut at its first ``}``), with ``True`` /
    ``False`` rewritten to JSON; if it is not JSON a single-to-double quote repair is tried, and if
    that fails too the reply counts as no call. A name containing ``None`` means no call, and a name
    containing a comma keeps only its first part.

    Crash fixes (the original raises on these): no ``Action:`` line, or an ``Action Input`` with no
    ``{...}``, is no call; an ``Action:`` followed by ``Action Input`` without its colon is that tool
    (named by the text up to ``Action Input``) with arguments ``{}``.
    A call whose name ends up empty is returned only when it has arguments, because the reference
    still compares those arguments (an empty name is how it spells "no call").
    """
    spread = _spread_markers(text)
    if "\nAction" not in spread or "\nAction Input" not in spread:
        return []
    if "\nAction:" not in spread:
        return []  # crash fix: "Action Input" present but no "Action:"
    after_action = spread.split("\nAction:")[1]
    arguments: dict[str, Any] = {}
    raw: str | None = None
    if "\nAction Input:" not in spread:
        # crash fix: "Action Input" without its colon; the tool (named up to that marker) with {}.
        name = after_action.split("\nAction Input")[0].strip()
    else:
        name = after_action.split("\nAction Input:")[0].strip()
        action_input = spread.split("\nAction Input:")[1].strip()
        action_input = action_input.rsplit("}", 1)[0] + "}"
        action_input = action_input.replace("\n", "").replace("True", "true").replace("False", "false")
        found = _FIRST_OBJECT.search(action_input)
        if found is None:
            return []  # crash fix: no {...} to decode, an unparsable call
        raw = found.group(0)
        decoded = _json_object(raw)
        if decoded is None:
            decoded = _json_object(_single_to_double_quotes(raw))
        if decoded is None:
            name, decoded = "", {}
        arguments = decoded
    if "None" in name:
        return []
    if "," in name:
        name = name.split(",")[0].strip()
    if not name and not arguments:
        return []
    return [ToolCall(name=name, arguments=arguments, raw=raw)]


def parse_react_multi(text: str) -> list[ToolCall]:
    r"""Parse a multi-call reply as ``get_target_SIN_MUL`` does, keeping every call in order.

    The reference stores the calls in a dict keyed by name, so a repeated tool keeps only its last
    arguments at its first position; that collapse is left to the reference metric so the strict
    metric can see repeats. Reference behaviour kept: blocks are split on ``"\nAction: "`` (with the
    space); a block holding the prompt's placeholder "The name of the API to be called." is skipped;
    text from "Please provide your" on is dropped; the name has double quotes removed; the input is
    the text after ``Action Input:`` up to its first ``}`` (so nested objects break), with lines
    joined and ``True`` / ``False`` rewritten; an input that is not JSON gives arguments ``{}`` but
    keeps the call (``parse_error`` says so). Names such as ``None`` are calls here.

    Crash fix: a block with no ``Action Input:`` is that call with arguments ``{}`` (its name is the
    whole block, as the reference computes it before failing).
    """
    spread = _spread_markers(text)
    thought = spread.split("\nAction")[0].replace("Thought: ", "")
    blocks = spread.replace("Thought: " + thought, "").split("\nAction: ")[1:]
    calls: list[ToolCall] = []
    for block in blocks:
        if "The name of the API to be called." in block:
            continue
        if "Please provide your" in block:
            block = block.split("Please provide your")[0].strip("\n")
        block = block.strip("\n")
        name = block.split("\nAction Input")[0].strip().replace('"', "")
        if "\nAction Input:" not in block:
            calls.append(ToolCall(name=name, parse_error="no 'Action Input:' after 'Action:'"))
            continue
        raw = block.split("\nAction Input:")[1].strip().replace("\n  ", "").split("}")[0] + "}"
        raw = raw.replace("True", "true").replace("False", "false")
        arguments = _json_object(raw)
        if arguments is None:
            calls.append(ToolCall(name=name, raw=raw, parse_error="Action Input is not a JSON object"))
        else:
            calls.append(ToolCall(name=name, arguments=arguments, raw=raw))
    return calls


def parse_mtu_response(text: str, split: str, *, multi: bool | None = None) -> list[ToolCall]:
    """Parse an MTU-Bench reply with the parser its split uses.

    Args:
        text: The model's reply.
        split: ``S-S`` and ``M-S`` use the single-call parser, ``S-M`` and ``M-M`` the multi-call one.
        multi: Override the choice. Required for ``OOD``, whose items use the single-call rules when
            the gold has exactly one tool and the multi-call rules otherwise (pass ``item.multi_call``).

    Raises:
        ValueError: An unknown split, or ``OOD`` without ``multi``.
    """
    if multi is None:
        if split in ("S-S", "M-S"):
            multi = False
        elif split in ("S-M", "M-M"):
            multi = True
        elif split == "OOD":
            raise ValueError("OOD replies need multi= (True when the item's gold has other than one tool)")
        else:
            raise ValueError(f"unknown MTU-Bench split {split!r}")
    return parse_react_multi(text) if multi else parse_react_single(text)


def render_react(calls: Sequence[ToolCall]) -> str:
    """Return the ReAct reply a perfect model would give for ``calls``.

    One ``Action:`` / ``Action Input:`` pair per call after a fixed thought; no call gives a thought
    alone. The input is compact JSON, with the few substrings the reference parsers would rewrite or
    split on written as JSON escapes (``}`` inside strings, ``Action``, ``True``...), so both parsers
    read back exactly ``calls``. A nested object argument cannot survive the reference parsers (they
    cut at the first ``}``); it is written as plain JSON anyway, see docs/metrics/mtu-bench.md.
    """
    if not calls:
        return NO_CALL_THOUGHT
    lines = [CALL_THOUGHT]
    for call in calls:
        lines.append(f"Action: {call.name}")
        lines.append(f"Action Input: {_render_arguments(call.arguments)}")
    return "\n".join(lines)


def _render_arguments(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    opened = 0
    # Escape only inside strings: structural braces must stay. json.dumps never emits a raw quote
    # inside a string, so counting unescaped quotes tells inside from outside.
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if char == '"':
            opened ^= 1
            out.append(char)
            i += 1
            continue
        if opened:
            for plain, escaped in _RENDER_ESCAPES:
                if text.startswith(plain, i):
                    out.append(escaped)
                    i += len(plain)
                    break
            else:
                out.append(char)
                i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _spread_markers(text: str) -> str:
    """Put every ``Action`` / ``Action Input`` on a new line, as both reference parsers do first."""
    return text.replace("Action", "\nAction").replace("Action Input", "\nAction Input").replace("\n\n", "\n")


def _json_object(text: str) -> dict[str, Any] | None:
    """Decode ``text`` as a JSON object, or None when it is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _single_to_double_quotes(text: str) -> str:
    r"""The reference's quote repair: ``\'`` becomes ``\\'``; every other ``'`` becomes ``"``.

    (Its extra step that swaps quotes around a whole-string ``'...'`` never applies here: the
    text always starts with ``{``.)
    """
    return "\\\\'".join(part.replace("'", '"') for part in text.split("\\'"))
