"""A UTF-8 codec for a server's stdout that notes invalid bytes instead of raising.

MCP's ``stdio_client`` decodes the server's stdout with a codec it looks up by name. With the strict
handler, invalid UTF-8 raises ``UnicodeDecodeError`` inside the SDK's reader task, which tears its task
group down and escapes as an ``ExceptionGroup``. Each launch gets its own codec name from
:func:`watched_encoding`; its decoder replaces invalid bytes (U+FFFD) and records that it saw some, so
the harness turns them into a recorded server failure (:func:`saw_invalid_utf8`).
"""

from __future__ import annotations

import codecs
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

_PREFIX = "toolgauge_utf8_watch_"
_seen_invalid: set[str] = set()


def _decoder_class(token: str) -> type[codecs.IncrementalDecoder]:
    class WatchingDecoder(codecs.IncrementalDecoder):
        """Strict UTF-8 until the first invalid byte; then replacement characters, and the token is noted."""

        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors)
            self._strict = codecs.getincrementaldecoder("utf-8")("strict")

        def decode(self, input: Buffer, final: bool = False) -> str:
            try:
                return self._strict.decode(input, final)
            except UnicodeDecodeError:
                _seen_invalid.add(token)
                self._strict.reset()
                return bytes(input).decode("utf-8", "replace")

        def reset(self) -> None:
            self._strict.reset()

    return WatchingDecoder


def _search(name: str) -> codecs.CodecInfo | None:
    if not name.startswith(_PREFIX):
        return None
    token = name[len(_PREFIX) :]
    utf8 = codecs.lookup("utf-8")
    return codecs.CodecInfo(
        name=name,
        encode=utf8.encode,
        decode=utf8.decode,
        incrementalencoder=utf8.incrementalencoder,
        incrementaldecoder=_decoder_class(token),
        streamreader=utf8.streamreader,
        streamwriter=utf8.streamwriter,
    )


codecs.register(_search)


def watched_encoding() -> str:
    """Return a fresh codec name for one server's stdout."""
    return _PREFIX + uuid.uuid4().hex


def saw_invalid_utf8(encoding: str) -> bool:
    """Tell whether the stream decoded with ``encoding`` held invalid UTF-8."""
    return encoding[len(_PREFIX) :] in _seen_invalid


def forget(encoding: str) -> None:
    """Drop what was noted for ``encoding`` (its server has stopped)."""
    _seen_invalid.discard(encoding[len(_PREFIX) :])
