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
    ``None`` when the text holds no call.
    """
