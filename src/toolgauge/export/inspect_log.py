"""An Inspect AI eval log of a stored run (``.eval`` or ``.json``), readable by ``inspect_ai.log.read_eval_log``.

toolgauge never imports inspect-ai: the models below are our own pydantic models of the subset of
Inspect's log schema (``inspect_ai/log/_log.py``, ``model/_chat_message.py``, ``model/_model_output.py``,
``scorer/_metric.py``, checked against inspect-ai 0.3.285) that a stored run fills. Field names and
shapes are Inspect's; a field we leave out takes Inspect's default when the log is read.

What maps to what (docs/exports.md):

* ``eval``: task = the benchmark, model = the run's model, created = when the run started, task_args = the
  run's config, dataset = the benchmark's data and sample ids, packages = toolgauge's version.
* ``results``: one score named after the benchmark whose metrics are the run's overall metrics (the
  headline ones first); ``results.metadata`` keeps every metric of every breakdown, in the long format.
* ``samples``: one per (sample, epoch). ``input`` is what the first model call was sent; ``messages``
  the conversation (each model call's new messages, then its answer); ``output`` the last answer;
  ``scores`` the verdict; ``model_usage`` the tokens the sample's calls spent (calls answered from the
  response cache spent none); ``events`` one model event per stored call of every role (its input, tools,
  settings, answer, error, latency, and ``cache: "read"`` when the response cache answered it), which
  ``inspect view`` shows as the sample's transcript; ``target`` the gold answer where the verdict carries
  one (BFCL's possible answers, a suite turn's expected calls), as JSON text.
* A sample scored as several units (MTU-Bench's turns, Tool-Genesis's tasks) gets the mean of its units'
  values, and every unit's verdict in the score's metadata (``units``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolgauge.export.inspect_eval_file import write_eval_file
from toolgauge.export.source import RunSource, split_store_key, transcript_key
from toolgauge.records import AssistantTurn, Message, ToolCall
from toolgauge.redact import redact_tree, secret_values
from toolgauge.results import Metric, SampleScore
from toolgauge.store.transcripts import ModelCallRecord

InspectStatus = Literal["started", "success", "cancelled", "error"]
InspectLogFormat = Literal["eval", "json"]
"""Inspect's two log formats: the ``.eval`` zip (Inspect's default) and one ``.json`` document."""
StopReason = Literal["stop", "max_tokens", "model_length", "tool_calls", "content_filter", "unknown"]

# Run status -> Inspect's eval status.
_STATUS: dict[str, InspectStatus] = {
    "finished": "success",
    "finished_with_errors": "success",
    "failed": "error",
    "interrupted": "cancelled",
    "running": "started",
}
# OpenAI finish_reason -> Inspect's stop reason.
_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class InspectToolCall(BaseModel):
    """``inspect_ai.tool.ToolCall``."""

    id: str
    function: str
    arguments: dict[str, Any]
    parse_error: str | None = None
    type: Literal["function"] = "function"


class InspectMessage(BaseModel):
    """``ChatMessageSystem | ChatMessageUser | ChatMessageAssistant | ChatMessageTool`` in one model.

    Fields of another role are left out when the log is written (``exclude_none``).
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    source: Literal["input", "generate"] | None = None
    tool_calls: list[InspectToolCall] | None = None
    model: str | None = None
    tool_call_id: str | None = None
    function: str | None = None
    metadata: dict[str, Any] | None = None


class ModelUsage(BaseModel):
    """``inspect_ai.model.ModelUsage``."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def add(self, input_tokens: int, output_tokens: int) -> None:
        """Count one call's tokens."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.total_tokens += input_tokens + output_tokens


class ChatCompletionChoice(BaseModel):
    """``inspect_ai.model.ChatCompletionChoice``."""

    message: InspectMessage
    stop_reason: StopReason = "unknown"


