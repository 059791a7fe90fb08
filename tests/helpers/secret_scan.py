"""Search a whole store (every table, found by asking the database for its tables) for planted secrets.

The forms searched are computed here, independently of ``toolgauge.redact``: the secret as it is,
URL-encoded, JSON-escaped and base64-encoded (standard and URL-safe; alone, and the part of its encoding
that is the same whatever precedes it, at each of the three byte alignments).
"""

from __future__ import annotations

import base64
import contextlib
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

from sqlalchemy import create_engine, text


def encoded_forms(secret: str) -> list[bytes]:
    """The byte strings whose presence anywhere means ``secret`` leaked."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]}
    for offset in range(3):
        encoded = base64.b64encode(b"x" * offset + secret.encode()).decode()
        # Drop the characters that mix in the prefix (at most 2) and the last block (which mixes in what follows).
        middle = encoded[4:-4] if offset else encoded[:-4]
        forms.update({middle, middle.replace("+", "-").replace("/", "_")})
        if not offset:
            forms.add(encoded)
    return sorted(f.encode() for f in forms if len(f) >= 8)


def leaks(haystacks: Iterator[tuple[str, bytes]], secrets: list[str]) -> list[str]:
    """Where (``"table.column"``, file name, output name) each secret appears in any of its forms."""
    forms = [(secret, form) for secret in secrets for form in encoded_forms(secret)]
    found = []
    for where, data in haystacks:
        for secret, form in forms:
            if form in data:
                found.append(f"{secret!r} as {form!r} in {where}")
    return found


def _as_bytes(value: object) -> list[bytes]:
    """A column value as bytes; a blob also as its zlib-decompressed content (the store compresses blobs)."""
    if value is None:
        return []
    if isinstance(value, memoryview):
        value = value.tobytes()
    if isinstance(value, bytes):
        out = [value]
        with contextlib.suppress(zlib.error):
            out.append(zlib.decompress(value))
        return out
    return [str(value).encode()]


def store_values(url: str) -> Iterator[tuple[str, bytes]]:
    """Every value of every row of every table of the store at ``url`` (SQLite or PostgreSQL), by ``table.column``.

    Tables are listed by the database itself (``sqlite_master``, ``information_schema.tables``), not from
    toolgauge's schema, so a table or column added later is searched too.
    """
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                tables = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars().all()
            else:
                tables = (
                    conn.execute(
                        text(
                            "SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                        )
                    )
                    .scalars()
                    .all()
                )
            assert "samples" in tables and "response_cache" in tables, tables
            for table in tables:
                rows = conn.execute(text(f'SELECT * FROM "{table}"')).mappings().all()
                for row in rows:
                    for column, value in row.items():
                        for data in _as_bytes(value):
                            yield f"{table}.{column}", data
    finally:
        engine.dispose()


def file_bytes(*paths: Path) -> Iterator[tuple[str, bytes]]:
    """The raw bytes of each file (a database, its WAL and shared-memory files, a samples file, an export)."""
    for path in paths:
        yield str(path), path.read_bytes()
