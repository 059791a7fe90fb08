"""A persistent text → vector cache on disk, so a dataset's texts are embedded once per machine, not once per run.

One SQLite file (``<cache dir>/embeddings.sqlite3``). Rows live in a *namespace*: a hash of everything that can
change a vector (model name, a hash of every weight and tokenizer file, library versions, CPU architecture and
the instruction set torch computes with; see :func:`namespace_of`), so another model, revision or numeric path
never finds them. Each row is keyed by the SHA-256 of the exact text and holds the float32 bytes the model
produced, handed back bit for bit. Writes are one SQLite transaction per call: a crash leaves all of a call's
rows or none. A file that is not a readable cache (corrupt, truncated, another format) is moved aside with a
one-line warning and a new one started; a row of the wrong size is a miss and is computed again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from toolgauge.embeddings.base import Vectors

log = logging.getLogger("toolgauge.embeddings")
_T = TypeVar("_T")

CACHE_DIR_ENV = "TOOLGAUGE_CACHE_DIR"
CACHE_SWITCH_ENV = "TOOLGAUGE_EMBEDDING_CACHE"
FILE_NAME = "embeddings.sqlite3"
_SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS namespaces (namespace TEXT PRIMARY KEY, description TEXT NOT NULL, canary BLOB);
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (namespace, text_sha256)
) WITHOUT ROWID;
"""
# SQLite caps the host parameters of one statement; look keys up in chunks below it.
_LOOKUP_CHUNK = 500


def default_cache_dir() -> Path | None:
    """Where the cache lives: ``$TOOLGAUGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/toolgauge``, else ``~/.cache/toolgauge``.

    Returns:
        The directory, or None when ``TOOLGAUGE_EMBEDDING_CACHE=off`` turns the disk cache off.
    """
    if os.environ.get(CACHE_SWITCH_ENV, "").strip().lower() in {"off", "0", "no", "false"}:
        return None
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "toolgauge"


def hash_files(root: Path) -> str:
    """SHA-256 over every file under ``root`` (relative path and content, in sorted order)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def namespace_of(description: Mapping[str, str | int | bool]) -> str:
    """The namespace of a vector-producing set-up: a hash of its canonical JSON description."""
    canonical = json.dumps(dict(description), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def text_key(text: str) -> bytes:
    """The row key of a text: SHA-256 of its exact UTF-8 bytes (lone surrogates kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """Vectors of one namespace in one SQLite file; safe to share between threads and processes.

    Args:
        path: The SQLite file (its directory is created).
        namespace: From :func:`namespace_of`.
        description: What the namespace stands for, stored beside it so a person can read the file.
        dimension: Vector size; a stored row of another size is ignored.
    """

    def __init__(self, path: Path, namespace: str, description: Mapping[str, str | int | bool], dimension: int) -> None:
        self.path = path
        self.namespace = namespace
        self._description = json.dumps(dict(description), sort_keys=True)
        self._dimension = dimension
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = self._open()
            except sqlite3.DatabaseError as error:
                self._move_aside(error)
                self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        try:
            with conn:
                conn.executescript(_SCHEMA)
                # One statement, not a read then an insert: processes opening a new cache at once would race
                # between the two, and the loser would take the other's row for a damaged file.
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(_SCHEMA_VERSION),))
                row = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
                if row[0] != str(_SCHEMA_VERSION):
                    raise sqlite3.DatabaseError(f"schema version {row[0]}, expected {_SCHEMA_VERSION}")
                conn.execute(
                    "INSERT OR IGNORE INTO namespaces (namespace, description) VALUES (?, ?)",
                    (self.namespace, self._description),
                )
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, error: Exception) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        aside = self.path.with_name(f"{self.path.name}.unreadable-{time.time_ns()}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                source.replace(aside.with_name(aside.name + suffix))
        log.warning(
            "embedding cache %s is not readable (%s): moved it to %s; texts are embedded again", self.path, error, aside
        )

    def _run(self, action: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` on the connection; a damaged file is moved aside once and the work retried on a new one."""
        with self._lock:
            try:
                return work(self._connect())
            except sqlite3.DatabaseError as error:
                if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
                    raise
                log.debug("embedding cache %s failed on %s", self.path, action)
                self._move_aside(error)
                return work(self._connect())

    def get_many(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of those ``texts`` that have one (a 1-D float32 array each)."""
        if not texts:
            return {}
        by_key = {text_key(t): t for t in texts}

        def lookup(conn: sqlite3.Connection) -> dict[str, Vectors]:
            found: dict[str, Vectors] = {}
            keys = list(by_key)
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE namespace = ? AND text_sha256 IN ({marks})",
                    (self.namespace, *chunk),
                ).fetchall()
                for key, blob in rows:
                    if isinstance(blob, bytes) and len(blob) == 4 * self._dimension:
                        found[by_key[bytes(key)]] = np.frombuffer(blob, dtype=np.float32).copy()
            return found

        return self._run("read", lookup)

    def put_many(self, items: Iterable[tuple[str, Vectors]]) -> None:
        """Store vectors (float32, ``dimension`` long) for texts, all in one transaction."""
        rows = [(self.namespace, text_key(t), self._blob(v)) for t, v in items]
        if not rows:
            return

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

        self._run("write", write)

    def canary(self) -> Vectors | None:
        """The canary vectors recorded when the namespace was first filled, if any (see the embedder)."""

        def read(conn: sqlite3.Connection) -> Vectors | None:
            row = conn.execute("SELECT canary FROM namespaces WHERE namespace = ?", (self.namespace,)).fetchone()
            if row is None or not isinstance(row[0], bytes) or len(row[0]) % (4 * self._dimension):
                return None
            return np.frombuffer(row[0], dtype=np.float32).reshape(-1, self._dimension).copy()

        return self._run("read canary", read)

    def set_canary(self, vectors: Vectors) -> None:
        """Record the canary vectors of this namespace (kept if another process recorded them first)."""
        blob = np.ascontiguousarray(vectors, dtype=np.float32).tobytes()

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.execute(
                    "UPDATE namespaces SET canary = ? WHERE namespace = ? AND canary IS NULL", (blob, self.namespace)
                )

        self._run("write canary", write)

    def count(self) -> int:
        """How many vectors this namespace holds."""
        query = "SELECT COUNT(*) FROM vectors WHERE namespace = ?"
        return int(self._run("count", lambda conn: conn.execute(query, (self.namespace,)).fetchone()[0]))

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _blob(self, vector: Vectors) -> bytes:
        row = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
        if row.shape[0] != self._dimension:
            raise ValueError(f"vector of size {row.shape[0]}, the cache holds size {self._dimension}")
        return row.tobytes()