class ModelOutput(BaseModel):
    """``inspect_ai.model.ModelOutput``."""

    model: str = ""
    choices: list[ChatCompletionChoice] = Field(default_factory=list)
    completion: str = ""
    usage: ModelUsage | None = None
    error: str | None = None


class Score(BaseModel):
    """``inspect_ai.scorer.Score`` (``value`` is a number; Inspect also allows text, lists and mappings)."""

    value: float | int | bool | str
    answer: str | None = None
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


class InspectToolInfo(BaseModel):
    """``inspect_ai.tool.ToolInfo``: ``parameters`` in Inspect's JSON-schema subset (see :func:`inspect_schema`)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}, "required": []})


class GenerateConfig(BaseModel):
    """``inspect_ai.model.GenerateConfig`` (the settings a stored call records)."""

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    reasoning_effort: str | None = None


class ModelEvent(BaseModel):
    """``inspect_ai.event.ModelEvent``: one call to a model (of any role)."""

    event: Literal["model"] = "model"
    timestamp: str
    working_start: float = 0.0
    model: str
    role: str | None = None
    input: list[InspectMessage]
    tools: list[InspectToolInfo] = Field(default_factory=list)
    tool_choice: Literal["auto", "any", "none"] = "auto"
    config: GenerateConfig = Field(default_factory=GenerateConfig)
    output: ModelOutput
    retries: int | None = None
    error: str | None = None
    cache: Literal["read", "write"] | None = None
    working_time: float | None = None
    metadata: dict[str, Any] | None = None


class EvalError(BaseModel):
    """``inspect_ai.log.EvalError``: a sample's run error (toolgauge keeps no traceback)."""

    message: str
    traceback: str = ""
    traceback_ansi: str = ""


class EvalSample(BaseModel):
    """``inspect_ai.log.EvalSample``."""

    id: str
    epoch: int
    input: str | list[InspectMessage]
    target: str | list[str] = ""
    messages: list[InspectMessage] = Field(default_factory=list)
    output: ModelOutput = Field(default_factory=ModelOutput)
    scores: dict[str, Score] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    role_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    total_time: float | None = None
    error: EvalError | None = None
    events: list[ModelEvent] = Field(default_factory=list)


class EvalMetric(BaseModel):
    """``inspect_ai.log.EvalMetric``."""

    name: str
    value: int | float
    params: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None


class EvalScore(BaseModel):
    """``inspect_ai.log.EvalScore``."""

    name: str
    scorer: str
    scored_samples: int | None = None
    unscored_samples: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, EvalMetric] = Field(default_factory=dict)


class EvalResults(BaseModel):
    """``inspect_ai.log.EvalResults``."""

    total_samples: int = 0
    completed_samples: int = 0
    scores: list[EvalScore] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


class EvalDataset(BaseModel):
    """``inspect_ai.log.EvalDataset``."""

    name: str | None = None
    location: str | None = None
    samples: int | None = None
    sample_ids: list[str] | None = None
    shuffled: bool | None = None


class EvalConfig(BaseModel):
    """``inspect_ai.log.EvalConfig`` (the fields a run defines)."""

    limit: int | None = None
    epochs: int | None = None


class EvalSpec(BaseModel):
    """``inspect_ai.log.EvalSpec``."""

    eval_id: str
    run_id: str
    created: str
    task: str
    task_id: str
    task_version: int = 0
    task_args: dict[str, Any] = Field(default_factory=dict)
    dataset: EvalDataset
    model: str
    config: EvalConfig
    packages: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None


class EvalStats(BaseModel):
    """``inspect_ai.log.EvalStats``."""

    started_at: str = ""
    completed_at: str = ""
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    role_usage: dict[str, ModelUsage] = Field(default_factory=dict)


class EvalLog(BaseModel):
    """``inspect_ai.log.EvalLog``, log format version 2."""

    version: int = 2
    status: InspectStatus
    eval: EvalSpec
    results: EvalResults | None = None
    stats: EvalStats = Field(default_factory=EvalStats)
    error: EvalError | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    samples: list[EvalSample] | None = None


