"""Task logs in the exact shape of WildToolBench's official result file.

The official inference loop (``wtb/model_handler/base_handler.py``) writes one JSON line per session to
``result/<model>/Wild-Tool-Bench_result.jsonl``::

    {"id": "wild_tool_bench_<k>",
     "result": [                                   # one entry per task
        {"action_name_label": "correct"|"error",
         "is_optimal": bool,
         "inference_log": {"task_idx": int,
                           "begin_of_current_task": {message},
                           "step_0": {"inference_input": {"messages": [...], "tools": [...]},
                                      "inference_output": {"reasoning_content", "content", "tool_calls",
                                                           "current_action_name_label", "error_reason"?},
                                      "inference_answer"?: {"candidate_<i>_answer_function_list":
                                                            {"action": [{"arguments": str, "name": str}],
                                                             "observation"?, "user_input"?}}},
                           "step_1": {...}, ...},
         "latency": [...], "input_token_count": [...], "output_token_count": [...]}]}

These models validate such a line and dump it back (``model_dump(mode="json")``) in a form the official
``eval_runner.py`` accepts. Keys the official writer only sometimes writes (``error_reason``,
``inference_answer``, ``observation``...) are left out of the dump when unset, and keys it always writes
(``reasoning_content``, ``content``, ``tool_calls``) are dumped even when null, so a round trip gives the
same JSON. The ``step_<k>`` entries are held as the ordered list :attr:`WildInferenceLog.steps` and written
back as ``step_0``, ``step_1``... (a log with gaps, as the official scorer leaves after deleting a step, is
renumbered). Fields the official scorer adds later (``label``, ``action_arguments_label``,
``current_action_arguments_label``...) are kept as extras. :func:`toolgauge.benchmarks.wildtoolbench.io.read_official`
reads a whole file.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

__all__ = [
    "Label",
    "WildAnswerAction",
    "WildAnswerFunctionList",
    "WildFunctionCall",
    "WildInferenceInput",
    "WildInferenceLog",
    "WildInferenceOutput",
    "WildSessionResult",
    "WildStepLog",
    "WildTaskLog",
    "WildToolCall",
]

Label = Literal["correct", "error"]

_STEP_KEY = re.compile(r"^step_(\d+)$")
_CANDIDATE_KEY = re.compile(r"^candidate_(\d+)_answer_function_list$")


def _drop_unset(data: Any, optional_keys: tuple[str, ...]) -> Any:
    """Remove keys the official writer omits when they have no value (it never writes them as null)."""
    if isinstance(data, dict):
        for key in optional_keys:
            if data.get(key) is None:
                data.pop(key, None)
    return data


class WildFunctionCall(BaseModel):
    """A call as the official log writes it: its name, and ``arguments`` as JSON text.

    The ``function`` part of a predicted OpenAI tool call (the text as the model sent it), and a gold call of a
    candidate step (:data:`WildAnswerAction`, the text the official writer ``json.dumps``).
    """

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str


class WildToolCall(BaseModel):
    """One predicted tool call in the OpenAI shape (``{"id", "type", "function": {"name", "arguments"}}``)."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    type: str = "function"
    function: WildFunctionCall

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _drop_unset(handler(self), ("id",))


