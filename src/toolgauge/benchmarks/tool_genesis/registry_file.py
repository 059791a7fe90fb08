"""The ``registry.json`` of a generation run: kept current while servers are generated, completed at the end.

During a run, :class:`RegistryFile` drops a server's entry before its folder is emptied and writes the new
entry as soon as the server is generated (atomically, each time), so an interrupted run leaves a usable
registry. Entries of slugs the run does not touch stay. At the end, :func:`registry_writer` (an output of
``genesis generate``, run by ``cli.common.execute``) adds every scored server, resumed and failed ones
included, from the run's per-server scores. With ``--epochs K`` every try has its own entry: try 1 the
server's slug, try e >= 2 ``<slug>@e<e>`` (pointing at the folder ``<slug>@e<e>/``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from toolgauge.benchmarks.tool_genesis.loader import REGISTRY_NAME, load_registry, write_registry
from toolgauge.benchmarks.tool_genesis.records import GeneratedServer
from toolgauge.driver import RunResult
from toolgauge.engine.epochs import epoch_key
from toolgauge.errors import DataError
from toolgauge.results import SampleScore, ScoredRun


class RegistryFile:
    """The registry of ``out_dir``: its entries (read on first use) and their atomic rewrite."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / REGISTRY_NAME

    @cached_property
    def entries(self) -> dict[str, GeneratedServer]:
        """The entries, starting from the file as it was first read (an unreadable one is replaced)."""
        if not self.path.is_file():
            return {}
        try:
            return load_registry(self.path, check_schemas=False)
        except DataError:
            return {}

    def drop(self, slug: str) -> None:
        """Remove ``slug``'s entry (its folder is about to be emptied; a stale entry would point at nothing)."""
        if self.entries.pop(slug, None) is not None:
            self.write()

    def put(self, servers: Iterable[GeneratedServer]) -> None:
        """Add or replace the entries of ``servers`` and rewrite the file."""
        for server in servers:
            self.entries[server.slug] = server
        self.write()

    def write(self) -> None:
        """Rewrite the file from the entries."""
        write_registry(self.path, self.entries.values())


def record_metadata(server: GeneratedServer) -> dict[str, Any]:
    """A server record as the ``metadata`` of its per-server score (the error is the score's explanation)."""
    return {
        "schema_path": str(server.schema_path),
        "code_path": str(server.code_path),
        "server_id": server.server_id,
        "server_name": server.server_name,
    }


def record_of(score: SampleScore) -> GeneratedServer:
    """The server record a per-server score was made from (the inverse of :func:`record_metadata`).

    The score of try e >= 2 (``--epochs``) is that try's entry, ``<slug>@e<e>``.
    """
    slug = epoch_key(score.id, score.epoch)
    return GeneratedServer.model_validate({**score.metadata, "slug": slug, "error": score.explanation})


def registry_writer(out_dir: Path) -> Callable[[RunResult[Any]], None]:
    """The final write of ``out_dir``'s registry: every scored server's record over the entries already there."""

    def write(result: RunResult[Any]) -> None:
        RegistryFile(out_dir).put(generated_servers(result.scored))

    return write


def generated_servers(scored: ScoredRun) -> list[GeneratedServer]:
    """The server record of every per-server score of a generation run."""
    return [record_of(score) for score in scored.iter_samples()]
