"""The Content-Security-Policy sources of the viewer's pages (the report and its sample pages share them)."""

from __future__ import annotations

import base64
import hashlib


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline script or style."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
