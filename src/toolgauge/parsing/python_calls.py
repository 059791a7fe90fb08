"""Decode BFCL prompting-style call text (``[f(a=1), g(b='x')]``) without ``eval``.

This reproduces what ``bfcl-eval`` 2026.3.23's ``default_decode_ast_prompting`` yields:

* Python: the text is stripped of backticks/newlines/spaces, wrapped in ``[...]`` when a bracket is
  missing, parsed with :func:`ast.parse`, and each call becomes ``{name: {keyword: value}}``.
  Positional arguments are dropped (BFCL keeps keywords only). Values resolve the way BFCL
  resolves them: literals as values, bare names and argument-less calls as their source text,
  calls with keywords as nested ``{name: {...}}`` dicts, subscripts as text, any unary operator
  as *negation* of a constant (BFCL's quirk: ``+5`` gives ``-5``). ``BinOp`` values are computed
  by a small literal evaluator instead of ``eval``; see :func:`_evaluate_literal_binop` for the
  cases we cannot match (BFCL evaluates names and calls inside arithmetic).
* Java and JavaScript: BFCL hands the bracket-stripped text to tree-sitter and keeps the *first*
  call. We parse the same text with small recursive-descent parsers that return the same shapes
  (all Java values become strings built from the tokens; JavaScript values are the raw source
  text with one pair of quotes removed). Tree-sitter's error recovery cannot be reproduced in
  general; the one case that matters (a lone Java statement without ``;`` of at most 10 bytes is
  an ERROR node) is reproduced, other syntax we do not model raises :class:`BfclDecodeError`.

Argument names BFCL stores under the key ``None`` (``f(**kw)`` in Python, positional identifiers
in Java/JavaScript) are stored under :data:`UNNAMED_ARGUMENT_KEY`; no schema uses that name, so
the checker's verdict is the same.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Language = Literal["python", "java", "javascript"]
DecodedCall = dict[str, dict[str, Any]]

UNNAMED_ARGUMENT_KEY = "<unnamed>"
"""Key for arguments BFCL stores under ``None`` (``**kwargs`` splats, positional identifiers)."""

# Results above these sizes are refused instead of computed; BFCL's eval would compute (or hang).
_MAX_INT_BITS = 100_000
_MAX_SEQUENCE_LENGTH = 1_000_000


class BfclDecodeError(ValueError):
    """The text is not a call list BFCL can decode (BFCL: ``ast_decoder:decoder_failed``)."""


class BfclWrongFormatError(BfclDecodeError):
    """Decoding succeeded but found no call (BFCL: ``ast_decoder:decoder_wrong_output_format``).

    Only the Java/JavaScript decoders produce this: BFCL's tree-sitter decoders return ``{}`` or
    ``None`` when the text holds no call.
    """


def decode_python_calls(text: str, language: Language = "python") -> list[DecodedCall]:
    """Decode prompting-style call text into ``[{name: {param: value}}]`` as BFCL does.

    Args:
        text: The model's reply.
        language: ``"python"`` for Python-syntax calls, ``"java"``/``"javascript"`` for the
            BFCL Java/JavaScript categories.

    Returns:
        One ``{function_name: {argument: value}}`` dict per call, in order.

    Raises:
        BfclDecodeError: The text cannot be decoded (``BfclWrongFormatError`` when it parses
            but holds no call, which BFCL reports as a wrong output format).
    """
    wrapped = text.strip("`\n ")
    if not wrapped.startswith("["):
        wrapped = "[" + wrapped
    if not wrapped.endswith("]"):
        wrapped = wrapped + "]"
    if language == "python":
        return _decode_python(wrapped)
    # BFCL drops the first and last character, whatever they are.
    if language == "java":
        return _JavaDecoder(wrapped[1:-1]).decode()
    if language == "javascript":
        return _JsDecoder(wrapped[1:-1]).decode()
    raise ValueError(f"unknown language {language!r}")


def render_python_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Render calls as BFCL prompting text, e.g. ``[f(a=1, b='x'), g()]``.

    Args:
        calls: ``(function_name, arguments)`` pairs; values must have a Python literal ``repr``.

    Returns:
        The bracketed call list, which :func:`decode_python_calls` decodes back.
    """
    rendered = []
    for name, arguments in calls:
        args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        rendered.append(f"{name}({args})")
    return "[" + ", ".join(rendered) + "]"


# ----------------------------------------------------------------------------------------------
# Python


