"""BFCL prompting-text decoder: the shapes bfcl-eval's decoders produce, derived by hand."""

from __future__ import annotations

import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolgauge.benchmarks.bfcl.decoders.python_calls import (
    UNNAMED_ARGUMENT_KEY,
    BfclDecodeError,
    BfclWrongFormatError,
    decode_python_calls,
    render_python_calls,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[f(a=1, b='x')]", [{"f": {"a": 1, "b": "x"}}]),
        ("f(a=1)", [{"f": {"a": 1}}]),  # brackets added
        ("```\n[f(a=1)]\n```", [{"f": {"a": 1}}]),  # backticks and newlines stripped
        ("[f(1, 2, a=3)]", [{"f": {"a": 3}}]),  # positional arguments dropped
        ("[a.b.c(d=None, e=True)]", [{"a.b.c": {"d": None, "e": True}}]),
        ("[f(a=[1, -2.5], b={'k': (1, 2)})]", [{"f": {"a": [1, -2.5], "b": {"k": (1, 2)}}}]),
        ("[f(a=x, b=true)]", [{"f": {"a": "x", "b": "true"}}]),  # bare names become their text
        ("[f(a=g(1), b=g(c=2))]", [{"f": {"a": "g(1)", "b": {"g": {"c": 2}}}}]),
        ("[f(a=x[0], b=y['k'])]", [{"f": {"a": "x[0]", "b": "y['k']"}}]),
        ("[f(a=+5, b=not True, c=~3)]", [{"f": {"a": -5, "b": -1, "c": -3}}]),  # BFCL negates any unary
        ("[f(a=2**10, b='a' + 'b', c=[0] * 2)]", [{"f": {"a": 1024, "b": "ab", "c": [0, 0]}}]),
        ("[f(a=...)]", [{"f": {"a": "..."}}]),
        ("[f(**{'a': 1})]", [{"f": {UNNAMED_ARGUMENT_KEY: {"a": 1}}}]),
        ("[f(a=1), g()]", [{"f": {"a": 1}}, {"g": {}}]),
        ("[]", []),
        ("", []),
    ],
)
def test_python_shapes(text: str, expected: list[dict[str, object]]) -> None:
    assert decode_python_calls(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I cannot help with that.",
        "[f(a=lambda x: x)]",  # BFCL's lambda branch always raises
        "[f(a=math.pi)]",  # attributes are unsupported
        "[f(a=f'{x}')]",
        "[f(a={1, 2})]",
        "[f(a=-x)]",
        "[f(a=1/0)]",
        "[f(a=x + 1)]",  # names inside arithmetic: NameError in BFCL
        "[f(a=1), 2]",
        "[f(a=1",
    ],
)
def test_python_failures(text: str) -> None:
    with pytest.raises(BfclDecodeError):
        decode_python_calls(text)


def test_python_huge_arithmetic_is_refused_not_computed() -> None:
    with pytest.raises(BfclDecodeError):
        decode_python_calls("[f(a=9**9**9)]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Values are strings; quotes stripped at top level, tokens joined without whitespace.
        (
            '[Foo.bar(a="x y", b=5, c=new int[]{1, 2}, d=-3)]',
            [{"Foo.bar": {"a": "x y", "b": "5", "c": "new int[]{1,2}", "d": "-3"}}],
        ),
        (
            '[f(m=new HashMap<String, Object>() {{ put("a", 1); }}, n=10L)]',
            [{"f": {"m": "new HashMap<String,Object>()", "n": "10L"}}],
        ),  # class body dropped
        ("[f(a=obj.get( 1 ), b=x, c=1)]", [{"f": {"a": "obj.get( 1 )", "b": "x", "c": "1"}}]),
        ("[a.b.func(x, y=true)]", [{"a.b.func": {UNNAMED_ARGUMENT_KEY: "x", "y": "true"}}]),
        ("[f(a=1); g(b=2)]", [{"f": {"a": "1"}}]),  # first call only
        ('[f(a="éé")]', [{"f": {"a": 'éé"'}}]),  # BFCL slices text with byte offsets
    ],
)
def test_java_shapes(text: str, expected: list[dict[str, object]]) -> None:
    assert decode_python_calls(text, "java") == expected


@pytest.mark.parametrize("text", ["[f(a=12345)]", "[f(a=1,b=2)]", "[f(a, b)]", "[f(a=1), g(b=2)]", "[f(a=1, a=2)]"])
def test_java_failures(text: str) -> None:
    # A lone statement without ';' of at most 10 bytes is an ERROR node in tree-sitter.
    with pytest.raises(BfclDecodeError):
        decode_python_calls(text, "java")


def test_java_eleven_bytes_parse() -> None:
    assert decode_python_calls("[f(a=123456)]", "java") == [{"f": {"a": "123456"}}]


