"""Sentence embeddings for metrics that compare texts by meaning (Tool-Genesis Schema-F1 and unit tests).

The seam is :class:`toolgauge.embeddings.base.Embedder`; the real implementation is
:class:`toolgauge.embeddings.minilm.MiniLMEmbedder` (the ``embeddings`` extra). Metrics receive an embedder
as an argument, so they stay pure and tests can pass a small deterministic one.
"""

from toolgauge.embeddings.base import Embedder, cosine_matrix

__all__ = ["Embedder", "cosine_matrix"]