def _decode_python(wrapped: str) -> list[DecodedCall]:
    cleaned = wrapped.strip().strip("'")
    try:
        tree = ast.parse(cleaned, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as error:
        raise BfclDecodeError(f"invalid syntax: {error}") from error
    body = tree.body
    if isinstance(body, ast.Call):
        return [_resolve_call(body)]
    if not isinstance(body, ast.List | ast.Tuple | ast.Set):
        raise BfclDecodeError(f"expected a list of calls, got {type(body).__name__}")
    calls = []
    for element in body.elts:
        if not isinstance(element, ast.Call):
            raise BfclDecodeError(f"list element is not a call: {ast.unparse(element)[:80]}")
        calls.append(_resolve_call(element))
    return calls


def _call_name(call: ast.Call) -> str:
    parts: list[str] = []
    node = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _resolve_call(call: ast.Call) -> DecodedCall:
    arguments: dict[str, Any] = {}
    for keyword in call.keywords:
        key = UNNAMED_ARGUMENT_KEY if keyword.arg is None else keyword.arg
        arguments[key] = _resolve_value(keyword.value)
    return {_call_name(call): arguments}


def _resolve_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        # BFCL negates the operand's constant whatever the operator is.
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            raise BfclDecodeError(f"unsupported unary operand: {ast.unparse(node)[:80]}")
        value: Any = operand.value
        try:
            return -value
        except TypeError as error:
            raise BfclDecodeError(f"cannot negate {operand.value!r}") from error
    if isinstance(node, ast.List):
        return [_resolve_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise BfclDecodeError("dict unpacking (**) is not a value")
            key = _resolve_value(key_node)
            try:
                result[key] = _resolve_value(value_node)
            except TypeError as error:
                raise BfclDecodeError(f"unhashable dict key {key!r}") from error
        return result
    if isinstance(node, ast.BinOp):
        return _evaluate_literal_binop(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        return _resolve_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_resolve_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    # Lambda included: BFCL's lambda branch always raises.
    raise BfclDecodeError(f"unsupported value {type(node).__name__}: {ast.unparse(node)[:80]}")


_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}


def _evaluate_literal_binop(node: ast.BinOp) -> Any:
    """Compute a ``BinOp`` over literals, as BFCL's ``eval(ast.unparse(node))`` would.

    Deviation: BFCL evaluates *any* expression here in its own module namespace, so
    ``len('ab') * 2`` or ``MAXIMUM_STEP_LIMIT + 1`` succeed there; we support constants,
    containers, unary/binary/boolean operators and comparisons only, treat every name as
    undefined (BFCL: ``NameError`` for names it does not define), and refuse results larger than
    ``_MAX_INT_BITS``/``_MAX_SEQUENCE_LENGTH`` (BFCL would compute them or hang).
    """
    try:
        return _literal(node)
    except BfclDecodeError:
        raise
    except (ArithmeticError, TypeError, ValueError, MemoryError, RecursionError) as error:
        raise BfclDecodeError(f"cannot evaluate {ast.unparse(node)[:80]}: {error}") from error


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_literal(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(v) for v in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(v) for v in node.elts}
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k}
    if isinstance(node, ast.UnaryOp):
        return _UNARY_OPERATORS[type(node.op)](_literal(node.operand))
    if isinstance(node, ast.BinOp):
        left, right = _literal(node.left), _literal(node.right)
        _refuse_huge(node.op, left, right)
        return _BINARY_OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.BoolOp):
        value = _literal(node.values[0])
        for item in node.values[1:]:
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
            value = _literal(item)
        return value
    if isinstance(node, ast.Compare):
        left = _literal(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _literal(comparator)
            if not _compare(op, left, right):
                return False
            left = right
        return True
    raise BfclDecodeError(f"not evaluated without eval: {ast.unparse(node)[:80]}")


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    table: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
        ast.Eq: operator.eq,
        ast.NotEq: operator.ne,
        ast.Lt: operator.lt,
        ast.LtE: operator.le,
        ast.Gt: operator.gt,
        ast.GtE: operator.ge,
        ast.Is: operator.is_,
        ast.IsNot: operator.is_not,
        ast.In: lambda a, b: a in b,
        ast.NotIn: lambda a, b: a not in b,
    }
    return bool(table[type(op)](left, right))


def _refuse_huge(op: ast.operator, left: Any, right: Any) -> None:
    def bits(value: Any) -> int:
        return abs(value).bit_length() if isinstance(value, int) else 64

    if (
        isinstance(op, ast.Pow)
        and isinstance(left, int)
        and isinstance(right, int)
        and right > 0
        and abs(left) > 1
        and bits(left) * right > _MAX_INT_BITS
    ):
        raise BfclDecodeError("power too large to evaluate safely")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > _MAX_INT_BITS:
        raise BfclDecodeError("shift too large to evaluate safely")
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            sized = isinstance(seq, str | bytes | list | tuple) and isinstance(count, int)
            if sized and len(seq) * count > _MAX_SEQUENCE_LENGTH:
                raise BfclDecodeError("repetition too large to evaluate safely")


