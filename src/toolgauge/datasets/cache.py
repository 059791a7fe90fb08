"""Where fetched datasets live: ``<root>/<name>/<revision>/``, its manifest, and the per-dataset pull lock.

The root is ``$TOOLGAUGE_DATA_DIR``, else ``~/.cache/toolgauge/data``. A revision folder exists only
once every file in it has verified (a pull renames its temporary folder into place), so a folder that
is there is complete. Its manifest (``.toolgauge-data.json``) records every file's sha256: what
``verify`` checks against, and where a hash first learned on download is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from toolgauge.datasets.registry import Dataset

MANIFEST = ".toolgauge-data.json"
TEMP_PREFIX = ".pull-"


class Manifest(BaseModel):
    """What a pull fetched and verified: the source it came from and every file's sha256."""

    model_config = ConfigDict(extra="forbid")

    name: str
    revision: str
    source: str
    files: dict[str, str]


def cache_root() -> Path:
    """The cache's root folder (``$TOOLGAUGE_DATA_DIR``, else ``~/.cache/toolgauge/data``)."""
    given = os.environ.get("TOOLGAUGE_DATA_DIR")
    # Absolute: a run records the folder it read, and a rescore from elsewhere must find it again.
    return (Path(given).expanduser() if given else Path.home() / ".cache" / "toolgauge" / "data").absolute()


def dataset_dir(dataset: Dataset) -> Path:
    """The folder that holds a dataset's revisions, its lock and any pull in progress."""
    return cache_root() / dataset.name


def revision_dir(dataset: Dataset) -> Path:
    """The folder of the pinned revision (it exists only when complete and verified)."""
    return dataset_dir(dataset) / dataset.revision


def cached_path(dataset: Dataset) -> Path | None:
    """What ``--data`` names for the cached dataset (its folder or its entry file), or None if not cached."""
    folder = revision_dir(dataset)
    if not (folder / MANIFEST).is_file():
        return None
    return folder / dataset.entry if dataset.entry else folder


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of a revision folder, or None when it is missing or unreadable."""
    try:
        return Manifest.model_validate_json((folder / MANIFEST).read_bytes())
    except (OSError, ValidationError):
        return None


@contextlib.contextmanager
def pull_lock(dataset: Dataset, on_wait: Callable[[Path], None]) -> Iterator[None]:
    """Hold the dataset's pull lock; ``on_wait(lock_path)`` is called once if another process holds it first.

    An advisory ``fcntl`` lock: the kernel drops it when its holder dies, so a killed pull never
    leaves the next one waiting.
    """
    folder = dataset_dir(dataset)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
