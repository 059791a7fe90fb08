"""WildToolBench call-graph engine: the official enumerate-and-match verdicts without enumerating paths.

The official harness (``wtb/tool_call_graph.py`` + ``wtb/model_handler/base_handler.py``) lists every
path through a task's gold call DAG before the first model call, then matches each model step against
step ``k`` of the paths still alive. That is exponential in the number of parallel calls. This module
keeps the same verdicts with a small online state: the set of DFS states (nodes done + forced queue)
at the current step, in the official path order. Everything here is pure (no I/O, no pydantic).

How the official DFS builds one step from the ready (zero in-degree, unvisited) nodes, in index order:

1. every non-empty combination (``itertools.combinations``, r ascending), deduplicated by the
   ``"|"``-joined name sequence, first wins. For a fixed r, the first combination with a given name
   sequence is its leftmost (greedy) embedding, so the survivors are exactly the *greedy* combinations:
   each node is the first node with its name after the previous chosen node;
2. a filter over maximal runs of consecutive same-name ready nodes ("groups"): a combination of two or
   more nodes whose first node starts a group must begin with that whole group. (A prefix that is a
   partial group is filtered unless a prefix is the full group; only prefixes that start at the first
   node are looked at, so partial groups later in a combination pass.)
3. a single node that starts a group is *expanded*: the whole group is marked done at once and taken one
   node per step (forced steps); its successors become ready only after the last of them.

Where this engine differs from the official code (only where the official code crashes):

- Pruning after a call match reads ``path[step]`` of every alive path; a shorter alive path (possible only
  after an unpruned clarify step) raises ``IndexError`` there. Here such paths are dropped.
- A text reply at ``step == len(nodes)`` raises ``KeyError`` there; here it is no match.
- A clarify/answer candidate with more than one node trips an ``assert`` there; here it matches.
- Names containing ``"|"`` would make the deduplication mix combination sizes; they are rejected
  (``GraphError``), as OpenAI-style tool names cannot contain ``"|"`` anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

# The two gold pseudo-tools, defined here once for the whole package (this module is its lowest layer):
#: a clarifying question to the user (the gold node's observation is the question, ``user_input`` the reply);
PSEUDO_CLARIFY = "ask_user_for_required_parameters"
#: the final text answer (the gold node's observation is the reference reply). Neither is offered to the model.
PSEUDO_ANSWER = "prepare_to_answer"
PSEUDO_TOOLS: frozenset[str] = frozenset({PSEUDO_CLARIFY, PSEUDO_ANSWER})

# A DFS state: bitmask of the nodes marked done, and the forced one-node steps still owed by an expanded
# same-name group (those nodes are already in the mask, as in the official code).
_State = tuple[int, tuple[int, ...]]


class GraphError(ValueError):
    """Invalid call graph.

    Attributes:
        node: the offending node index, or None when the graph as a whole is wrong.
        field: the node field at fault: ``"dependency_list"``, ``"name"`` or ``"answer_list"``.
        message: what is wrong, without the node prefix.
    """

    def __init__(self, message: str, *, node: int | None = None, field: str = "dependency_list"):
        self.node = node
        self.field = field
        self.message = message
        super().__init__(message if node is None else f"node {node}: {message}")


@dataclass(frozen=True)
class CallGraph:
    """A task's gold call DAG: node ``i`` calls ``names[i]`` after the nodes in ``deps[i]``.

    Construction validates (see ``build``); derived tables are computed once in ``__post_init__``.
    """

    names: tuple[str, ...]
    deps: tuple[tuple[int, ...], ...]
    _dep_masks: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _heights: tuple[int, ...] = field(init=False, repr=False, compare=False)

    @classmethod
    def build(cls, names: Sequence[str], deps: Sequence[Sequence[int]]) -> CallGraph:
        """Validate and build a graph.

        Raises:
            GraphError: empty graph, name not a string or containing ``"|"``, names and deps of different
                lengths, non-int index, dependency out of range (dangling), self dependency, duplicate
                dependency, or a cycle (the error names a node on it).
        """
        if isinstance(names, str):
            raise GraphError("names must be a list of strings", field="name")
        dep_rows: list[tuple[int, ...]] = []
        for i, row in enumerate(deps):
            if isinstance(row, str | bytes) or not isinstance(row, Sequence):
                raise GraphError("dependency_list must be a list of node indices", node=i)
            dep_rows.append(tuple(row))
        return cls(tuple(names), tuple(dep_rows))

    def __post_init__(self) -> None:
        count = len(self.names)
        if count == 0:
            raise GraphError("the task has no gold nodes", field="answer_list")
        if len(self.deps) != count:
            raise GraphError(f"{count} names but {len(self.deps)} dependency lists")
        for i, name in enumerate(self.names):
            if not isinstance(name, str):
                raise GraphError(f"action name must be a string, got {type(name).__name__}", node=i, field="name")
            if "|" in name:
                raise GraphError(f"action name {name!r} contains '|'", node=i, field="name")
        masks: list[int] = []
        for i, row in enumerate(self.deps):
            mask = 0
            for dep in row:
                if isinstance(dep, bool) or not isinstance(dep, int):
                    raise GraphError(f"dependency {dep!r} is not a node index", node=i)
                if not 0 <= dep < count:
                    raise GraphError(f"dependency {dep} is not a node (valid: 0..{count - 1})", node=i)
                if dep == i:
                    raise GraphError("node depends on itself", node=i)
                if mask >> dep & 1:
                    raise GraphError(f"dependency {dep} is listed twice", node=i)
                mask |= 1 << dep
            masks.append(mask)
        object.__setattr__(self, "_dep_masks", tuple(masks))
        object.__setattr__(self, "_heights", self._chain_heights())

    def _chain_heights(self) -> tuple[int, ...]:
        """Nodes on the longest dependency chain starting at each node (itself included); GraphError on a cycle."""
        count = len(self.names)
        successors: list[list[int]] = [[] for _ in range(count)]
        for i, row in enumerate(self.deps):
            for dep in row:
                successors[dep].append(i)
        heights = [0] * count
        colour = [0] * count  # 0 new, 1 on the DFS stack, 2 done
        for root in range(count):
            if colour[root]:
                continue
            stack: list[tuple[int, int]] = [(root, 0)]
            colour[root] = 1
            while stack:
                node, next_child = stack[-1]
                if next_child < len(successors[node]):
                    stack[-1] = (node, next_child + 1)
                    child = successors[node][next_child]
                    if colour[child] == 1:
                        cycle = [n for n, _ in stack[[n for n, _ in stack].index(child) :]]
                        loop = " -> ".join(str(n) for n in [*cycle, child])
                        raise GraphError(f"dependency cycle {loop}", node=min(cycle))
                    if colour[child] == 0:
                        colour[child] = 1
                        stack.append((child, 0))
                    continue
                stack.pop()
                colour[node] = 2
                heights[node] = 1 + max((heights[s] for s in successors[node]), default=0)
        return tuple(heights)

    @property
    def min_steps(self) -> int:
        """Fewest steps over all official paths (the official ``min_length``), without enumerating them.

        Proof that it is the node count of the longest dependency chain: (1) a lower bound, because every
        step (forced steps of an expanded group included) only holds nodes whose dependencies were all
        done in earlier steps, so the nodes of a chain sit in strictly increasing steps; (2) reached,
        because taking every ready node at once is always an official candidate (it is the only
        combination of its size, so it survives deduplication; it starts with the whole first group, so it
        survives the filter; with two or more nodes it is never expanded, and a lone ready node is never a
        group) and that schedule finishes the longest chain's k-th node at step k.
        """
        return max(self._heights)

    def first_optimal_path(self) -> list[list[int]]:
        """The official ``optimal_path_list[0]``: the first shortest path in DFS order.

        base_handler replays it as gold history iterating each step's ids as stored in the path, i.e. in
        ascending node order (NOT the name-sorted order of ``init_step_to_answer``), so that is the order
        returned here. A child of a state is on a shortest path iff it is not an expanded group (an
        expansion of L >= 2 nodes costs L steps but lowers the remaining chain height by at most one) and
        it contains every ready node whose chain height equals the remaining height; the first such child
        in official candidate order is found with a small feasibility table instead of enumeration.
        """
        path: list[list[int]] = []
        state: _State = (0, ())
        full = (1 << len(self.names)) - 1
        while not (state[0] == full and not state[1]):
            step = [state[1][0]] if state[1] else self._first_optimal_step(state[0])
            path.append(step)
            child = self._child(state, step)
            assert child is not None  # the step was built from this state's own candidates
            state = child
        return path

    def start(self) -> GraphWalk:
        """A fresh online walk over this graph (step 0, nothing matched)."""
        return GraphWalk(self)

    # --- per-state candidate rules (the official dfs step, computed directly) ---

    def _ready(self, done: int) -> list[int]:
        """Nodes not done whose dependencies are all done, in index order (the official zero in-degree list)."""
        return [i for i in range(len(self.names)) if not (done >> i) & 1 and (self._dep_masks[i] & ~done) == 0]

    def _group_lengths(self, ready: Sequence[int]) -> dict[int, int]:
        """Position in ``ready`` -> length, for each run of >= 2 consecutive same-name ready nodes."""
        lengths: dict[int, int] = {}
        start = 0
        for pos in range(1, len(ready) + 1):
            if pos == len(ready) or self.names[ready[pos]] != self.names[ready[start]]:
                if pos - start > 1:
                    lengths[start] = pos - start
                start = pos
        return lengths

    def _candidates(self, state: _State) -> Iterator[tuple[list[int], _State]]:
        """Every candidate step of ``state`` with the state it leads to, in the official order.

        Official order: sizes ascending, then lexicographic. The count is exponential in the number of
        ready nodes with distinct names; only logging and the unpruned clarify step list them.
        """
        done, forced = state
        if forced:
            yield [forced[0]], (done, forced[1:])
            return
        ready = self._ready(done)
        names = [self.names[i] for i in ready]
        groups = self._group_lengths(ready)
        for size in range(1, len(ready) + 1):
            seen: set[str] = set()
            for first in range(len(ready) - size + 1):
                if names[first] in seen:
                    continue
                seen.add(names[first])
                group = groups.get(first, 1)
                if size == 1 and group > 1:
                    members = tuple(ready[first : first + group])
                    yield [ready[first]], (done | _mask(members), members[1:])
                    continue
                if size == 1:
                    steps: Iterator[list[int]] = iter([[ready[first]]])
                elif group == 1:
                    steps = (
                        [ready[first], *(ready[p] for p in rest)] for rest in _greedy_tuples(names, first + 1, size - 1)
                    )
                elif size >= group:
                    head = ready[first : first + group]
                    steps = (
                        [*head, *(ready[p] for p in rest)]
                        for rest in _greedy_tuples(names, first + group, size - group)
                    )
                else:
                    continue  # a partial group leading a combination: filtered
                for step in steps:
                    yield step, (done | _mask(step), ())

    def _child(self, state: _State, step: Sequence[int]) -> _State | None:
        """The state after taking ``step`` (ascending node ids) from ``state``, or None if it is no candidate."""
        done, forced = state
        if forced:
            return (done, forced[1:]) if list(step) == [forced[0]] else None
        ready = self._ready(done)
        position = {node: pos for pos, node in enumerate(ready)}
        if not step or any(node not in position for node in step):
            return None
        positions = [position[node] for node in step]
        names = [self.names[i] for i in ready]
        previous = -1
        for pos in positions:
            # Greedy: no node with this name between the previous chosen node and this one.
            if pos <= previous or names[pos] in names[previous + 1 : pos]:
                return None
            previous = pos
        group = self._group_lengths(ready).get(positions[0], 1)
        if group > 1:
            run = list(range(positions[0], positions[0] + group))
            if len(positions) == 1:
                members = tuple(ready[p] for p in run)
                return (done | _mask(members), members[1:])
            if positions[:group] != run:
                return None
        return (done | _mask(step), ())

    def _first_step_with_names(self, state: _State, wanted: Counter[str]) -> list[int] | None:
        """The first candidate of ``state`` (official order) whose name multiset is ``wanted``."""
        done, forced = state
        if forced:
            return [forced[0]] if wanted == Counter([self.names[forced[0]]]) else None
        size = sum(wanted.values())
        if size == 0:
            return None
        ready = self._ready(done)
        names = [self.names[i] for i in ready]
        groups = self._group_lengths(ready)
        seen: set[str] = set()
        for first, name in enumerate(names):
            if name in seen:
                continue
            seen.add(name)
            if wanted[name] == 0:
                continue
            group = groups.get(first, 1)
            if size == 1:
                return [ready[first]]
            take = 1 if group == 1 else group
            if wanted[name] < take:
                continue  # also covers a partial group, which the filter removes
            rest = wanted.copy()
            rest[name] -= take
            if _covers(names, first + take, rest):
                tail = _first_greedy_with_names(names, first + take, rest)
                return [ready[p] for p in range(first, first + take)] + [ready[p] for p in tail]
        return None

    def _first_optimal_step(self, done: int) -> list[int]:
        """First candidate (official order) that keeps a shortest path: contains every critical ready node."""
        ready = self._ready(done)
        names = [self.names[i] for i in ready]
        height = max(self._heights[i] for i in ready)
        critical = [self._heights[i] == height for i in ready]
        groups = self._group_lengths(ready)
        table = _CoverTable(names, critical)
        for size in range(1, len(ready) + 1):
            for first in table.choices(0):
                group = groups.get(first, 1)
                if group > 1 and size == 1:
                    continue  # an expanded group is never on a shortest path
                take = 1 if group == 1 else group
                if size < take or not table.feasible(first + take, size - take):
                    continue
                tail = table.first(first + take, size - take)
                return [ready[p] for p in range(first, first + take)] + [ready[p] for p in tail]
        raise AssertionError("taking every ready node is always a shortest-path step")


@dataclass
class StepMatch:
    """A model step matched against the gold graph.

    Attributes:
        kind: ``"calls"`` (tool calls matched a candidate), ``"clarify"`` or ``"answer"`` (a text reply).
        nodes: gold node ids of the matched candidate, in official order (name-sorted, stable over ids).
        step: 0-based model step index at which it matched.
    """

    kind: Literal["calls", "clarify", "answer"]
    nodes: list[int]
    step: int


class GraphWalk:
    """Online state of one task; mirrors the official pruning of ``base_handler.inference_and_eval_multi_step``.

    The alive paths are kept as the distinct DFS states at the current step, in official path order. Two
    alive paths in the same state contribute identical candidates and children, so keeping only the first
    changes neither the candidate order nor any verdict.

    Attributes:
        graph: the gold graph.
        step: index of the next model step (the official ``step``).
        finished: True once a text reply matched ``prepare_to_answer``. Later calls return None.
    """

    def __init__(self, graph: CallGraph):
        self.graph = graph
        self.step = 0
        self.finished = False
        self._alive: list[_State] = [(0, ())]
        self._answer_step: int | None = None

    def match_calls(self, names: Sequence[str]) -> StepMatch | None:
        """The model returned tool calls with these names (in any order).

        Official rule: ``sorted(names)`` must equal the sorted names of a candidate at ``step`` among the
        alive paths; the first such candidate in official order wins; alive paths are pruned to those whose
        step equals it (as a node list), and ``step`` advances. A pseudo-tool name that happens to match is
        treated as a call too, as in the official code. Returns None (state unchanged) when nothing matches,
        including when no alive path is that long or ``names`` is empty.
        """
        if self.finished:
            return None
        wanted = Counter(names)
        for state in self._alive:
            found = self.graph._first_step_with_names(state, wanted)
            if found is not None:
                chosen = sorted(found)
                self._alive = _distinct(
                    child for s in self._alive if (child := self.graph._child(s, chosen)) is not None
                )
                return self._advance("calls", chosen)
        return None

    def match_text(self) -> StepMatch | None:
        """The model returned a text reply and no tool calls.

        Official rule (base_handler runs it whenever ``tool_calls is None`` and ``content is not None``, so
        an empty string counts; the older ``eval_by_tool_call_graph`` needs non-empty content): the first
        candidate at ``step`` in official order that contains ``ask_user_for_required_parameters`` gives
        ``"clarify"``, else one that contains ``prepare_to_answer`` gives ``"answer"`` and ``finished``. A
        clarify match does NOT prune (official behaviour): every alive path moves on, so later candidates
        may come from several branches. Returns None (state unchanged) otherwise.
        """
        if self.finished:
            return None
        for state in self._alive:
            chosen = self._first_pseudo_step(state)
            if chosen is None:
                continue
            if any(self.graph.names[i] == PSEUDO_CLARIFY for i in chosen):
                self._alive = _distinct(child for s in self._alive for _, child in self.graph._candidates(s))
                return self._advance("clarify", chosen)
            self.finished = True
            self._answer_step = self.step
            return self._advance("answer", chosen)
        return None

    def candidate_steps(self, limit: int | None = None) -> list[list[int]]:
        """Distinct candidate steps at the current step (node ids in official order), in official order.

        The official log lists one ``candidate_k_answer_function_list`` per alive path, duplicates
        included; this is the same list without repeats. Its length is exponential in the number of ready
        nodes with distinct names, so ``limit`` caps it.
        """
        if self.finished:
            return []
        seen: set[tuple[int, ...]] = set()
        out: list[list[int]] = []
        for state in self._alive:
            for step, _ in self.graph._candidates(state):
                key = tuple(step)
                if key in seen:
                    continue
                seen.add(key)
                out.append(self._official_order(step))
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def steps_left(self) -> int:
        """Fewest steps still needed to finish (the answer included), over the alive paths; 0 once finished.

        From a state: its forced steps one by one, then the longest dependency chain among the nodes not
        done (the ``min_steps`` argument, applied to what is left). So the task can still be optimal iff
        ``step + steps_left() == graph.min_steps``. For the viewer's path; no verdict reads it.
        """
        if self.finished:
            return 0
        heights = self.graph._heights
        return (
            min(
                len(forced) + max((heights[i] for i in range(len(heights)) if not (done >> i) & 1), default=0)
                for done, forced in self._alive
            )
            if self._alive
            else 0
        )

    def is_optimal(self) -> bool:
        """Official rule: finished, and the answer came at step ``graph.min_steps - 1``."""
        return self._answer_step is not None and self._answer_step == self.graph.min_steps - 1

    def _first_pseudo_step(self, state: _State) -> list[int] | None:
        """First candidate of ``state`` holding a pseudo-tool: the first ready one alone (size 1 comes first)."""
        done, forced = state
        if forced:
            return [forced[0]] if self.graph.names[forced[0]] in PSEUDO_TOOLS else None
        for node in self.graph._ready(done):
            if self.graph.names[node] in PSEUDO_TOOLS:
                # The first ready node with its name, so its singleton survives deduplication.
                return [node]
        return None

    def _official_order(self, step: Sequence[int]) -> list[int]:
        return sorted(step, key=lambda i: self.graph.names[i])

    def _advance(self, kind: Literal["calls", "clarify", "answer"], chosen: list[int]) -> StepMatch:
        match = StepMatch(kind=kind, nodes=self._official_order(chosen), step=self.step)
        if kind != "answer":
            self.step += 1
        return match


def _mask(nodes: Sequence[int]) -> int:
    mask = 0
    for node in nodes:
        mask |= 1 << node
    return mask


def _distinct(states: Iterator[_State]) -> list[_State]:
    """States in order, first occurrence kept (a finished state has no candidates, so it never survives a match)."""
    out: list[_State] = []
    seen: set[_State] = set()
    for state in states:
        if state not in seen:
            seen.add(state)
            out.append(state)
    return out


def _greedy_tuples(names: Sequence[str], start: int, size: int) -> Iterator[tuple[int, ...]]:
    """Positions ``>= start``, ``size`` of them, each the first of its name after the previous, lexicographic."""
    if size == 0:
        yield ()
        return
    seen: set[str] = set()
    for pos in range(start, len(names) - size + 1):
        if names[pos] in seen:
            continue
        seen.add(names[pos])
        for rest in _greedy_tuples(names, pos + 1, size - 1):
            yield (pos, *rest)


def _covers(names: Sequence[str], start: int, wanted: Counter[str]) -> bool:
    """Whether ``names[start:]`` holds the multiset ``wanted`` (then a greedy embedding exists too)."""
    have = Counter(names[start:])
    return all(have[name] >= count for name, count in wanted.items())


def _first_greedy_with_names(names: Sequence[str], start: int, wanted: Counter[str]) -> list[int]:
    """Lexicographically first greedy position tuple from ``start`` with name multiset ``wanted`` (must exist)."""
    chosen: list[int] = []
    rest = wanted.copy()
    previous = start
    while sum(rest.values()):
        seen: set[str] = set()
        for pos in range(previous, len(names)):
            name = names[pos]
            if name in seen:
                continue
            seen.add(name)
            if rest[name] == 0:
                continue
            rest[name] -= 1
            if _covers(names, pos + 1, rest):
                chosen.append(pos)
                previous = pos + 1
                break
            rest[name] += 1
        else:
            raise AssertionError("caller checked that the multiset is available")
    return chosen


class _CoverTable:
    """Greedy position tuples of a given size that include every critical position, memoised."""

    def __init__(self, names: Sequence[str], critical: Sequence[bool]):
        self.names = names
        self.critical = critical
        self._memo: dict[tuple[int, int], bool] = {}

    def choices(self, start: int) -> Iterator[int]:
        """Positions that may come next after ``start - 1``: first of their name, no critical one skipped."""
        seen: set[str] = set()
        for pos in range(start, len(self.names)):
            if self.names[pos] not in seen:
                seen.add(self.names[pos])
                yield pos
            if self.critical[pos]:
                return

    def feasible(self, start: int, size: int) -> bool:
        """Whether ``size`` more greedy positions from ``start`` can include every critical one left."""
        key = (start, size)
        if key not in self._memo:
            if size == 0:
                self._memo[key] = not any(self.critical[start:])
            else:
                self._memo[key] = any(self.feasible(pos + 1, size - 1) for pos in self.choices(start))
        return self._memo[key]

    def first(self, start: int, size: int) -> list[int]:
        """The lexicographically first such tuple (``feasible(start, size)`` must hold)."""
        out: list[int] = []
        while size:
            pos = next(p for p in self.choices(start) if self.feasible(p + 1, size - 1))
            out.append(pos)
            start, size = pos + 1, size - 1
        return out
