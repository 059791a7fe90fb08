"""One generated server's folder: its file names, making it fresh, writing an answer into it, checking it.

Each server lives in ``<out>/<slug>/``: ``tools.json`` (the schema, what L1 and L2 read), ``server.py``
(started as ``python server.py``) and, for the direct strategy, ``raw_answer.txt``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from toolgauge.benchmarks.tool_genesis.answer import ParsedAnswer
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer, GenesisServer
from toolgauge.engine.epochs import EPOCH_MARK, epoch_key

SCHEMA_FILE = "tools.json"
CODE_FILE = "server.py"
RAW_FILE = "raw_answer.txt"


def server_dir(out_dir: Path, slug: str) -> Path:
    """The folder of one generated server."""
    return Path(out_dir) / _safe_name(slug)


def try_dir(out_dir: Path, slug: str, epoch: int = 1) -> Path:
    """The folder of try ``epoch`` of a server (``--epochs``): try 1 its own folder, try e >= 2 ``<folder>@e<e>``.

    A server's folder name never holds ``@`` (:func:`_safe_name`), so no try's folder is another server's.
    """
    folder = server_dir(out_dir, slug)
    return folder if epoch == 1 else folder.with_name(f"{folder.name}{EPOCH_MARK}{epoch}")


def _safe_name(slug: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in slug).strip(".")
    return cleaned or "server"


def fresh_dir(folder: Path) -> None:
    """Empty the server's own folder so files of an earlier attempt cannot pass as this one's."""
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


def server_record(server: GenesisServer, folder: Path, error: str | None, epoch: int = 1) -> GeneratedServer:
    """The registry record of try ``epoch`` of the server in ``folder`` (``error`` set when it could not be produced).

    Try 1 is the server's own entry; try e >= 2 is keyed ``<slug>@e<e>`` (``engine.epochs.epoch_key``).
    """
    return GeneratedServer(
        slug=epoch_key(server.server_slug, epoch),
        schema_path=folder / SCHEMA_FILE,
        code_path=folder / CODE_FILE,
        error=error,
        server_id=server.server_id,
        server_name=server.server_name or server.server_slug,
    )


def write_answer_files(folder: Path, parsed: ParsedAnswer) -> list[str]:
    """Write the schema and the code found in an answer (whichever were found); return the file names written."""
    written: list[str] = []
    if parsed.schema_payload is not None:
        text = json.dumps(parsed.schema_payload, indent=2, ensure_ascii=False) + "\n"
        (folder / SCHEMA_FILE).write_bytes(text.encode("utf-8", errors="replace"))
        written.append(SCHEMA_FILE)
    if parsed.code is not None:
        (folder / CODE_FILE).write_bytes(parsed.code.encode("utf-8", errors="replace"))
        written.append(CODE_FILE)
    return written


def check_files(folder: Path) -> str | None:
    """Why ``folder`` does not hold a usable schema and server (None when it does)."""
    problems: list[str] = []
    schema = folder / SCHEMA_FILE
    if not schema.is_file():
        problems.append(f"no {SCHEMA_FILE} was written")
    else:
        try:
            payload = json.loads(schema.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # also UnicodeDecodeError, a ValueError
            problems.append(f"{SCHEMA_FILE} is not valid JSON: {str(exc)[:200]}")
        else:
            if not isinstance(payload, dict):
                problems.append(f"{SCHEMA_FILE} is not a JSON object")
    if not (folder / CODE_FILE).is_file():
        problems.append(f"no {CODE_FILE} was written")
    return "; ".join(problems) or None
