"""What an OpenAI-compatible server says about the model it serves, for the response cache's key.

A server redeployed with a new checkpoint under the same model name must not be answered from the old one's
cache: the probe reads the model's ``/v1/models`` entry (``id``, ``created``, ``root``, ``owned_by``) and the
``system_fingerprint`` of its answer, and whatever of these the server says goes into the client's
``cache_id``. A server that says none of them keeps the key it always had.

vLLM, SGLang, LMDeploy and llama.cpp's server stamp ``created`` with the time of the request itself, so a
``created`` within :data:`REQUEST_STAMP_SECONDS` of our clock is left out (kept, it would make every run miss
the cache); Ollama and OpenAI give the model's own date, which is kept.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel

REQUEST_STAMP_SECONDS = 120.0


class ServedModel(BaseModel):
    """What the server said about the model it serves under our model name (None: not said)."""

    id: str | None = None
    created: int | None = None
    root: str | None = None
    owned_by: str | None = None
    system_fingerprint: str | None = None

    @property
    def said(self) -> bool:
        """Whether the server said anything beyond the name we asked for."""
        return any(v is not None for v in self.model_dump(exclude={"id"}).values())

    def digest(self) -> str:
        """A short stable digest of what was said (the suffix of the cache id)."""
        blob = json.dumps(self.model_dump(exclude_none=True), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def models_entry(listing: Any, model: str, *, now: float) -> ServedModel:
    """The ``/v1/models`` entry of ``model`` (by ``id``), as a :class:`ServedModel`; empty when there is none.

    ``listing`` is the decoded body (``{"data": [...]}``); anything else, or an entry of odd types, reads as
    nothing said rather than an error (the listing is a hint, the run does not depend on it).
    """
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return ServedModel()
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == model:
            created = entry.get("created")
            stamp = created if isinstance(created, int) and not isinstance(created, bool) else None
            if stamp is not None and abs(stamp - now) <= REQUEST_STAMP_SECONDS:
                stamp = None  # the time of this request, not of the model
            return ServedModel(
                id=model, created=stamp, root=_text(entry.get("root")), owned_by=_text(entry.get("owned_by"))
            )
    return ServedModel()


def cache_id_with(base: str, served: ServedModel | None) -> str:
    """``base`` (model and endpoint), plus the digest of what the server said of its model when it said anything."""
    if served is None or not served.said:
        return base
    return f"{base}~{served.digest()}"
