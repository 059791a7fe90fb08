"""Tokenizer and parser base shared by the Java and JavaScript call decoders.

Nodes mirror tree-sitter's shapes (``type`` names, byte spans) so the decoders can reproduce
what BFCL's tree-sitter-based parsers return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from toolgauge.benchmarks.bfcl.decoders.call_types import (
    DUPLICATE_ARGUMENTS_ERROR,
    UNNAMED_ARGUMENT_KEY,
    BfclDecodeError,
)

IDENTIFIER = re.compile(r"[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*")
"""An identifier as Java and JavaScript both allow it (``$`` and non-ASCII letters included)."""

# The operators and punctuation Java and JavaScript share (C's); each language adds its own.
C_PUNCTUATION = (
    ">>>=", "<<=", ">>=", "...", "==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "<<", *"(){}[];,.@=<>!~?:+-*/&|^%",
)  # fmt: skip


def punctuation(*own: str) -> re.Pattern[str]:
    """One pattern for C's punctuation and a language's ``own``, the longest first (``>>=`` is never ``>``, ``>=``)."""
    tokens = {*C_PUNCTUATION, *own}
    return re.compile("|".join(re.escape(p) for p in sorted(tokens, key=len, reverse=True)))


@dataclass
class Token:
    """One lexical token with its character span."""

    kind: str  # "ident", "number", "string", "char", "template", "regex", "punct", "eof"
    text: str
    start: int  # character offsets into the source
    end: int
    newline_before: bool = False


@dataclass
class Node:
    """A syntax node; ``type`` follows tree-sitter's names, anonymous tokens use their text."""

    type: str
    start: int
    end: int
    children: list[Node] = field(default_factory=list)
    fields: dict[str, Node] = field(default_factory=dict)


def leaf(token: Token, node_type: str | None = None) -> Node:
    """Make a childless node from one token."""
    return Node(node_type or token.text, token.start, token.end)


def span(node_type: str, children: list[Node], **fields: Node) -> Node:
    """Make a node covering its children, with tree-sitter-style named fields."""
    return Node(node_type, children[0].start, children[-1].end, children, dict(fields))


class TokenParser:
    """Token cursor over ``source`` with the helpers both recursive-descent parsers share."""

    def __init__(
        self,
        source: str,
        patterns: list[tuple[str, re.Pattern[str]]],
        regex_allowed: Callable[[Token | None], bool] = lambda _: False,
    ):
        self.source = source
        self.tokens = scan(source, patterns, regex_allowed)
        self.position = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.position]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("punct", "ident") and self.token.text in texts

    def advance(self) -> Token:
        token = self.token
        if token.kind == "eof":
            raise BfclDecodeError("unexpected end of text")
        self.position += 1
        return token

    def expect(self, text: str) -> Node:
        if not self.at(text):
            raise BfclDecodeError(f"expected {text!r}, found {self.token.text!r}")
        return leaf(self.advance())

    def expect_name(self, what: str) -> Token:
        """The identifier at the cursor (``what`` names it in the error when there is none)."""
        if self.token.kind != "ident":
            raise BfclDecodeError(f"expected {what}, found {self.token.text!r}")
        return self.advance()

    def enclosed(self, open_text: str, inner: Callable[[], Node], close_text: str) -> list[Node]:
        """Parse ``open inner close`` (a parenthesised expression, an index) and return the three nodes."""
        open_node = self.expect(open_text)
        inside = inner()
        return [open_node, inside, self.expect(close_text)]

    def comma_list(
        self,
        open_text: str,
        close_text: str,
        item: Callable[[], list[Node]],
        what: str,
        *,
        trailing_comma: bool = True,
        holes: bool = False,
    ) -> list[Node]:
        """Parse ``open item, item, ... close`` and return every node, brackets and commas included.

        ``holes`` accepts empty slots (``[1, , 2]``); ``trailing_comma=False`` rejects ``f(a,)``.
        """
        parts = [self.expect(open_text)]
        while not self.at(close_text):
            if holes and self.at(","):
                parts.append(leaf(self.advance()))
                continue
            parts.extend(item())
            if self.at(","):
                parts.append(leaf(self.advance()))
                if not trailing_comma and self.at(close_text):
                    raise BfclDecodeError(f"trailing comma in {what}")
            elif not self.at(close_text):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in {what}")
        parts.append(self.expect(close_text))
        return parts

    def skip_balanced(self, open_text: str, close_text: str) -> list[Node]:
        """Consume a bracketed group (contents unchecked) and return its tokens as leaves."""
        leaves = [self.expect(open_text)]
        depth = 1
        while depth:
            token = self.advance()
            if token.kind == "punct" and token.text == open_text:
                depth += 1
            elif token.kind == "punct" and token.text == close_text:
                depth -= 1
            leaves.append(leaf(token, token.kind if token.kind != "punct" else None))
        return leaves

    @staticmethod
    def argument_dict(
        nodes: Iterable[Node], argument: Callable[[Node], tuple[str | None, Any] | None]
    ) -> dict[str, Any]:
        """A call's arguments by name, ``argument`` reading each node as (name, value) or None (not an argument).

        As BFCL's tree-sitter decoders: an unnamed argument has the name None (here :data:`UNNAMED_ARGUMENT_KEY`),
        and a name given twice is an error, raised when its second node is read.
        """
        arguments: dict[str, Any] = {}
        for node in nodes:
            pair = argument(node)
            if pair is None:
                continue
            key = UNNAMED_ARGUMENT_KEY if pair[0] is None else pair[0]
            if key in arguments:
                raise BfclDecodeError(DUPLICATE_ARGUMENTS_ERROR)
            arguments[key] = pair[1]
        return arguments

    def matching_close(self, index: int) -> int:
        """Index of the token closing the bracket at ``index`` (or the eof index)."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack = []
        for i in range(index, len(self.tokens)):
            token = self.tokens[i]
            if token.kind != "punct":
                continue
            if token.text in pairs:
                stack.append(pairs[token.text])
            elif stack and token.text == stack[-1]:
                stack.pop()
                if not stack:
                    return i
        return len(self.tokens) - 1


def scan(
    source: str, patterns: list[tuple[str, re.Pattern[str]]], regex_allowed: Callable[[Token | None], bool]
) -> list[Token]:
    """Split source text into tokens with the given patterns (regex literals where allowed)."""
    tokens: list[Token] = []
    index = 0
    newline = False
    length = len(source)
    while index < length:
        char = source[index]
        if char in " \t\r\f\v\n":
            newline = newline or char == "\n"
            index += 1
            continue
        previous = tokens[-1] if tokens else None
        for kind, pattern in patterns:
            if kind == "regex" and not regex_allowed(previous):
                continue
            match = pattern.match(source, index)
            if match and match.end() > index:
                tokens.append(Token(kind, match.group(), index, match.end(), newline))
                index = match.end()
                newline = False
                break
        else:
            raise BfclDecodeError(f"unexpected character {char!r}")
    tokens.append(Token("eof", "", length, length, newline))
    return tokens
