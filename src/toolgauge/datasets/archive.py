"""Read chosen data files out of a wheel (a zip), refusing anything that could land outside the cache."""

from __future__ import annotations

import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from toolgauge.datasets.download import disk_error
from toolgauge.datasets.errors import FetchError

_SAFE_TYPES = (0, stat.S_IFREG, stat.S_IFDIR)  # 0: no Unix mode recorded (a plain file or folder)


def unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    """Why a member must not be extracted (absolute path, ``..``, a link or a device), or None."""
    name = info.filename
    path = PurePosixPath(name)
    if name.startswith(("/", "\\")) or "\\" in name or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if ".." in path.parts:
        return "a '..' path"
    if stat.S_IFMT(info.external_attr >> 16) not in _SAFE_TYPES:
        return "a link or device"
    return None


def extract(archive: Path, prefix: str, wanted: dict[str, int | None], dest: Path, *, label: str) -> None:
    """Copy the members ``prefix + name`` for every ``name`` in ``wanted`` (name -> expected size) into ``dest``.

    Every member is checked, even the ones not wanted: an archive holding one unsafe member is
    refused whole. A member larger than its pinned size is refused without being read out.

    Raises:
        FetchError: not a zip, an unsafe member, a member too large, or a wanted member missing.
    """
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                reason = unsafe_reason(info)
                if reason:
                    raise FetchError(f"{label}: {archive.name}: member {info.filename!r} is {reason}; refused")
            members = [info for info in zf.infolist() if info.filename.startswith(prefix)]
            found = {info.filename[len(prefix) :]: info for info in members if not info.is_dir()}
            missing = sorted(set(wanted) - set(found))
            if missing:
                raise FetchError(f"{label}: {archive.name} has no {prefix}{missing[0]} ({len(missing)} missing)")
            for name, size in wanted.items():
                info = found[name]
                if size is not None and info.file_size != size:
                    raise FetchError(f"{label}: {prefix}{name}: {info.file_size} bytes, pinned {size}; refused")
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as source, target.open("wb") as sink:
                        shutil.copyfileobj(source, sink)
                except OSError as exc:
                    raise disk_error(exc, dest) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise FetchError(f"{label}: {archive.name} is not a readable wheel ({exc})") from None
