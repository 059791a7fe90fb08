"""Request hashing for the response cache."""

from __future__ import annotations

import hashlib
import json

from toolgauge.records import ModelRequest


def request_hash(cache_id: str, request: ModelRequest) -> str:
    """Return a stable sha256 of everything that determines a model's answer."""
    payload = {"model": cache_id, **request.cache_payload()}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
