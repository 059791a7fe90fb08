"""``genesis export-sft RUN --out DIR``: finetuning data from a stored Code-Agent run (paper App. E.1).

Reads the run's per-server verdicts (scored again from the store) and the evaluated model's stored calls,
keeps the trajectories E.1's filters keep (:mod:`.sft`), and writes ``train.jsonl``, ``validation.jsonl``
(server-disjoint) and ``manifest.json`` (what was kept, dropped and why) into DIR. Each file is written
whole or not at all. No model is called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolgauge.cli.common import StoreOpt, guarded, out
from toolgauge.errors import UsageError

if TYPE_CHECKING:
    from toolgauge.benchmarks.tool_genesis.sft import SftExample
    from toolgauge.store import Store


def export_sft(
    run: Annotated[
        str, typer.Argument(help="An eval tool-genesis run with --strategy code-agent (id, start, 'latest').")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for train.jsonl, validation.jsonl, manifest.json.")],
    validation: Annotated[
        float, typer.Option("--validation", min=0.0, max=0.9, help="Fraction of the servers held out for validation.")
    ] = 0.2,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the server split.")] = 0,
    feedback_chars: Annotated[
        int, typer.Option("--feedback-chars", min=100, help="Execution feedback kept per repair example.")
    ] = 2000,
    min_ut_hard: Annotated[
        float, typer.Option("--min-ut-hard", min=0.0, max=1.0, help="Keep servers with at least this UT_hard.")
    ] = 1.0,
    store: StoreOpt = None,
) -> None:
    """Write Direct and Repair examples (chat-format JSONL) from a Code-Agent run's kept trajectories.

    Kept: compliant schema, launched, unit tests pass where counted, no credential needed or present.
    """

    def body() -> None:
        from toolgauge.store import open_store

        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"--out {out_dir}: not a folder")
        st = open_store(store, create=False)
        try:
            manifest, splits = build_export(st, run, validation=validation, seed=seed,
                                            feedback_chars=feedback_chars, min_ut_hard=min_ut_hard)  # fmt: skip
        finally:
            st.close()
        write_export(out_dir, manifest, splits)
        kept = manifest["servers_kept"]
        out.print(
            f"wrote {manifest['examples']['train']} train and {manifest['examples']['validation']} validation "
            f"examples from {kept} of {manifest['servers']} servers to {out_dir}",
            highlight=False,
        )

    guarded(body)


def build_export(
    st: Store, ref: str, *, validation: float, seed: int, feedback_chars: int, min_ut_hard: float
) -> tuple[dict[str, Any], dict[str, list[SftExample]]]:
    """The manifest and the examples per split of run ``ref`` (see :mod:`.sft`)."""
    from toolgauge.api import stored_scores
    from toolgauge.benchmark import rebuild, stored_options
    from toolgauge.benchmarks.tool_genesis import SPEC
    from toolgauge.benchmarks.tool_genesis.options import GenesisOptions
    from toolgauge.benchmarks.tool_genesis.plan import source_of
    from toolgauge.benchmarks.tool_genesis.protocol import GenesisSample
    from toolgauge.benchmarks.tool_genesis.sft import ModelStep, examples_of, keep_reason, split_of

    info = st.get_run(st.resolve_run_id(ref))
    if info is None:
        raise UsageError(f"no run {ref!r} in the store (see: toolgauge runs)")
    config = info.config
    options = stored_options(SPEC, config) if info.benchmark == "tool-genesis" else None
    if not isinstance(options, GenesisOptions) or options.generate is not None or source_of(options) != "generate":
        raise UsageError(f"run {info.id} is not an eval tool-genesis run that generated its servers")
    if options.strategy != "code-agent":
        raise UsageError(f"run {info.id} used --strategy {options.strategy}: export-sft needs a code-agent run")
    servers = {key: s.server for key, s in rebuild(SPEC, config).samples() if isinstance(s, GenesisSample)}
    dropped: dict[str, str] = {}
    kept: dict[str, list[SftExample]] = {}
    for score in stored_scores(st, info).iter_samples():
        server = servers.get(score.id)
        if server is None:
            continue
        calls = [c for c in st.transcript(info.id, score.id) if c.role == "model" and c.response is not None]
        steps = [ModelStep(messages=c.messages or [], response=c.response) for c in calls if c.response is not None]
        texts = [m.content or "" for s in steps for m in s.messages] + [
            json.dumps(s.response.model_dump(mode="json")) for s in steps
        ]
        why = keep_reason(score, server, texts, min_ut_hard) or (None if steps else "no stored model call")
        if why is not None:
            dropped[score.id] = why
            continue
        kept[score.id] = examples_of(server, steps, feedback_chars)
    slugs = [servers[key].server_slug for key in kept]
    splits: dict[str, list[SftExample]] = {"train": [], "validation": []}
    for key, examples in kept.items():
        splits[split_of(servers[key].server_slug, slugs, validation, seed)].extend(examples)
    manifest = {
        "run": info.id,
        "model": info.model,
        "servers": len(kept) + len(dropped),
        "servers_kept": len(kept),
        "dropped": dropped,
        "split": {name: sorted({e.server for e in found}) for name, found in splits.items()},
        "examples": {name: len(found) for name, found in splits.items()},
        "kinds": {
            name: {kind: sum(1 for e in found if e.kind == kind) for kind in ("direct", "repair")}
            for name, found in splits.items()
        },
        "options": {
            "validation": validation,
            "seed": seed,
            "feedback_chars": feedback_chars,
            "min_ut_hard": min_ut_hard,
        },
    }
    return manifest, splits


def write_export(out_dir: Path, manifest: dict[str, Any], splits: dict[str, list[SftExample]]) -> None:
    """Write the two JSONL files and the manifest, each through a temporary file renamed into place."""
    from toolgauge.view.html_report import write_atomic

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, examples in splits.items():
        lines = "".join(json.dumps(e.record(), ensure_ascii=False) + "\n" for e in examples)
        write_atomic(out_dir / f"{name}.jsonl", lines)
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")


def add_sft_command(genesis_app: typer.Typer) -> None:
    """Mount ``genesis export-sft``."""
    genesis_app.command("export-sft")(export_sft)
