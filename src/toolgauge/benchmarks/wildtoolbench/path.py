"""The path a task took through its gold call graph, step by step, for the viewer (a task's metadata).

The verdicts come from the log and the task score (``score_task_log``); this only lays them out along the
graph: which gold nodes each model step matched (the online match is replayed on the logged action names
with a fresh :class:`~.graph.GraphWalk`, so it is the branch the loop took), whether the task could still
finish in the fewest steps after it, and where and why the task left the graph. Pure; no verdict reads it.

Shapes (JSON in ``SampleScore.metadata``; text is cut to a short preview):

- ``gold_graph``: ``{"min_steps": int, "nodes": [{"id", "name", "args", "after": [ids]}]}``;
- ``path``: one entry per logged step: ``{"step", "calls": ["name(arguments)"], "text", "nodes": [ids] | null,
  "optimal": bool | null, "verdict", "reason"}``, plus ``"expected": [ids]`` (the gold nodes a live candidate
  step offered) on the step where the task left the graph.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from toolgauge.benchmarks.wildtoolbench.args import CORRECT
from toolgauge.benchmarks.wildtoolbench.graph import CallGraph, GraphWalk, StepMatch
from toolgauge.benchmarks.wildtoolbench.log import WildStepLog, WildTaskLog
from toolgauge.benchmarks.wildtoolbench.metrics import WildTaskScore
from toolgauge.benchmarks.wildtoolbench.records import WildTask

__all__ = ["ARGS_PREVIEW", "StepVerdict", "gold_graph", "node_steps", "task_graph", "task_path"]

StepVerdict = Literal["on the graph", "left the graph", "wrong arguments", "not scored"]
#: Characters kept of a node's arguments, a model call or a text reply.
ARGS_PREVIEW = 80
#: Candidate steps read for ``expected`` (their number grows exponentially with parallel calls).
MAX_EXPECTED_CANDIDATES = 16


def _preview(text: str, limit: int = ARGS_PREVIEW) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def task_graph(task: WildTask) -> CallGraph:
    """The task's gold call DAG (as ``protocol.task_graphs`` builds it, for one task)."""
    return CallGraph.build([n.action.name for n in task.nodes], [n.dependency_list for n in task.nodes])


def gold_graph(task: WildTask, graph: CallGraph) -> dict[str, Any]:
    """The gold DAG as the viewer draws it: nodes (id, tool name, arguments preview, dependencies), fewest steps."""
    nodes = [
        {
            "id": i,
            "name": node.action.name,
            "args": _preview(json.dumps(node.action.arguments, ensure_ascii=False)) if node.action.arguments else "",
            "after": list(node.dependency_list),
        }
        for i, node in enumerate(task.nodes)
    ]
    return {"min_steps": graph.min_steps, "nodes": nodes}


def _model_calls(step: WildStepLog) -> list[str]:
    out = step.inference_output
    if out.tool_calls:
        return [_preview(f"{c.function.name}({c.function.arguments})", 2 * ARGS_PREVIEW) for c in out.tool_calls]
    if out.unparsed_tool_calls is not None:
        return [_preview(json.dumps(out.unparsed_tool_calls, ensure_ascii=False, default=str), 2 * ARGS_PREVIEW)]
    return []


def _replay(step: WildStepLog, walk: GraphWalk) -> StepMatch | None:
    """The logged step matched again on a walk (None where the log says the step matched nothing)."""
    if step.name_label != "correct":
        return None
    if step.inference_output.tool_calls:
        return walk.match_calls([c.function.name for c in step.inference_output.tool_calls])
    return walk.match_text()


def task_path(graph: CallGraph, log: WildTaskLog | None, score: WildTaskScore | None) -> list[dict[str, Any]]:
    """One entry per logged step: the model's calls or text, the gold nodes matched, the verdict and why.

    A step before the failing one is ``on the graph``; the failing step ``left the graph`` (no live candidate
    step had its action names: wrong or extra call, text where a call was due, empty or unparsable reply) or
    ``wrong arguments`` (names matched, the offline argument check failed); steps after it ``not scored``.
    """
    if log is None:
        return []
    failing = score.failing_step if score is not None else None
    walk = graph.start()
    out: list[dict[str, Any]] = []
    for index, step in enumerate(log.steps):
        expected = _expected(walk) if index == failing and step.name_label != "correct" else None
        match = _replay(step, walk)
        optimal = None if match is None else match.step + 1 + walk.steps_left() == graph.min_steps
        verdict, reason = _verdict(index, step, match, score)
        entry: dict[str, Any] = {
            "step": index,
            "calls": _model_calls(step),
            "text": None if step.inference_output.content is None else _preview(step.inference_output.content),
            "nodes": None if match is None else list(match.nodes),
            "optimal": optimal,
            "verdict": verdict,
            "reason": reason,
        }
        if expected is not None:
            entry["expected"] = expected
        out.append(entry)
    return out


def _expected(walk: GraphWalk) -> list[int]:
    """Gold nodes of the candidate steps the walk offers now, in order of first appearance."""
    seen: dict[int, None] = {}
    for candidate in walk.candidate_steps(limit=MAX_EXPECTED_CANDIDATES):
        for node in candidate:
            seen.setdefault(node, None)
    return list(seen)


def _verdict(
    index: int, step: WildStepLog, match: StepMatch | None, score: WildTaskScore | None
) -> tuple[StepVerdict, str | None]:
    failing = score.failing_step if score is not None else None
    if failing is None or index < failing:
        if match is None and step.name_label != "correct":
            return "left the graph", step.inference_output.error_reason  # a log the scorer did not fail on
        return "on the graph", None
    if index > failing:
        return "not scored", "after the step where the task failed"
    if step.name_label != "correct":
        crash = score.official_crash if score is not None else None
        return "left the graph", step.inference_output.error_reason or crash or "no action-name label"
    checks = score.step_checks[index] if score is not None and index < len(score.step_checks) else None
    wrong = [c for c in checks or [] if c != CORRECT]
    if wrong:
        return "wrong arguments", wrong[0]
    crash = score.official_crash if score is not None else None
    return "left the graph", crash or "the task log's label is error"


def node_steps(path: Sequence[dict[str, Any]]) -> dict[int, int]:
    """Gold node id -> the step that matched it (first match), from a ``task_path``."""
    taken: dict[int, int] = {}
    for entry in path:
        for node in entry.get("nodes") or []:
            taken.setdefault(int(node), int(entry["step"]))
    return taken
