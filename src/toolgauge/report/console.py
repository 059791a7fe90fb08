r"""What reaches a terminal: text from models, servers and data with its control characters made visible.

A model's answer, a server's error body or a generated server's stderr may hold escape sequences: OSC 52
(write the clipboard), OSC 0 (the window title), cursor moves and erases (redraw a line: a fake "all tests
passed"), clear-screen. Printed raw, the terminal obeys them. :func:`printable` shows every control character
but newline and tab as ``\xNN`` (ESC as ``\x1b``, CSI as ``\x9b``), and :class:`TerminalConsole`, the console
every command prints through, applies it to all the text it renders, so no call site can forget it. JSON
output keeps the text as it is: JSON escapes the C0 controls, and :func:`json_for_terminal` the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Span, Text

# C0 but tab and line feed, DEL, and C1 (ESC is \x1b, CSI's one-byte form \x9b).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What JSON leaves raw: DEL and C1 (json.dumps escapes C0 itself).
_JSON_RAW_CONTROL = re.compile(r"[\x7f-\x9f]")


def _escaped(char: str) -> str:
    return f"\\x{ord(char):02x}"


def printable(text: str) -> str:
    r"""``text`` with every control character but ``\n`` and ``\t`` shown as ``\xNN`` (a CRLF ends a line)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: _escaped(m.group()), text.replace("\r\n", "\n"))


def printable_text(text: Text) -> Text:
    """A rich ``Text`` with :func:`printable` applied to its characters, its styles kept on the same characters."""
    plain = text.plain
    if not _CONTROL.search(plain):
        return text
    ends = [0]
    pieces: list[str] = []
    for char in plain:
        piece = _escaped(char) if _CONTROL.match(char) else char
        pieces.append(piece)
        ends.append(ends[-1] + len(piece))

    def at(offset: int) -> int:
        return ends[min(offset, len(plain))]

    return Text(
        "".join(pieces),
        style=text.style,
        justify=text.justify,
        overflow=text.overflow,
        no_wrap=text.no_wrap,
        end=text.end,
        tab_size=text.tab_size,
        spans=[Span(at(span.start), at(span.end), span.style) for span in text.spans],
    )


def json_for_terminal(document: str) -> str:
    r"""JSON text with DEL and the C1 controls written as ``\u00XX``: the same JSON value, nothing a terminal obeys.

    Outside strings JSON holds no such character, so each one replaced is inside a string.
    """
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


class TerminalConsole(Console):
    r"""A rich console that shows control characters in what it prints as ``\xNN`` (see :func:`printable`).

    Strings (markup included) are made printable before they are laid out, ``Text`` objects likewise with their
    styles kept; any other renderable's text is made printable as it is rendered. The console's own control
    codes (colours, the progress bar's cursor moves) are not text and pass as they are.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:  # noqa: D102 - rich's method, made printable
        return super().render_str(printable(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterator[Segment]:  # noqa: D102
        if isinstance(renderable, Text):
            renderable = printable_text(renderable)
        for segment in super().render(renderable, options):
            if segment.control is None and _CONTROL.search(segment.text):
                yield Segment(printable(segment.text), segment.style)
            else:
                yield segment