def test_java_no_call_is_wrong_format() -> None:
    with pytest.raises(BfclWrongFormatError):
        decode_python_calls("[]", "java")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[f(a=[1, 2], b={k: 'v'}, c='x', d=\"y\", e=5)]",
            [{"f": {"a": "[1, 2]", "b": "{k: 'v'}", "c": "x", "d": "y", "e": "5"}}],
        ),
        ("[f(x, b=true, c=false)]", [{"f": {UNNAMED_ARGUMENT_KEY: "x", "b": "true", "c": "false"}}]),
        ('[o.f(a=new Date("2020"))]', [{"o.f": {"a": 'new Date("2020")'}}]),
        ('[f(a="a"+"b")]', [{"f": {"a": 'a"+"b'}}]),  # one pair of quotes removed from raw text
    ],
)
def test_javascript_shapes(text: str, expected: list[dict[str, object]]) -> None:
    assert decode_python_calls(text, "javascript") == expected


def test_javascript_sequence_is_wrong_format_and_prose_fails() -> None:
    with pytest.raises(BfclWrongFormatError):
        decode_python_calls("[f(a=1), g(b=2)]", "javascript")  # a sequence expression, not a call
    with pytest.raises(BfclDecodeError) as excinfo:
        decode_python_calls("I cannot help.", "javascript")  # tree-sitter: ERROR node
    assert excinfo.type is BfclDecodeError
    with pytest.raises(BfclDecodeError):
        decode_python_calls("[f(a=1, a=2)]", "javascript")


def test_render_round_trip() -> None:
    calls = [("math.factorial", {"number": 5}), ("g", {"s": "it's", "l": [1.5, -2], "d": {"k": None}})]
    text = render_python_calls(calls)
    assert text == "[math.factorial(number=5), g(s=\"it's\", l=[1.5, -2], d={'k': None})]"
    assert decode_python_calls(text) == [{name: args} for name, args in calls]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


# Python keywords cannot be keyword-argument names (``in=1`` is a syntax error there and in BFCL).
argument_names = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(argument_names, json_values, max_size=4))
def test_render_then_decode_gives_the_arguments_back(arguments: dict[str, object]) -> None:
    assert decode_python_calls(render_python_calls([("f", arguments)])) == [{"f": arguments}]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["python", "java", "javascript"]))
def test_arbitrary_text_raises_only_decode_errors(text: str, language: str) -> None:
    try:
        decoded = decode_python_calls(text, language)  # type: ignore[arg-type]
    except BfclDecodeError:
        return
    assert isinstance(decoded, list)


# Each text's error message as bfcl-eval 2026.3.23 raises it from default_decode_ast_prompting (run once
# beside this file with the official package; the BFCL export quotes these texts after "Invalid syntax.
# Failed to decode AST. ").
BFCL_DECODER_MESSAGES = [
    ("python", "[f(a=1) g(b=2)]", "invalid syntax. Perhaps you forgot a comma? (<unknown>, line 1)"),
    ("python", "x", ""),  # a bare assert: the element is not a call
    ("python", "[f(a=1) + 1]", ""),
    ("python", "[1][0]", "'Subscript' object has no attribute 'elts'"),
    ("python", "[f(a=-x)]", "'Name' object has no attribute 'value'"),
    ("python", "[f(a=-b.c)]", "bad operand type for unary -: 'Name'"),
    ("python", "[f(a=-'s')]", "bad operand type for unary -: 'str'"),
    ("python", "[f(a=-None)]", "bad operand type for unary -: 'NoneType'"),
    ("python", "[f(a=--1)]", "'UnaryOp' object has no attribute 'value'"),
    ("python", "[f(a={1, 2})]", "Unsupported AST type: <class 'ast.Set'>"),
    ("python", "[f(a=[1, {2, 3}])]", "Unsupported AST type: <class 'ast.Set'>"),
    ("python", "[f(a={**d})]", "Unsupported AST type: <class 'NoneType'>"),
    ("python", "[f(a={[1]: 2})]", "unhashable type: 'list'"),
    ("python", "[f(a=lambda: 1)]", "'Constant' object is not subscriptable"),
    ("python", "[f(a=1/0)]", "division by zero"),
    ("python", "[f(a=x+1)]", "name 'x' is not defined"),
    ("python", "[f(a=1+'a')]", "unsupported operand type(s) for +: 'int' and 'str'"),
    ("java", "[f(a=1) g(b=2)]", "Error parsing java the source code."),
    ("java", "[cannot do it]", "Error parsing java the source code."),
    ("java", "[obj.f(a, a)]", "Error: Multiple arguments with the same name are not supported."),
    ("java", "[a.f(x=1, x=2);]", "Error: Multiple arguments with the same name are not supported."),
    ("javascript", "[f(a=1) g(b=2)]", "Error js parsing the source code."),
    ("javascript", "[cannot do it]", "Error js parsing the source code."),
    ("javascript", "[f(x=1, x=2)]", "Error: Multiple arguments with the same name are not supported."),
]


@pytest.mark.parametrize(("language", "text", "message"), BFCL_DECODER_MESSAGES)
def test_a_decode_error_says_what_bfcls_decoder_says(language: str, text: str, message: str) -> None:
    with pytest.raises(BfclDecodeError) as raised:
        decode_python_calls(text, language)  # type: ignore[arg-type]
    assert not isinstance(raised.value, BfclWrongFormatError)
    assert str(raised.value) == message
