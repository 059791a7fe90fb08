"""Check files against their pins: sha256, or the git blob id (sha1 of ``blob <size>``, a NUL, the bytes) and size."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from toolgauge.datasets.cache import MANIFEST, read_manifest, revision_dir
from toolgauge.datasets.registry import Dataset, FilePin

_BLOCK = 1 << 20


@dataclass(frozen=True)
class Digests:
    """A file's size, sha256 and git blob id, from one read."""

    size: int
    sha256: str
    git_blob: str


def digests(path: Path) -> Digests:
    """Hash a file once for both its sha256 and its git blob id."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            sha256.update(block)
            blob.update(block)
    return Digests(size, sha256.hexdigest(), blob.hexdigest())


def mismatch(found: Digests, pin: FilePin, recorded: str | None = None) -> str | None:
    """What is wrong with a file whose digests are ``found`` (None: it is what the pin says).

    ``recorded`` is the sha256 a manifest recorded on first download, checked too.
    """
    if pin.size is not None and found.size != pin.size:
        return f"{found.size} bytes, pinned {pin.size}"
    if pin.sha256 is not None and found.sha256 != pin.sha256:
        return f"sha256 {found.sha256[:16]}…, pinned {pin.sha256[:16]}…"
    if pin.git_blob is not None and found.git_blob != pin.git_blob:
        return f"git blob {found.git_blob[:12]}…, pinned {pin.git_blob[:12]}…"
    if recorded is not None and found.sha256 != recorded:
        return f"sha256 {found.sha256[:16]}…, recorded {recorded[:16]}… on download"
    return None


def verify_cached(dataset: Dataset) -> list[str]:
    """Re-hash the cached revision: one line per problem (missing, changed, or an extra file); [] when intact.

    Raises:
        FileNotFoundError: the dataset is not cached.
    """
    folder = revision_dir(dataset)
    manifest = read_manifest(folder)
    if manifest is None:
        raise FileNotFoundError(folder)
    problems = []
    for name, pin in sorted(dataset.pins.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        wrong = mismatch(digests(path), pin, manifest.files.get(name))
        if wrong:
            problems.append(f"{name}: {wrong}")
    extra = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    problems += [f"{name}: not part of the dataset" for name in extra if name not in dataset.pins and name != MANIFEST]
    return problems
