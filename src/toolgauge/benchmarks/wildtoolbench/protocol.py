"""WildToolBench: one sample per session, its tasks run in order inside one episode, as the official loop does.

For each task the model sees the full history (``wtb/model_handler/base_handler.py``): the system message
``Current Date: <env_info>``, then every earlier task replayed from gold along the first optimal path (user
message; assistant ``tool_calls`` with empty content and tool messages holding the JSON-encoded gold
observations; the clarifying question and the user's reply; the gold final reply), then the task's user
message. Then, step by step (:class:`TaskRun`):

- tool calls: their names, as a multiset, must equal one candidate step of the DAG paths still alive; on a
  match the gold observations come back as tool messages and the paths are pruned;
- text only: accepted where a live candidate step holds ``ask_user_for_required_parameters`` (the gold
  ``user_input`` becomes the next user message) or ``prepare_to_answer`` (the task is done: action names right);
- anything else, or an empty reply, ends the task as an error. Arguments are checked offline by the scorer.
  An empty reply is no tool calls and ``content`` None or ``""`` (variant ``reference``, as the official loop
  since its commit bdc85da) or blank (variant ``strict``: whitespace only counts as empty too).

Every step is logged in the official result shape (:mod:`toolgauge.benchmarks.wildtoolbench.log`), so scoring a live run
and scoring an official result file are the same code. The two pseudo-tools are never offered to the model.

Deliberate differences from the official loop, none of which changes a verdict: tool-call ids are
deterministic (``call_<task>_<step>_<k>``) instead of random, so the response cache works; an observation
goes to the predicted call of the same name (the official loop pairs them by position, which can give an
observation to a call of another name when the model orders parallel calls differently); and a task stops after
``len(nodes) + STEP_SLACK`` steps, a guard only (the matcher already ends every task within
``len(nodes)`` steps, because each step must match a candidate step of a path of at most that length).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from toolgauge.benchmark import BenchmarkBase
from toolgauge.benchmarks.wildtoolbench.graph import (
    PSEUDO_ANSWER,
    PSEUDO_CLARIFY,
    PSEUDO_TOOLS,
    CallGraph,
    GraphWalk,
    StepMatch,
)
from toolgauge.benchmarks.wildtoolbench.io import StepTable, read_steps
from toolgauge.benchmarks.wildtoolbench.log import (
    WildAnswerAction,
    WildAnswerFunctionList,
    WildFunctionCall,
    WildInferenceInput,
    WildInferenceLog,
    WildInferenceOutput,
    WildSessionResult,
    WildStepLog,
    WildTaskLog,
    WildToolCall,
)
from toolgauge.benchmarks.wildtoolbench.metrics import (
    WildTaskFacts,
    WildTaskScore,
    WildVariant,
    score_task_log,
    session_unit_score,
    summarise_wild,
    task_unit_scores,
)
from toolgauge.benchmarks.wildtoolbench.options import WildOptions
from toolgauge.benchmarks.wildtoolbench.path import gold_graph, task_graph, task_path
from toolgauge.benchmarks.wildtoolbench.records import WildNode, WildSession
from toolgauge.engine import EpisodeContext, SampleOutcome, in_step
from toolgauge.errors import DataError
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ToolCall
from toolgauge.results import EvalResults, SampleScore, ScoredRun

__all__ = [
    "STEP_SLACK",
    "TaskRun",
    "WildBenchmark",
    "WildResult",
    "WildScoredRun",
    "WildVariant",
    "history_messages",
    "task_facts",
    "task_graphs",
    "task_sample_score",
]

#: Extra steps a task may take beyond its number of gold nodes before it is stopped (a guard).
STEP_SLACK = 2

ERROR_EMPTY = "tool_calls and content are None"
ERROR_NO_MATCH = "action name not in candidate_answer_function_list"
ERROR_STEP_CAP = "step limit reached"
#: Candidate steps written to the log of a failing step (their number grows exponentially with parallel calls).
MAX_LOGGED_CANDIDATES = 64


class WildResult(BaseModel):
    """What one session's episode produced: its log in the official result shape."""

    session: WildSessionResult