# ----------------------------------------------------------------------------------------------
# Shared tokenizer machinery for Java and JavaScript


@dataclass
class _Token:
    kind: str  # "ident", "number", "string", "char", "template", "regex", "punct", "eof"
    text: str
    start: int  # character offsets into the source
    end: int
    newline_before: bool = False


@dataclass
class _Node:
    """A syntax node; ``type`` follows tree-sitter's names, anonymous tokens use their text."""

    type: str
    start: int
    end: int
    children: list[_Node] = field(default_factory=list)
    fields: dict[str, _Node] = field(default_factory=dict)


def _leaf(token: _Token, node_type: str | None = None) -> _Node:
    return _Node(node_type or token.text, token.start, token.end)


def _span(node_type: str, children: list[_Node], **fields: _Node) -> _Node:
    return _Node(node_type, children[0].start, children[-1].end, children, dict(fields))


class _Parser:
    """Token cursor with the helpers both recursive-descent parsers share."""

    tokens: list[_Token]
    position: int

    @property
    def token(self) -> _Token:
        return self.tokens[self.position]

    def peek(self, ahead: int = 1) -> _Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("punct", "ident") and self.token.text in texts

    def advance(self) -> _Token:
        token = self.token
        if token.kind == "eof":
            raise BfclDecodeError("unexpected end of text")
        self.position += 1
        return token

    def expect(self, text: str) -> _Node:
        if not self.at(text):
            raise BfclDecodeError(f"expected {text!r}, found {self.token.text!r}")
        return _leaf(self.advance())

    def skip_balanced(self, open_text: str, close_text: str) -> list[_Node]:
        """Consume a bracketed group (contents unchecked) and return its tokens as leaves."""
        leaves = [self.expect(open_text)]
        depth = 1
        while depth:
            token = self.advance()
            if token.kind == "punct" and token.text == open_text:
                depth += 1
            elif token.kind == "punct" and token.text == close_text:
                depth -= 1
            leaves.append(_leaf(token, token.kind if token.kind != "punct" else None))
        return leaves

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


def _scan(
    source: str, patterns: list[tuple[str, re.Pattern[str]]], regex_allowed: Callable[[_Token | None], bool]
) -> list[_Token]:
    tokens: list[_Token] = []
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
                tokens.append(_Token(kind, match.group(), index, match.end(), newline))
                index = match.end()
                newline = False
                break
        else:
            raise BfclDecodeError(f"unexpected character {char!r}")
    tokens.append(_Token("eof", "", length, length, newline))
    return tokens


# ----------------------------------------------------------------------------------------------
# Java (emulates bfcl_eval/model_handler/parser/java_parser.py over tree-sitter-java 0.21)

_JAVA_PUNCT = sorted(
    [
        ">>>=",
        "<<=",
        ">>=",
        "...",
        "->",
        "::",
        "++",
        "--",
        "&&",
        "||",
        "==",
        "!=",
        "<=",
        ">=",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "<<",
        *"(){}[];,.@=<>!~?:+-*/&|^%",
    ],
    key=len,
    reverse=True,
)
_JAVA_PATTERNS = [
    ("ident", re.compile(r"[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*")),
    (
        "number",
        re.compile(
            r"0[xX][0-9a-fA-F_]+[lL]?|0[bB][01_]+[lL]?|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[fFdDlL]?"
        ),
    ),
    ("string", re.compile(r'"(?:[^"\\\n]|\\.)*"')),
    # tree-sitter-java's character_literal accepts several characters ('abc').
    ("char", re.compile(r"'(?:[^'\\\n]|\\.)*'")),
    ("punct", re.compile("|".join(re.escape(p) for p in _JAVA_PUNCT))),
]
_JAVA_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", ">>>="}
_JAVA_BINARY = {"||", "&&", "|", "^", "&", "==", "!=", "<", ">", "<=", ">=", "<<", "+", "-", "*", "/", "%"}
_JAVA_PRIMITIVES = {"byte", "short", "int", "long", "float", "double", "boolean", "char", "void"}
_JAVA_LITERAL_WORDS = {"true": "true", "false": "false", "null": "null_literal", "this": "this"}
_JAVA_RESERVED = {
    "new",
    "class",
    "instanceof",
    "return",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "default",
    "break",
    "continue",
    "try",
    "catch",
    "finally",
    "throw",
    "import",
    "package",
    "super",
}
_JAVA_ERROR_THRESHOLD_BYTES = 10


