"""Stage an untrusted server's files for the sandbox without ever following a link.

The harness runs as root, so a plain copy of a generated server's folder would read whatever a symbolic
link or a hard link in it names (``/proc/self/environ`` holds the harness's API keys, ``/etc/shadow`` the
host's password hashes) and hand it to the untrusted server. Here every file is opened with
``O_NOFOLLOW``; symbolic links, hard links (``st_nlink > 1``) and anything that is not a regular file or a
directory refuse the whole server with a reason; the walk never leaves the folder, and the file count and
the total size are capped.

Staging folders are named ``toolgauge-stage-*`` and hold an ``owner`` file (pid and start time of the
process that made them), so the next run removes those a killed run left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

STAGE_PREFIX = "toolgauge-stage-"
OWNER_FILE = "owner"
WORK_DIR = "work"
PID_FILE = "sandbox.pid"
# Copying a server's folder stops at these sizes (then only the code file is copied).
MAX_COPIED_FILES = 200
MAX_COPIED_BYTES = 50 * 1024 * 1024
# A staging folder without an owner file is being created by another process; after this it is litter.
_UNOWNED_GRACE_SECONDS = 3600.0
_CHUNK = 1 << 20


class UnsafeFile(Exception):
    """A server file that must not be copied or read (a link, a special file, too large)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class StagingError(Exception):
    """The server's files could not be staged; ``reason`` is recorded on the server."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def _open_regular(path: Path, shown: str) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading only if it is a regular file with one link; return the fd and its stat."""
    try:
        before = os.lstat(path)
    except OSError as exc:
        raise UnsafeFile(f"{shown}: cannot stat: {exc.strerror}") from None
    _check_mode(before, shown)
    try:
        # O_NOFOLLOW: a symlink swapped in after the lstat fails here; O_NONBLOCK: a fifo cannot block us.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeFile(f"{shown}: cannot open: {exc.strerror}") from None
    info = os.fstat(fd)
    try:
        _check_mode(info, shown)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise UnsafeFile(f"{shown}: replaced while being opened")
    except UnsafeFile:
        os.close(fd)
        raise
    return fd, info


def _check_mode(info: os.stat_result, shown: str) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(f"{shown}: a symbolic link (links are never followed)")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{shown}: not a regular file")
    if info.st_nlink > 1:
        raise UnsafeFile(f"{shown}: a hard link (link count {info.st_nlink}); it may be a file from elsewhere")


def read_untrusted_file(path: Path, max_bytes: int = MAX_COPIED_BYTES) -> bytes:
    """Read a file an untrusted party wrote (a schema file, a code file) without following links.

    Raises:
        UnsafeFile: a symbolic link, a hard link, not a regular file, unreadable, or larger than ``max_bytes``.
    """
    fd, info = _open_regular(Path(path), str(path))
    try:
        if info.st_size > max_bytes:
            raise UnsafeFile(f"{path}: larger than {max_bytes} bytes")
        data = bytearray()
        while chunk := os.read(fd, _CHUNK):
            data += chunk
            if len(data) > max_bytes:
                raise UnsafeFile(f"{path}: larger than {max_bytes} bytes")
        return bytes(data)
    finally:
        os.close(fd)


