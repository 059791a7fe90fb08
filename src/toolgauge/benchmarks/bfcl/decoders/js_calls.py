"""JavaScript call text as BFCL reads it (``js_parser.py`` over tree-sitter-javascript), without tree-sitter."""

from __future__ import annotations

import re
from collections.abc import Callable

from toolgauge.benchmarks.bfcl.decoders.call_types import (
    BfclDecodeError,
    BfclWrongFormatError,
    DecodedCall,
)
from toolgauge.benchmarks.bfcl.decoders.source_tokens import (
    IDENTIFIER,
    Node,
    Token,
    TokenParser,
    leaf,
    punctuation,
    span,
)

_JS_PUNCT = punctuation("===", "!==", "**=", ">>>", "&&=", "||=", "??=", "=>", "??", "?.", "**", ">>", "#")
_JS_TEMPLATE = re.compile(r"`(?:[^`\\$]|\\.|\$(?!\{)|\$\{(?:[^{}`]|\{[^{}]*\})*\})*`", re.DOTALL)
_JS_PATTERNS = [
    ("ident", IDENTIFIER),
    (
        "number",
        re.compile(
            r"0[xX][0-9a-fA-F_]+n?|0[bB][01_]+n?|0[oO][0-7_]+n?|\d[\d_]*n|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
        ),
    ),
    ("string", re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.DOTALL)),
    ("template", _JS_TEMPLATE),
    ("regex", re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")),
    ("punct", _JS_PUNCT),
]
_JS_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**=", "<<=", ">>=", ">>>=", "&&=", "||=", "??="}
_JS_BINARY = {
    "||",
    "&&",
    "??",
    "|",
    "^",
    "&",
    "==",
    "!=",
    "===",
    "!==",
    "<",
    ">",
    "<=",
    ">=",
    "<<",
    ">>",
    ">>>",
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "instanceof",
    "in",
}
_JS_UNARY = {"!", "~", "+", "-", "typeof", "void", "delete", "await", "++", "--"}
_JS_WORDS = {"true": "true", "false": "false", "null": "null", "this": "this", "undefined": "undefined"}
_JS_RESERVED = {
    "var",
    "let",
    "const",
    "if",
    "else",
    "for",
    "while",
    "do",
    "return",
    "switch",
    "case",
    "break",
    "continue",
    "throw",
    "try",
    "catch",
    "finally",
    "class",
    "import",
    "export",
    "default",
    "yield",
    "with",
    "debugger",
    "super",
    "extends",
}


def _js_regex_allowed(previous: Token | None) -> bool:
    if previous is None:
        return True
    if previous.kind in ("number", "string", "template", "regex"):
        return False
    if previous.kind == "ident":
        return previous.text in _JS_UNARY or previous.text in ("return", "in", "instanceof", "of", "case")
    return previous.text not in (")", "]", "}", "++", "--")


