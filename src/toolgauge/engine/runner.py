"""Run one episode per sample with bounded concurrency, and record everything as it happens.

Each protocol supplies only an episode coroutine ``episode(sample, ctx) -> result``; the
engine owns scheduling, model-call retries and timeouts, the response cache, resume, the
store writes and the progress bar.

Two failures stop the whole run instead of failing samples one by one: the endpoint stops
answering (``EndpointDown``) and a store write fails (``StoreWriteError``). Either cancels every
worker at once (no further model calls); the samples in flight are not recorded, so a resume runs
them again, and a sample counts as finished only once its row is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from abc import abstractmethod
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from toolgauge.cost import Price
from toolgauge.engine.budget import Budget, BudgetReached, Spend
from toolgauge.engine.cache import CacheMode, request_hash
from toolgauge.engine.epochs import check_epoch_keys, epoch_key
from toolgauge.engine.retry import backoff_delay
from toolgauge.errors import (
    ConnectionFailed,
    EndpointDown,
    ModelError,
    StoreWriteError,
    TransientModelError,
    UsageError,
)
from toolgauge.models.base import ModelClient
from toolgauge.records import AssistantTurn, GenerateOptions, Message, ModelRequest, ToolSpec
from toolgauge.redact import redact
from toolgauge.report.console import TerminalConsole
from toolgauge.store.group_commit import GroupCommit
from toolgauge.store.transcripts import MessageChain

if TYPE_CHECKING:  # the store (SQLAlchemy) is loaded by whoever opens one, not by importing the engine
    from toolgauge.store import Store

S = TypeVar("S")
R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")

# --cache: off (neither read nor write), read (answers from it, nothing new stored), write (every call made,
# answers stored), on (both).

# Finished samples that may wait for a commit before the workers wait for the store (memory stays bounded).
COMMIT_BACKLOG = 1024
# A model call outside any ``EpisodeContext.deadline`` block is bounded by nothing (one shared no-op context).
_NO_DEADLINE: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()


@dataclass(frozen=True)
class EngineConfig:
    """Knobs of the runner engine."""

    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 4
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    use_cache: bool = True
    show_progress: bool = True
    seed: int = 0
    # Connection failures in a row (refused, reset; no answer of any kind in between) after
    # which the endpoint counts as down and the run stops, resumable.
    outage_streak: int = 8
    # Store what each model call was sent (messages, tools, options) beside its response. Always on
    # for users; off only to measure what it costs (benchmarks/transcript_overhead.py).
    store_transcripts: bool = True
    # Tries of every sample (``--epochs K``): each try is a unit of its own (scheduled, retried, stored
    # and resumed alone) under the store key ``epoch_key(sample, epoch)``.
    epochs: int = 1
    # Hits found on the store's thread, per model, after which the store reads that model's cache entries
    # into memory (``Store.prefetch_cache``), so later hits are answered with no wait; None: never.
    cache_prefetch_after: int | None = 16
    # --cache; None: "on" when use_cache, else "off" (use_cache is --no-cache's older switch).
    cache: CacheMode | None = None
    # --max-cost / --max-tokens-total, and the price of each role's model ("model": the evaluated one).
    budget: Budget = field(default_factory=Budget)
    prices: Mapping[str, Price | None] = field(default_factory=dict)

    @property
    def cache_mode(self) -> CacheMode:
        """The response cache mode in effect."""
        return self.cache if self.cache is not None else ("on" if self.use_cache else "off")


@dataclass(slots=True)
class SampleOutcome(Generic[R]):
    """What one try of a sample produced: a result, or the error that stopped it.

    ``key`` is the sample's key (what a benchmark's ``score`` pairs with its samples), ``epoch`` which
    try it is (1-based); ``store_key`` is where the try is stored.
    """

    key: str
    result: R | None
    error: str | None
    latency_s: float
    resumed: bool = False
    epoch: int = 1

    @property
    def store_key(self) -> str:
        """The key this try is stored under (``epoch_key``)."""
        return epoch_key(self.key, self.epoch)


class _MadeOutcomes(Sequence[SampleOutcome[R]], Generic[R, T]):
    """A sequence of outcomes made from ``self._items`` (what each outcome is made from) when they are read."""

    _items: Sequence[T]

    @abstractmethod
    def _outcomes(self, items: Sequence[T]) -> Iterator[SampleOutcome[R]]:
        """The outcomes made from ``items``, in their order."""

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> SampleOutcome[R]: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleOutcome[R]]: ...

    def __getitem__(self, index: int | slice) -> SampleOutcome[R] | list[SampleOutcome[R]]:
        if isinstance(index, slice):
            return list(self._outcomes(self._items[index]))
        return next(self._outcomes([self._items[index]]))

    def __iter__(self) -> Iterator[SampleOutcome[R]]:
        return self._outcomes(self._items)


class StoredOutcomes(_MadeOutcomes[R, SampleOutcome[R]]):
    """A run's outcomes in input order, with each result read back from the store when it is needed.

    The engine keeps only light outcomes (key, error, latency; no result) while a run goes on: the
    results are already stored, and holding them all until scoring grew memory by kilobytes per sample.
    Iterating reads the results ``READ_CHUNK`` samples per query, so one chunk is in memory at a time;
    every iteration reads them again. Read it while the run's store is open (before ``run_benchmark`` returns).
    """

    def __init__(self, light: Sequence[SampleOutcome[R]], store: Store, run_id: str, result_type: type[R]):
        self._items = light
        self._store = store
        self._run_id = run_id
        self._result_type = result_type

    def of_epoch(self, epoch: int) -> StoredOutcomes[R]:
        """The outcomes of try ``epoch`` only, in the same order."""
        light = self._items
        chosen = light.of_epoch(epoch) if isinstance(light, DoneTries) else [o for o in light if o.epoch == epoch]
        return StoredOutcomes(chosen, self._store, self._run_id, self._result_type)

    def _outcomes(self, light: Sequence[SampleOutcome[R]]) -> Iterator[SampleOutcome[R]]:
        # Failed samples have no stored result: only the others are looked up.
        keys = [o.store_key for o in light if o.error is None]
        # closing: a reader that stops early gives the store connection back at once.
        with contextlib.closing(self._store.sample_results(self._run_id, keys)) as results:
            for o in light:
                result: R | None = None
                if o.error is None:
                    key, stored = next(results)
                    assert key == o.store_key  # sample_results yields in the order asked
                    result = self._result_type.model_validate_json(stored) if stored is not None else None
                yield SampleOutcome(o.key, result, o.error, o.latency_s, o.resumed, o.epoch)


class Tries(Generic[S]):
    """Every try of a run (``epochs`` per sample, epoch 1's in sample order first), and what is kept of each.

    Try ``i`` is sample ``i % n`` in epoch ``i // n + 1``. What the engine keeps of a finished try (done,
    resumed, latency; an error for the few that failed) is held in flat arrays by try index, with no object
    per try: a light outcome per sample, made while the episodes' own objects came and went, pinned
    about 1 KB of the heap per sample (docs/benchmarks/memory.md).
    """

    def __init__(self, samples: Sequence[tuple[str, S]], epochs: int):
        self.samples = samples
        self.n = len(samples)
        self.total = self.n * epochs
        self.done = bytearray(self.total)
        self.resumed = bytearray(self.total)
        self.latency = array("d", bytes(8 * self.total))
        self.errors: dict[int, str] = {}

    def sample_key(self, i: int) -> tuple[str, int]:
        """The sample key and the epoch of try ``i``."""
        return self.samples[i % self.n][0], i // self.n + 1

    def store_key(self, i: int) -> str:
        """Where try ``i`` is stored (``epoch_key``)."""
        return epoch_key(*self.sample_key(i))

    def sample(self, i: int) -> S:
        """The sample try ``i`` runs."""
        return self.samples[i % self.n][1]

    def index(self) -> dict[str, int]:
        """Try index by store key (made only when the store has tries of this run, or for a shard)."""
        return {self.store_key(i): i for i in range(self.total)}

    def finish(self, i: int, error: str | None, latency: float, *, resumed: bool = False) -> None:
        """Record try ``i`` as done (with ``error`` when it failed)."""
        self.done[i] = 1
        self.latency[i] = latency
        if resumed:
            self.resumed[i] = 1
        if error is not None:
            self.errors[i] = error

    def outcome(self, i: int) -> SampleOutcome[Any]:
        """The light outcome (no result) of finished try ``i``."""
        key, epoch = self.sample_key(i)
        return SampleOutcome(key, None, self.errors.get(i), self.latency[i], bool(self.resumed[i]), epoch)


class DoneTries(_MadeOutcomes[R, int]):
    """The light outcomes of the finished tries ``indexes`` of :class:`Tries`, made when they are read."""

    def __init__(self, tries: Tries[Any], indexes: array[int]):
        self._tries = tries
        self._items = indexes

    def _outcomes(self, items: Sequence[int]) -> Iterator[SampleOutcome[R]]:
        return (self._tries.outcome(i) for i in items)

    def of_epoch(self, epoch: int) -> DoneTries[R]:
        """The finished tries of epoch ``epoch``, in the same order."""
        low, high = (epoch - 1) * self._tries.n, epoch * self._tries.n
        return DoneTries(self._tries, array("q", (i for i in self._items if low <= i < high)))


@dataclass
class RunOutcome(Generic[R]):
    """All outcomes of a run (epoch 1's in input order, then epoch 2's, ...), plus run-level counts.

    ``outcomes`` reads the results from the store as it is iterated (see ``StoredOutcomes``);
    ``failed`` are the outcomes with an error, without reading anything; ``resumed`` counts tries.
    """

    outcomes: Sequence[SampleOutcome[R]]
    failed: list[SampleOutcome[R]] = field(default_factory=list)
    resumed: int = 0
    model_calls: int = 0
    cached_calls: int = 0
    epochs: int = 1
    # What the run's calls spent (this process's and, resumed, the stored ones'), priced per role.
    spend: Spend = field(default_factory=Spend)

    def of_epoch(self, epoch: int) -> Sequence[SampleOutcome[R]]:
        """The outcomes of one epoch in input order, keyed by sample (what a benchmark's ``score`` takes)."""
        outcomes = self.outcomes
        if isinstance(outcomes, StoredOutcomes):
            return outcomes.of_epoch(epoch)
        return [o for o in outcomes if o.epoch == epoch]


@dataclass
class _RunState:
    client: ModelClient
    store: Store
    run_id: str
    config: EngineConfig
    rng: random.Random
    calls: int = 0
    cached: int = 0
    # Extra named clients (e.g. "agent", "judge") beside the evaluated model, which is role "model".
    roles: dict[str, ModelClient] = field(default_factory=dict)
    # Connection failures in a row per client (by id), reset by any answer from its server.
    streaks: dict[int, int] = field(default_factory=dict)
    # The failure that stops the whole run (endpoint down, store write failed); first one wins.
    fatal: EndpointDown | StoreWriteError | None = None
    workers: list[asyncio.Task[None]] = field(default_factory=list)
    # Cache hits found on the store's thread, per model (cache_id): enough of them start a prefetch.
    trip_hits: dict[str, int] = field(default_factory=dict)
    spend: Spend = field(default_factory=Spend)
    # Set when a call was refused by the budget: no new sample starts, the calls in flight finish.
    budget_stop: BudgetReached | None = None

    def stop(self, exc: EndpointDown | StoreWriteError) -> EndpointDown | StoreWriteError:
        """Stop the run: remember why and cancel every worker (no further model calls)."""
        if self.fatal is None:
            self.fatal = exc
            for w in self.workers:
                w.cancel()
        return self.fatal

    def connection_failed(self, client: ModelClient) -> int:
        streak = self.streaks.get(id(client), 0) + 1
        self.streaks[id(client)] = streak
        return streak

    def hit_in_store(self, client: ModelClient) -> None:
        """A hit needed a trip to the store's thread: after enough of them, read the model's entries ahead."""
        after = self.config.cache_prefetch_after
        hits = self.trip_hits.get(client.cache_id, 0) + 1
        self.trip_hits[client.cache_id] = hits
        if after is not None and hits == max(after, 1):
            self.store.prefetch_cache(client.cache_id)

    def answered(self, client: ModelClient) -> None:
        self.streaks[id(client)] = 0

    def client_for(self, role: str) -> ModelClient:
        if role == "model":
            return self.client
        try:
            return self.roles[role]
        except KeyError:
            raise UsageError(f"no model client for role {role!r} (known: model, {', '.join(self.roles)})") from None


class EpisodeContext:
    """Handed to an episode: the one way to call the model (through cache, retries, store)."""

    def __init__(self, state: _RunState, sample_key: str, *, sample: str | None = None, epoch: int = 1):
        self._state = state
        # Where this try is stored (its samples row, its model calls, a benchmark's own records).
        self.sample_key = sample_key
        # The sample's own key (what replayed and gold answers are looked up by) and which try this is.
        self.sample = sample if sample is not None else sample_key
        self.epoch = epoch
        self._steps: dict[str, int] = {}
        # Per role: the messages of its last request, so the next one stores only what it adds.
        self._chains: dict[str, MessageChain] = {}
        # The named steps an earlier session of this sample saved (``checkpoint``), read on first use.
        self._saved: dict[str, Any] | None = None
        # A call of this try was refused by the budget: the try is not finished and runs again on resume.
        self.budget_hit = False
        # Set by ``deadline``: when (``time.monotonic()``) model calls end, and the error they end with.
        self._deadline: tuple[float, Callable[[], ModelError]] | None = None

    @property
    def run_id(self) -> str:
        """The id of the run this episode belongs to."""
        return self._state.run_id

    async def checkpoint(self, name: str, parse: Callable[[Any], T]) -> T | None:
        """The value of step ``name`` that an earlier session of this sample saved (``save_step``), or None.

        A sample stopped after some of its named steps (Ctrl-C, ``kill -9``, a failed write) resumes with them:
        each step asks here first, and runs only when nothing is saved. The model calls a saved step made stay in
        the sample's transcript (a resume forgets only the calls made after its last saved step). ``parse`` turns
        the stored JSON into the step's value; a value it rejects (``ValueError``, such as pydantic's
        ``ValidationError``: saved by another version) is dropped with the steps saved after it and the model
        calls made since the step before it, so that the step and what followed run again.
        """
        st = self._state
        if self._saved is None:
            self._saved = await st.store.run_io(st.store.sample_steps, st.run_id, self.sample_key)
        if name not in self._saved:
            return None
        try:
            return parse(self._saved[name])
        except ValueError:
            await st.store.run_io(st.store.drop_steps_from, st.run_id, self.sample_key, name)
            names = list(self._saved)
            self._saved = {step: self._saved[step] for step in names[: names.index(name)]}
            return None

    async def save_step(self, name: str, value: Any) -> None:
        """Commit step ``name`` of this sample now, with ``value`` (JSON), after the model calls made before it.

        A resumed sample gets it back from ``checkpoint`` instead of running the step again. A step saved before
        keeps its first value. Raises ``StoreWriteError`` when the store refuses the write (the sample fails).
        """
        st = self._state
        await st.store.run_io(st.store.save_step, st.run_id, self.sample_key, name, value)

    @contextlib.contextmanager
    def deadline(self, at: float, time_up: Callable[[], ModelError]) -> Iterator[None]:
        """Within the block, this episode's model calls end by ``at`` (a ``time.monotonic()`` time).

        A call asked for at or after ``at``, or still running then (retries and backoff included), raises
        ``time_up()`` instead; a call cut short is not recorded. On leaving the block the previous deadline (if
        any) applies again.
        """
        outer = self._deadline
        self._deadline = (at, time_up)
        try:
            yield
        finally:
            self._deadline = outer

    def _until_deadline(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Bound what runs inside by the ``deadline`` in effect; without one, a context that costs nothing.

        Every model call enters it, so the async generator of ``_bounded`` (about ten Python calls and a weakref
        registration per call) is made only inside a ``deadline`` block.
        """
        return _NO_DEADLINE if self._deadline is None else self._bounded(*self._deadline)

    @contextlib.asynccontextmanager
    async def _bounded(self, at: float, time_up: Callable[[], ModelError]) -> AsyncIterator[None]:
        left = at - time.monotonic()
        if left <= 0:
            raise time_up()
        scope = asyncio.timeout(left)
        try:
            async with scope:
                yield
        except TimeoutError:
            if not scope.expired():
                raise
            raise time_up() from None

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        options: GenerateOptions | None = None,
        *,
        gold: AssistantTurn | None = None,
        role: str = "model",
    ) -> AssistantTurn:
        """Call a model once; raises ``ModelError`` when it fails for good.

        The call is stored with what it was sent (messages, tools, options) and what it returned
        or why it failed; an answer from the response cache too, flagged cached (``Store.transcript``).

        ``role`` picks the client: ``"model"`` (the evaluated model) or a named extra client
        given to ``run_episodes(roles=...)``, such as ``"agent"`` or ``"judge"``. Each role counts
        its own steps, so scripted and replayed outputs of the evaluated model keep their step numbers.
        Inside a ``deadline`` block the call ends at its deadline with its error.
        """
        async with self._until_deadline():
            st = self._state
            if st.fatal is not None:
                raise st.fatal
            client = st.client_for(role)
            step = self._steps.get(role, 0)
            self._steps[role] = step + 1
            request = ModelRequest(
                messages=messages,
                tools=tools or [],
                options=options or GenerateOptions(),
                sample_key=self.sample,
                step=step,
                gold=gold,
            )
            key = request_hash(client.cache_id, request, epoch=self.epoch) if client.cacheable else None
            mode = st.config.cache_mode
            if key is not None and mode in ("on", "read"):
                # Known in memory (buffered, or read ahead): no wait. Else a look-up on the store's thread.
                hit = st.store.cache_known(key)
                if hit is None:
                    hit = await st.store.cache_get_async(key)  # off the event loop
                    if hit is not None:
                        st.hit_in_store(client)
                if hit is not None:
                    turn = AssistantTurn.model_validate(hit)
                    st.cached += 1
                    self._record(request, key, turn, None, 0.0, 0, cached=True, role=role)
                    return turn
            refused = st.spend.admit() if st.budget_stop is None else st.budget_stop.reason
            if refused is not None:
                self.budget_hit = True
                if st.budget_stop is None:
                    st.budget_stop = BudgetReached(st.run_id, f"budget reached: {refused}")
                raise st.budget_stop
            try:
                return await self._call(client, request, key, role)
            finally:
                st.spend.release()

    async def _call(self, client: ModelClient, request: ModelRequest, key: str | None, role: str) -> AssistantTurn:
        """The model call itself, with retries (admitted by the budget, not found in the cache)."""
        st = self._state
        attempt = 0
        while True:
            attempt += 1
            if st.fatal is not None:
                raise st.fatal
            started = time.perf_counter()
            try:
                # In this task, not a wait_for task: stopping the run cancels the call before it is sent.
                async with asyncio.timeout(st.config.timeout):
                    turn = await client.generate(request)
            except (TransientModelError, TimeoutError) as exc:
                latency = time.perf_counter() - started
                message = str(exc) or f"timed out after {st.config.timeout:g} s"
                if isinstance(exc, ConnectionFailed):
                    streak = st.connection_failed(client)
                    # Down: a run-wide streak, or this sample's whole retry budget spent on
                    # connection failures with no answer from the server in between.
                    if streak >= st.config.outage_streak or (attempt > st.config.max_retries and streak >= attempt):
                        raise st.stop(
                            EndpointDown(
                                f"the endpoint of model {client.name!r} stopped answering: "
                                f"{streak} connection failures in a row (last: {message})"
                            )
                        ) from exc
                elif isinstance(exc, TransientModelError):
                    st.answered(client)  # a 5xx or a malformed body: the server is up
                if attempt > st.config.max_retries:
                    self._record(
                        request, key, None, f"gave up after {attempt} attempts: {message}", latency, attempt, role=role
                    )
                    raise ModelError(f"gave up after {attempt} attempts: {message}") from exc
                retry_after = exc.retry_after if isinstance(exc, TransientModelError) else None
                delay = backoff_delay(
                    attempt,
                    base=st.config.backoff_base,
                    cap=st.config.backoff_cap,
                    retry_after=retry_after,
                    rng=st.rng,
                )
                await asyncio.sleep(delay)
                continue
            except EndpointDown as exc:  # a client that knows its server is gone (a local server process died)
                raise st.stop(exc) from None
            except ModelError as exc:
                st.answered(client)
                self._record(request, key, None, str(exc), time.perf_counter() - started, attempt, role=role)
                raise
            latency = time.perf_counter() - started
            st.answered(client)
            st.calls += 1
            st.spend.add(role, turn.usage.input_tokens, turn.usage.output_tokens)
            self._record(request, key, turn, None, latency, attempt, role=role)
            if key is not None and st.config.cache_mode in ("on", "write"):
                try:
                    st.store.cache_put(key, client.cache_id, turn.model_dump())
                except StoreWriteError as exc:
                    raise st.stop(exc) from None
            return turn

    def _record(
        self,
        request: ModelRequest,
        key: str | None,
        turn: AssistantTurn | None,
        error: str | None,
        latency: float,
        attempts: int,
        *,
        cached: bool = False,
        role: str = "model",
    ) -> None:
        """Log one model call with what it was sent (its transcript); a failed store write stops the run."""
        store = self._state.store
        refs: dict[str, str] = {}
        if self._state.config.store_transcripts:
            refs = store.put_request(self._chains.setdefault(role, MessageChain()), request)
        row = {
            "run_id": self._state.run_id,
            # Calls of extra roles are logged under "<sample>#<role>" so the evaluated model's log stays clean.
            "sample_key": self.sample_key if role == "model" else f"{self.sample_key}#{role}",
            "step": request.step,
            "role": role,
            **refs,
            "request_hash": key,
            "response": turn.model_dump_json() if turn is not None else None,
            "error": error,
            "input_tokens": turn.usage.input_tokens if turn else 0,
            "output_tokens": turn.usage.output_tokens if turn else 0,
            "latency_s": latency,
            "attempts": attempts,
            "cached": cached,
        }
        try:
            store.record_call(row)
        except StoreWriteError as exc:
            raise self._state.stop(exc) from None


Episode = Callable[[S, EpisodeContext], Awaitable[R]]


def _describe(exc: BaseException) -> str:
    # Any exception text may carry a URL with a password or a header: mask before it is stored or shown.
    if isinstance(exc, ModelError):
        return redact(f"model_error: {exc}")
    return redact(f"{exc.__class__.__name__}: {exc}")


async def run_episodes(
    samples: Sequence[tuple[str, S]],
    episode: Episode[S, R],
    result_type: type[R],
    *,
    client: ModelClient,
    store: Store,
    run_id: str,
    config: EngineConfig | None = None,
    description: str = "samples",
    console: Console | None = None,
    roles: Mapping[str, ModelClient] | None = None,
    shard: bool = False,
) -> RunOutcome[R]:
    """Run ``episode`` on every try of every sample (``config.epochs`` each) not already finished in ``run_id``.

    Tries stored as done are reused (resume); tries stored with an error are run again.
    A failure inside one try is recorded on that try and the run goes on. Epoch 1 runs first.
    ``shard``: ``samples`` are one shard of the run, whose other shards other processes run at the same
    time (``toolgauge sweep --executor ray``): the resume looks at, and cleans up after, their tries alone.
    """
    cfg = config or EngineConfig()
    check_epoch_keys((k for k, _ in samples), cfg.epochs)
    tries: Tries[S] = Tries(samples, cfg.epochs)
    state = _RunState(
        client=client, store=store, run_id=run_id, config=cfg, rng=random.Random(cfg.seed), roles=dict(roles or {}),
        spend=Spend(cfg.budget, cfg.prices),
    )  # fmt: skip
    # Store reads and deletes on the store's thread: the event loop never waits for the database.
    resumed, keep, retry_keys, mine = await store.run_io(_resume, store, run_id, result_type, tries, shard)
    await store.run_io(store.forget_samples, run_id, retry_keys)
    # The calls of samples that run again (failed, or in flight when the run stopped) go with their attempt.
    await store.run_io(store.forget_calls, run_id, keep=keep, only=mine)
    if resumed:  # what the run spent before: the budget is the run's, not this process's
        from toolgauge.store.run_meta import spent_calls

        state.spend.seed(await store.run_io(spent_calls, store, run_id))
    del keep, retry_keys
    todo = (i for i in range(tries.total) if not tries.done[i])

    progress = _progress(console) if cfg.show_progress else None
    task_id = progress.add_task(description, total=tries.total, completed=resumed) if progress else None

    def committed(n: int) -> None:  # the progress bar counts committed samples
        if progress is not None and task_id is not None:
            progress.advance(task_id, n)

    # Group commit off the event loop: every sample that finishes while no commit runs starts one.
    commits = GroupCommit(store, stopped=lambda: state.fatal is not None, failed=state.stop, committed=committed)
    commits.start()

    async def worker() -> None:
        for i in todo:  # one generator shared by the workers
            if state.budget_stop is not None:
                return  # no new sample once the budget is reached; the calls in flight finish
            sample_key, epoch = tries.sample_key(i)
            key, sample = epoch_key(sample_key, epoch), tries.sample(i)
            started = time.perf_counter()
            ctx = EpisodeContext(state, key, sample=sample_key, epoch=epoch)
            result: R | None = None
            error: str | None = None
            try:
                result = await episode(sample, ctx)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failing sample is data, never the end of the run
                error = _describe(exc)
            if state.fatal is not None:
                # The run stopped while this sample ran (an episode may have caught the error):
                # it is not finished, and runs again on resume.
                raise state.fatal
            if ctx.budget_hit:
                return  # not finished: it runs again on resume (with a larger budget)
            latency = time.perf_counter() - started
            try:
                store.record_sample(
                    run_id, key, result=result.model_dump(mode="json") if result is not None else None,
                    error=error, latency_s=latency,
                )  # fmt: skip
            except StoreWriteError as exc:
                raise state.stop(exc) from None
            tries.finish(i, error, latency)
            commits.sample_buffered()
            if commits.backlog >= COMMIT_BACKLOG:
                # The store is behind (on an idle machine a commit's time grows with its size, and so does the
                # next one's backlog): wait for it, so the rows held in memory stay bounded.
                commits.request()
                await commits.drain()
                if state.fatal is not None:
                    raise state.fatal

    try:
        if progress is not None:
            progress.start()
        state.workers = [
            asyncio.create_task(worker()) for _ in range(max(1, min(cfg.concurrency, tries.total - resumed or 1)))
        ]
        try:
            await asyncio.gather(*state.workers)
        except BaseException:
            for w in state.workers:
                w.cancel()
            await asyncio.gather(*state.workers, return_exceptions=True)
            if state.fatal is not None:
                raise state.fatal from None
            raise
        await commits.drain()
        if state.fatal is not None:  # a group commit failed after the last worker finished
            raise state.fatal
        try:
            await store.flush_async()
        except StoreWriteError as exc:
            raise state.stop(exc) from None
        committed(commits.take_waiting())
        if state.budget_stop is not None:
            raise state.budget_stop
    except BaseException:
        if not isinstance(state.fatal, StoreWriteError):
            # Commit what finished before the stop; a failing store keeps its pending rows itself.
            with contextlib.suppress(StoreWriteError):
                store.flush()
        raise
    finally:
        commits.close()
        if progress is not None:
            progress.stop()
    ordered: DoneTries[R] = DoneTries(tries, array("q", (i for i in range(tries.total) if tries.done[i])))
    return RunOutcome(
        StoredOutcomes(ordered, store, run_id, result_type),
        failed=[tries.outcome(i) for i in sorted(tries.errors)],
        resumed=resumed,
        model_calls=state.calls,
        cached_calls=state.cached,
        epochs=cfg.epochs,
        spend=state.spend,
    )


def _resume(
    store: Store, run_id: str, result_type: type[R], tries: Tries[Any], shard: bool
) -> tuple[int, set[str], list[str], dict[str, int] | None]:
    """Mark done in ``tries`` every stored try that is done; return what the resume does with the rest.

    A done sample counts only if its stored result still validates as ``result_type``; results are
    read a chunk at a time and not kept. ``shard``: only this shard's tries are looked at. Returns the
    number of tries reused, the store keys of every try kept (``forget_calls``' ``keep``), those to run
    again, and for a shard its tries by store key (``forget_calls``' ``only``).
    """
    states = store.sample_states(run_id)
    mine = tries.index() if shard else None
    if mine is not None:
        states = {key: state for key, state in states.items() if key in mine}
    if not states:  # a new run: no index of its tries is needed
        return 0, set(), [], mine
    index = mine if mine is not None else tries.index()
    done = [key for key, state in states.items() if state.status == "done"]
    retry = [key for key, state in states.items() if state.status != "done"]
    keep: set[str] = set()
    resumed = 0
    for key, stored in store.sample_results(run_id, done):
        if stored is not None:
            try:
                result_type.model_validate_json(stored)
            except ValidationError:
                pass
            else:
                keep.add(key)
                i = index.get(key)
                if i is not None:
                    tries.finish(i, None, states[key].latency_s or 0.0, resumed=True)
                    resumed += 1
                continue
        retry.append(key)
    return resumed, keep, retry, mine


def _progress(console: Console | None) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console or TerminalConsole(stderr=True),
        transient=False,
    )


def stored_outcomes(
    store: Store, run_id: str, keys: Sequence[str], result_type: type[R], *, epochs: int = 1
) -> StoredOutcomes[R]:
    """A stored run's outcomes for ``keys`` and tries 1..``epochs``, epoch by epoch, each in ``keys`` order.

    Tries the run never reached are left out.

    What ``rescore`` scores: the results are read back from the store as they are iterated, and no
    model is asked.
    """
    states = store.sample_states(run_id)
    light: list[SampleOutcome[R]] = [
        SampleOutcome(key, None, None if states[k].status == "done" else states[k].error or "not finished",
                      states[k].latency_s or 0.0, True, epoch)
        for epoch in range(1, epochs + 1)
        for key in keys
        if (k := epoch_key(key, epoch)) in states
    ]  # fmt: skip
    return StoredOutcomes(light, store, run_id, result_type)
