"""The embedder's speed-ups without the model: token-budget batching, load-aware threads, the on-disk vector cache."""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from toolgauge.embeddings.batching import token_batches
from toolgauge.embeddings.disk_cache import VectorCache, default_cache_dir, namespace_of, text_key
from toolgauge.embeddings.threads import OwnLoad, choose_threads

DIM = 4
SETUP = {"model": "m", "files_sha256": "aa", "torch": "2.13.0"}


# -- token-budget batching ------------------------------------------------------------------------------------


def test_batches_keep_every_text_once_and_stay_within_the_budget():
    lengths = [5, 250, 12, 12, 3, 40, 256, 7, 90, 1]
    batches = token_batches(lengths, budget=100, max_items=64)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= 100 or len(batch) == 1  # a text longer than the budget goes alone
        assert [lengths[i] for i in batch] == sorted(lengths[i] for i in batch)


def test_batches_group_similar_lengths_and_respect_max_items():
    # 6 texts of 10 tokens then 2 of 50: budget 100 fits 6 short ones (60) or 2 long ones (100) per pass
    lengths = [50, 10, 10, 50, 10, 10, 10, 10]
    assert token_batches(lengths, budget=100, max_items=64) == [[1, 2, 4, 5, 6, 7], [0, 3]]
    assert token_batches(lengths, budget=100, max_items=4) == [[1, 2, 4, 5], [6, 7], [0, 3]]
    assert token_batches([], budget=100, max_items=4) == []
    with pytest.raises(ValueError, match="positive"):
        token_batches([1], budget=0, max_items=4)


# -- threads from the load ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cores", "load", "own", "threads"),
    [
        (2, 0.0, 0.0, 2),  # idle machine: both cores
        (2, 0.4, 0.0, 2),  # a little background noise
        (2, 0.6, 0.0, 1),  # most of a core taken by someone else
        (2, 2.3, 2.0, 2),  # the load is this process's own two threads
        (2, 6.0, 0.0, 1),  # the loaded machine of issue 11: never below 1
        (2, 6.0, 1.0, 1),
        (8, 3.0, 1.0, 6),
        (8, 0.0, 0.0, 8),
        (1, 0.0, 0.0, 1),
        (4, 1.0, 5.0, 4),  # own load above the total (damping lag): others count as 0
    ],
)
def test_a_spinning_pool_keeps_to_the_cores_the_others_leave_free(cores: int, load: float, own: float, threads: int):
    assert choose_threads(cores, load, own, passive=False) == threads


@pytest.mark.parametrize(("cores", "load"), [(2, 0.0), (2, 6.0), (8, 3.0), (1, 9.0)])
def test_a_passive_pool_uses_every_core_at_any_load(cores: int, load: float):
    assert choose_threads(cores, load, 0.0, passive=True) == cores


def test_own_load_rises_with_this_processes_cpu_use():
    own = OwnLoad()
    sink = 0
    for i in range(3_000_000):  # burn some CPU so the next sample sees a positive rate
        sink += i
    assert sink > 0
    assert own.sample() > 0.0


# -- the on-disk cache ----------------------------------------------------------------------------------------


