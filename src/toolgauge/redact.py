"""Keep secrets out of everything toolgauge writes or prints.

API keys reach error bodies that servers echo back, credentials sit in ``--model`` and ``--store`` URLs,
and ``Authorization`` headers appear in exception texts. Every string that goes to the store, a samples
file, a report or the terminal and may carry one passes through :func:`redact`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"
# Environment variables whose values are secrets wherever they appear.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
# Shorter values are too likely to match ordinary text ("1", "true") to be masked by value.
_MIN_SECRET_LEN = 8
# user:password@ in any URL (http, postgresql+psycopg, ...); the password is masked, the user kept.
# A password may hold "/" (SQLAlchemy accepts it), so it runs to the "@" unless a blank or quote comes first.
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*):(?P<pw>[^@\s'\"]+)@")
# Authorization / api-key headers and bearer tokens as they appear in logs and exception texts.
_HEADER = re.compile(
    r"(?P<head>\b(?:authorization|proxy-authorization|x-api-key|api-key)\b[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+)?)"
    r"(?P<value>[^\s\"',;}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<head>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=\-]{8,})", re.IGNORECASE)
# HTTP Basic credentials (base64 of user:password), e.g. from a URL with a password; masked when they decode as such.
_BASIC = re.compile(r"(?P<head>\bbasic\s+)(?P<value>[A-Za-z0-9+/]{4,}={0,2})", re.IGNORECASE)
# Well-known key shapes (OpenAI, Anthropic, generic sk-...), masked even when they are not in our environment.
_KEY_SHAPE = re.compile(r"\b(?:sk|rk|pk)-(?:[A-Za-z0-9_\-]{16,})")
# Text that each pattern above needs, case-folded (the patterns match case-insensitively, ``sk-`` too here):
# a string holding none of these and no secret value is returned unchanged without running the patterns,
# which cost about 0.3 ms per kilobyte of ordinary text. Add the literal of every new pattern here.
_TRIGGERS = ("://", "authorization", "api-key", "bearer", "basic", "sk-", "rk-", "pk-")


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-looking environment variables, longest first (so overlapping ones mask whole)."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


def redact(
    text: str,
    *,
    extra: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    secrets: list[str] | None = None,
) -> str:
    """Return ``text`` with secrets masked: env secret values, URL passwords, auth headers, key-shaped tokens.

    Also HTTP Basic credentials anywhere after the word ``Basic``.

    Args:
        text: Any string that may reach the user, a file or the store.
        extra: Further secret values to mask (e.g. a key passed on the command line).
        environ: The environment to read secret values from (default: ``os.environ``).
        secrets: The secret values, already looked up with :func:`secret_values` (callers masking many
            strings pass them: reading the environment per string costs milliseconds per row).
    """
    if not text:
        return text
    known = [*(extra or []), *(secret_values(environ) if secrets is None else secrets)]
    if not needs_redaction(text, known):
        return text
    for value in known:
        if value and value in text:
            text = text.replace(value, MASK)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", text)
    text = _HEADER.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _BASIC.sub(_mask_basic, text)
    return _KEY_SHAPE.sub(MASK, text)


def needs_redaction(text: str, secrets: list[str]) -> bool:
    """Whether :func:`redact` could change ``text``: it holds one of ``secrets`` or a pattern's literal text.

    A cheap test (a case fold and substring searches): False means ``redact(text, secrets=secrets)`` is ``text``.
    """
    folded = text.casefold()
    return any(map(folded.__contains__, _TRIGGERS)) or any(map(text.__contains__, filter(None, secrets)))


def _mask_basic(match: re.Match[str]) -> str:
    # "basic" is also an English word: mask only what really decodes to "user:password".
    try:
        decoded = base64.b64decode(match["value"], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return match[0]
    return f"{match['head']}{MASK}" if ":" in decoded else match[0]


def redact_url(url: str) -> str:
    """Mask the password of a URL (``postgresql://user:pw@host/db`` -> ``postgresql://user:***@host/db``)."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", url)


def redact_tree(value: Any, *, extra: list[str] | None = None, secrets: list[str] | None = None) -> Any:
    """Return a JSON-like value with every string in it (keys too) passed through :func:`redact`.

    The environment's secret values are looked up once for the whole value (or given as ``secrets``).
    """
    known = [*(extra or []), *(secret_values() if secrets is None else secrets)]
    return _redact_tree(value, known)


def _redact_tree(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets=secrets)
    if isinstance(value, Mapping):
        return {_redact_tree(k, secrets): _redact_tree(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(v, secrets) for v in value]
    return value
