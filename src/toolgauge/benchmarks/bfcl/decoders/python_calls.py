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
from collections.abc import Callable
from typing import Any

from toolgauge.benchmarks.bfcl.decoders.call_types import (
    DUPLICATE_ARGUMENTS_ERROR,
    JAVA_SYNTAX_ERROR,
    JAVASCRIPT_SYNTAX_ERROR,
    UNNAMED_ARGUMENT_KEY,
    BfclDecodeError,
    BfclWrongFormatError,
    DecodedCall,
    Language,
)
from toolgauge.benchmarks.bfcl.decoders.java_calls import JavaCallDecoder
from toolgauge.benchmarks.bfcl.decoders.js_calls import JsCallDecoder

# Results above these sizes are refused instead of computed; BFCL's eval would compute (or hang).
_MAX_INT_BITS = 100_000
_MAX_SEQUENCE_LENGTH = 1_000_000


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
        return _with_bfcl_message(JavaCallDecoder(wrapped[1:-1]).decode, JAVA_SYNTAX_ERROR)
    if language == "javascript":
        return _with_bfcl_message(JsCallDecoder(wrapped[1:-1]).decode, JAVASCRIPT_SYNTAX_ERROR)
    raise ValueError(f"unknown language {language!r}")


def _with_bfcl_message(decode: Callable[[], list[DecodedCall]], syntax_error: str) -> list[DecodedCall]:
    """Run a tree-sitter-like decoder; any syntax error it finds gets BFCL's one message for it."""
    try:
        return decode()
    except BfclWrongFormatError:
        raise
    except BfclDecodeError as error:
        if str(error) == DUPLICATE_ARGUMENTS_ERROR:
            raise
        raise BfclDecodeError(syntax_error) from error


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
        raise BfclDecodeError(str(error)) from error
    # The messages below are the str() of the exception BFCL's ast_parse raises at the same point,
    # so the export's error text is BFCL's (an AttributeError on .elts, a bare assert).
    body = tree.body
    if isinstance(body, ast.Call):
        return [_resolve_call(body)]
    if not isinstance(body, ast.List | ast.Tuple | ast.Set):
        raise BfclDecodeError(f"'{type(body).__name__}' object has no attribute 'elts'")
    calls = []
    for element in body.elts:
        if not isinstance(element, ast.Call):
            raise BfclDecodeError("")
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
    # Error messages are those of BFCL's resolve_ast_by_type at the same point.
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        # BFCL negates the operand's constant whatever the operator is: -node.operand.value.
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            inner = getattr(operand, "value", None)
            if not isinstance(inner, ast.AST):
                raise BfclDecodeError(f"'{type(operand).__name__}' object has no attribute 'value'")
            raise BfclDecodeError(f"bad operand type for unary -: '{type(inner).__name__}'")
        value: Any = operand.value
        try:
            return -value
        except TypeError as error:
            raise BfclDecodeError(str(error)) from error
    if isinstance(node, ast.List):
        return [_resolve_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**d}: BFCL resolves the missing key node, None
                raise BfclDecodeError(f"Unsupported AST type: {type(None)}")
            key = _resolve_value(key_node)
            try:
                result[key] = _resolve_value(value_node)
            except TypeError as error:
                raise BfclDecodeError(str(error)) from error
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
    if isinstance(node, ast.Lambda):  # BFCL's lambda branch indexes the body, which always raises
        raise BfclDecodeError(f"'{type(node.body).__name__}' object is not subscriptable")
    raise BfclDecodeError(f"Unsupported AST type: {type(node)}")


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
        raise BfclDecodeError(str(error)) from error  # the message BFCL's eval() gives


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
    if isinstance(node, ast.Name):  # BFCL's eval: NameError (the few names its module defines aside)
        raise BfclDecodeError(f"name '{node.id}' is not defined")
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


__all__ = [
    "UNNAMED_ARGUMENT_KEY",
    "BfclDecodeError",
    "BfclWrongFormatError",
    "DecodedCall",
    "Language",
    "decode_python_calls",
    "render_python_calls",
]
