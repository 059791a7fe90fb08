"""Tool-Genesis level 4: a proxy agent solves a task with a server's tools, and a judge rates the outcome.

The agent mirrors the official setup (a plain "helpful assistant" given the task text and the server's
tools as native function tools, temperature 0). The judge uses a completeness rubric modelled on the
paper's Appendix B.5 and the official ``response_quality_check.md``: one rating from "very incomplete"
(1) to "fully complete" (5), asked for in a small XML envelope. An unparsable rating is asked for again,
three attempts in all, and scores 0 after that.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant
from toolgauge.benchmarks.tool_genesis.metrics.task_success import parse_rating
from toolgauge.engine import EpisodeContext
from toolgauge.errors import ModelError
from toolgauge.records import GenerateOptions, Message, ToolCall, ToolSpec

AGENT_SYSTEM_PROMPT = "You are a helpful assistant."
JUDGE_SYSTEM_PROMPT = "You are a helpful assistant."
JUDGE_ATTEMPTS = 3
# Tool observations and the history shown to the judge are cut to keep small-context models working.
MAX_OBSERVATION_CHARS = 4000
MAX_HISTORY_CHARS = 24000

StopReason = Literal["answer", "max_steps", "model_error"]


class ToolOutcomeLike(Protocol):
    """What one MCP tool call returns (``toolgauge.tools.ToolCallOutcome`` has this shape)."""

    text: str
    is_error: bool
    failure: str | None


class ToolSessionLike(Protocol):
    """A live MCP server the agent can use (``toolgauge.tools.McpServerSession`` has this shape)."""

    tools: list[dict[str, Any]]

    async def call(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> Any:
        """Call one tool; returns a ``ToolOutcomeLike``."""
        ...


class AgentStep(BaseModel):
    """One tool call the agent made and what came back."""

    step: int
    call: ToolCall
    observation: str
    is_error: bool = False
    failure: str | None = None


class AgentTrajectory(BaseModel):
    """What the proxy agent did for one task."""

    task: str
    messages: list[Message] = Field(default_factory=list)
    steps: list[AgentStep] = Field(default_factory=list)
    final_answer: str | None = None
    model_steps: int = 0
    stopped: StopReason = "answer"
    errors: list[str] = Field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call made, in order."""
        return [s.call for s in self.steps]


class JudgeVerdict(BaseModel):
    """The judge's completeness rating of one trajectory: 1..5, or 0 when no attempt gave a rating."""

    score: int = Field(ge=0, le=5)
    attempts: int
    raw: str = ""
    reasoning: str = ""
    errors: list[str] = Field(default_factory=list)


def tool_specs(tools: list[dict[str, Any]]) -> tuple[list[ToolSpec], dict[str, str]]:
    """Turn MCP wire-shape tools (name, description, inputSchema) into the model's function tools.

    Returns the specs and a map from the name the model sees to the server's tool name. MCP allows
    names that chat APIs refuse for functions (dots, spaces, over 64 characters); those are offered
    under a cleaned name so one odd tool does not turn every request into an HTTP 400.
    """
    specs: list[ToolSpec] = []
    names: dict[str, str] = {}
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        offered = name if _FUNCTION_NAME.fullmatch(name) else _clean_name(name, names)
        schema = tool.get("inputSchema", tool.get("input_schema"))
        if not isinstance(schema, dict):
            schema = {"type": "object", "properties": {}}
        description = tool.get("description")
        specs.append(
            ToolSpec(name=offered, description=description if isinstance(description, str) else "", parameters=schema)
        )
        names[offered] = name
    return specs, names