def _iso(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def log_file_name(source: RunSource, log_format: InspectLogFormat = "eval") -> str:
    """Inspect's file naming: ``<created>_<task>_<id>.eval`` (or ``.json``; ``:`` in the time as ``-``)."""
    created = datetime.fromtimestamp(source.run.created_at, UTC).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    task = "".join(c if c.isalnum() or c in "-_" else "-" for c in source.run.benchmark)
    return f"{created}_{task}_{source.run.id}.{log_format}"


def write_inspect_log(
    folder: Path, source: RunSource, *, headline: Sequence[str] = (), log_format: InspectLogFormat = "eval"
) -> Path:
    """Write the run as one Inspect eval log in ``folder`` (``.eval`` zip or ``.json``) and return its path."""
    log = build_eval_log(source, headline=headline)
    path = folder / log_file_name(source, log_format)
    document = redact_tree(log.model_dump(mode="json", exclude_none=True), secrets=secret_values())
    if log_format == "json":
        path.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
    else:
        write_eval_file(path, document)
    return path


def build_eval_log(source: RunSource, *, headline: Sequence[str] = ()) -> EvalLog:
    """The Inspect log of a stored run (``headline``: the benchmark's headline metric names, shown first)."""
    run = source.run
    results = source.results
    model = run.model
    groups = _units_by_sample(source)
    samples = [_sample(source, key, epoch, units) for (key, epoch), units in groups]
    sample_ids = list(dict.fromkeys(s.id for s in samples))  # each sample once, whatever its tries
    totals: dict[str, ModelUsage] = {}
    roles: dict[str, ModelUsage] = {}
    for sample in samples:
        for usages, into in ((sample.model_usage, totals), (sample.role_usage, roles)):
            for name, usage in usages.items():
                into.setdefault(name, ModelUsage()).add(usage.input_tokens, usage.output_tokens)
    metadata: dict[str, Any] = {"toolgauge_run": run.id, "toolgauge_status": run.status}
    if source.note:
        metadata["toolgauge_note"] = source.note
    if results is not None:
        metadata["toolgauge_settings"] = results.settings
        if results.warnings:
            metadata["toolgauge_warnings"] = results.warnings
        if results.provenance is not None:
            metadata["toolgauge_provenance"] = results.provenance.model_dump(mode="json")
    stats = results.run if results is not None else None
    tags = [f"{k}={v}" for k, v in sorted(stats.tags.items())] if stats is not None else []
    if stats is not None:  # --name, and the run's cost in USD (None: a price unknown)
        metadata.update(toolgauge_name=stats.name, toolgauge_cost_usd=stats.cost_usd)
    spec = EvalSpec(
        eval_id=run.id,
        run_id=run.id,
        created=_iso(run.created_at),
        task=run.benchmark,
        task_id=run.id,
        task_args=dict(run.config),
        dataset=EvalDataset(
            name=run.benchmark,
            location=str(run.config["data"]) if run.config.get("data") is not None else None,
            samples=len(sample_ids),
            sample_ids=sample_ids,
            shuffled=False,
        ),
        model=model,
        config=EvalConfig(
            limit=run.config.get("limit") if isinstance(run.config.get("limit"), int) else None,
            epochs=results.run.epochs if results is not None and results.run is not None else None,
        ),
        packages={"toolgauge": _toolgauge_version()},
        metadata=metadata,
    )
    eval_results = None
    if results is not None:
        overall = _ordered_overall(results.overall(), headline)
        scored = sum(1 for s in samples if s.scores)
        eval_results = EvalResults(
            total_samples=len(samples),
            completed_samples=sum(1 for s in samples if s.error is None),
            scores=[
                EvalScore(
                    name=run.benchmark,
                    scorer=run.benchmark,
                    scored_samples=scored,
                    unscored_samples=len(samples) - scored,
                    metrics={
                        m.name: EvalMetric(name=m.name, value=m.value, metadata={"kind": m.kind, "n": m.n})
                        for m in overall
                        if m.value is not None
                    },
                )
            ],
            metadata={"metrics": [m.model_dump(mode="json", exclude_none=True) for m in results.metrics]},
        )
    first = results.run.first_error if results is not None and results.run is not None else None
    return EvalLog(
        status=_STATUS.get(run.status, "started"),
        eval=spec,
        results=eval_results,
        stats=EvalStats(
            started_at=_iso(run.created_at), completed_at=_iso(run.finished_at), model_usage=totals, role_usage=roles
        ),
        error=EvalError(message=f"every sample failed; first: {first.key}: {first.error}")
        if run.status == "failed" and first is not None
        else None,
        tags=tags,
        samples=samples,
    )


def _toolgauge_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolgauge")
    except PackageNotFoundError:
        from toolgauge import __version__

        return __version__


def _ordered_overall(metrics: list[Metric], headline: Sequence[str]) -> list[Metric]:
    """Overall metrics, headline ones first (the order Inspect shows them in), each name once."""
    rank = {name: i for i, name in enumerate(headline)}
    seen: set[str] = set()
    out = []
    for m in sorted(metrics, key=lambda m: rank.get(m.name, len(rank))):
        if m.name not in seen:
            seen.add(m.name)
            out.append(m)
    return out


def _units_by_sample(source: RunSource) -> list[tuple[tuple[str, int], list[SampleScore]]]:
    """The scored units grouped by (sample, epoch), in first-seen order (stored samples when not rescored)."""
    if source.scores is None:
        return [(split_store_key(key), []) for key in source.states]
    groups: dict[tuple[str, int], list[SampleScore]] = {}
    for unit in source.scores:
        groups.setdefault((unit.sample, unit.epoch), []).append(unit)
    return list(groups.items())


def _sample(source: RunSource, key: str, epoch: int, units: list[SampleScore]) -> EvalSample:
    calls = source.transcript(key, epoch)
    state = source.states.get(transcript_key(key, epoch))
    model_calls = [c for c in calls if c.role == "model"]
    messages = _conversation(model_calls)
    first_request = next((c.messages for c in model_calls if c.messages is not None), None)
    last = next((c for c in reversed(model_calls) if c.response is not None), None)
    usage: dict[str, ModelUsage] = {}
    roles: dict[str, ModelUsage] = {}
    for call in calls:
        if call.cached:
            continue  # answered from the response cache: no tokens were spent
        name = (call.response.model if call.response is not None else None) or source.run.model
        target = usage if call.role == "model" else roles
        target.setdefault(name if call.role == "model" else call.role, ModelUsage()).add(
            call.usage.input_tokens, call.usage.output_tokens
        )
    error = next((u.error for u in units if u.error), None) or (
        state.error if state is not None and state.status != "done" else None
    )
    started = _iso(source.run.created_at)
    return EvalSample(
        id=key,
        epoch=epoch,
        input=[_message(m, "input") for m in first_request] if first_request else "",
        target=_target(units),
        events=[_event(call, source.run.model, started) for call in calls],
        messages=messages,
        output=_output(last, source.run.model),
        scores=_scores(source.run.benchmark, units),
        metadata={"units": len(units)} if len(units) != 1 else units[0].model_dump(mode="json")["metadata"],
        model_usage=usage,
        role_usage=roles,
        total_time=state.latency_s if state is not None else None,
        error=EvalError(message=error) if error else None,
    )


# Unit metadata keys that hold a verdict's gold answer (the viewer shows the same beside the model's calls).
GOLD_KEYS = ("gold", "expected")


def _target(units: Sequence[SampleScore]) -> str | list[str]:
    """The gold answer of the sample's units as JSON text: one unit's as a string, several units' as a list."""
    golds = [
        json.dumps(gold, ensure_ascii=False, sort_keys=True)
        for unit in units
        for gold in [next((unit.metadata[k] for k in GOLD_KEYS if unit.metadata.get(k) is not None), None)]
        if gold is not None
    ]
    if not golds:
        return ""
    return golds[0] if len(units) == 1 else golds


# JSON-schema types Inspect's reader accepts; other spellings some datasets use (BFCL's) map onto them.
_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
_TYPE_ALIASES = {"dict": "object", "float": "number", "int": "integer", "tuple": "array", "list": "array",
                 "str": "string", "bool": "boolean", "any": None}  # fmt: skip
# The plain keys of Inspect's JSONSchema and the types it reads them as (a value of another type is dropped).
_SCHEMA_KEYS: dict[str, type | tuple[type, ...]] = {
    "format": str, "description": str, "default": object, "enum": list, "pattern": str, "minLength": int,
    "maxLength": int, "minimum": (int, float), "maximum": (int, float), "examples": list,
}  # fmt: skip


def inspect_schema(schema: Any) -> dict[str, Any]:
    """A tool's JSON schema in the subset Inspect's ``JSONSchema`` reads (unknown keys dropped, type aliases mapped).

    The schema the model was sent is unchanged in the event's ``input`` for prompting benchmarks and in the
    stored run; this is only what Inspect's tool list can hold.
    """
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {
        k: v
        for k, v in schema.items()
        if k in _SCHEMA_KEYS and isinstance(v, _SCHEMA_KEYS[k]) and not (isinstance(v, bool) and k != "default")
    }
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    mapped = [t if t in _JSON_TYPES else _TYPE_ALIASES.get(str(t)) for t in kinds if t is not None]
    mapped = [t for t in dict.fromkeys(mapped) if t is not None]
    if mapped:
        out["type"] = mapped if isinstance(kind, list) else mapped[0]
    if isinstance(schema.get("items"), dict):
        out["items"] = inspect_schema(schema["items"])
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {str(k): inspect_schema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("additionalProperties"), bool | dict):
        extra = schema["additionalProperties"]
        out["additionalProperties"] = extra if isinstance(extra, bool) else inspect_schema(extra)
    if isinstance(schema.get("anyOf"), list):
        out["anyOf"] = [inspect_schema(x) for x in schema["anyOf"]]
    if isinstance(schema.get("required"), list):
        out["required"] = [str(x) for x in schema["required"]]
    return out


def _tool_params(parameters: dict[str, Any]) -> dict[str, Any]:
    """``ToolParams``: always an object with properties and required names."""
    schema = inspect_schema(parameters)
    return {
        "type": "object",
        "properties": schema.get("properties", {}),
        "required": schema.get("required", []),
    }


def _event(call: ModelCallRecord, run_model: str, started: str) -> ModelEvent:
    """The Inspect model event of one stored call (``timestamp``: when the run started; calls keep no clock)."""
    options = call.options
    model = (call.response.model if call.response is not None else None) or run_model
    tools = [InspectToolInfo(name=t.name, description=t.description, parameters=_tool_params(t.parameters))
             for t in call.tools or []]  # fmt: skip
    config = GenerateConfig()
    if options is not None:
        config = GenerateConfig(temperature=options.temperature, max_tokens=options.max_tokens, seed=options.seed,
                                reasoning_effort=options.reasoning_effort)  # fmt: skip
    return ModelEvent(
        timestamp=started,
        model=model,
        role=None if call.role == "model" else call.role,
        input=[_message(m, "input") for m in call.messages or []],
        tools=tools,
        tool_choice=_tool_choice(options.tool_choice if options is not None else None),
        config=config,
        output=_output(call, run_model) if call.response is not None else ModelOutput(model=model, error=call.error),
        retries=call.attempts - 1 if call.attempts > 1 else None,
        error=call.error,
        cache="read" if call.cached else None,
        working_time=call.latency_s,
        metadata={"toolgauge_step": call.step, "toolgauge_request_hash": call.request_hash},
    )


def _tool_choice(choice: str | None) -> Literal["auto", "any", "none"]:
    # OpenAI's "required" is Inspect's "any"; a named function is shown as "any" (Inspect would need its name).
    if choice == "none":
        return "none"
    return "any" if choice not in (None, "auto") else "auto"


def _scores(scorer: str, units: list[SampleScore]) -> dict[str, Score] | None:
    valued = [u for u in units if u.value is not None]
    if not valued:
        return None
    if len(units) == 1:
        unit = units[0]
        assert unit.value is not None
        return {scorer: Score(value=unit.value, explanation=unit.explanation, metadata={"scores": dict(unit.scores)})}
    mean = sum(u.value for u in valued if u.value is not None) / len(valued)
    explanations = [f"{u.id}: {u.explanation}" for u in units if u.explanation]
    return {
        scorer: Score(
            value=mean,
            explanation="; ".join(explanations) or None,
            metadata={
                "units": [u.model_dump(mode="json", include={"id", "value", "scores", "explanation"}) for u in units]
            },
        )
    }


def _conversation(calls: Sequence[ModelCallRecord]) -> list[InspectMessage]:
    """The sample's conversation: each call's messages not already shown, then its answer.

    A call whose messages continue what was shown adds only the new ones. A call sent a history that
    differs from what the model answered (a benchmark that replays the reference conversation turn by
    turn) adds the part that differs, marked in its metadata as the history of that step.
    """
    shown: list[Message] = []
    out: list[InspectMessage] = []
    for call in calls:
        sent = call.messages or []
        common = _common_prefix(shown, sent)
        replayed = common < len(shown)
        for message in sent[common:]:
            meta = {"toolgauge_step": call.step, "toolgauge_history": True} if replayed else None
            out.append(_message(message, "input", metadata=meta))
        shown = list(sent)
        if call.response is not None:
            out.append(_assistant(call.response, call.response.model))
            shown.append(call.response.as_message())
        elif call.error:
            out.append(InspectMessage(role="assistant", content="", source="generate",
                                      metadata={"toolgauge_step": call.step, "error": call.error}))  # fmt: skip
    return out


def _common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _tool_calls(calls: Iterable[ToolCall], prefix: str) -> list[InspectToolCall] | None:
    out = [
        InspectToolCall(
            id=c.id or f"{prefix}{i}", function=c.name, arguments=dict(c.arguments), parse_error=c.parse_error
        )
        for i, c in enumerate(calls)
    ]
    return out or None


def _message(
    message: Message, source: Literal["input", "generate"], metadata: dict[str, Any] | None = None
) -> InspectMessage:
    if message.role == "tool":
        return InspectMessage(role="tool", content=message.content or "", source=source,
                              tool_call_id=message.tool_call_id, function=message.name, metadata=metadata)  # fmt: skip
    return InspectMessage(
        role=message.role,
        content=message.content or "",
        source=source,
        tool_calls=_tool_calls(message.tool_calls, "call_") if message.role == "assistant" else None,
        metadata=metadata,
    )


def _assistant(turn: AssistantTurn, model: str | None) -> InspectMessage:
    return InspectMessage(
        role="assistant",
        content=turn.content or "",
        source="generate",
        tool_calls=_tool_calls(turn.tool_calls, "call_"),
        model=model,
    )


def _output(call: ModelCallRecord | None, model: str) -> ModelOutput:
    if call is None or call.response is None:
        return ModelOutput(model=model)
    turn = call.response
    return ModelOutput(
        model=turn.model or model,
        choices=[
            ChatCompletionChoice(
                message=_assistant(turn, turn.model), stop_reason=_STOP.get(turn.finish_reason or "", "unknown")
            )
        ],
        completion=turn.content or "",
        usage=ModelUsage(
            input_tokens=call.usage.input_tokens,
            output_tokens=call.usage.output_tokens,
            total_tokens=call.usage.total_tokens,
        ),
    )
