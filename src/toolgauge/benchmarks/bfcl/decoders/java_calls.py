"""Java call text as BFCL reads it (``java_parser.py`` over tree-sitter-java 0.21), without tree-sitter."""

from __future__ import annotations

import re

from toolgauge.benchmarks.bfcl.decoders.call_types import (
    BfclDecodeError,
    BfclWrongFormatError,
    DecodedCall,
)
from toolgauge.benchmarks.bfcl.decoders.source_tokens import (
    IDENTIFIER,
    Node,
    TokenParser,
    leaf,
    punctuation,
    span,
)

_JAVA_PUNCT = punctuation("->", "::")
_JAVA_PATTERNS = [
    ("ident", IDENTIFIER),
    (
        "number",
        re.compile(
            r"0[xX][0-9a-fA-F_]+[lL]?|0[bB][01_]+[lL]?|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[fFdDlL]?"
        ),
    ),
    ("string", re.compile(r'"(?:[^"\\\n]|\\.)*"')),
    # tree-sitter-java's character_literal accepts several characters ('abc').
    ("char", re.compile(r"'(?:[^'\\\n]|\\.)*'")),
    ("punct", _JAVA_PUNCT),
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


class JavaCallDecoder(TokenParser):
    """Recursive-descent Java parser returning the call shapes BFCL's tree-sitter parser yields."""

    def __init__(self, source: str):
        super().__init__(source, _JAVA_PATTERNS)
        # BFCL slices the Python string with tree-sitter's *byte* offsets; keep both to match.
        self.byte_at = [0]
        for char in source:
            self.byte_at.append(self.byte_at[-1] + len(char.encode("utf-8")))

    def text(self, node: Node) -> str:
        return self.source[self.byte_at[node.start] : self.byte_at[node.end]]

    # -- statements --------------------------------------------------------------------------

    def decode(self) -> list[DecodedCall]:
        statements: list[Node] = []
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
        raise BfclWrongFormatError("no method invocation found", decoded_text=str({}))

    def _first_invocation(self, node: Node) -> Node | None:
        if node.type == "method_invocation":
            return node
        for child in node.children:
            found = self._first_invocation(child)
            if found is not None:
                return found
        return None

    def _call(self, invocation: Node) -> DecodedCall:
        name = self.text(invocation.fields["name"])
        if "object" in invocation.fields:
            name = f"{self.text(invocation.fields['object'])}.{name}"
        return {name: self.argument_dict(invocation.fields["arguments"].children, self._argument)}

    def _argument(self, child: Node) -> tuple[str | None, str] | None:
        if child.type == "assignment_expression":
            return self.text(child.children[0]), self.value_text(child.children[2], nested=False)
        if child.type in ("identifier", "class_literal"):
            return None, self.value_text(child, nested=False)
        return None

    def value_text(self, node: Node, nested: bool) -> str:
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

    def expression(self) -> Node:
        if self.is_lambda():
            return self.lambda_expression()
        left = self.ternary()
        if self.token.kind == "punct" and self.token.text in _JAVA_ASSIGN:
            operator_node = leaf(self.advance())
            return span("assignment_expression", [left, operator_node, self.expression()])
        return left

    def is_lambda(self) -> bool:
        if self.token.kind == "ident" and self.peek().text == "->":
            return True
        if self.at("("):
            close = self.matching_close(self.position)
            return self.tokens[min(close + 1, len(self.tokens) - 1)].text == "->"
        return False

    def lambda_expression(self) -> Node:
        if self.at("("):
            parameters = self.skip_balanced("(", ")")
            params = span("formal_parameters", parameters)
        else:
            params = leaf(self.advance(), "identifier")
        arrow = self.expect("->")
        body = span("block", self.skip_balanced("{", "}")) if self.at("{") else self.expression()
        return span("lambda_expression", [params, arrow, body])

    def ternary(self) -> Node:
        condition = self.binary()
        if not self.at("?"):
            return condition
        question = leaf(self.advance())
        consequence = self.expression()
        colon = self.expect(":")
        return span("ternary_expression", [condition, question, consequence, colon, self.expression()])

    def binary(self) -> Node:
        parts = [self.unary()]
        while True:
            token = self.token
            if (
                token.kind == "punct"
                and token.text == ">"
                and self.peek().text == ">"
                and self.peek().start == token.end
            ):
                parts.append(leaf(self.advance()))
                parts.append(leaf(self.advance()))
                if self.at(">") and self.token.start == parts[-1].end:
                    parts.append(leaf(self.advance()))
            elif token.kind == "punct" and token.text in _JAVA_BINARY:
                parts.append(leaf(self.advance()))
            elif token.kind == "ident" and token.text == "instanceof":
                parts.append(leaf(self.advance()))
                parts.append(self.type_node())
                continue
            else:
                break
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else span("binary_expression", parts)

    def unary(self) -> Node:
        if self.token.kind == "punct" and self.token.text in ("+", "-", "!", "~", "++", "--"):
            operator_node = leaf(self.advance())
            return span("unary_expression", [operator_node, self.unary()])
        if self.at("(") and self.is_cast():
            open_node = self.expect("(")
            type_node = self.type_node()
            close_node = self.expect(")")
            return span("cast_expression", [open_node, type_node, close_node, self.unary()])
        node = self.postfix(self.primary())
        while self.token.kind == "punct" and self.token.text in ("++", "--"):
            node = span("update_expression", [node, leaf(self.advance())])
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

    def type_node(self) -> Node:
        token = self.token
        if token.kind != "ident":
            raise BfclDecodeError(f"expected a type, found {token.text!r}")
        parts = [leaf(self.advance(), "type_identifier")]
        while True:
            if self.at("."):
                parts.append(leaf(self.advance()))
                parts.append(leaf(self.expect_name("a name"), "type_identifier"))
            elif self.at("<"):
                parts.append(self.type_arguments())
            elif self.at("[") and self.peek().text == "]":
                parts.append(leaf(self.advance()))
                parts.append(leaf(self.advance()))
            else:
                break
        return parts[0] if len(parts) == 1 else span("generic_type", parts)

    def type_arguments(self) -> Node:
        parts = self.comma_list("<", ">", self._type_argument, "type arguments")
        return span("type_arguments", parts)

    def _type_argument(self) -> list[Node]:
        if not self.at("?"):
            return [self.type_node()]
        wildcard = [leaf(self.advance())]
        if self.token.text in ("extends", "super"):
            wildcard += [leaf(self.advance()), self.type_node()]
        return wildcard

    def arguments(self) -> Node:
        parts = self.comma_list("(", ")", lambda: [self.expression()], "arguments", trailing_comma=False)
        return span("argument_list", parts)

    def primary(self) -> Node:
        token = self.token
        if token.kind == "number":
            return leaf(self.advance(), "number_literal")
        if token.kind == "string":
            return leaf(self.advance(), "string_literal")
        if token.kind == "char":
            return leaf(self.advance(), "character_literal")
        if token.kind == "ident":
            if token.text in _JAVA_LITERAL_WORDS:
                return leaf(self.advance(), _JAVA_LITERAL_WORDS[token.text])
            if token.text == "new":
                return self.creation()
            if token.text in _JAVA_RESERVED:
                raise BfclDecodeError(f"unexpected keyword {token.text!r}")
            name = leaf(self.advance(), "identifier")
            if self.at("("):
                arguments = self.arguments()
                return span("method_invocation", [name, arguments], name=name, arguments=arguments)
            return name
        if self.at("("):
            return span("parenthesized_expression", self.enclosed("(", self.expression, ")"))
        raise BfclDecodeError(f"unexpected {token.text!r}")

    def postfix(self, node: Node) -> Node:
        while True:
            if self.at("."):
                dot = leaf(self.advance())
                if self.at("class"):
                    node = span("class_literal", [node, dot, leaf(self.advance())])
                    continue
                if self.at("<"):
                    raise BfclDecodeError("explicit generic method calls are not supported")
                name = leaf(self.expect_name("a name"), "identifier")
                if self.at("("):
                    arguments = self.arguments()
                    node = span(
                        "method_invocation", [node, dot, name, arguments], object=node, name=name, arguments=arguments
                    )
                else:
                    node = span("field_access", [node, dot, name])
            elif self.at("["):
                node = span("array_access", [node, *self.enclosed("[", self.expression, "]")])
            elif self.at("::"):
                colons = leaf(self.advance())
                node = span("method_reference", [node, colons, leaf(self.expect_name("a name"), "identifier")])
            else:
                return node

    def creation(self) -> Node:
        new = leaf(self.advance())
        type_node = self.type_node_without_dims()
        if self.at("("):
            arguments = self.arguments()
            children = [new, type_node, arguments]
            if self.at("{"):
                children.append(self.class_body())
            return span("object_creation_expression", children, type=type_node, arguments=arguments)
        if not self.at("["):
            raise BfclDecodeError("expected '(' or '[' after new")
        dims: list[Node] = []
        while self.at("["):
            open_node = self.expect("[")
            if self.at("]"):
                dims += [open_node, self.expect("]")]
            else:
                size = self.expression()
                dims += [open_node, size, self.expect("]")]
        children = [new, type_node, span("dimensions", dims)]
        fields = {"type": type_node}
        if self.at("{"):
            value = self.array_initializer()
            children.append(value)
            fields["value"] = value
        return span("array_creation_expression", children, **fields)

    def type_node_without_dims(self) -> Node:
        parts = [leaf(self.expect_name("a name"), "type_identifier")]
        while self.at(".") or self.at("<"):
            if self.at("<"):
                parts.append(self.type_arguments())
            else:
                parts.append(leaf(self.advance()))
                parts.append(leaf(self.expect_name("a name"), "type_identifier"))
        return parts[0] if len(parts) == 1 else span("generic_type", parts)

    def class_body(self) -> Node:
        """An anonymous class body holding only initializer blocks (``{{ put(...); }}``)."""
        parts = [self.expect("{")]
        while not self.at("}"):
            if self.at(";"):
                parts.append(leaf(self.advance()))
            elif self.at("{"):
                parts.append(self.block())
            else:
                raise BfclDecodeError("class body members other than initializer blocks are not supported")
        parts.append(self.expect("}"))
        return span("class_body", parts)

    def block(self) -> Node:
        parts = [self.expect("{")]
        while not self.at("}"):
            if self.at("{"):
                parts.append(self.block())
            elif self.at(";"):
                parts.append(leaf(self.advance()))
            else:
                parts.append(self.expression())
                parts.append(self.expect(";"))
        parts.append(self.expect("}"))
        return span("block", parts)

    def array_initializer(self) -> Node:
        parts = self.comma_list(
            "{", "}", lambda: [self.array_initializer() if self.at("{") else self.expression()], "array initializer"
        )
        return span("array_initializer", parts)