# --- messages ------------------------------------------------------------------------------------------


def _arguments_text(call: ToolCall) -> str:
    """The arguments as the model wrote them; JSON-encoded only for calls that came without text (gold, scripts).

    The official scorer sorts and pairs same-name calls of one step by this text, so re-encoding parsed
    arguments (other escaping or spacing) could flip the pairing.
    """
    if call.raw is not None:
        return call.raw
    return json.dumps(call.arguments, ensure_ascii=False)


def official_message(message: Message) -> dict[str, Any]:
    """A message in the OpenAI shape the official log stores (arguments as JSON text)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def history_messages(session: WildSession, task_index: int, graphs: Sequence[CallGraph]) -> list[Message]:
    """The messages the model sees at the start of task ``task_index`` (system, gold history, the task).

    Earlier tasks follow their first optimal path. As in the official ``_convert_to_tool_calls``, the
    gold history's assistant tool-call turns have empty content and its tool messages hold
    ``json.dumps(observation)`` (so a string observation arrives quoted).
    """
    messages = [Message(role="system", content=f"Current Date: {session.env_info}")]
    for t in range(task_index):
        task = session.tasks[t]
        messages.append(Message(role="user", content=task.user))
        for s, step in enumerate(graphs[t].first_optimal_path()):
            nodes = [task.nodes[k] for k in step]
            real = [n for n in nodes if n.action.name not in PSEUDO_TOOLS]
            for node in nodes:
                if node.action.name == PSEUDO_CLARIFY:
                    messages.append(Message(role="assistant", content=node.observation_text()))
                    messages.append(Message(role="user", content=node.user_input or ""))
                elif node.action.name == PSEUDO_ANSWER:
                    messages.append(Message(role="assistant", content=node.observation_text()))
            if real:
                calls = [
                    ToolCall(name=n.action.name, arguments=dict(n.action.arguments), id=f"call_h{t}_{s}_{k}")
                    for k, n in enumerate(real)
                ]
                messages.append(Message(role="assistant", content="", tool_calls=calls))
                messages.extend(
                    Message(role="tool", content=json.dumps(n.observation, ensure_ascii=False), tool_call_id=c.id)
                    for n, c in zip(real, calls, strict=True)
                )
    messages.append(Message(role="user", content=session.tasks[task_index].user))
    return messages


def _answer_list(nodes: Sequence[WildNode], *, with_gold_text: bool) -> WildAnswerFunctionList:
    """A logged candidate step: its calls sorted by name (as the official graph sorts them)."""
    ordered = sorted(nodes, key=lambda n: n.action.name)
    entry = WildAnswerFunctionList(
        action=[
            WildAnswerAction(name=n.action.name, arguments=json.dumps(n.action.arguments, ensure_ascii=False))
            for n in ordered
        ]
    )
    if with_gold_text:
        for n in ordered:
            if n.action.name == PSEUDO_CLARIFY:
                entry.observation = n.observation
                entry.user_input = n.user_input
            elif n.action.name == PSEUDO_ANSWER:
                entry.observation = n.observation
    return entry


# --- one task's online loop ----------------------------------------------------------------------------


class TaskRun:
    """One task's online loop, fed one model reply at a time (pure: no model calls, no I/O).

    The episode drives it with live replies; ``WildBenchmark.replay_table`` drives it with recorded ones
    to learn how many steps of each task a replay consumes.
    """

    def __init__(
        self,
        session: WildSession,
        task_index: int,
        graph: CallGraph,
        messages: list[Message],
        *,
        variant: WildVariant = "reference",
    ):
        self.session = session
        self.variant: WildVariant = variant
        self.task_index = task_index
        self.nodes = session.tasks[task_index].nodes
        self.graph = graph
        self.walk: GraphWalk = graph.start()
        self.messages = list(messages)
        self.tools = session.tools
        self.steps: list[WildStepLog] = []
        self.label: Literal["correct", "error"] = "error"
        self.done = False
        self.cap = len(self.nodes) + STEP_SLACK
        self._optimal = graph.first_optimal_path()
        self._taken: list[list[int]] = []
        self._latencies: list[float | None] = []
        self._usage: list[tuple[int, int]] = []

    @property
    def step(self) -> int:
        """The 0-based index of the step the model is asked for next."""
        return len(self.steps)

    def gold_turn(self) -> AssistantTurn:
        """The reference reply for the next step: the first optimal path's step, while the run is on it."""
        path = self._optimal
        on_path = len(path) > self.step and all(sorted(taken) == sorted(path[s]) for s, taken in enumerate(self._taken))
        if on_path:
            step_nodes = list(path[self.step])
        else:
            candidates = self.walk.candidate_steps(limit=1)
            if not candidates:
                return AssistantTurn(content=None, finish_reason="stop")
            step_nodes = candidates[0]
        nodes = [self.nodes[k] for k in step_nodes]
        texts = [n for n in nodes if n.action.name in PSEUDO_TOOLS]
        if texts:
            return AssistantTurn(content=texts[0].observation_text(), finish_reason="stop")
        calls = [
            ToolCall(name=n.action.name, arguments=dict(n.action.arguments), id=self._call_id(k))
            for k, n in enumerate(nodes)
        ]
        return AssistantTurn(content=None, tool_calls=calls, finish_reason="tool_calls")

    def _call_id(self, k: int) -> str:
        return f"call_{self.task_index}_{self.step}_{k}"

    def feed(self, turn: AssistantTurn, *, latency: float | None = None) -> None:
        """Judge one model reply, log it, and extend the conversation when the task goes on."""
        if self.done:
            raise RuntimeError("the task is over")
        calls = [c if c.id else c.model_copy(update={"id": self._call_id(k)}) for k, c in enumerate(turn.tool_calls)]
        output = WildInferenceOutput(
            content=turn.content,
            tool_calls=[
                WildToolCall(id=c.id, function=WildFunctionCall(name=c.name, arguments=_arguments_text(c)))
                for c in calls
            ]
            or None,
        )
        log = WildStepLog(
            inference_input=WildInferenceInput(
                messages=[official_message(m) for m in self.messages], tools=list(self.tools)
            ),
            inference_output=output,
        )
        self.steps.append(log)
        self._latencies.append(latency)
        self._usage.append((turn.usage.input_tokens, turn.usage.output_tokens))
        if calls:
            self._feed_calls(turn, calls, log)
        elif not turn.content or (self.variant == "strict" and not turn.content.strip()):
            self._fail(log, ERROR_EMPTY, with_candidates=False)
        else:
            self._feed_text(turn.content or "", log)
        if not self.done and self.step >= self.cap:
            self._fail(log, ERROR_STEP_CAP, with_candidates=False)

    def _feed_calls(self, turn: AssistantTurn, calls: list[ToolCall], log: WildStepLog) -> None:
        match = self.walk.match_calls([c.name for c in calls])
        if match is None:
            self._fail(log, ERROR_NO_MATCH, with_candidates=True)
            return
        nodes = [self.nodes[k] for k in match.nodes]
        self._accept(log, match, nodes)
        self.messages.append(Message(role="assistant", content=turn.content, tool_calls=calls))
        # Each observation goes to a predicted call of the same name, in order within a name.
        pending: dict[str, list[WildNode]] = {}
        for node in sorted(nodes, key=lambda n: n.action.name):
            pending.setdefault(node.action.name, []).append(node)
        for call in calls:
            node = pending[call.name].pop(0)
            self.messages.append(Message(role="tool", content=node.observation_text(), tool_call_id=call.id))

    def _feed_text(self, content: str, log: WildStepLog) -> None:
        match = self.walk.match_text()
        if match is None:
            self._fail(log, ERROR_NO_MATCH, with_candidates=True)
            return
        nodes = [self.nodes[k] for k in match.nodes]
        self._accept(log, match, nodes)
        self.messages.append(Message(role="assistant", content=content))
        if match.kind == "clarify":
            clarify = next(n for n in nodes if n.action.name == PSEUDO_CLARIFY)
            self.messages.append(Message(role="user", content=clarify.user_input or ""))
        else:
            self.label = "correct"
            self.done = True

    def _accept(self, log: WildStepLog, match: StepMatch, nodes: list[WildNode]) -> None:
        self._taken.append(list(match.nodes))
        log.inference_output.current_action_name_label = "correct"
        log.inference_answer = {"candidate_0_answer_function_list": _answer_list(nodes, with_gold_text=True)}

    def _fail(self, log: WildStepLog, reason: str, *, with_candidates: bool) -> None:
        log.inference_output.current_action_name_label = "error"
        log.inference_output.error_reason = reason
        if with_candidates:
            candidates = self.walk.candidate_steps(limit=MAX_LOGGED_CANDIDATES)
            log.inference_answer = {
                f"candidate_{i}_answer_function_list": _answer_list([self.nodes[k] for k in c], with_gold_text=True)
                for i, c in enumerate(candidates)
            } or None
        self.label = "error"
        self.done = True

    def task_log(self) -> WildTaskLog:
        """The task's entry of the official ``result`` list."""
        correct = self.label == "correct"
        return WildTaskLog(
            action_name_label=self.label,
            is_optimal=correct and self.walk.is_optimal(),
            inference_log=WildInferenceLog(
                task_idx=self.task_index,
                begin_of_current_task=official_message(Message(role="user", content=self.user_message)),
                steps=self.steps,
            ),
            latency=list(self._latencies),
            input_token_count=[u[0] for u in self._usage],
            output_token_count=[u[1] for u in self._usage],
        )

    @property
    def user_message(self) -> str:
        """The task's user message."""
        return self.session.tasks[self.task_index].user


