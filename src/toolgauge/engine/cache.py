"""Request hashing for the response cache."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from toolgauge.records import ModelRequest

# What a run does with the response cache (``--cache``): neither read nor write it, only read, only write, both.
CacheMode = Literal["off", "read", "write", "on"]


def request_hash(cache_id: str, request: ModelRequest, *, epoch: int = 1) -> str:
    """Return a stable sha256 of everything that determines a model's answer, and of the try it is for.

    The request's options (temperature, top-p, max tokens, seed, reasoning effort, tool choice: all of
    ``GenerateOptions``) are part of it. Try ``epoch >= 2`` of a sample (``--epochs``) hashes its epoch
    too, so a repeat is a real call and a rerun of the same run gets each try's own answer back; try 1
    keeps the key it has always had (a run of one epoch is served by the cache its earlier runs filled).
    """
    payload = {"model": cache_id, **request.cache_payload()}
    if epoch != 1:
        payload["epoch"] = epoch
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
