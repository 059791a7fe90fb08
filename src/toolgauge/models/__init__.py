"""Model clients: one small async protocol, several implementations."""

from toolgauge.models.base import ModelClient
from toolgauge.models.spec import resolve_model

__all__ = ["ModelClient", "resolve_model"]
