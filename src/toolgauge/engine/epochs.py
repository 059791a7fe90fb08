"""Store keys of repeated tries (``--epochs K``): the one rule that names a try of a sample.

Try 1 of a sample is stored under the sample's own key, so runs made before epochs existed (and every
run of one epoch) keep their keys for ``--resume``, ``rescore`` and ``transcript``. Try ``e >= 2`` is
stored under ``f"{key}@e{e}"``. The calls of an extra role are logged under ``"<try key>#<role>"``
(store.py), which strips only a trailing ``#<role>``, so the two suffixes never meet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from toolgauge.errors import UsageError

EPOCH_MARK = "@e"
_EPOCH_KEY = re.compile(r"(?s)(.+)@e([2-9]|[1-9][0-9]+)")


def epoch_key(key: str, epoch: int) -> str:
    """The store key of try ``epoch`` (1-based) of sample ``key``."""
    if epoch < 1:
        raise ValueError(f"epochs count from 1, got {epoch}")
    return key if epoch == 1 else f"{key}{EPOCH_MARK}{epoch}"


def split_epoch_key(store_key: str) -> tuple[str, int]:
    """The (sample key, epoch) a store key names: the inverse of :func:`epoch_key`.

    A key without an epoch suffix is try 1. A sample whose own key ends like a suffix (``"x@e2"``)
    cannot be told apart; ``run_episodes`` refuses such keys when it runs more than one epoch.
    """
    found = _EPOCH_KEY.fullmatch(store_key)
    if found is None:
        return store_key, 1
    return found.group(1), int(found.group(2))


def check_epoch_keys(keys: Iterable[str], epochs: int) -> None:
    """Raise ``UsageError`` when ``epochs`` tries of these samples would not all have keys of their own.

    Only a sample key that already ends like a later try's (``"x@e2"`` beside ``"x"``) can collide.
    """
    if epochs < 1:
        raise UsageError(f"--epochs must be at least 1, got {epochs}")
    if epochs == 1:
        return
    keys = list(keys)
    taken = set(keys)
    for key in keys:
        sample, epoch = split_epoch_key(key)
        if epoch != 1 and sample in taken and epoch <= epochs:
            raise UsageError(
                f"sample key {key!r} looks like the key of a repeated try of sample {sample!r}; "
                "it cannot run with --epochs"
            )
