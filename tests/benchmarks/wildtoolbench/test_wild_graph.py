"""WildToolBench call-graph engine: hand-derived cases and a property test against a re-stated official enumerator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toolgauge.benchmarks.wildtoolbench.graph import (
    PSEUDO_ANSWER,
    PSEUDO_CLARIFY,
    CallGraph,
    GraphError,
    StepMatch,
)

ASK = PSEUDO_CLARIFY
ANS = PSEUDO_ANSWER


# --- the reference: the official algorithm re-stated plainly (all paths first, then prune) ---


def enumerate_paths(names: Sequence[str], deps: Sequence[Sequence[int]]) -> list[list[list[int]]]:
    """Every path, in DFS order, by the rules of the official ToolCallGraph.dfs (re-stated, not copied)."""
    count = len(names)
    successors: list[list[int]] = [[] for _ in range(count)]
    in_degree = [0] * count
    for node, row in enumerate(deps):
        for dep in row:
            successors[dep].append(node)
            in_degree[node] += 1
    paths: list[list[list[int]]] = []

    def walk(degree: list[int], done: list[bool], path: list[list[int]]) -> None:
        if sum(len(step) for step in path) == count:
            paths.append(path)
            return
        ready = [i for i in range(count) if degree[i] == 0 and not done[i]]
        runs: list[list[int]] = []
        for node in ready:
            if runs and names[runs[-1][-1]] == names[node]:
                runs[-1].append(node)
            else:
                runs.append([node])
        partial: set[tuple[int, ...]] = set()
        whole: list[tuple[int, ...]] = []
        for run in runs:
            if len(run) > 1:
                for size in range(1, len(run)):
                    partial.update(combinations(run, size))
                whole.append(tuple(run))
        keys: set[str] = set()
        kept: list[tuple[int, ...]] = []
        for size in range(1, len(ready) + 1):
            for comb in combinations(ready, size):
                key = "|".join(names[i] for i in comb)
                if key not in keys:
                    keys.add(key)
                    kept.append(comb)
        for comb in kept:
            if len(comb) > 1:
                prefixes = [comb[: k + 1] for k in range(len(comb))]
                drop = comb in partial or any(p in partial for p in prefixes)
                if any(p in whole for p in prefixes):
                    drop = False
                if drop:
                    continue
            taken, steps = comb, [list(comb)]
            if len(comb) == 1:
                for group in whole:
                    if group[0] == comb[0]:
                        taken, steps = group, [[n] for n in group]
                        break
            degree2 = list(degree)
            done2 = list(done)
            for node in taken:
                done2[node] = True
                for nxt in successors[node]:
                    degree2[nxt] -= 1
            walk(degree2, done2, path + steps)

    walk(in_degree, [False] * count, [])
    return paths


@dataclass
class ReferenceWalk:
    """The online loop of base_handler over the enumerated paths (pruning by path[step] == idx_list)."""

    names: Sequence[str]
    paths: list[list[list[int]]]
    step: int = 0
    finished: bool = False
    answer_step: int | None = None
    alive: list[list[list[int]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.alive = list(self.paths)

    @property
    def min_length(self) -> int:
        return min(len(p) for p in self.paths)

    def name_sorted(self, step: Sequence[int]) -> list[int]:
        return sorted(step, key=lambda i: self.names[i])

    def candidates(self) -> list[list[int]]:
        return [p[self.step] for p in self.alive if len(p) > self.step]

    def match_calls(self, called: Sequence[str]) -> StepMatch | None:
        if self.finished:
            return None
        for cand in self.candidates():
            if sorted(self.names[i] for i in cand) == sorted(called):
                # The official code reads p[step] of every alive path and would crash on a shorter one;
                # the engine drops those, and so does this reference.
                self.alive = [p for p in self.alive if len(p) > self.step and p[self.step] == cand]
                match = StepMatch("calls", self.name_sorted(cand), self.step)
                self.step += 1
                return match
        return None

    def match_text(self) -> StepMatch | None:
        if self.finished or self.step >= len(self.names):  # official: KeyError at step == node count
            return None
        for cand in self.candidates():
            cand_names = [self.names[i] for i in cand]
            if ASK in cand_names:
                match = StepMatch("clarify", self.name_sorted(cand), self.step)
                self.step += 1  # no pruning, as in the official loop
                return match
            if ANS in cand_names:
                self.finished = True
                self.answer_step = self.step
                return StepMatch("answer", self.name_sorted(cand), self.step)
        return None

    def distinct_candidates(self) -> list[list[int]]:
        if self.finished:
            return []
        out: list[list[int]] = []
        for cand in self.candidates():
            if self.name_sorted(cand) not in out:
                out.append(self.name_sorted(cand))
        return out

    def is_optimal(self) -> bool:
        return self.answer_step is not None and self.answer_step == self.min_length - 1


# --- hand-derived cases ---


def test_parallel_answered_in_one_step_is_optimal():
    # a and b are both ready at step 0; {a, b} together is a candidate (r=2), then the answer.
    graph = CallGraph.build(["a", "b", ANS], [[], [], [0, 1]])
    assert graph.min_steps == 2
    walk = graph.start()
    assert walk.candidate_steps() == [[0], [1], [0, 1]]  # r=1 first, then r=2
    assert walk.match_calls(["b", "a"]) == StepMatch("calls", [0, 1], 0)
    assert walk.match_text() == StepMatch("answer", [2], 1)
    assert walk.finished and walk.is_optimal()


def test_parallel_split_over_two_steps_is_correct_but_not_optimal():
    graph = CallGraph.build(["a", "b", ANS], [[], [], [0, 1]])
    walk = graph.start()
    assert walk.match_calls(["b"]) == StepMatch("calls", [1], 0)
    assert walk.candidate_steps() == [[0]]
    assert walk.match_calls(["a"]) == StepMatch("calls", [0], 1)
    assert walk.match_text() == StepMatch("answer", [2], 2)
    assert walk.finished and not walk.is_optimal()  # answer at step 2, min_steps - 1 == 1


def test_answer_too_early_and_wrong_tool_leave_the_state_unchanged():
    graph = CallGraph.build(["a", "b", ANS], [[], [], [0, 1]])
    walk = graph.start()
    assert walk.match_text() is None  # no candidate at step 0 holds a pseudo-tool
    assert walk.match_calls(["c"]) is None
    assert walk.match_calls(["a", "a"]) is None  # multiset, not set
    assert walk.match_calls([]) is None
    assert walk.step == 0 and not walk.finished and not walk.is_optimal()
    assert walk.match_calls(["a", "b"]) is not None


def test_consecutive_same_name_group_all_at_once_or_forced_one_by_one():
    # Ready [0:a, 1:a] is one group: (0,) expands to forced steps [0], [1]; (1,) is a dup of "a"; (0, 1) kept.
    graph = CallGraph.build(["a", "a", ANS], [[], [], [0, 1]])
    assert graph.start().candidate_steps() == [[0], [0, 1]]
    walk = graph.start()
    assert walk.match_calls(["a"]) == StepMatch("calls", [0], 0)
    assert walk.candidate_steps() == [[1]]  # forced
    assert walk.match_calls(["a"]) == StepMatch("calls", [1], 1)
    assert walk.match_text() == StepMatch("answer", [2], 2)
    assert not walk.is_optimal()
    walk = graph.start()
    assert walk.match_calls(["a", "a"]) == StepMatch("calls", [0, 1], 0)
    assert walk.match_text() is not None and walk.is_optimal()


def test_partial_group_cannot_lead_a_combination():
    # Ready [0:a, 1:a, 2:b]: (0, 2) "a|b" starts with a partial group -> filtered; (1, 2) is a dup of it.
    graph = CallGraph.build(["a", "a", "b", ANS], [[], [], [], [0, 1, 2]])
    walk = graph.start()
    assert walk.candidate_steps() == [[0], [2], [0, 1], [0, 1, 2]]
    assert walk.match_calls(["a", "b"]) is None
    assert walk.match_calls(["a", "b", "a"]) == StepMatch("calls", [0, 1, 2], 0)


def test_partial_group_after_another_name_passes_the_filter():
    # Ready [0:b, 1:a, 2:a]: (0, 1) "b|a" starts with b, which is in no group, so it is kept (official quirk).
    graph = CallGraph.build(["b", "a", "a", ANS], [[], [], [], [0, 1, 2]])
    walk = graph.start()
    assert walk.match_calls(["a", "b"]) == StepMatch("calls", [1, 0], 0)  # name-sorted: a(1), b(0)
    assert walk.candidate_steps() == [[2]]


def test_non_consecutive_same_names_are_not_a_group():
    # Ready [0:a, 1:b, 2:a]: singletons (0,) a, (1,) b; (2,) is a dup of "a". Pairs "a|b", "a|a", "b|a" all kept.
    graph = CallGraph.build(["a", "b", "a", ANS], [[], [], [], [0, 1, 2]])
    walk = graph.start()
    assert walk.candidate_steps() == [[0], [1], [0, 1], [0, 2], [2, 1], [0, 2, 1]]
    assert walk.match_calls(["a"]) == StepMatch("calls", [0], 0)  # node 2 alone is never a step-0 candidate
    assert walk.candidate_steps() == [[1], [2], [2, 1]]
    assert walk.match_calls(["a"]) == StepMatch("calls", [2], 1)


def test_clarify_then_continue():
    graph = CallGraph.build([ASK, "a", ANS], [[], [0], [1]])
    walk = graph.start()
    assert walk.match_calls(["a"]) is None
    assert walk.match_text() == StepMatch("clarify", [0], 0)
    assert walk.match_calls(["a"]) == StepMatch("calls", [1], 1)
    assert walk.match_text() == StepMatch("answer", [2], 2)
    assert graph.min_steps == 3 and walk.is_optimal()


def test_clarify_does_not_prune_so_other_branches_stay_alive():
    # Paths (DFS order): [[0],[1],[2]], [[1],[0],[2]], [[0,1],[2]]. Step 0 text -> candidate [1] (clarify),
    # nothing pruned; step 1 candidates are [1] (path 1), [0] (path 2), [2] (path 3).
    graph = CallGraph.build(["a", ASK, ANS], [[], [], [0, 1]])
    walk = graph.start()
    assert walk.match_text() == StepMatch("clarify", [1], 0)
    assert walk.candidate_steps() == [[1], [0], [2]]
    second = graph.start()
    second.match_text()
    assert second.match_text() == StepMatch("clarify", [1], 1)  # the clarify again, from path 1
    assert second.match_text() == StepMatch("answer", [2], 2)
    assert not second.is_optimal()
    assert walk.match_text() is not None  # same as `second`, checked above
    third = graph.start()
    third.match_text()
    assert third.match_calls(["a"]) == StepMatch("calls", [0], 1)  # path 2 only
    assert third.candidate_steps() == [[2]]


def test_pruning_applies_each_branch_own_group_filter():
    # Step 0 ready [0:ask, 1:a, 3:b, 4:c] (node 2:a waits for 4). Text -> clarify [0], nothing pruned: all 15
    # step-0 candidates stay alive. Calls {a, b} -> first match [1, 3] in branch (0,). Branches (4,) and (0, 4)
    # have ready [.., 1:a, 2:a, 3:b], where [1, 3] starts with a partial group and is filtered, so they die;
    # every other branch already did 1 or 3. Only branch (0,) is left: next candidate is [4] alone.
    graph = CallGraph.build([ASK, "a", "a", "b", "c", ANS], [[], [], [4], [], [], [0, 1, 2, 3, 4]])
    walk = graph.start()
    assert walk.match_text() == StepMatch("clarify", [0], 0)
    assert walk.match_calls(["b", "a"]) == StepMatch("calls", [1, 3], 1)
    assert walk.candidate_steps() == [[4]]
    assert walk.match_calls(["c"]) == StepMatch("calls", [4], 2)
    assert walk.match_calls(["a"]) == StepMatch("calls", [2], 3)
    assert walk.match_text() == StepMatch("answer", [5], 4)
    assert graph.min_steps == 3 and not walk.is_optimal()  # chain 4 -> 2 -> 5


def test_first_optimal_path_is_the_first_shortest_in_dfs_order():
    # a -> c, b; answer after all. Paths from (0,): [[0],[1],[2],[3]], [[0],[2],[1],[3]], [[0],[1,2],[3]] ...
    graph = CallGraph.build(["a", "b", "c", ANS], [[], [], [0], [0, 1, 2]])
    assert graph.min_steps == 3
    assert graph.first_optimal_path() == [[0], [1, 2], [3]]


def test_first_optimal_path_keeps_node_order_not_name_order():
    # base_handler replays the path's own (ascending id) order; matches report name order.
    graph = CallGraph.build(["b", "a", ANS], [[], [], [0, 1]])
    assert graph.first_optimal_path() == [[0, 1], [2]]
    assert graph.start().match_calls(["a", "b"]) == StepMatch("calls", [1, 0], 0)


def test_text_after_the_last_step_is_no_match():
    graph = CallGraph.build(["a"], [[]])
    walk = graph.start()
    assert walk.match_calls(["a"]) is not None
    assert walk.match_text() is None and walk.match_calls(["a"]) is None
    assert walk.candidate_steps() == []


def test_finished_walk_matches_nothing_more():
    graph = CallGraph.build([ANS], [[]])
    walk = graph.start()
    assert walk.match_text() == StepMatch("answer", [0], 0)
    assert walk.match_text() is None and walk.candidate_steps() == []
    assert walk.is_optimal()


def test_candidate_steps_limit():
    graph = CallGraph.build(["a", "b", "c"], [[], [], []])
    assert len(graph.start().candidate_steps()) == 7
    assert graph.start().candidate_steps(limit=2) == [[0], [1]]


@pytest.mark.parametrize(
    ("names", "deps", "node", "field", "words"),
    [
        (["a", "b"], [[1], [0]], 0, "dependency_list", "cycle 0 -> 1 -> 0"),
        (["a", "b", "c"], [[], [2], [1]], 1, "dependency_list", "cycle"),
        (["a"], [[3]], 0, "dependency_list", "not a node"),
        (["a", "b"], [[], [-1]], 1, "dependency_list", "not a node"),
        (["a"], [[0]], 0, "dependency_list", "itself"),
        (["a", "b"], [[], [0, 0]], 1, "dependency_list", "twice"),
        (["a", "b"], [[], ["0"]], 1, "dependency_list", "not a node index"),
        (["a", "b"], [[], [True]], 1, "dependency_list", "not a node index"),
        (["a", "b"], [[], 0], 1, "dependency_list", "list of node indices"),
        ([], [], None, "answer_list", "no gold nodes"),
        (["a", "b"], [[]], None, "dependency_list", "2 names but 1"),
        (["a", 3], [[], []], 1, "name", "must be a string"),
        (["a|b"], [[]], 0, "name", "'|'"),
    ],
)
def test_graph_errors(names, deps, node, field, words):
    with pytest.raises(GraphError) as caught:
        CallGraph.build(names, deps)
    assert caught.value.node == node
    assert caught.value.field == field
    assert words in str(caught.value)


def test_reference_agrees_on_a_hand_case():
    # Guards the reference itself: the partial-group example, enumerated by hand.
    paths = enumerate_paths(["a", "a", "b"], [[], [], []])
    # Step-0 candidates: (0,) expanded to [0],[1] then [2]; (2,) then ready a,a again: (0,) expanded or (0,1);
    # (0,1) then [2]; (0,1,2).
    assert paths == [[[0], [1], [2]], [[2], [0], [1]], [[2], [0, 1]], [[0, 1], [2]], [[0, 1, 2]]]


# --- property test: engine == reference at every step ---

ALPHABET = ["a", "b", "c"]


@st.composite
def call_graphs(draw: st.DrawFn) -> tuple[list[str], list[list[int]]]:
    size = draw(st.integers(1, 7))
    shape = draw(st.sampled_from(["official", "random"]))
    # Names and dependencies are drawn by topological position (deps point to earlier positions), then the
    # positions are relabelled with a random permutation so node ids are not in topological order.
    if shape == "official":
        # Data-like: optional clarify nodes first, tools, and a final answer that depends on everything.
        clarify = draw(st.integers(0, min(2, size - 1)))
        by_pos = [ASK] * clarify + [draw(st.sampled_from(ALPHABET)) for _ in range(size - 1 - clarify)] + [ANS]
    else:
        by_pos = [draw(st.sampled_from([*ALPHABET, ASK, ANS])) for _ in range(size)]
    edge = draw(st.sampled_from([0.2, 0.45, 0.7]))
    deps_by_pos: list[list[int]] = []
    for pos in range(size):
        if shape == "official" and pos == size - 1:
            deps_by_pos.append(list(range(pos)))
        else:
            deps_by_pos.append([e for e in range(pos) if draw(st.floats(0, 1)) < edge])
    label = draw(st.permutations(range(size)))
    names = [""] * size
    deps: list[list[int]] = [[] for _ in range(size)]
    for pos in range(size):
        names[label[pos]] = by_pos[pos]
        deps[label[pos]] = [label[e] for e in deps_by_pos[pos]]
    return names, deps


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_spec=call_graphs(), data=st.data())
def test_engine_matches_the_reference_enumerator(graph_spec, data):
    check_agreement(*graph_spec, data)


def check_agreement(names: list[str], deps: list[list[int]], data: st.DataObject) -> None:
    """Engine and reference agree on a graph and a drawn sequence of model steps, at every step."""
    graph = CallGraph.build(names, deps)
    paths = enumerate_paths(names, deps)
    reference = ReferenceWalk(names, paths)
    assert graph.min_steps == reference.min_length
    assert graph.first_optimal_path() == next(p for p in paths if len(p) == reference.min_length)
    event(f"graph with a clarify node and several paths: {len(paths) > 1 and ASK in names}")
    walk = graph.start()
    for _ in range(data.draw(st.integers(1, 9), label="steps")):
        assert walk.candidate_steps() == reference.distinct_candidates()
        action = data.draw(st.sampled_from(["candidate", "random", "text"]), label="action")
        if action == "text":
            got, want = walk.match_text(), reference.match_text()
        else:
            cands = reference.candidates()
            if action == "candidate" and cands:
                chosen = data.draw(st.sampled_from(cands), label="candidate")
                called = data.draw(st.permutations([names[i] for i in chosen]), label="order")
            else:
                called = data.draw(st.lists(st.sampled_from([*ALPHABET, ASK, ANS]), max_size=3), label="calls")
            got, want = walk.match_calls(called), reference.match_calls(called)
        assert got == want
        event(f"step result: {got.kind if got else 'no match'}")
        assert (walk.step, walk.finished) == (reference.step, reference.finished)
        assert walk.is_optimal() == reference.is_optimal()
