"""Make a WildToolBench run from its options (the CLI, the API, sweeps and ``rescore`` all come here).

:func:`build` makes a run that asks a model; :func:`score_run` one of recorded outputs (step JSONL replayed, or an
official result file whose logs are the run); :func:`log_files` the writers of ``--predictions-out`` and
``--steps-out``; :func:`migrate_wild_config` reads a config stored before the options model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from toolgauge.benchmark import RecordedRun
from toolgauge.benchmarks.wildtoolbench.log import WildSessionResult
from toolgauge.benchmarks.wildtoolbench.options import BUILTIN, WildLogFiles, WildOptions, WildScoreOptions
from toolgauge.benchmarks.wildtoolbench.protocol import WildBenchmark, WildScoredRun
from toolgauge.datasets.resolve import official_data
from toolgauge.errors import DataError
from toolgauge.selection import existing_data, limit_items

Writer = Callable[[Any], None]


def build(options: WildOptions | None = None) -> WildBenchmark:
    """The WildToolBench run over ``options.data`` in ``options.language``.

    ``data`` None: the cached official file when it was pulled, else the built-in sample sessions
    (``builtin:wild_sample``, which may also be given). The run is stored with the data it read, so that
    ``rescore`` reads the same file. ``sessions``: only these session ids (in data order); ``limit``: the first N
    sessions of what is left.

    Raises:
        MissingDataPath: no file at ``options.data``.
        DataError: the session file is malformed.
    """
    return _made(options if options is not None else WildOptions(), None)


def _made(options: WildOptions, recorded: Path | None) -> WildBenchmark:
    """The run of ``options``; ``recorded``: an official result file whose logs are the run (only its sessions)."""
    from toolgauge.benchmarks.wildtoolbench.io import read_official
    from toolgauge.benchmarks.wildtoolbench.loader import builtin_wild_path, load_wild

    # The official file once pulled (it needs --accept-terms), else the built-in sample.
    data = options.data if options.data is not None else official_data("wildtoolbench") or BUILTIN
    builtin = str(data) == BUILTIN
    path = builtin_wild_path() if builtin else existing_data(data)
    loaded = load_wild(path, options.language)
    table = read_official(recorded) if recorded is not None else None
    sessions = options.sessions
    if table is not None:
        if not {s.id for s in loaded} & set(table):
            raise DataError(
                str(recorded), f"none of its {len(table)} sessions is in the data (first: {next(iter(table))!r})",
                field="id",
            )  # fmt: skip
        # The sessions of the result file are the run's: stored by id, so that rescore rebuilds the same run.
        sessions = [s.id for s in loaded if s.id in table]
    if sessions is not None:
        wanted = set(sessions)
        loaded = [s for s in loaded if s.id in wanted]
    label = BUILTIN if builtin else str(path)
    stored = options.model_copy(update={"data": Path(label), "sessions": sessions})
    return WildBenchmark(limit_items(loaded, options.limit), stored, data_label=label, recorded=table)


def score_run(options: WildScoreOptions) -> RecordedRun:
    """Recorded outputs at ``options.predictions`` as a run: step JSONL replayed, or an official result file.

    The official file's logs are the run (no model is asked; only the sessions it holds are scored).

    Raises:
        DataError: a file is malformed, or the result file shares no session with the data.
    """
    from toolgauge.benchmarks.wildtoolbench.io import detect_format
    from toolgauge.models.offline import NoModel
    from toolgauge.models.spec import display_spec, resolve_model

    chosen = detect_format(options.predictions) if options.format == "auto" else options.format
    run = WildOptions(data=options.data, language=options.language, variant=options.variant)
    if chosen == "official":
        bench = _made(run, options.predictions)
        model = f"official:{options.predictions}"
        return RecordedRun(bench, model, NoModel(model))
    bench = _made(run, None)
    spec = f"replay:{options.predictions}"
    return RecordedRun(bench, display_spec(spec), resolve_model(spec, replay_loader=bench.replay_table))


def session_logs(result: Any) -> Iterator[WildSessionResult]:
    """The session logs of a scored WildToolBench run (``driver.RunResult``; its store must still be open)."""
    scored = result.scored
    if not isinstance(scored, WildScoredRun):  # pragma: no cover - only a WildBenchmark run reaches here
        raise TypeError(f"not a scored WildToolBench run: {type(scored).__name__}")
    return scored.session_logs()


def log_files(files: WildLogFiles) -> dict[str, tuple[Path, Writer]]:
    """The writers of ``--predictions-out`` and ``--steps-out`` (label -> (path, writer of the finished run)).

    Raises:
        UsageError: a file that could not be written (checked now, before the run).
    """
    from toolgauge.benchmarks.wildtoolbench.io import write_official_results, write_steps
    from toolgauge.report.export import check_output_file

    predictions_out, steps_out = files.predictions_out, files.steps_out

    def official(result: Any) -> None:
        assert predictions_out is not None
        run = result.scored.results.run
        write_official_results(predictions_out, session_logs(result), model_name=run.model if run else "")

    def steps(result: Any) -> None:
        assert steps_out is not None
        write_steps(steps_out, session_logs(result))

    writers: dict[str, tuple[Path, Writer]] = {}
    if predictions_out is not None:
        check_output_file(predictions_out, "--predictions-out")
        writers["official result file"] = (predictions_out, official)
    if steps_out is not None:
        check_output_file(steps_out, "--steps-out")
        writers["step JSONL"] = (steps_out, steps)
    return writers


def migrate_wild_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A WildToolBench config stored before the options model (main@ffe3fb4) as the model's fields.

    That config kept a ``recorded`` flag (the outputs are in the store either way) and the number of sessions ``n``:
    without ``sessions`` the run took the first ``n``, which is the ``limit`` unless it is all of them (the data is
    read to tell). (A config of today has a ``limit`` key.)
    """
    if "limit" in config:
        return dict(config)
    old = {k: v for k, v in config.items() if k != "recorded"}
    n = old.pop("n", None)
    if old.get("sessions") is None and isinstance(n, int):
        options = WildOptions.model_validate({k: v for k, v in old.items() if k in ("data", "language")})
        old["limit"] = None if n == len(build(options).items) else n
    return old