_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _clean_name(name: str, taken: dict[str, str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
    offered, n = base, 1
    while offered in taken:
        n += 1
        offered = f"{base}_{n}"
    return offered


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, saying how much was dropped."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    return f"{text[:limit]}\n... [{dropped} more characters cut]"


async def solve_task(
    ctx: EpisodeContext,
    task: str,
    session: ToolSessionLike,
    *,
    role: str = "agent",
    max_steps: int = 10,
    options: GenerateOptions | None = None,
    call_timeout: float = 30.0,
) -> AgentTrajectory:
    """Let the proxy agent solve ``task`` with the tools of ``session``.

    Each model step may call tools (run through ``session.call``; the result text goes back as a tool
    message) or answer in text, which ends the episode. At most ``max_steps`` model calls are made. A
    model that fails for good ends the trajectory with the error recorded, it does not raise.
    """
    opts = options or GenerateOptions(temperature=0.0, max_tokens=1024)
    specs, known = tool_specs(session.tools)
    traj = AgentTrajectory(
        task=task,
        messages=[Message(role="system", content=AGENT_SYSTEM_PROMPT), Message(role="user", content=task)],
        stopped="max_steps",
    )
    for step in range(max_steps):
        try:
            turn = await ctx.generate(list(traj.messages), specs, opts, role=role)
        except ModelError as exc:
            traj.errors.append(f"step {step}: model error: {exc}")
            traj.stopped = "model_error"
            break
        traj.model_steps += 1
        # Some endpoints reject an assistant message without content, so send "" rather than nothing.
        traj.messages.append(Message(role="assistant", content=turn.content or "", tool_calls=list(turn.tool_calls)))
        if not turn.tool_calls:
            traj.final_answer = turn.content or ""
            traj.stopped = "answer"
            break
        for index, call in enumerate(turn.tool_calls):
            call_id = call.id or f"call_{step}_{index}"
            agent_step = await _run_call(session, call, step, known, call_timeout)
            traj.steps.append(agent_step)
            traj.messages.append(
                Message(role="tool", content=agent_step.observation, tool_call_id=call_id, name=call.name)
            )
    return traj


async def _run_call(
    session: ToolSessionLike, call: ToolCall, step: int, known: dict[str, str], timeout: float
) -> AgentStep:
    if call.parse_error:
        text = f"Error: the arguments could not be decoded ({call.parse_error}); send a JSON object."
        return AgentStep(step=step, call=call, observation=text, is_error=True, failure="bad_arguments")
    if call.name not in known:
        text = f"Error: unknown tool {call.name!r}; available tools: {', '.join(sorted(known)) or 'none'}."
        return AgentStep(step=step, call=call, observation=text, is_error=True, failure="unknown_tool")
    try:
        outcome = await session.call(known[call.name], dict(call.arguments), timeout=timeout)
    except Exception as exc:  # a broken server must not end the run; the agent sees the failure
        text = f"Error: the tool call failed: {exc.__class__.__name__}: {exc}"
        return AgentStep(step=step, call=call, observation=truncate(text, MAX_OBSERVATION_CHARS), is_error=True,
                         failure=str(exc) or exc.__class__.__name__)  # fmt: skip
    failure = getattr(outcome, "failure", None)
    text = str(getattr(outcome, "text", "") or "")
    if failure and not text:
        text = f"Error: {failure}"
    return AgentStep(
        step=step,
        call=call,
        observation=truncate(text, MAX_OBSERVATION_CHARS),
        is_error=bool(getattr(outcome, "is_error", False)) or failure is not None,
        failure=failure,
    )


# -- the judge ------------------------------------------------------------------------------------------
JUDGE_PROMPT = """\
### Task
You receive (1) a user's request and (2) the whole conversation in which an assistant worked on it, \
including every assistant turn and every tool output. Decide whether, by the end of that conversation, \
the assistant delivered an outcome the user can actually use, end to end.
Judge completeness only. Do not judge length, style, politeness or mistakes that were later repaired.

### The question to ask
If the user stopped reading at the last message, could they reach their goal without an essential \
follow-up? If yes, rate higher. If no, name the one missing piece that blocks them.

### What complete means
- The essential deliverable is present (the answer, data, plan, steps, file or code the user asked for).
- Where the work depends on tools, the assistant either used them and reported the results, or, when a \
tool failed, offered a fallback that still works (manual steps, another method, a minimal usable result).
- Last-mile details needed to use the result are there.
Partial attempts earn credit only if what was delivered is still usable.

### Rating scale (pick exactly one)
1 - very incomplete: nothing usable; the main deliverables are missing.
2 - incomplete: some progress, but the user still cannot reach the goal.
3 - partially complete: the core work was attempted; usable only with considerable extra effort or one \
key piece missing.
4 - mostly complete: the essentials are met; only small gaps remain.
5 - fully complete: everything essential is delivered end to end and usable.

### Do not
- Do not grade tool-call accuracy or "wrong tool" choices unless they stop the task from being completed.
- Do not grade style, verbosity or formatting.
- Do not credit promises ("I will do X") without the deliverable itself.
- Do not assume anything happened that the transcript does not show.

## Inputs
### Question Content
```json
{question}
```

### Conversation History
```json
{history}
```

## Output
Answer in exactly this XML format:

<response>
  <completeness>
    <reasoning>why the outcome is or is not usable end to end</reasoning>
    <rating>one of: very incomplete, incomplete, partially complete, mostly complete, fully complete</rating>
  </completeness>
</response>
"""


def conversation_history(trajectory: AgentTrajectory, limit: int = MAX_HISTORY_CHARS) -> str:
    """The agent's conversation as OpenAI-shaped JSON (what the official judge sees), cut to ``limit``."""
    rows: list[dict[str, Any]] = []
    for m in trajectory.messages:
        row: dict[str, Any] = {"role": m.role, "content": m.content or ""}
        if m.tool_calls:
            row["tool_calls"] = [{"name": c.name, "arguments": c.arguments or c.raw} for c in m.tool_calls]
        if m.tool_call_id:
            row["tool_call_id"] = m.tool_call_id
        rows.append(row)
    text = json.dumps(rows, ensure_ascii=False, indent=2)
    if len(text) <= limit:
        return text
    # Keep the start (the task) and the end (the final answer), which decide completeness.
    head = limit // 3
    return f"{text[:head]}\n... [{len(text) - limit} characters cut] ...\n{text[len(text) - (limit - head) :]}"


def build_judge_prompt(task: str, trajectory: AgentTrajectory) -> str:
    """The judge's prompt for one task and trajectory."""
    values = {"question": task, "history": conversation_history(trajectory)}
    # One pass, so a task that itself contains "{history}" is not expanded.
    return _SLOT.sub(lambda m: values[m.group(1)], JUDGE_PROMPT)


_SLOT = re.compile(r"\{(question|history)\}")


_REASONING = re.compile(r"<reasoning>(.*?)</reasoning>", re.DOTALL | re.IGNORECASE)


async def judge_task(
    ctx: EpisodeContext,
    task: str,
    trajectory: AgentTrajectory,
    *,
    role: str = "judge",
    options: GenerateOptions | None = None,
    attempts: int = JUDGE_ATTEMPTS,
    variant: GenesisVariant = "reference",
) -> JudgeVerdict:
    """Rate how completely ``trajectory`` solved ``task``: 1..5, or 0 after ``attempts`` unusable answers.

    The rating is read with ``metrics.genesis_sr.parse_rating`` in ``variant`` (``reference``: the
    official XML reading; ``strict`` also accepts a bare ``<rating>`` tag). A model error counts as one
    unusable attempt, as in the official loop. Each retry carries a different ``seed`` so a cached answer
    is not simply served again.
    """
    base = options or GenerateOptions(temperature=0.0, max_tokens=1024)
    messages = [
        Message(role="system", content=JUDGE_SYSTEM_PROMPT),
        Message(role="user", content=build_judge_prompt(task, trajectory)),
    ]
    raw = ""
    errors: list[str] = []
    for attempt in range(1, attempts + 1):
        opts = base if attempt == 1 else base.model_copy(update={"seed": (base.seed or 0) + attempt - 1})
        try:
            turn = await ctx.generate(messages, None, opts, role=role)
        except ModelError as exc:
            errors.append(f"attempt {attempt}: model error: {exc}")
            continue
        raw = turn.content or ""
        rating = parse_rating(raw, variant)
        if rating is not None:
            found = _REASONING.search(raw)
            reasoning = found.group(1).strip() if found else ""
            return JudgeVerdict(score=rating, attempts=attempt, raw=raw, reasoning=reasoning, errors=errors)
        errors.append(f"attempt {attempt}: no rating found")
    return JudgeVerdict(score=0, attempts=attempts, raw=raw, errors=errors)