# --- the benchmark -------------------------------------------------------------------------------------


def task_graphs(session: WildSession) -> list[CallGraph]:
    """The call DAG of every task of a session (the loader has already checked they build)."""
    return [
        CallGraph.build([n.action.name for n in task.nodes], [n.dependency_list for n in task.nodes])
        for task in session.tasks
    ]


def task_facts(session: WildSession) -> list[WildTaskFacts]:
    """What the scorer needs to know about each task of a session besides its log."""
    return [
        WildTaskFacts(
            session_id=session.id,
            task_index=t,
            task_type=session.task_types[t],
            turn_subtype=None if t == 0 else session.turn_subtypes[t - 1],
            n_gold_nodes=len(task.nodes),
        )
        for t, task in enumerate(session.tasks)
    ]


class WildScoredRun(ScoredRun):
    """A scored WildToolBench run: the results, one score per task, and the logs of the sessions that ran.

    ``session_logs`` reads the logs from the run's outcomes each time it is called, one session at a
    time (as the lazy ``--samples`` rows of other benchmarks do): call it while the run's store is open,
    as the writers of ``--predictions-out`` and ``--steps-out`` are.
    """

    def __init__(
        self,
        results: EvalResults,
        samples: Sequence[SampleScore],
        session_logs: Callable[[], Iterator[WildSessionResult]],
    ):
        super().__init__(results, samples)
        self._session_logs = session_logs

    def session_logs(self) -> Iterator[WildSessionResult]:
        """Yield the log of every session that produced one, in sample order (failed sessions have none)."""
        return self._session_logs()