class JsCallDecoder(TokenParser):
    """Recursive-descent JavaScript parser returning the call shapes BFCL's tree-sitter parser yields."""

    def __init__(self, source: str):
        super().__init__(source, _JS_PATTERNS, _js_regex_allowed)

    def text(self, node: Node) -> str:
        return self.source[node.start : node.end]

    def decode(self) -> list[DecodedCall]:
        statements: list[Node] = []
        while self.token.kind != "eof":
            if self.at(";"):
                self.advance()
                continue
            if self.token.kind == "ident" and self.token.text in _JS_RESERVED:
                raise BfclDecodeError(f"statement {self.token.text!r} is not supported")
            statements.append(self.sequence())
            if self.at(";"):
                self.advance()
            elif self.token.kind != "eof" and not self.token.newline_before and not self.at("}"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} after a statement")
        for statement in statements:
            if statement.type == "call_expression":
                return [self._call(statement)]
        raise BfclWrongFormatError("no call expression found", decoded_text=str(None))

    def _call(self, call: Node) -> DecodedCall:
        return {self.text(call.children[0]): self.argument_dict(call.children[1].children, self._argument)}

    def _argument(self, child: Node) -> tuple[str | None, str] | None:
        if child.type == "assignment_expression":
            value = self.text(child.children[2])
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return self.text(child.children[0]), value
        if child.type in ("identifier", "true"):
            return None, self.text(child)
        return None

    def sequence(self) -> Node:
        parts = [self.assignment()]
        while self.at(","):
            parts.append(leaf(self.advance()))
            parts.append(self.assignment())
        return parts[0] if len(parts) == 1 else span("sequence_expression", parts)

    def assignment(self) -> Node:
        if self.is_arrow():
            return self.arrow()
        if self.at("async") and self.peek().text == "function":
            self.advance()
        left = self.conditional()
        if self.token.kind == "punct" and self.token.text in _JS_ASSIGN:
            operator_node = leaf(self.advance())
            kind = "assignment_expression" if operator_node.type == "=" else "augmented_assignment_expression"
            return span(kind, [left, operator_node, self.assignment()])
        return left

    def is_arrow(self) -> bool:
        index = self.position
        if self.tokens[index].text == "async" and self.tokens[index + 1].kind != "eof":
            index += 1
        token = self.tokens[index]
        if token.kind == "ident" and self.tokens[index + 1].text == "=>":
            return True
        if token.kind == "punct" and token.text == "(":
            close = self.matching_close(index)
            return self.tokens[min(close + 1, len(self.tokens) - 1)].text == "=>"
        return False

    def arrow(self) -> Node:
        parts: list[Node] = []
        if self.at("async"):
            parts.append(leaf(self.advance()))
        if self.at("("):
            parts.append(span("formal_parameters", self.skip_balanced("(", ")")))
        else:
            parts.append(leaf(self.advance(), "identifier"))
        parts.append(self.expect("=>"))
        parts.append(span("statement_block", self.skip_balanced("{", "}")) if self.at("{") else self.assignment())
        return span("arrow_function", parts)

    def conditional(self) -> Node:
        condition = self.binary()
        if not self.at("?"):
            return condition
        parts = [condition, leaf(self.advance()), self.assignment(), self.expect(":"), self.assignment()]
        return span("ternary_expression", parts)

    def binary(self) -> Node:
        parts = [self.unary()]
        while self.token.kind in ("punct", "ident") and self.token.text in _JS_BINARY:
            parts.append(leaf(self.advance()))
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else span("binary_expression", parts)

    def unary(self) -> Node:
        if self.token.kind in ("punct", "ident") and self.token.text in _JS_UNARY:
            operator_node = leaf(self.advance())
            return span("unary_expression", [operator_node, self.unary()])
        node = self.call_member(self.primary())
        if self.at("++", "--") and not self.token.newline_before:
            node = span("update_expression", [node, leaf(self.advance())])
        return node

    def spread_or(self, parse: Callable[[], Node]) -> Node:
        """A ``...expr`` spread element, or whatever ``parse`` reads."""
        if not self.at("..."):
            return parse()
        spread = leaf(self.advance())
        return span("spread_element", [spread, self.assignment()])

    def arguments(self) -> Node:
        parts = self.comma_list("(", ")", lambda: [self.spread_or(self.assignment)], "arguments")
        return span("arguments", parts)

    def call_member(self, node: Node) -> Node:
        while True:
            if self.at("."):
                dot = leaf(self.advance())
                if self.at("#"):
                    self.advance()
                node = span("member_expression", [node, dot, self._property()])
            elif self.at("?."):
                chain = leaf(self.advance())
                if self.at("("):
                    node = span("call_expression", [node, chain, self.arguments()])
                elif self.at("["):
                    node = span("subscript_expression", [node, chain, *self.enclosed("[", self.sequence, "]")])
                else:
                    node = span("member_expression", [node, chain, self._property()])
            elif self.at("["):
                node = span("subscript_expression", [node, *self.enclosed("[", self.sequence, "]")])
            elif self.at("("):
                node = span("call_expression", [node, self.arguments()])
            elif self.token.kind == "template":
                node = span("call_expression", [node, leaf(self.advance(), "template_string")])
            else:
                return node

    def _property(self, node_type: str | None = "property_identifier") -> Node:
        """The name after ``.`` or ``?.``."""
        return leaf(self.expect_name("a property name"), node_type)

    def primary(self) -> Node:
        token = self.token
        if token.kind in ("number", "string", "template", "regex"):
            return leaf(self.advance(), token.kind)
        if token.kind == "ident":
            if token.text == "new":
                new = leaf(self.advance())
                constructor = self.primary()
                while self.at(".") or self.at("["):
                    if self.at("."):
                        dot = leaf(self.advance())
                        constructor = span("member_expression", [constructor, dot, self._property(None)])
                    else:
                        index = self.enclosed("[", self.sequence, "]")
                        constructor = span("subscript_expression", [constructor, *index])
                children = [new, constructor]
                if self.at("("):
                    children.append(self.arguments())
                return span("new_expression", children)
            if token.text == "function":
                parts = [leaf(self.advance())]
                if self.at("*"):
                    parts.append(leaf(self.advance()))
                if self.token.kind == "ident":
                    parts.append(leaf(self.advance(), "identifier"))
                parts += self.skip_balanced("(", ")")
                parts.append(span("statement_block", self.skip_balanced("{", "}")))
                return span("function_expression", parts)
            if token.text in _JS_RESERVED:
                raise BfclDecodeError(f"unexpected keyword {token.text!r}")
            return leaf(self.advance(), _JS_WORDS.get(token.text, "identifier"))
        if self.at("("):
            return span("parenthesized_expression", self.enclosed("(", self.sequence, ")"))
        if self.at("["):
            return self.array()
        if self.at("{"):
            return self.object()
        raise BfclDecodeError(f"unexpected {token.text!r}")

    def array(self) -> Node:
        parts = self.comma_list("[", "]", lambda: [self.spread_or(self.assignment)], "array", holes=True)
        return span("array", parts)

    def object(self) -> Node:
        parts = self.comma_list("{", "}", lambda: [self.spread_or(self.pair)], "object")
        return span("object", parts)

    def pair(self) -> Node:
        shorthand = False
        if self.at("["):
            key = span("computed_property_name", self.enclosed("[", self.assignment, "]"))
        elif self.token.kind in ("ident", "string", "number"):
            shorthand = self.token.kind == "ident"
            key = leaf(self.advance(), "property_identifier")
        else:
            raise BfclDecodeError(f"unexpected {self.token.text!r} as an object key")
        if self.at(":"):
            colon = leaf(self.advance())
            return span("pair", [key, colon, self.assignment()])
        if self.at("("):
            parameters = span("formal_parameters", self.skip_balanced("(", ")"))
            body = span("statement_block", self.skip_balanced("{", "}"))
            return span("method_definition", [key, parameters, body])
        if key.type == "property_identifier" and shorthand:
            return span("shorthand_property_identifier", [key])
        raise BfclDecodeError("object key without a value")
