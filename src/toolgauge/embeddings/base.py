"""The embedder seam: texts in, L2-normalised float32 rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into vectors whose dot product is their cosine similarity."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``.

        Args:
            texts: The texts, in order.

        Returns:
            A ``(len(texts), dim)`` float32 array whose rows have unit L2 norm (a zero row only for a
            text the model maps to the zero vector).
        """
        ...


def cosine_matrix(left: Vectors, right: Vectors) -> npt.NDArray[np.float64]:
    """Cosine similarity of every row of ``left`` with every row of ``right``.

    Rows are re-normalised here (zero rows give 0), so the result does not depend on whether an
    embedder normalised exactly; the official code normalises before each dot product too.

    Args:
        left: ``(n, dim)`` vectors.
        right: ``(m, dim)`` vectors.

    Returns:
        An ``(n, m)`` float64 matrix.
    """
    a = np.asarray(left, dtype=np.float64)
    b = np.asarray(right, dtype=np.float64)
    a_norm = np.linalg.norm(a, axis=1, keepdims=True)
    b_norm = np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, a_norm, out=np.zeros_like(a), where=a_norm > 0)
    b = np.divide(b, b_norm, out=np.zeros_like(b), where=b_norm > 0)
    product: npt.NDArray[np.float64] = a @ b.T
    return product