class WildBenchmark(BenchmarkBase[WildSession, WildOptions]):
    """WildToolBench sessions run through the official online loop, scored by ``.metrics``; keyed by session id.

    With ``recorded`` (an official result file, by session id) the episode returns the recorded log
    instead of asking the model: the official logs already are the run. A session recorded as a text
    (the official ``"Error during inference: ..."``) fails, and is scored as empty replies. ``options``: what
    the run is made of (language, variant, tool choice and sampling), stored as its config so that ``rescore``
    rebuilds the same run (``build.build`` stores the data it read and the session ids of a result file's run).
    """

    name = "wildtoolbench"
    result_type = WildResult

    def __init__(
        self,
        sessions: Sequence[WildSession],
        options: WildOptions,
        *,
        data_label: str,
        recorded: Mapping[str, WildSessionResult | str] | None = None,
    ):
        self.language = options.language
        self.variant: WildVariant = options.variant
        self.settings = options.call_settings(options.tool_choice)
        self.recorded = recorded
        super().__init__(sessions, keys=[s.id for s in sessions], data_label=data_label, options=options)

    def _options(self, gold: AssistantTurn) -> GenerateOptions:
        return self.settings.options_for(list(gold.tool_calls))

    async def episode(self, sample: WildSession, ctx: EpisodeContext) -> WildResult:
        """Run the session's tasks in order, each on its gold history, step by step."""
        if self.recorded is not None:
            found = self.recorded.get(sample.id)
            if found is None:
                raise LookupError(f"the predictions have no result line for session {sample.id!r}")
            if isinstance(found, str):
                raise RuntimeError(f"the recorded run failed on this session: {found}")
            return WildResult(session=found)
        graphs = task_graphs(sample)
        tools = sample.tool_specs()
        logs: list[WildTaskLog] = []
        for t in range(len(sample.tasks)):
            run = TaskRun(sample, t, graphs[t], history_messages(sample, t, graphs), variant=self.variant)
            while not run.done:
                gold = run.gold_turn()
                started = time.perf_counter()
                turn = await ctx.generate(run.messages, tools, self._options(gold), gold=gold)
                run.feed(turn, latency=round(time.perf_counter() - started, 4))
            logs.append(run.task_log())
        return WildResult(session=WildSessionResult(id=sample.id, result=logs))

    def replay_table(self, path: Path) -> Mapping[str, Sequence[AssistantTurn]]:
        """Read step JSONL and lay each session's steps out in the order the episode will ask for them.

        The engine numbers a sample's model calls 0, 1, 2... across its tasks, so task ``t``'s steps start
        where task ``t-1`` stopped. Where that is depends on the recorded replies, so each task is run
        through :class:`TaskRun` on them here (pure and instant): a missing step is an empty reply and
        ends the task, and steps recorded after the end of a task are never asked for. Pure: the table is
        returned, nothing is kept.

        Raises:
            DataError: the file is malformed, names a task a session does not have, or shares no session
                with the data.
        """
        table: StepTable = read_steps(path)
        by_id = {s.id: s for s in self.items}
        if not set(table) & set(by_id):
            raise DataError(
                str(path), f"none of its {len(table)} sessions is in the data (first: {next(iter(table))!r})"
            )
        for session_id, steps in table.items():
            session = by_id.get(session_id)
            bad = [t for t, _ in steps if session is not None and t >= len(session.tasks)]
            if session is not None and bad:
                raise DataError(
                    str(path), f"session {session_id!r} has {len(session.tasks)} tasks; no task {bad[0]}", field="task"
                )
        out: dict[str, list[AssistantTurn]] = {}
        for session in self.items:
            recorded = table.get(session.id, {})
            graphs = task_graphs(session)
            turns: list[AssistantTurn] = []
            for t in range(len(session.tasks)):
                run = TaskRun(session, t, graphs[t], [], variant=self.variant)
                while not run.done:
                    turn = recorded.get((t, run.step), AssistantTurn(content=None, finish_reason="stop"))
                    run.feed(turn)
                    turns.append(turn)
            out[session.id] = turns
        return out

    def score(
        self, samples: Sequence[tuple[str, WildSession]], outcomes: Sequence[SampleOutcome[WildResult]]
    ) -> WildScoredRun:
        """Score every task log with ``score_task_log`` and summarise (a failed session: every task a failure).

        One pass over the samples and their outcomes (both in input order, as the engine returns them;
        samples that did not run have no outcome), one session's log in memory at a time. Pure: the
        results, one :class:`SampleScore` per task and a reader of the session logs are returned.

        Raises:
            ValueError: an outcome is out of order or belongs to no sample.
        """
        facts: list[WildTaskFacts] = []
        scores: list[WildTaskScore] = []
        rows: list[SampleScore] = []
        for _, session, outcome in in_step(samples, outcomes):
            result = outcome.result.session if outcome is not None and outcome.result is not None else None
            logs = result.result if result is not None else []
            error = outcome.error if outcome is not None else "not run"
            session_rows: list[SampleScore] = []
            for fact in task_facts(session):
                facts.append(fact)
                log = logs[fact.task_index] if fact.task_index < len(logs) else None
                score = score_task_log(log, fact, self.variant) if log is not None else None
                if score is not None:
                    scores.append(score)
                row = task_sample_score(session, fact, log, score, error)
                # The units of the overall rates: each rate is the weighted mean of these over the tasks,
                # session accuracy is carried by the session's last task, and the session is the cluster.
                unit_scores, weights = task_unit_scores(fact, score, self.variant)
                row.scores.update(unit_scores)
                row.weights.update(weights)
                row.cluster = session.id
                session_rows.append(row)
            if session_rows:
                last = max(session_rows, key=lambda r: int(r.metadata["task"]))
                last.scores.update(session_unit_score([r.value == 1.0 for r in session_rows]))
            rows.extend(session_rows)
        results = EvalResults(
            benchmark=self.name,
            settings={"variant": self.variant, "language": self.language, "data": self.data_label},
            metrics=summarise_wild(scores, facts, self.variant),
        )
        return WildScoredRun(results, rows, lambda: _session_logs(outcomes))