class _JavaDecoder(_Parser):
    def __init__(self, source: str):
        self.source = source
        # BFCL slices the Python string with tree-sitter's *byte* offsets; keep both to match.
        self.byte_at = [0]
        for char in source:
            self.byte_at.append(self.byte_at[-1] + len(char.encode("utf-8")))
        self.tokens = _scan(source, _JAVA_PATTERNS, lambda _: False)
        self.position = 0

    def text(self, node: _Node) -> str:
        return self.source[self.byte_at[node.start] : self.byte_at[node.end]]

    # -- statements --------------------------------------------------------------------------

    def decode(self) -> list[DecodedCall]:
        statements: list[_Node] = []
        missing_semicolon = False
        while self.token.kind != "eof":
            if self.at(";"):
                self.advance()
                continue
            expression = self.expression()
            statements.append(expression)
            if self.at(";"):
                self.advance()
            elif self.token.kind == "eof":
                missing_semicolon = True
            else:
                raise BfclDecodeError(f"unexpected {self.token.text!r} after a statement")
        if missing_semicolon and len(statements) == 1:
            # Tree-sitter prefers an ERROR node to a MISSING ';' when that is cheaper:
            # 500 + bytes + 30 per line + 100 versus 610.
            statement = statements[0]
            size = self.byte_at[statement.end] - self.byte_at[statement.start]
            lines = self.source.count("\n", statement.start, statement.end)
            if size + 30 * lines <= _JAVA_ERROR_THRESHOLD_BYTES:
                raise BfclDecodeError("tree-sitter parses this short statement as an ERROR")
        for statement in statements:
            invocation = self._first_invocation(statement)
            if invocation is not None:
                return [self._call(invocation)]
        raise BfclWrongFormatError("no method invocation found")

    def _first_invocation(self, node: _Node) -> _Node | None:
        if node.type == "method_invocation":
            return node
        for child in node.children:
            found = self._first_invocation(child)
            if found is not None:
                return found
        return None

    def _call(self, invocation: _Node) -> DecodedCall:
        name = self.text(invocation.fields["name"])
        if "object" in invocation.fields:
            name = f"{self.text(invocation.fields['object'])}.{name}"
        arguments: dict[str, Any] = {}
        for child in invocation.fields["arguments"].children:
            if child.type == "assignment_expression":
                key = self.text(child.children[0])
                value = self.value_text(child.children[2], nested=False)
            elif child.type in ("identifier", "class_literal"):
                key, value = UNNAMED_ARGUMENT_KEY, self.value_text(child, nested=False)
            else:
                continue
            if key in arguments:
                raise BfclDecodeError("multiple arguments with the same name")
            arguments[key] = value
        return {name: arguments}

    def value_text(self, node: _Node, nested: bool) -> str:
        """BFCL's ``traverse_node``: token texts joined without whitespace, with special cases."""
        if node.type in ("string_literal", "character_literal"):
            return self.text(node) if nested else self.text(node)[1:-1]
        if node.type in ("identifier", "class_literal", "type_identifier", "method_invocation"):
            return self.text(node)
        if node.type == "array_creation_expression":
            if "value" not in node.fields:
                raise BfclDecodeError("array creation without an initializer")
            type_text = self.value_text(node.fields["type"], True)
            return f"new {type_text}[]{self.value_text(node.fields['value'], True)}"
        if node.type == "object_creation_expression":
            type_text = self.value_text(node.fields["type"], True)
            arguments = [
                self.value_text(child, True)
                for child in node.fields["arguments"].children
                if child.type not in (",", "(", ")")
            ]
            return f"new {type_text}({', '.join(arguments)})"
        if node.children:
            return "".join(self.value_text(child, True) for child in node.children)
        return self.text(node)

    # -- expressions -------------------------------------------------------------------------

    def expression(self) -> _Node:
        if self.is_lambda():
            return self.lambda_expression()
        left = self.ternary()
        if self.token.kind == "punct" and self.token.text in _JAVA_ASSIGN:
            operator_node = _leaf(self.advance())
            return _span("assignment_expression", [left, operator_node, self.expression()])
        return left

    def is_lambda(self) -> bool:
        if self.token.kind == "ident" and self.peek().text == "->":
            return True
        if self.at("("):
            close = self.matching_close(self.position)
            return self.tokens[min(close + 1, len(self.tokens) - 1)].text == "->"
        return False

    def lambda_expression(self) -> _Node:
        if self.at("("):
            parameters = self.skip_balanced("(", ")")
            params = _span("formal_parameters", parameters)
        else:
            params = _leaf(self.advance(), "identifier")
        arrow = self.expect("->")
        body = _span("block", self.skip_balanced("{", "}")) if self.at("{") else self.expression()
        return _span("lambda_expression", [params, arrow, body])

    def ternary(self) -> _Node:
        condition = self.binary()
        if not self.at("?"):
            return condition
        question = _leaf(self.advance())
        consequence = self.expression()
        colon = self.expect(":")
        return _span("ternary_expression", [condition, question, consequence, colon, self.expression()])

    def binary(self) -> _Node:
        parts = [self.unary()]
        while True:
            token = self.token
            if (
                token.kind == "punct"
                and token.text == ">"
                and self.peek().text == ">"
                and self.peek().start == token.end
            ):
                parts.append(_leaf(self.advance()))
                parts.append(_leaf(self.advance()))
                if self.at(">") and self.token.start == parts[-1].end:
                    parts.append(_leaf(self.advance()))
            elif token.kind == "punct" and token.text in _JAVA_BINARY:
                parts.append(_leaf(self.advance()))
            elif token.kind == "ident" and token.text == "instanceof":
                parts.append(_leaf(self.advance()))
                parts.append(self.type_node())
                continue
            else:
                break
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else _span("binary_expression", parts)

    def unary(self) -> _Node:
        if self.token.kind == "punct" and self.token.text in ("+", "-", "!", "~", "++", "--"):
            operator_node = _leaf(self.advance())
            return _span("unary_expression", [operator_node, self.unary()])
        if self.at("(") and self.is_cast():
            open_node = self.expect("(")
            type_node = self.type_node()
            close_node = self.expect(")")
            return _span("cast_expression", [open_node, type_node, close_node, self.unary()])
        node = self.postfix(self.primary())
        while self.token.kind == "punct" and self.token.text in ("++", "--"):
            node = _span("update_expression", [node, _leaf(self.advance())])
        return node

    def is_cast(self) -> bool:
        first = self.peek()
        if first.kind != "ident" or first.text in _JAVA_LITERAL_WORDS or first.text in _JAVA_RESERVED:
            return False
        close = self.matching_close(self.position)
        after = self.tokens[min(close + 1, len(self.tokens) - 1)]
        if first.text in _JAVA_PRIMITIVES:
            return True
        return after.kind in ("ident", "number", "string", "char") or after.text in ("(", "!", "~")

    def type_node(self) -> _Node:
        token = self.token
        if token.kind != "ident":
            raise BfclDecodeError(f"expected a type, found {token.text!r}")
        parts = [_leaf(self.advance(), "type_identifier")]
        while True:
            if self.at("."):
                parts.append(_leaf(self.advance()))
                parts.append(_leaf(self._ident(), "type_identifier"))
            elif self.at("<"):
                parts.append(self.type_arguments())
            elif self.at("[") and self.peek().text == "]":
                parts.append(_leaf(self.advance()))
                parts.append(_leaf(self.advance()))
            else:
                break
        return parts[0] if len(parts) == 1 else _span("generic_type", parts)

    def type_arguments(self) -> _Node:
        parts = [self.expect("<")]
        while not self.at(">"):
            if self.at("?"):
                parts.append(_leaf(self.advance()))
                if self.token.text in ("extends", "super"):
                    parts.append(_leaf(self.advance()))
                    parts.append(self.type_node())
            else:
                parts.append(self.type_node())
            if self.at(","):
                parts.append(_leaf(self.advance()))
            elif not self.at(">"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in type arguments")
        parts.append(self.expect(">"))
        return _span("type_arguments", parts)

    def _ident(self) -> _Token:
        if self.token.kind != "ident":
            raise BfclDecodeError(f"expected a name, found {self.token.text!r}")
        return self.advance()

    def arguments(self) -> _Node:
        parts = [self.expect("(")]
        while not self.at(")"):
            parts.append(self.expression())
            if self.at(","):
                parts.append(_leaf(self.advance()))
                if self.at(")"):
                    raise BfclDecodeError("trailing comma in arguments")
            elif not self.at(")"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in arguments")
        parts.append(self.expect(")"))
        return _span("argument_list", parts)

    def primary(self) -> _Node:
        token = self.token
        if token.kind == "number":
            return _leaf(self.advance(), "number_literal")
        if token.kind == "string":
            return _leaf(self.advance(), "string_literal")
        if token.kind == "char":
            return _leaf(self.advance(), "character_literal")
        if token.kind == "ident":
            if token.text in _JAVA_LITERAL_WORDS:
                return _leaf(self.advance(), _JAVA_LITERAL_WORDS[token.text])
            if token.text == "new":
                return self.creation()
            if token.text in _JAVA_RESERVED:
                raise BfclDecodeError(f"unexpected keyword {token.text!r}")
            name = _leaf(self.advance(), "identifier")
            if self.at("("):
                arguments = self.arguments()
                return _span("method_invocation", [name, arguments], name=name, arguments=arguments)
            return name
        if self.at("("):
            open_node = self.expect("(")
            inner = self.expression()
            return _span("parenthesized_expression", [open_node, inner, self.expect(")")])
        raise BfclDecodeError(f"unexpected {token.text!r}")

    def postfix(self, node: _Node) -> _Node:
        while True:
            if self.at("."):
                dot = _leaf(self.advance())
                if self.at("class"):
                    node = _span("class_literal", [node, dot, _leaf(self.advance())])
                    continue
                if self.at("<"):
                    raise BfclDecodeError("explicit generic method calls are not supported")
                name = _leaf(self._ident(), "identifier")
                if self.at("("):
                    arguments = self.arguments()
                    node = _span(
                        "method_invocation", [node, dot, name, arguments], object=node, name=name, arguments=arguments
                    )
                else:
                    node = _span("field_access", [node, dot, name])
            elif self.at("["):
                open_node = self.expect("[")
                index = self.expression()
                node = _span("array_access", [node, open_node, index, self.expect("]")])
            elif self.at("::"):
                colons = _leaf(self.advance())
                node = _span("method_reference", [node, colons, _leaf(self._ident(), "identifier")])
            else:
                return node

    def creation(self) -> _Node:
        new = _leaf(self.advance())
        type_node = self.type_node_without_dims()
        if self.at("("):
            arguments = self.arguments()
            children = [new, type_node, arguments]
            if self.at("{"):
                children.append(self.class_body())
            return _span("object_creation_expression", children, type=type_node, arguments=arguments)
        if not self.at("["):
            raise BfclDecodeError("expected '(' or '[' after new")
        dims: list[_Node] = []
        while self.at("["):
            open_node = self.expect("[")
            if self.at("]"):
                dims += [open_node, self.expect("]")]
            else:
                size = self.expression()
                dims += [open_node, size, self.expect("]")]
        children = [new, type_node, _span("dimensions", dims)]
        fields = {"type": type_node}
        if self.at("{"):
            value = self.array_initializer()
            children.append(value)
            fields["value"] = value
        return _span("array_creation_expression", children, **fields)

    def type_node_without_dims(self) -> _Node:
        parts = [_leaf(self._ident(), "type_identifier")]
        while self.at(".") or self.at("<"):
            if self.at("<"):
                parts.append(self.type_arguments())
            else:
                parts.append(_leaf(self.advance()))
                parts.append(_leaf(self._ident(), "type_identifier"))
        return parts[0] if len(parts) == 1 else _span("generic_type", parts)

    def class_body(self) -> _Node:
        """An anonymous class body holding only initializer blocks (``{{ put(...); }}``)."""
        parts = [self.expect("{")]
        while not self.at("}"):
            if self.at(";"):
                parts.append(_leaf(self.advance()))
            elif self.at("{"):
                parts.append(self.block())
            else:
                raise BfclDecodeError("class body members other than initializer blocks are not supported")
        parts.append(self.expect("}"))
        return _span("class_body", parts)

    def block(self) -> _Node:
        parts = [self.expect("{")]
        while not self.at("}"):
            if self.at("{"):
                parts.append(self.block())
            elif self.at(";"):
                parts.append(_leaf(self.advance()))
            else:
                parts.append(self.expression())
                parts.append(self.expect(";"))
        parts.append(self.expect("}"))
        return _span("block", parts)

    def array_initializer(self) -> _Node:
        parts = [self.expect("{")]
        while not self.at("}"):
            parts.append(self.array_initializer() if self.at("{") else self.expression())
            if self.at(","):
                parts.append(_leaf(self.advance()))
            elif not self.at("}"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in array initializer")
        parts.append(self.expect("}"))
        return _span("array_initializer", parts)


# ----------------------------------------------------------------------------------------------
# JavaScript (emulates bfcl_eval/model_handler/parser/js_parser.py over tree-sitter-javascript)

_JS_PUNCT = sorted(
    [
        ">>>=",
        "...",
        "===",
        "!==",
        "**=",
        "<<=",
        ">>=",
        ">>>",
        "&&=",
        "||=",
        "??=",
        "=>",
        "==",
        "!=",
        "<=",
        ">=",
        "&&",
        "||",
        "??",
        "?.",
        "++",
        "--",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "**",
        "<<",
        ">>",
        *"(){}[];,.=<>!~?:+-*/&|^%@#",
    ],
    key=len,
    reverse=True,
)
_JS_TEMPLATE = re.compile(r"`(?:[^`\\$]|\\.|\$(?!\{)|\$\{(?:[^{}`]|\{[^{}]*\})*\})*`", re.DOTALL)
_JS_PATTERNS = [
    ("ident", re.compile(r"[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*")),
    (
        "number",
        re.compile(
            r"0[xX][0-9a-fA-F_]+n?|0[bB][01_]+n?|0[oO][0-7_]+n?|\d[\d_]*n|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
        ),
    ),
    ("string", re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.DOTALL)),
    ("template", _JS_TEMPLATE),
    ("regex", re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")),
    ("punct", re.compile("|".join(re.escape(p) for p in _JS_PUNCT))),
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


def _js_regex_allowed(previous: _Token | None) -> bool:
    if previous is None:
        return True
    if previous.kind in ("number", "string", "template", "regex"):
        return False
    if previous.kind == "ident":
        return previous.text in _JS_UNARY or previous.text in ("return", "in", "instanceof", "of", "case")
    return previous.text not in (")", "]", "}", "++", "--")


class _JsDecoder(_Parser):
    def __init__(self, source: str):
        self.source = source
        self.tokens = _scan(source, _JS_PATTERNS, _js_regex_allowed)
        self.position = 0

    def text(self, node: _Node) -> str:
        return self.source[node.start : node.end]

    def decode(self) -> list[DecodedCall]:
        statements: list[_Node] = []
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
        raise BfclWrongFormatError("no call expression found")

    def _call(self, call: _Node) -> DecodedCall:
        arguments: dict[str, Any] = {}
        for child in call.children[1].children:
            if child.type == "assignment_expression":
                key = self.text(child.children[0])
                value = self.text(child.children[2])
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
            elif child.type in ("identifier", "true"):
                key, value = UNNAMED_ARGUMENT_KEY, self.text(child)
            else:
                continue
            if key in arguments:
                raise BfclDecodeError("multiple arguments with the same name")
            arguments[key] = value
        return {self.text(call.children[0]): arguments}

    def sequence(self) -> _Node:
        parts = [self.assignment()]
        while self.at(","):
            parts.append(_leaf(self.advance()))
            parts.append(self.assignment())
        return parts[0] if len(parts) == 1 else _span("sequence_expression", parts)

    def assignment(self) -> _Node:
        if self.is_arrow():
            return self.arrow()
        if self.at("async") and self.peek().text == "function":
            self.advance()
        left = self.conditional()
        if self.token.kind == "punct" and self.token.text in _JS_ASSIGN:
            operator_node = _leaf(self.advance())
            kind = "assignment_expression" if operator_node.type == "=" else "augmented_assignment_expression"
            return _span(kind, [left, operator_node, self.assignment()])
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

    def arrow(self) -> _Node:
        parts: list[_Node] = []
        if self.at("async"):
            parts.append(_leaf(self.advance()))
        if self.at("("):
            parts.append(_span("formal_parameters", self.skip_balanced("(", ")")))
        else:
            parts.append(_leaf(self.advance(), "identifier"))
        parts.append(self.expect("=>"))
        parts.append(_span("statement_block", self.skip_balanced("{", "}")) if self.at("{") else self.assignment())
        return _span("arrow_function", parts)

    def conditional(self) -> _Node:
        condition = self.binary()
        if not self.at("?"):
            return condition
        parts = [condition, _leaf(self.advance()), self.assignment(), self.expect(":"), self.assignment()]
        return _span("ternary_expression", parts)

    def binary(self) -> _Node:
        parts = [self.unary()]
        while self.token.kind in ("punct", "ident") and self.token.text in _JS_BINARY:
            parts.append(_leaf(self.advance()))
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else _span("binary_expression", parts)

    def unary(self) -> _Node:
        if self.token.kind in ("punct", "ident") and self.token.text in _JS_UNARY:
            operator_node = _leaf(self.advance())
            return _span("unary_expression", [operator_node, self.unary()])
        node = self.call_member(self.primary())
        if self.at("++", "--") and not self.token.newline_before:
            node = _span("update_expression", [node, _leaf(self.advance())])
        return node

    def arguments(self) -> _Node:
        parts = [self.expect("(")]
        while not self.at(")"):
            if self.at("..."):
                spread = _leaf(self.advance())
                parts.append(_span("spread_element", [spread, self.assignment()]))
            else:
                parts.append(self.assignment())
            if self.at(","):
                parts.append(_leaf(self.advance()))
            elif not self.at(")"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in arguments")
        parts.append(self.expect(")"))
        return _span("arguments", parts)

    def call_member(self, node: _Node) -> _Node:
        while True:
            if self.at("."):
                dot = _leaf(self.advance())
                if self.at("#"):
                    self.advance()
                node = _span("member_expression", [node, dot, _leaf(self._name(), "property_identifier")])
            elif self.at("?."):
                chain = _leaf(self.advance())
                if self.at("("):
                    node = _span("call_expression", [node, chain, self.arguments()])
                elif self.at("["):
                    open_node = self.expect("[")
                    index = self.sequence()
                    node = _span("subscript_expression", [node, chain, open_node, index, self.expect("]")])
                else:
                    node = _span("member_expression", [node, chain, _leaf(self._name(), "property_identifier")])
            elif self.at("["):
                open_node = self.expect("[")
                index = self.sequence()
                node = _span("subscript_expression", [node, open_node, index, self.expect("]")])
            elif self.at("("):
                node = _span("call_expression", [node, self.arguments()])
            elif self.token.kind == "template":
                node = _span("call_expression", [node, _leaf(self.advance(), "template_string")])
            else:
                return node

    def _name(self) -> _Token:
        if self.token.kind != "ident":
            raise BfclDecodeError(f"expected a property name, found {self.token.text!r}")
        return self.advance()

    def primary(self) -> _Node:
        token = self.token
        if token.kind in ("number", "string", "template", "regex"):
            return _leaf(self.advance(), token.kind)
        if token.kind == "ident":
            if token.text == "new":
                new = _leaf(self.advance())
                constructor = self.primary()
                while self.at(".") or self.at("["):
                    if self.at("."):
                        dot = _leaf(self.advance())
                        constructor = _span("member_expression", [constructor, dot, _leaf(self._name())])
                    else:
                        open_node = self.expect("[")
                        index = self.sequence()
                        constructor = _span("subscript_expression", [constructor, open_node, index, self.expect("]")])
                children = [new, constructor]
                if self.at("("):
                    children.append(self.arguments())
                return _span("new_expression", children)
            if token.text == "function":
                parts = [_leaf(self.advance())]
                if self.at("*"):
                    parts.append(_leaf(self.advance()))
                if self.token.kind == "ident":
                    parts.append(_leaf(self.advance(), "identifier"))
                parts += self.skip_balanced("(", ")")
                parts.append(_span("statement_block", self.skip_balanced("{", "}")))
                return _span("function_expression", parts)
            if token.text in _JS_RESERVED:
                raise BfclDecodeError(f"unexpected keyword {token.text!r}")
            return _leaf(self.advance(), _JS_WORDS.get(token.text, "identifier"))
        if self.at("("):
            open_node = self.expect("(")
            inner = self.sequence()
            return _span("parenthesized_expression", [open_node, inner, self.expect(")")])
        if self.at("["):
            return self.array()
        if self.at("{"):
            return self.object()
        raise BfclDecodeError(f"unexpected {token.text!r}")

    def array(self) -> _Node:
        parts = [self.expect("[")]
        while not self.at("]"):
            if self.at(","):
                parts.append(_leaf(self.advance()))
                continue
            if self.at("..."):
                spread = _leaf(self.advance())
                parts.append(_span("spread_element", [spread, self.assignment()]))
            else:
                parts.append(self.assignment())
            if self.at(","):
                parts.append(_leaf(self.advance()))
            elif not self.at("]"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in array")
        parts.append(self.expect("]"))
        return _span("array", parts)

    def object(self) -> _Node:
        parts = [self.expect("{")]
        while not self.at("}"):
            if self.at("..."):
                spread = _leaf(self.advance())
                parts.append(_span("spread_element", [spread, self.assignment()]))
            else:
                parts.append(self.pair())
            if self.at(","):
                parts.append(_leaf(self.advance()))
            elif not self.at("}"):
                raise BfclDecodeError(f"unexpected {self.token.text!r} in object")
        parts.append(self.expect("}"))
        return _span("object", parts)

    def pair(self) -> _Node:
        shorthand = False
        if self.at("["):
            open_node = self.expect("[")
            inner = self.assignment()
            key = _span("computed_property_name", [open_node, inner, self.expect("]")])
        elif self.token.kind in ("ident", "string", "number"):
            shorthand = self.token.kind == "ident"
            key = _leaf(self.advance(), "property_identifier")
        else:
            raise BfclDecodeError(f"unexpected {self.token.text!r} as an object key")
        if self.at(":"):
            colon = _leaf(self.advance())
            return _span("pair", [key, colon, self.assignment()])
        if self.at("("):
            parameters = _span("formal_parameters", self.skip_balanced("(", ")"))
            body = _span("statement_block", self.skip_balanced("{", "}"))
            return _span("method_definition", [key, parameters, body])
        if key.type == "property_identifier" and shorthand:
            return _span("shorthand_property_identifier", [key])
        raise BfclDecodeError("object key without a value")