def _cache(tmp_path: Path, setup: dict[str, str] = SETUP) -> VectorCache:
    return VectorCache(tmp_path / "embeddings.sqlite3", namespace_of(setup), setup, DIM)


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def test_the_cache_returns_exactly_what_was_stored(tmp_path: Path):
    texts = ["alpha", "Alpha", "alpha ", "", "naïve \udc80 surrogate", '{"k": 1}']
    vectors = _vectors(len(texts))
    _cache(tmp_path).put_many(zip(texts, vectors, strict=True))
    again = _cache(tmp_path)  # a new connection, as another process would open it
    found = again.get_many([*texts, "never stored"])
    assert set(found) == set(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert found[text].dtype == np.float32 and found[text].tobytes() == vector.tobytes()
    assert again.count() == len(texts)


def test_another_model_or_revision_misses(tmp_path: Path):
    _cache(tmp_path).put_many([("alpha", _vectors(1)[0])])
    for changed in ({"files_sha256": "bb"}, {"model": "other"}, {"torch": "2.14.0"}):
        other = _cache(tmp_path, {**SETUP, **changed})
        assert other.get_many(["alpha"]) == {}, changed
    assert namespace_of(SETUP) == namespace_of(dict(reversed(SETUP.items())))  # key order does not matter


def test_a_corrupt_file_is_moved_aside_and_recomputed(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    cache = _cache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolgauge.embeddings"):
        assert cache.get_many(["alpha"]) == {}
    assert any("not readable" in r.getMessage() and "embedded again" in r.getMessage() for r in caplog.records)
    assert [p.name.startswith("embeddings.sqlite3.unreadable-") for p in tmp_path.iterdir()].count(True) == 1
    cache.put_many([("alpha", _vectors(1)[0])])
    assert set(_cache(tmp_path).get_many(["alpha"])) == {"alpha"}


def test_a_truncated_file_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    cache = _cache(tmp_path)
    cache.put_many(zip([f"text {i}" for i in range(300)], _vectors(300), strict=True))
    cache.close()
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(path.read_bytes()[:700])  # a partial copy: the header survives, the pages do not
    with caplog.at_level(logging.WARNING, logger="toolgauge.embeddings"):
        found = _cache(tmp_path).get_many(["text 1", "text 299"])
    assert found == {}
    assert any("not readable" in r.getMessage() for r in caplog.records)


def test_a_row_of_the_wrong_size_is_a_miss_and_is_replaced(tmp_path: Path):
    cache = _cache(tmp_path)
    cache.put_many([("alpha", _vectors(1)[0])])
    with sqlite3.connect(tmp_path / "embeddings.sqlite3") as conn:
        conn.execute("UPDATE vectors SET vector = ? WHERE text_sha256 = ?", (b"\0" * 7, text_key("alpha")))
    cache.close()
    assert cache.get_many(["alpha"]) == {}
    fresh = _vectors(1, seed=3)[0]
    cache.put_many([("alpha", fresh)])
    assert cache.get_many(["alpha"])["alpha"].tobytes() == fresh.tobytes()


def test_a_write_stores_all_of_its_rows_or_none(tmp_path: Path):
    cache = _cache(tmp_path)
    good = _vectors(1)[0]
    wrong_size = np.zeros(DIM + 1, dtype=np.float32)
    with pytest.raises(ValueError, match="size"):
        cache.put_many([("first", good), ("second", wrong_size)])
    assert cache.get_many(["first", "second"]) == {}


def _write_many(path: str, start: int) -> None:
    cache = VectorCache(Path(path), namespace_of(SETUP), SETUP, DIM)
    for k in range(start, start + 20):
        cache.put_many([(f"text {k}", np.full(DIM, k, dtype=np.float32))])


def test_processes_writing_at_once_lose_nothing(tmp_path: Path):
    path = tmp_path / "embeddings.sqlite3"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_many, args=(str(path), start)) for start in (0, 20, 40)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    found = _cache(tmp_path).get_many([f"text {k}" for k in range(60)])
    assert len(found) == 60 and all(found[f"text {k}"][0] == k for k in range(60))


def test_canary_is_recorded_once(tmp_path: Path):
    cache = _cache(tmp_path)
    assert cache.canary() is None
    first, second = _vectors(2, seed=1), _vectors(2, seed=2)
    cache.set_canary(first)
    cache.set_canary(second)  # another process came second: the first record stays
    stored = _cache(tmp_path).canary()
    assert stored is not None and stored.tobytes() == first.tobytes()


def test_the_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("TOOLGAUGE_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("TOOLGAUGE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "toolgauge"
    monkeypatch.setenv("TOOLGAUGE_EMBEDDING_CACHE", "off")
    assert default_cache_dir() is None


class _RacedConnection:
    """A cache connection that lets "another process" create the schema row right after its first look at it.

    Before the fix the cache read the row, found none, and inserted it; another process opening the new cache at
    the same moment inserted it in between, and the loser took the clash for a damaged file and moved the cache
    (with the other processes' vectors) aside. This replays that interleaving deterministically.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn, self._path, self._raced = conn, path, False

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, *args)
        if not self._raced and sql.startswith("SELECT value FROM meta"):
            self._raced = True
            other = sqlite3.connect(self._path, timeout=0)
            try:
                with other:
                    other.execute("INSERT OR IGNORE INTO meta VALUES ('schema', '1')")
            except sqlite3.OperationalError:
                pass  # our connection holds the write lock: the other process would wait for it, not clash
            finally:
                other.close()
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)

    def __enter__(self) -> _RacedConnection:
        self._conn.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.__exit__(*exc)  # type: ignore[arg-type]


def test_two_processes_creating_the_cache_at_once_keep_it(tmp_path: Path, monkeypatch, caplog):
    import toolgauge.embeddings.disk_cache as disk_cache

    real_connect = sqlite3.connect

    def raced(path: Path, *args: object, **kwargs: object) -> _RacedConnection:
        return _RacedConnection(real_connect(path, *args, **kwargs), Path(path))  # type: ignore[arg-type]

    monkeypatch.setattr(disk_cache.sqlite3, "connect", raced)
    cache = _cache(tmp_path)
    with caplog.at_level(logging.WARNING):
        cache.put_many([("text 1", np.full(DIM, 1, dtype=np.float32))])
    monkeypatch.setattr(disk_cache.sqlite3, "connect", real_connect)
    assert "not readable" not in caplog.text
    assert not list(tmp_path.glob("*.unreadable-*"))
    assert list(_cache(tmp_path).get_many(["text 1"])) == ["text 1"]