def _session_logs(outcomes: Iterable[SampleOutcome[WildResult]]) -> Iterator[WildSessionResult]:
    for outcome in outcomes:
        if outcome.result is not None:
            yield outcome.result.session


def task_sample_score(
    session: WildSession,
    facts: WildTaskFacts,
    log: WildTaskLog | None,
    score: WildTaskScore | None,
    error: str | None,
) -> SampleScore:
    """One task's per-unit score: 1.0 when correct; the failure class and its reason when not.

    ``scores`` holds the verdicts (labels, ``is_optimal``, steps logged, AP numerator, failing step, failure
    class); ``metadata`` where the task is (session, task, type, turn subtype, gold nodes), why it failed
    (the online ``error_reason`` of the failing step, the first argument error, the official crash), and for
    the viewer the gold DAG and the path the model took through it (:mod:`.path`; read by no metric).
    ``error`` is the session's run error (``"not run"`` when it has no outcome).
    """
    task = session.tasks[facts.task_index]
    graph = task_graph(task)
    failing = score.failing_step if score is not None else None
    reason = None
    if log is not None and failing is not None and failing < len(log.steps):
        reason = log.steps[failing].inference_output.error_reason
    label = score.label if score is not None else "error"
    failure = score.failure_class if score is not None else "call_error"
    first_argument_error = score.first_argument_error if score is not None else None
    crash = score.official_crash if score is not None else None
    explanation = None
    if label == "error":
        detail = first_argument_error or reason or crash or (None if log is not None else "no log")
        explanation = f"{failure}: {detail}" if detail else failure
    return SampleScore(
        id=f"{session.id}#{facts.task_index}",
        sample=session.id,
        value=1.0 if label == "correct" else 0.0,
        scores={
            "label": label,
            "action_name_label": score.action_name_label if score is not None else "error",
            "action_arguments_label": score.action_arguments_label if score is not None else None,
            "is_optimal": score.is_optimal if score is not None else False,
            "steps": len(log.steps) if log is not None else 0,
            "complete_step": score.complete_step if score is not None else 0,
            "failing_step": failing,
            "failure_class": failure,
        },
        explanation=explanation,
        error=error,
        metadata={
            "session": session.id,
            "task": facts.task_index,
            "task_type": facts.task_type,
            "turn_subtype": session.subtype_of(facts.task_index),
            "gold_nodes": facts.n_gold_nodes,
            "error_reason": reason,
            "first_argument_error": first_argument_error,
            "official_crash": crash,
            "gold_graph": gold_graph(task, graph),
            "path": task_path(graph, log, score),
        },
    )
