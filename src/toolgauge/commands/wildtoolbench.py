"""``eval wildtoolbench`` and ``score wildtoolbench``."""

from __future__ import annotations
