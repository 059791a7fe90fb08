"""``genesis generate``: turn each requirement into an MCP server (direct or code-agent)."""

from __future__ import annotations
