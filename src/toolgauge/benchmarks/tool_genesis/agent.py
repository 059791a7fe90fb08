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
from typing import Any

from pydantic import BaseModel, Field

from toolgauge.benchmarks.tool_genesis.metrics.schema import GenesisVariant
from toolgauge.benchmarks.tool_genesis.metrics.task_success import parse_rating
from toolgauge.engine import EpisodeContext
from toolgauge.errors import ModelError
from toolgauge.records import GenerateOptions, Message
from toolgauge.tools import ToolBackend, ToolTranscript, run_tool_loop

AGENT_SYSTEM_PROMPT = "You are a helpful assistant."
JUDGE_SYSTEM_PROMPT = "You are a helpful assistant."
JUDGE_ATTEMPTS = 3
# The history shown to the judge is cut to keep small-context models working (tool results are cut by the loop).
MAX_HISTORY_CHARS = 24000


class AgentTrajectory(ToolTranscript):
    """What the proxy agent did for one task: the tool loop's transcript, and the task."""

    task: str

    @property
    def errors(self) -> list[str]:
        """What went wrong on the way (a model error that ended the trajectory)."""
        if self.model_error is None:
            return []
        return [f"step {self.model_steps}: model error: {self.model_error}"]


class JudgeVerdict(BaseModel):
    """The judge's completeness rating of one trajectory: 1..5, or 0 when no attempt gave a rating."""

    score: int = Field(ge=0, le=5)
    attempts: int
    raw: str = ""
    reasoning: str = ""
    errors: list[str] = Field(default_factory=list)


async def solve_task(
    ctx: EpisodeContext,
    task: str,
    backend: ToolBackend,
    *,
    role: str = "agent",
    max_steps: int = 10,
    options: GenerateOptions | None = None,
) -> AgentTrajectory:
    """Let the proxy agent solve ``task`` with the tools of ``backend`` (for L4, a ``toolgauge.tools.McpBackend``).

    The tool loop (``toolgauge.tools.run_tool_loop``): each model step may call tools, whose results go
    back as tool messages, or answer in text, which ends the episode. At most ``max_steps`` model calls
    are made. A model that fails for good ends the trajectory with the error recorded; it does not raise.
    """
    opts = options or GenerateOptions(temperature=0.0, max_tokens=1024)
    opening = [Message(role="system", content=AGENT_SYSTEM_PROMPT), Message(role="user", content=task)]
    transcript = await run_tool_loop(ctx, opening, backend, max_steps, role=role, options=opts)
    return AgentTrajectory(task=task, **dict(transcript))


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
