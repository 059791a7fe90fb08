"""The real MiniLM embedder's speed-ups keep its vectors: token-budget batches, the disk cache, its canary."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from toolgauge.embeddings.minilm import MiniLMEmbedder, embeddings_available

pytestmark = pytest.mark.skipif(not embeddings_available(), reason="the `embeddings` extra is not installed")


def _texts(data_dir: Path, n: int) -> list[str]:
    """Real unit-test texts in both forms L3 compares, of many lengths (some over the 256-token limit)."""
    servers = json.loads((data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_text(encoding="utf-8"))
    outputs = [c["function_output_content"] for s in servers for cs in s["unit_test"].values() for c in cs]
    wrapped = [json.dumps([{"type": "text", "text": x, "annotations": None}]) for x in outputs]
    distinct = sorted({x.strip().lower() for x in outputs + wrapped})
    return distinct[:: max(1, len(distinct) // n)][:n]


@pytest.mark.realdata
def test_token_budget_batches_give_the_vectors_of_one_by_one_embedding(data_dir: Path):
    texts = _texts(data_dir, 120)
    batched = MiniLMEmbedder(cache_dir=None, token_budget=1024, threads=2)
    vectors = batched.embed(texts)
    model = batched._model
    lengths = [len(x) for x in model.tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
    assert max(lengths) == 256 and min(lengths) < 20  # the sample spans short texts and truncated ones
    alone = np.stack([model.encode([t], normalize_embeddings=True, convert_to_numpy=True)[0] for t in texts])
    assert float(np.abs(vectors - alone).max()) <= 1e-6
    one_thread = MiniLMEmbedder(cache_dir=None, token_budget=256, threads=1)
    one_thread._model = model
    assert float(np.abs(one_thread.embed(texts) - alone).max()) <= 1e-6


def test_the_disk_cache_hands_back_what_the_model_computed(tmp_path: Path):
    texts = ["get the weather for a city", '{"temperature": 21.5}', "delete a user account"]
    cold = MiniLMEmbedder(cache_dir=tmp_path)
    first = cold.embed(texts)
    assert (cold.computed, cold.from_disk) == (3, 0)
    warm = MiniLMEmbedder(cache_dir=tmp_path)  # another process's embedder: empty memory, same disk
    again = warm.embed([*texts, "a text never seen"])
    assert (warm.computed, warm.from_disk) == (1, 3)
    assert again[:3].tobytes() == first.tobytes()
    off = MiniLMEmbedder(cache_dir=None)
    assert float(np.abs(off.embed(texts) - first).max()) <= 1e-6
    assert off.disk_cache is None


def test_a_cache_whose_canary_disagrees_is_not_used(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    texts = ["get the weather for a city"]
    MiniLMEmbedder(cache_dir=tmp_path).embed(texts)
    import sqlite3

    with sqlite3.connect(tmp_path / "embeddings.sqlite3") as conn:  # as if another numeric path had filled it
        (blob,) = conn.execute("SELECT canary FROM namespaces").fetchone()
        skewed = np.frombuffer(blob, dtype=np.float32) + np.float32(1e-4)
        conn.execute("UPDATE namespaces SET canary = ?", (skewed.tobytes(),))
    other = MiniLMEmbedder(cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolgauge.embeddings"):
        other.embed(texts)
    assert other.disk_cache is None and (other.computed, other.from_disk) == (1, 0)
    assert any("not using it" in r.getMessage() for r in caplog.records)
