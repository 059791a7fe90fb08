"""Make an MTU-Bench run from its options (the CLI, the API, sweeps and ``rescore`` all call :func:`build`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgauge.benchmark import RecordedRun
from toolgauge.benchmarks.mtu.loader import load_mtu, load_mtu_predictions
from toolgauge.benchmarks.mtu.options import MtuOptions, MtuScoreOptions
from toolgauge.benchmarks.mtu.protocol import MtuBenchmark, replay_turns, splits_with_predictions
from toolgauge.benchmarks.mtu.records import MTU_SPLITS, MtuItem, MtuPrediction
from toolgauge.datasets.resolve import data_or_official
from toolgauge.errors import UsageError
from toolgauge.models.base import ModelClient
from toolgauge.selection import existing_data, limit_items


def build(options: MtuOptions | None = None) -> MtuBenchmark:
    """The MTU-Bench run over the eval files of ``options.data`` (None: the cached official data).

    The run is stored with the data folder it read (the official one resolved), so ``rescore`` reads it again.

    Raises:
        MissingDataPath: no folder at ``options.data``.
        DataError: an unknown split, a missing file or a bad line.
    """
    options = options if options is not None else MtuOptions()
    path = existing_data(data_or_official("mtu-bench", options.data))
    return MtuBenchmark(
        limit_items(load_mtu(path, options.splits), options.limit, group=lambda item: item.split),
        options=options.model_copy(update={"data": path}),
        data_label=str(path),
    )


def model_for(bench: MtuBenchmark, spec: str, timeout: float) -> tuple[str, ModelClient]:
    """The model to run; recorded replies (``replay:PATH``) also add how they paired with the items to the warnings."""
    from toolgauge.models.spec import display_spec, resolve_model

    if not spec.startswith("replay:"):
        return display_spec(spec), resolve_model(spec, replay_loader=bench.replay_table, timeout=timeout)
    path = Path(spec.removeprefix("replay:"))
    return _replay(bench, path, load_mtu_predictions(path))


def score_run(options: MtuScoreOptions) -> RecordedRun:
    """Recorded replies at ``options.predictions`` scored as a prompt-mode run (its splits: those with replies)."""
    recorded = load_mtu_predictions(options.predictions)
    bench = build(
        MtuOptions(
            data=options.data,
            splits=options.splits or splits_with_predictions(recorded),
            mode="prompt",
            variant=options.variant,
        )
    )
    shown, client = _replay(bench, options.predictions, recorded)
    return RecordedRun(bench, shown, client)


def _replay(bench: MtuBenchmark, path: Path, recorded: Sequence[MtuPrediction]) -> tuple[str, ModelClient]:
    """A replay of ``recorded`` (read from ``path``) for ``bench``, whose warnings get the pairing's."""
    from toolgauge.models.offline import ReplayClient
    from toolgauge.models.spec import display_spec

    table, warnings = replay_turns(bench.items, recorded)
    bench.warnings.extend(warnings)
    spec = display_spec(f"replay:{path}")
    return spec, ReplayClient(table, name=spec)


def migrate_mtu_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """An MTU-Bench config stored before the options model (main@ffe3fb4) as the model's fields.

    That config kept the splits and the number of items ``n``; a run made with ``--limit`` took the first N items
    of each split, and N is the one that gives that number (the eval files are read to find it). (A config of
    today has a ``limit`` key.)
    """
    if "limit" in config:
        return dict(config)
    old = dict(config)
    n = int(old.pop("n"))
    stored = set(old.get("splits") or MTU_SPLITS)
    old["splits"] = [split for split in MTU_SPLITS if split in stored]
    old["limit"] = _per_split_limit(load_mtu(existing_data(str(old["data"])), old["splits"]), n)
    return old


def _per_split_limit(items: Sequence[MtuItem], n: int) -> int | None:
    """The per-split limit that leaves ``n`` of ``items`` (None: all of them).

    Raises:
        UsageError: no limit does (the eval files changed since the run).
    """
    if n == len(items):
        return None
    sizes = Counter(item.split for item in items).values()
    for limit in range(1, max(sizes, default=0) + 1):
        if sum(min(limit, size) for size in sizes) == n:
            return limit
    raise UsageError(f"the run has {n} items, which no --limit of these eval files gives (have they changed?)")