def _copy_file(source: Path, dest: Path, shown: str, budget: int) -> int:
    """Copy one file safely; return its size. ``budget`` is how many bytes may still be copied."""
    fd, _ = _open_regular(source, shown)
    copied = 0
    try:
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            while chunk := os.read(fd, _CHUNK):
                copied += len(chunk)
                if copied > budget:
                    raise UnsafeFile(f"the server's files exceed {MAX_COPIED_BYTES} bytes")
                os.write(out, chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return copied


def _walk(folder: Path) -> tuple[list[Path], list[Path], bool]:
    """List the folder's directories and files (relative), never descending through a link.

    Returns the directories, the files and whether the folder is too large to copy whole.

    Raises:
        UnsafeFile: an entry that is a link or a special file.
    """
    dirs: list[Path] = []
    files: list[Path] = []
    total = 0
    pending = [Path()]
    while pending:
        rel = pending.pop()
        with os.scandir(folder / rel) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                path = rel / entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    if entry.name != "__pycache__":
                        dirs.append(path)
                        pending.append(path)
                    continue
                _check_mode(info, f"unsafe file: {path}")
                files.append(path)
                total += info.st_size
                if len(files) + len(dirs) > MAX_COPIED_FILES or total > MAX_COPIED_BYTES:
                    return dirs, files, True
    return dirs, files, False


def stage_server_files(
    code_path: Path, workdir: Path, extra_files: Sequence[Path] = (), *, shim: Path, shim_name: str
) -> Path:
    """Copy the server into ``workdir`` and return the code file's path there.

    The code file's folder is copied whole (helper modules, data files) unless it looks shared: it
    holds a ``registry.json`` or more than 200 entries / 50 MB; then only the code file is copied.
    No link is followed and no special file is read (see the module docstring). The harness's ``shim``
    is copied in as ``shim_name``.

    Raises:
        StagingError: the code file is missing, or a file is unsafe (``unsafe file: ...``).
    """
    code_path = Path(code_path)
    try:
        code_info = os.lstat(code_path)
    except OSError:
        raise StagingError(f"code file not found: {code_path}") from None
    folder = code_path.parent
    try:
        _check_mode(code_info, f"unsafe file: {code_path.name}")
        shared = os.path.lexists(folder / "registry.json")
        dirs: list[Path] = []
        files = [Path(code_path.name)]
        if not shared:
            dirs, files, shared = _walk(folder)
            if shared:
                dirs, files = [], [Path(code_path.name)]
        budget = MAX_COPIED_BYTES
        for rel in dirs:
            (workdir / rel).mkdir(parents=True, exist_ok=True)
        for rel in files:
            budget -= _copy_file(folder / rel, workdir / rel, f"unsafe file: {rel}", budget)
        for extra in extra_files:
            name = Path(extra).name
            budget -= _copy_file(Path(extra), workdir / name, f"unsafe file: {name}", budget)
        shutil.copyfile(shim, workdir / shim_name)
    except UnsafeFile as exc:
        raise StagingError(exc.reason) from None
    except OSError as exc:
        raise StagingError(f"cannot copy the server files: {exc.strerror or exc}") from None
    return workdir / code_path.name


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when it does not exist."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 else None


def _owner_alive(owner: str) -> bool:
    try:
        pid_text, started = owner.split()
        pid = int(pid_text)
    except ValueError:
        return False
    return _start_time(pid) == started


def new_staging_dir(root: Path | None = None) -> Path:
    """Create a staging folder owned by this process (with an empty ``work`` folder inside)."""
    stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=root))
    pid = os.getpid()
    (stage / OWNER_FILE).write_text(f"{pid} {_start_time(pid) or 0}\n", encoding="ascii")
    (stage / WORK_DIR).mkdir()
    return stage


def sweep_stale_staging(root: Path | None = None) -> list[Path]:
    """Remove staging folders whose owner process is gone (left by a killed run); return them."""
    import time

    base = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        candidates = [p for p in base.iterdir() if p.name.startswith(STAGE_PREFIX)]
        for stage in candidates:
            if stage.is_symlink() or not stage.is_dir():
                continue
            try:
                owner = (stage / OWNER_FILE).read_text(encoding="ascii")
            except FileNotFoundError:
                with contextlib.suppress(OSError):
                    if time.time() - stage.stat().st_mtime < _UNOWNED_GRACE_SECONDS:
                        continue
                owner = ""
            except (OSError, UnicodeDecodeError):
                owner = ""
            if not _owner_alive(owner):
                shutil.rmtree(stage, ignore_errors=True)
                removed.append(stage)
    return removed
