"""Tool-Genesis records: one server specification of the data file, and one generated server.

The field names follow the official ``tool_genesis_v3.json`` (subway-jack/Tool-Genesis, MIT): the
expected output of a unit test lives in ``function_output_content`` (the dataset card says
``expected_output``; the data and the official code do not).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ServerClass = Literal["stateless", "stateful"]


class UnitTest(BaseModel):
    """One held-out unit test: a call of a reference tool and its recorded output.

    ``arguments`` is normally an object. Eleven tests of the official data hold a (malformed) JSON
    string instead; the official evaluator then sends ``{}``, so the string is kept as it is and the
    caller decides (see ``arguments_dict``).
    """

    model_config = ConfigDict(frozen=True)

    function_name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    function_output_content: str = ""

    @field_validator("function_output_content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # Recorded outputs are text in the data; a structured one is kept as its JSON text.
        if value is None:
            return ""
        if isinstance(value, (dict, list, int, float, bool)):
            return json.dumps(value, ensure_ascii=False)
        return value

    @property
    def arguments_dict(self) -> dict[str, Any]:
        """The arguments as the official evaluator sends them: a non-object becomes ``{}``."""
        return dict(self.arguments) if isinstance(self.arguments, dict) else {}


class GenesisServer(BaseModel):
    """One server specification: the requirement, reference tools, unit tests and task examples."""

    model_config = ConfigDict(frozen=True)

    server_slug: str
    server_name: str = ""
    server_id: str | int | None = None
    primary_label: str = ""
    secondary_labels: list[str] = Field(default_factory=list)
    agent_input_prompt: str
    task_example: list[str] = Field(default_factory=list)
    tool_definitions: list[dict[str, Any]]
    unit_test: dict[str, list[UnitTest]] = Field(default_factory=dict)
    server_class: ServerClass = "stateless"
    requires_api: bool = False
    sandbox_level: str | None = None

    @property
    def stateful(self) -> bool:
        """True when the data marks the server as keeping state between calls."""
        return self.server_class == "stateful"

    @property
    def tool_names(self) -> list[str]:
        """Reference tool names in data order."""
        return [str(t["name"]) for t in self.tool_definitions]

    def schema_payload(self) -> dict[str, Any]:
        """The reference tools as a ``{"tools": [...]}`` schema payload (the official GT side)."""
        return {"tools": [dict(t) for t in self.tool_definitions]}

    @property
    def n_unit_tests(self) -> int:
        """Number of unit tests over all tools."""
        return sum(len(cases) for cases in self.unit_test.values())


class GeneratedServer(BaseModel):
    """A generated (or user-supplied) server: its schema file and its code file.

    ``error`` is set when generation failed (the files may then be missing); the evaluation scores
    such a server as failing L1 with that reason instead of treating it as bad input.
    """

    model_config = ConfigDict(frozen=True)

    slug: str
    schema_path: Path
    code_path: Path
    error: str | None = None
    server_id: str | int | None = None
    server_name: str | None = None
