"""Records shared by every protocol: tools, calls, messages, model turns."""

from toolgauge.records.core import (
    AssistantTurn,
    GenerateOptions,
    Message,
    ModelRequest,
    Role,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "AssistantTurn",
    "GenerateOptions",
    "Message",
    "ModelRequest",
    "Role",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
