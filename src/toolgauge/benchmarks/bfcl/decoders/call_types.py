"""Types and errors shared by the BFCL call-text decoders."""

from __future__ import annotations

from typing import Any, Literal

Language = Literal["python", "java", "javascript"]
DecodedCall = dict[str, dict[str, Any]]

UNNAMED_ARGUMENT_KEY = "<unnamed>"
"""Key for arguments BFCL stores under ``None`` (``**kwargs`` splats, positional identifiers)."""


class BfclDecodeError(ValueError):
    """The text is not a call list BFCL can decode (BFCL: ``ast_decoder:decoder_failed``)."""


class BfclWrongFormatError(BfclDecodeError):
    """Decoding succeeded but found no call (BFCL: ``ast_decoder:decoder_wrong_output_format``).

    Only the Java/JavaScript decoders produce this: BFCL's tree-sitter decoders return ``{}`` or
    ``None`` when the text holds no call. ``decoded_text`` is the ``str()`` of that value, what BFCL's
    score file shows as the decoded result.
    """

    def __init__(self, message: str, decoded_text: str):
        super().__init__(message)
        self.decoded_text = decoded_text


# What BFCL's tree-sitter decoders raise (bfcl_eval/model_handler/parser/*_parser.py): one message for any
# syntax error per language, and one for an argument named twice. toolgauge's own parsers report finer
# reasons; the decoders give BFCL's text so the verdict and the BFCL export quote what BFCL quotes.
JAVA_SYNTAX_ERROR = "Error parsing java the source code."
JAVASCRIPT_SYNTAX_ERROR = "Error js parsing the source code."
DUPLICATE_ARGUMENTS_ERROR = "Error: Multiple arguments with the same name are not supported."
