"""What reproduces a run (``EvalResults.provenance``).

The toolgauge version, the model and its options, the benchmark's options and the sha256 of every data
file or directory its options name, and which official datasets (name and revision) they are.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from toolgauge.results import Provenance

# Option names that are sampling settings of the model rather than of the benchmark.
MODEL_OPTION_NAMES = ("temperature", "top_p", "max_tokens", "tool_choice", "seed", "reasoning_effort")
_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def path_sha256(path: Path) -> str:
    """A file's sha256, or a directory's: the sha256 of its files' relative names and sha256s, sorted.

    A directory's line per file is ``<relative posix path> NUL <sha256> LF``; links to directories are
    not followed.
    """
    if not path.is_dir():
        return file_sha256(path)
    lines = sorted(f"{f.relative_to(path).as_posix()}\0{file_sha256(f)}\n" for f in _files(path))
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _files(root: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(root):
        for name in names:
            found = Path(folder) / name
            if found.is_file():
                yield found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def data_files(config: Mapping[str, Any]) -> dict[str, str]:
    """``{path as given: sha256}`` for every option value that names an existing file or directory.

    A value counts as a path when it has a ``/`` or a file suffix and exists (``"strict"`` or
    ``"builtin:sample"`` are not paths).
    """
    found: dict[str, str] = {}
    for text in _strings(config):
        if not text or text in found or "\n" in text or len(text) > 4096:
            continue
        path = Path(text).expanduser()
        if ("/" in text or os.sep in text or path.suffix) and path.exists():
            try:
                found[text] = path_sha256(path)
            except OSError:
                continue  # unreadable: recorded as absent rather than failing a finished run
    return found


def dataset_revisions(config: Mapping[str, Any]) -> dict[str, str]:
    """``{dataset name: revision}`` for every option value that names a file or folder in the data cache."""
    from toolgauge.datasets.cache import revision_dir
    from toolgauge.datasets.registry import DATASETS

    folders = {revision_dir(d).resolve(): d for d in DATASETS}
    found: dict[str, str] = {}
    for text in _strings(config):
        if not text or "\n" in text or len(text) > 4096:
            continue
        path = Path(text).expanduser().resolve()
        for folder in (path, *path.parents):
            dataset = folders.get(folder)
            if dataset is not None:
                found[dataset.name] = dataset.revision
                break
    return found


def make_provenance(
    *,
    version: str,
    model: str,
    benchmark_options: Mapping[str, Any],
    model_options: Mapping[str, Any] | None = None,
    limit: int | None = None,
    seed: int = 0,
    epochs: int = 1,
) -> Provenance:
    """A run's provenance; its model options: ``model_options`` over the sampling settings of the benchmark's."""
    options = {k: benchmark_options[k] for k in MODEL_OPTION_NAMES if benchmark_options.get(k) is not None}
    options.update({k: v for k, v in (model_options or {}).items() if v is not None})
    if limit is None and isinstance(benchmark_options.get("limit"), int):
        limit = benchmark_options["limit"]
    return Provenance(
        toolgauge_version=version,
        model=model,
        model_options=options,
        benchmark_options=dict(benchmark_options),
        data_files=data_files(benchmark_options),
        datasets=dataset_revisions(benchmark_options),
        limit=limit,
        seed=seed,
        epochs=epochs,
    )
