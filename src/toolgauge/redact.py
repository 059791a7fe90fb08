"""Keep secrets out of everything toolgauge writes or prints.

API keys reach error bodies that servers echo back, credentials sit in ``--model`` and ``--store`` URLs,
and ``Authorization`` headers appear in exception texts. Every string that goes to the store, a samples
file, a report or the terminal and may carry one passes through :func:`redact`; everything the store
writes passes through one :class:`SecretMasker` (every parameter of every statement).

The known secrets are the values of secret-looking environment variables and the secrets the process
learned (:func:`learn_secret`, :func:`learn_url_credentials`: a client's API key, a URL's password and the
``user:password`` it sends as HTTP Basic). Each is masked in every form it may be echoed in: as it is,
JSON-escaped, URL-encoded, and base64-encoded (standard and URL-safe, alone or at any of the three byte
alignments inside a longer encoded text).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "***"
# Environment variables whose values are secrets wherever they appear.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
# Shorter values are too likely to match ordinary text ("1", "true") to be masked by value.
_MIN_SECRET_LEN = 8
# user:password@ in any URL (http, postgresql+psycopg, ...); the password is masked, the user kept.
# A password may hold "/" (SQLAlchemy accepts it), so it runs to the "@" unless a blank or quote comes first.
# The match starts at "://" (the scheme before it is kept as it is): a literal start is found fast.
_URL_PASSWORD = re.compile(r"(?P<head>://[^/\s:@]*):(?P<pw>[^@\s'\"]+)@")
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
# Text that each case-insensitive pattern needs, case-folded: a pattern runs only on text holding its literal, and
# a string holding none of them, no secret, no URL's ``user:password@`` and no key shape is returned unchanged
# without running the others, which cost about 0.3 ms per kilobyte of ordinary text. Add the literal of every new
# pattern here (or a check of its own in needs_redaction).
_HEADER_TRIGGERS = ("authorization", "api-key")
_TRIGGERS = (*_HEADER_TRIGGERS, "bearer", "basic")


# Secrets learned at run time (see learn_secret), and a count of changes so maskers know to look again.
_learned: set[str] = set()
_learned_lock = threading.Lock()
_learned_generation = 0


def learn_secret(value: str | None) -> None:
    """Mask ``value`` (and its encoded forms) from now on, wherever this process writes or prints text.

    For secrets that are not in a secret-looking environment variable: a key handed to a client, a URL's
    password. Values shorter than 8 characters are too likely to match ordinary text and are ignored.
    """
    global _learned_generation
    if not value or len(value) < _MIN_SECRET_LEN:
        return
    with _learned_lock:
        if value not in _learned:
            _learned.add(value)
            _learned_generation += 1


def learn_url_credentials(url: str) -> None:
    """Learn the password of a URL (``scheme://user:password@host``), as written and percent-decoded.

    Also ``user:password``, whose base64 an HTTP client sends as Basic credentials (learned even when the
    password alone is too short to be).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password is None:
        return
    user = parts.username or ""
    for password, name in ((parts.password, user), (unquote(parts.password), unquote(user))):
        learn_secret(password)
        if password:
            learn_secret(f"{name}:{password}")


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every form of every known secret, longest first (so overlapping ones mask whole).

    The known secrets: values of secret-looking environment variables (of ``environ``, default
    ``os.environ``) and the secrets learned with :func:`learn_secret`. See :func:`secret_forms`.
    """
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    with _learned_lock:
        values |= _learned
    return list(secret_forms(frozenset(values)))


@functools.lru_cache(maxsize=64)
def secret_forms(values: frozenset[str]) -> tuple[str, ...]:
    """The secrets ``values`` in every form they may be echoed in, longest first.

    As they are; JSON-escaped (a quote, a backslash or a non-ASCII character in them); URL-encoded;
    base64 (standard and URL-safe): the whole encoding, padding included, and the part of the encoding
    that does not depend on what surrounds the secret, for each of its three byte alignments inside a
    longer encoded text (so ``base64("Bearer " + key)`` is masked too). Forms shorter than 8 characters are left out.
    """
    forms: set[str] = set()
    for value in values:
        forms.update(_forms_of(value))
    return tuple(sorted((f for f in forms if len(f) >= _MIN_SECRET_LEN), key=len, reverse=True))


def _forms_of(value: str) -> Iterable[str]:
    yield value
    yield json.dumps(value, ensure_ascii=False)[1:-1]
    yield json.dumps(value)[1:-1]
    yield quote(value, safe="")
    yield quote(value)
    yield quote_plus(value)
    data = value.encode()
    encoded = [base64.b64encode(data).decode()]
    for offset in range(3):
        # Base64 character i carries bits 6i..6i+5 of the stream: keep those that lie within the secret's bytes.
        start, end = -(-8 * offset // 6), 8 * (offset + len(data)) // 6
        encoded.append(base64.b64encode(b"\0" * offset + data + b"\0\0").decode()[start:end])
    for text in encoded:
        yield text
        yield text.replace("+", "-").replace("/", "_")


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
    known = _known(extra, secret_values(environ) if secrets is None else secrets)
    if not needs_redaction(text, known):
        return text
    for value in known:
        if value and value in text:
            text = text.replace(value, MASK)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", text)
    folded = text.casefold()
    if any(map(folded.__contains__, _HEADER_TRIGGERS)):
        text = _HEADER.sub(lambda m: f"{m['head']}{MASK}", text)
    if "bearer" in folded:
        text = _BEARER.sub(lambda m: f"{m['head']}{MASK}", text)
    if "basic" in folded:
        text = _BASIC.sub(_mask_basic, text)
    if "k-" in text:
        text = _KEY_SHAPE.sub(MASK, text)
    return text


def needs_redaction(text: str, secrets: Sequence[str]) -> bool:
    """Whether :func:`redact` could change ``text``: a secret, a pattern's literal, a URL password, a key shape.

    A cheap test (a case fold, substring searches, and the URL and key patterns only where ``://`` or ``k-``
    is): False means ``redact(text, secrets=secrets)`` is ``text``.
    """
    if any(map(text.__contains__, _essential(tuple(secrets)))):
        return True
    if "://" in text and _URL_PASSWORD.search(text):
        return True
    if "k-" in text and _KEY_SHAPE.search(text):
        return True
    folded = text.casefold()
    return any(map(folded.__contains__, _TRIGGERS))


@functools.lru_cache(maxsize=64)
def _essential(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """The secrets to look for: a text holds one of ``secrets`` only if it holds one of these.

    A form that holds another (the whole base64 of a secret holds its aligned part, the base64 of
    ``user:password`` holds the password's) needs no search of its own.
    """
    values = sorted({s for s in secrets if s}, key=len)
    kept: list[str] = []
    for value in values:
        if not any(k in value for k in kept):
            kept.append(value)
    return tuple(kept)


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
    return _redact_tree(value, _known(extra, secret_values() if secrets is None else secrets))


def _known(extra: list[str] | None, secrets: Sequence[str]) -> list[str]:
    """``secrets`` with the forms of the ``extra`` values in front."""
    return [*(secret_forms(frozenset(extra)) if extra else ()), *secrets]


def _redact_tree(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets=secrets)
    if isinstance(value, Mapping):
        return {_redact_tree(k, secrets): _redact_tree(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(v, secrets) for v in value]
    return value


class SecretMasker:
    """The one function between toolgauge and its store: masks every string it is given, JSON text too.

    The environment's secret values are looked up once (a look-up costs about 0.2 ms); secrets learned
    later (:func:`learn_secret`) are picked up at the next call.
    """

    def __init__(self, environ: Mapping[str, str] | None = None):
        env = os.environ if environ is None else environ
        self._environ = {k: v for k, v in env.items() if _SECRET_NAME.search(k)}
        self._generation = -1
        self._secrets: list[str] = []
        # Short values seen lately and what they mask to: a run writes the same run id, role, status and model
        # in every row.
        self._short: dict[str, str] = {}

    @property
    def secrets(self) -> list[str]:
        """Every form of every known secret, longest first (see :func:`secret_values`)."""
        if self._generation != _learned_generation:
            self._generation = _learned_generation
            self._secrets = secret_values(self._environ)
            self._short = {}
        return self._secrets

    def text(self, text: str) -> str:
        """``text`` with secrets masked (see :func:`redact`)."""
        return redact(text, secrets=self.secrets)

    def json_text(self, text: str) -> str:
        """``text`` (JSON) with every string in it masked; unchanged (the same object) when nothing needs it.

        Text that is not JSON is masked as text.
        """
        secrets = self.secrets
        if not needs_redaction(text, secrets):
            return text
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return redact(text, secrets=secrets)
        masked = _redact_tree(value, secrets)
        if masked == value:  # a trigger word alone (a URL without a password): keep the text as it was written
            return text
        return json.dumps(masked, ensure_ascii=False, separators=(",", ":"))

    def value(self, value: Any) -> Any:
        """A column's value with secrets masked: JSON text (an object or list) string by string, other text whole."""
        if not isinstance(value, str) or len(value) < _SHORTEST_MASKED:
            return value
        if len(value) > _SHORT_VALUE:
            return self.json_text(value) if value[:1] in ("{", "[") else self.text(value)
        masked = self._short.get(value)
        if masked is None or self._generation != _learned_generation:
            masked = self.json_text(value) if value[:1] in ("{", "[") else self.text(value)
            if len(self._short) >= _SHORT_VALUES_KEPT:
                self._short = {}
            self._short[value] = masked
        return masked

    def parameters(self, parameters: Any) -> Any:
        """A statement's parameters (a sequence or a mapping, as the database driver takes them), masked."""
        if isinstance(parameters, Mapping):
            return {k: self.value(v) for k, v in parameters.items()}
        if isinstance(parameters, list | tuple):
            return type(parameters)(self.value(v) for v in parameters)
        return parameters


# No shorter text can hold a secret (8 characters) or a pattern (``sk-`` and 16 more, ``x://u:p@``, ``bearer ``+8).
_SHORTEST_MASKED = _MIN_SECRET_LEN
# Values up to this length are remembered with their masked form, up to this many (then forgotten all at once).
# 256 holds a short model answer's JSON (an AssistantTurn with a one-word reply is 142 characters), which a
# gold, scripted or cached run stores again and again (docs/benchmarks.md, the overhead section).
_SHORT_VALUE = 256
_SHORT_VALUES_KEPT = 4096
