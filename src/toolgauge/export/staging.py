"""An output folder that appears whole or not at all.

Every file of an export is written into a temporary folder beside ``--out``; the folder is renamed
to ``--out`` only when everything is written, so a failure (bad input found late, a full disk,
Ctrl-C) leaves ``--out`` as it was and no temporary folder behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from toolgauge.errors import UsageError


def check_out_dir(out: Path, *, force: bool) -> None:
    """Refuse an ``--out`` that is a file, or a non-empty folder without ``force``.

    Raises:
        UsageError: ``out`` cannot be (re)placed.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(f"--out {out}: folder exists and is not empty (give --force to replace it)")


@contextlib.contextmanager
def staged_dir(out: Path, *, force: bool) -> Iterator[Path]:
    """Yield a temporary folder beside ``out``; on a clean exit it replaces ``out``.

    With ``force`` a non-empty ``out`` is replaced (the old folder is removed only after the new one
    is in place). On any exception the temporary folder is removed and ``out`` is left untouched.

    Raises:
        UsageError: ``out`` cannot be (re)placed, or its parent cannot be written.
    """
    out = Path(out)
    check_out_dir(out, force=force)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-", dir=out.parent))
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write beside it: {exc.strerror or exc}") from exc
    try:
        yield tmp
        _replace(tmp, out, force=force)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace(tmp: Path, out: Path, *, force: bool) -> None:
    check_out_dir(out, force=force)  # again: something may have written there meanwhile
    old: Path | None = None
    try:
        if out.is_dir():
            if any(out.iterdir()):
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.replace(out, old / "out")
            else:
                out.rmdir()
        os.replace(tmp, out)
    except OSError as exc:
        if old is not None and not out.exists():
            os.replace(old / "out", out)  # put the old folder back
        raise UsageError(f"--out {out}: cannot put the export in place: {exc.strerror or exc}") from exc
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
