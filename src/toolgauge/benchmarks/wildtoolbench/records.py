"""WildToolBench session records: one session = tools, a date, and up to four tasks, each a DAG of gold calls.

Both input formats (the official ``Wild-Tool-Bench.jsonl`` and toolgauge's own session format) load into
these records, so the protocol and the scorer see one shape. A task's gold answer is a list of
:class:`WildNode` in the official layout: real tool calls plus the two pseudo-tools
(``ask_user_for_required_parameters`` for a clarifying question, ``prepare_to_answer`` for the final
reply), linked by ``dependency_list`` (indices of the nodes that must come first).
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from toolgauge.records import ToolSpec

Language = Literal["en", "zh"]
TaskType = Literal[
    "Single-Tool",
    "Parallel Multi-Tool",
    "Sequential Multi-Tool",
    "Mixed Multi-Tool",
    "Clarify",
    "Chat",
]
TurnSubtype = Literal["Coreferential Reference", "Partial Information", "Long-Range Dependency"]

TASK_TYPES: tuple[TaskType, ...] = get_args(TaskType)
TURN_SUBTYPES: tuple[TurnSubtype, ...] = get_args(TurnSubtype)
#: What the official tables call the first task of a session (it has no turn subtype).
FIRST_TURN = "First Turn"
# The official sessions always have four tasks; the official tables have layers 0-3, so no more are allowed.
MAX_TASKS = 4


class WildAction(BaseModel):
    """The call a gold node makes: a tool name and its decoded arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class WildNode(BaseModel):
    """One gold node: a call, what it returned, and the nodes it waits for.

    For ``ask_user_for_required_parameters`` the observation is the assistant's question and
    ``user_input`` the user's reply; for ``prepare_to_answer`` the observation is the reference reply.
    The observation of a real tool is any JSON value (usually a string or an object).
    """

    model_config = ConfigDict(frozen=True)

    action: WildAction
    observation: Any = None
    dependency_list: list[int] = Field(default_factory=list)
    user_input: str | None = None

    def observation_text(self) -> str:
        """The observation as text: strings as they are, anything else as JSON (as the official loop sends it)."""
        if isinstance(self.observation, str):
            return self.observation
        return json.dumps(self.observation, ensure_ascii=False)


class WildTask(BaseModel):
    """One user task of a session and its gold nodes."""

    model_config = ConfigDict(frozen=True)

    user: str
    nodes: list[WildNode]


class WildSession(BaseModel):
    """One session in one language.

    ``tools`` keeps the OpenAI shape (``{"type": "function", "function": {...}}``) after the official
    rewrite of ``"type": "float"`` to ``"number"``. ``task_types[i]`` is task i's type;
    ``turn_subtypes[i]`` is the subtype of task ``i + 1`` (the first task has none).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    language: Language = "en"
    env_info: str
    tools: list[dict[str, Any]]
    tasks: list[WildTask]
    task_types: list[TaskType]
    turn_subtypes: list[TurnSubtype]

    def tool_specs(self) -> list[ToolSpec]:
        """The session's tools as toolgauge tool specs (what the model is offered)."""
        specs: list[ToolSpec] = []
        for tool in self.tools:
            fn = tool["function"]
            specs.append(
                ToolSpec(
                    name=fn["name"],
                    description=fn.get("description") or "",
                    parameters=fn.get("parameters") or {"type": "object", "properties": {}},
                )
            )
        return specs

    def tool_names(self) -> list[str]:
        """Names of the session's tools, in order."""
        return [str(t["function"]["name"]) for t in self.tools]

    def subtype_of(self, task_index: int) -> str:
        """The turn subtype as the official tables name it: "First Turn" for task 0."""
        return FIRST_TURN if task_index == 0 else self.turn_subtypes[task_index - 1]