class WildInferenceInput(BaseModel):
    """What the model was sent at one step: the chat messages and the tools (OpenAI ``tools`` entries).

    The official writer rewrites ``"type": "float"`` to ``"number"`` in ``tools`` before sending them.
    """

    model_config = ConfigDict(extra="allow")

    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class WildInferenceOutput(BaseModel):
    """What the model answered at one step, and the online judgement of its action names.

    ``current_action_name_label`` and ``error_reason`` are written by the online matcher; the official
    ``error_reason`` strings are ``"tool_calls and content are None"``, ``"action name not in
    candidate_answer_function_list"``, ``"parse tool_calls failed, error: ..."`` and ``"current step: <s>,
    idx_list is None"``. ``current_action_arguments_label`` and ``current_action_arguments_check_result`` are
    added by the official scorer. When the logged ``tool_calls`` are not in the OpenAI shape (the case that
    makes the official writer log ``parse tool_calls failed``), they are kept verbatim in
    ``unparsed_tool_calls`` and ``tool_calls`` is None; the dump writes them back under ``tool_calls``.
    """

    model_config = ConfigDict(extra="allow")

    reasoning_content: str | None = None
    content: str | None = None
    tool_calls: list[WildToolCall] | None = None
    current_action_name_label: Label | None = None
    error_reason: str | None = None
    current_action_arguments_label: Label | None = None
    current_action_arguments_check_result: list[str] | None = None
    unparsed_tool_calls: Any = None

    @model_validator(mode="before")
    @classmethod
    def _keep_malformed_calls(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("tool_calls") is None:
            return data
        try:
            calls = [WildToolCall.model_validate(call) for call in data["tool_calls"]]
        except (ValidationError, TypeError):
            data = dict(data)
            data["unparsed_tool_calls"] = data.pop("tool_calls")
            return data
        data = dict(data)
        data["tool_calls"] = calls
        return data

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            unparsed = data.pop("unparsed_tool_calls", None)
            if unparsed is not None:
                data["tool_calls"] = unparsed
            _drop_unset(
                data,
                (
                    "current_action_name_label",
                    "error_reason",
                    "current_action_arguments_label",
                    "current_action_arguments_check_result",
                ),
            )
        return data


WildAnswerAction = WildFunctionCall
"""One gold call of a candidate step (``action`` entries): a call written as a predicted one is."""


class WildAnswerFunctionList(BaseModel):
    """One candidate gold step: its calls, and for pseudo-tool steps the gold reply and user input."""

    model_config = ConfigDict(extra="allow")

    action: list[WildAnswerAction] = Field(default_factory=list)
    observation: Any = None
    user_input: Any = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _drop_unset(handler(self), ("observation", "user_input"))


class WildStepLog(BaseModel):
    """One ``step_<k>`` entry: model input, model output and (when the matcher wrote them) the gold candidates.

    ``inference_answer`` maps ``candidate_<i>_answer_function_list`` to a candidate step. It is absent
    when the step ended on an empty reply, unparsable tool calls, or more steps than the gold has.
    """

    model_config = ConfigDict(extra="allow")

    inference_input: WildInferenceInput = Field(default_factory=WildInferenceInput)
    inference_output: WildInferenceOutput = Field(default_factory=WildInferenceOutput)
    inference_answer: dict[str, WildAnswerFunctionList] | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _drop_unset(handler(self), ("inference_answer",))

    def candidates(self) -> list[WildAnswerFunctionList]:
        """Return the gold candidate steps ordered by their index ``i`` (empty when none were logged)."""
        if not self.inference_answer:
            return []
        numbered: list[tuple[int, WildAnswerFunctionList]] = []
        for key, value in self.inference_answer.items():
            match = _CANDIDATE_KEY.match(key)
            numbered.append((int(match.group(1)) if match else len(numbered), value))
        return [value for _, value in sorted(numbered, key=lambda pair: pair[0])]

    @property
    def name_label(self) -> Label | None:
        """The online action-name judgement of this step (None if the writer recorded none)."""
        return self.inference_output.current_action_name_label


class WildInferenceLog(BaseModel):
    """A task's ``inference_log``: task index, the task's user message, and the logged steps in order."""

    model_config = ConfigDict(extra="allow")

    task_idx: int
    begin_of_current_task: dict[str, Any] = Field(default_factory=dict)
    steps: list[WildStepLog] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _collect_steps(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "steps" in data:
            return data
        rest: dict[str, Any] = {}
        numbered: list[tuple[int, Any]] = []
        for key, value in data.items():
            match = _STEP_KEY.match(key)
            if match:
                numbered.append((int(match.group(1)), value))
            else:
                rest[key] = value
        rest["steps"] = [value for _, value in sorted(numbered, key=lambda pair: pair[0])]
        return rest

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            steps = data.pop("steps", [])
            for index, step in enumerate(steps):
                data[f"step_{index}"] = step
        return data


class WildTaskLog(BaseModel):
    """One task's entry of a session's ``result`` list, as the official inference loop writes it.

    ``action_name_label`` is the online verdict on the sequence of action names (arguments unchecked);
    ``is_optimal`` says the names were right and the task took the fewest possible steps. ``latency`` and
    the token counts hold one value per step and are optional here.
    """

    model_config = ConfigDict(extra="allow")

    action_name_label: Label
    is_optimal: bool = False
    inference_log: WildInferenceLog
    latency: list[float | None] | None = None
    input_token_count: list[int | None] | None = None
    output_token_count: list[int | None] | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _drop_unset(handler(self), ("latency", "input_token_count", "output_token_count"))

    @property
    def steps(self) -> list[WildStepLog]:
        """The logged steps in order (shorthand for ``inference_log.steps``)."""
        return self.inference_log.steps


class WildSessionResult(BaseModel):
    """One line of ``Wild-Tool-Bench_result.jsonl``: a session id and one task log per task."""

    model_config = ConfigDict(extra="allow")

    id: str
    result: list[WildTaskLog] = Field(default_factory=list)
