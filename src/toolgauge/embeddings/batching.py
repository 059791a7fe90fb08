"""Group texts into forward passes by token count, so a batch pads little.

sentence-transformers sorts a call's texts by character length and cuts fixed-size batches; characters are a
poor proxy for word pieces (JSON and digits split into many), so its batches padded 28.8% extra tokens on the
Tool-Genesis texts (issue 11). Here texts are sorted by their real token counts and a batch grows while its
padded size (items × longest item) stays within a token budget: short texts go many to a pass, long ones few.
"""

from __future__ import annotations

from collections.abc import Sequence


def token_batches(lengths: Sequence[int], budget: int, max_items: int) -> list[list[int]]:
    """Indices of the texts, grouped into batches of at most ``budget`` padded tokens.

    Args:
        lengths: Token count of each text (after truncation), in input order.
        budget: Largest ``len(batch) * max(lengths in batch)``; a single text longer than it still gets a batch.
        max_items: Most texts in one batch.

    Returns:
        Batches of indices into ``lengths``, each sorted by increasing length; every index appears once.
    """
    if budget < 1 or max_items < 1:
        raise ValueError(f"budget and max_items must be positive, got {budget} and {max_items}")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending, so this text is the longest of the batch if it joins.
        longest = max(1, lengths[index])
        if current and ((len(current) + 1) * longest > budget or len(current) >= max_items):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
