"""The ``gate`` commands: the gates on a candidate pool, and the audit, export and rescreen of stored pools.

- ``gate verify|screen|solve|check --candidates FILE``: one gate (``check``: all three, cheapest first) on a pool;
  ``--json`` prints ``{"candidates": [...], "counts": {...}}``.
- ``gate audit RUN_ID|--candidates FILE``: position bias, middle value, agreement, duplicates, topics, funnel.
- ``gate export RUN_ID --out DIR``: the accepted pool re-shuffled for release, each item's record, the rejection log.
- ``gate rescreen RUN_ID --screen SPEC``: new screens on a stored pool, as a new run (post hoc; no generator sees it).
- ``gate run``: the construction loop, mounted from :mod:`toolgauge.benchmarks.toolgate.cli_run`.
- ``gate seeds DOMAIN``: a domain's seed items, mounted from :mod:`toolgauge.benchmarks.toolgate.cli_seeds`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sys
import time
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from toolgauge.benchmark import CommandGroups
from toolgauge.benchmarks.toolgate.answers import derive_seed, new_seed, permutation_from_seed, shuffled
from toolgauge.benchmarks.toolgate.audit import AuditReport, audit, pool_candidates
from toolgauge.benchmarks.toolgate.build import (
    build,
    candidates_of_domain,
    domain_filter,
    found_domains,
    run_label,
    stored_pool,
)
from toolgauge.benchmarks.toolgate.chain import chained_records, release_duplicates
from toolgauge.benchmarks.toolgate.cli_options import (
    GateFlags,
    NoScriptTimeLimitOpt,
    SolveTimeLimitOpt,
    VerifyTimeLimitOpt,
    gate_command,
)
from toolgauge.benchmarks.toolgate.cli_run import add_run_command
from toolgauge.benchmarks.toolgate.cli_seeds import add_seeds_command
from toolgauge.benchmarks.toolgate.loader import load_candidates
from toolgauge.benchmarks.toolgate.options import CANDIDATES_HELP, DOMAIN_CHECKS_HELP, ToolgateOptions
from toolgauge.benchmarks.toolgate.protocol import (
    SOLVER_ROLE,
    PoolBenchmark,
    PoolCommand,
    PoolSettings,
    StoredPool,
    document_of,
    stored_records,
    unique_keys,
)
from toolgauge.benchmarks.toolgate.records import Candidate, RecordedCandidate, decide
from toolgauge.benchmarks.toolgate.report import bias_table, funnel_table
from toolgauge.benchmarks.toolgate.resources import role_resources, role_usage
from toolgauge.cli.common import (
    EngineDefaults,
    RunFlags,
    execute,
    out,
    require_finite,
    run_command,
    warn,
)
from toolgauge.errors import UsageError
from toolgauge.models.base import ModelClient
from toolgauge.options import validated
from toolgauge.redact import redact_tree
from toolgauge.report.console import json_for_terminal
from toolgauge.report.export import write_atomic, write_lines_atomic
from toolgauge.report.terminal import esc, pct
from toolgauge.selection import existing_data, limit_items
from toolgauge.store import NO_CALLS

GATE_ENGINE = EngineDefaults(concurrency=4, timeout=120.0)

DomainChecksOpt = Annotated[
    bool,
    typer.Option(
        "--domain-checks",
        help=DOMAIN_CHECKS_HELP,
    ),
]
CandidatesOpt = Annotated[Path, typer.Option("--candidates", help=CANDIDATES_HELP)]


class PoolChoice(StrEnum):
    """Which candidates of a stored run ``gate rescreen`` screens and ``gate solve --run`` solves."""

    verified = "verified"
    survivors = "survivors"
    accepted = "accepted"
    all = "all"


# --- building the run ----------------------------------------------------------------------------------------


def gate_options(command: PoolCommand, gate: GateFlags, limit: int | None, **more: Any) -> ToolgateOptions:
    """The options of a pool run from a command's gate options (``more``: the command's own fields).

    Raises:
        UsageError: a value the options model refuses (one line naming the option).
    """
    require_finite(time_limit=gate.time_limit)  # the gate commands' own wording of it
    values = {"command": command, **dataclasses.asdict(gate), "limit": limit, **more}  # GateFlags: the model's fields
    return validated(ToolgateOptions, values, prefix="--")


def _roles(settings: PoolSettings, timeout: float) -> dict[str, ModelClient]:
    roles: dict[str, ModelClient] = {}
    if "screens" in settings.gates:
        roles.update({s.role: s.client(timeout=timeout) for s in settings.screens})
    if "solve" in settings.gates and settings.solver is not None:
        roles[SOLVER_ROLE] = settings.solver.client(timeout=timeout)
    return roles


def _check_environment(bench: PoolBenchmark) -> None:
    """Say which candidates' domains have no folder here: the libraries their scripts need are not checked.

    (``build`` refused already a run whose gates run code without bubblewrap or its domains' libraries.)
    """
    from toolgauge.benchmarks.toolgate.domains import domain_names

    if not {"verify", "solve"} & set(bench.settings.gates):
        return
    for name in sorted({c.domain for _, c in bench.pairs if c is not None} - set(domain_names())):
        warn(f"domain {name!r} has no folder in toolgauge: the libraries its scripts need are not checked")


def _run(bench: PoolBenchmark, flags: RunFlags) -> None:
    from toolgauge.models.offline import NoModel

    _check_environment(bench)
    label = run_label(bench.settings)
    roles = _roles(bench.settings, flags.timeout)
    execute(bench, label, flags, client=NoModel(label), roles=roles, unit="candidate", document=document_of)


# --- gate verify | screen | solve | check ------------------------------------------------------------------

# gate screen and gate rescreen: the screens and how they see the candidates; they run no script.
screen_options = gate_command(
    "screen",
    "domain",
    "time_limit",
    "fixed_order",
    "all_screens",
    "seed",
    annotations={"time_limit": NoScriptTimeLimitOpt},
)


@gate_command("domain", "time_limit", "unsafe_no_sandbox", annotations={"time_limit": VerifyTimeLimitOpt})
def gate_verify(
    candidates: CandidatesOpt, domain_checks: DomainChecksOpt = False, *, gate: GateFlags, flags: RunFlags
) -> None:
    """Gate 1 on a pool: run each solution in the sandbox; its one ANSWER: must select the proposed option."""
    options = gate_options("verify", gate, flags.limit, candidates=candidates, domain_checks=domain_checks)
    _run(build(options), flags)


@screen_options
def gate_screen(candidates: CandidatesOpt, *, gate: GateFlags, flags: RunFlags) -> None:
    """Gate 2 on a pool: each screen answers three shuffled presentations; 2 of 3 right rejects as too_easy."""
    _run(build(gate_options("screen", gate, flags.limit, candidates=candidates)), flags)


@gate_command(
    "solver",
    "domain",
    "time_limit",
    "solver_steps",
    "unsafe_no_sandbox",
    annotations={"time_limit": SolveTimeLimitOpt},
)
def gate_solve(
    candidates: Annotated[
        Path | None, typer.Option("--candidates", help="A candidates JSONL file; or give --run.")
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option("--run", help="Solve a stored run's pool instead (an id, a unique start of one, or 'latest')."),
    ] = None,
    pool: Annotated[
        PoolChoice,
        typer.Option("--pool", help="With --run: which of its candidates (as for rescreen; default survivors)."),
    ] = PoolChoice.survivors,
    *,
    gate: GateFlags,
    flags: RunFlags,
) -> None:
    """Gate 3 on a pool: a solver with run_python and submit_answer must find the proposed option in time."""
    if (run_id is None) == (candidates is None):
        raise UsageError("give --candidates FILE or --run RUN (one of them)")
    if candidates is not None:
        _run(build(gate_options("solve", gate, flags.limit, candidates=candidates)), flags)
        return
    assert run_id is not None
    if gate.solver is None:
        raise UsageError("give the solver: --solver SPEC")
    _run(_stored_pool_run(flags, run_id, pool, gate, "solve"), flags)


@gate_command(
    "screen",
    "solver",
    "domain",
    "time_limit",
    "fixed_order",
    "all_screens",
    "seed",
    "solver_steps",
    "unsafe_no_sandbox",
)
def gate_check(
    candidates: CandidatesOpt, domain_checks: DomainChecksOpt = False, *, gate: GateFlags, flags: RunFlags
) -> None:
    """All three gates on a pool, cheapest first (verify, screens, solve), stopping at the first rejection."""
    options = gate_options("check", gate, flags.limit, candidates=candidates, domain_checks=domain_checks)
    _run(build(options), flags)


# --- stored pools -------------------------------------------------------------------------------------------


def read_pool(store_url: str | None, ref: str, domain: str | None = None) -> StoredPool:
    """The recorded candidates of the stored run ``ref`` (an id, a unique start of one, or ``latest``).

    With ``domain``, only that domain's candidates (``StoredPool.of_domain``).

    Raises:
        UsageError: an unknown domain, no such run, or a run that recorded no candidates (of that domain).
    """
    from toolgauge.store import open_store

    domain_filter(domain)
    st = open_store(store_url, create=False)
    try:
        run_id = st.resolve_run_id(ref)
        everything = stored_records(st, run_id)
    finally:
        st.close()
    if not everything.records and not everything.errors:
        raise UsageError(f"run {run_id} ({everything.benchmark}) recorded no candidates")
    pool = everything.of_domain(domain)
    if not pool.records and not pool.errors:
        found = found_domains(everything.domain_of(r) for _, r in everything.records)
        raise UsageError(f"run {run_id} has no candidates of domain {domain!r} (it has: {found})")
    return pool


def _selected(records: Sequence[tuple[str, RecordedCandidate]], which: PoolChoice) -> list[RecordedCandidate]:
    chosen: list[RecordedCandidate] = []
    verified = {id(c) for c in pool_candidates(r for _, r in records)}
    for _, record in records:
        outcome = record.outcome.outcome
        if record.candidate is None:
            continue
        if (
            which is PoolChoice.all
            or (which is PoolChoice.verified and id(record.candidate) in verified)
            or (which is PoolChoice.survivors and outcome != "rejected")
            or (which is PoolChoice.accepted and outcome == "accepted")
        ):
            chosen.append(record)
    return chosen


PoolChoiceOpt = Annotated[
    PoolChoice,
    typer.Option(
        "--pool",
        help="verified: every candidate not rejected by its format or local verification; survivors: not "
        "rejected by any gate; accepted: solved; all: every well-formed candidate.",
    ),
]


@screen_options
def gate_rescreen(
    run_id: Annotated[str, typer.Argument(help="The stored pool: a run id, a unique start of one, or 'latest'.")],
    pool: PoolChoiceOpt = PoolChoice.verified,
    *,
    gate: GateFlags,
    flags: RunFlags,
) -> None:
    """New screens on a stored pool, as a new run: a post-hoc audit whose results never reach a generator."""
    if not gate.screen:
        raise UsageError("give at least one --screen SPEC")
    _run(_stored_pool_run(flags, run_id, pool, gate, "rescreen"), flags)


def _stored_pool_run(
    flags: RunFlags, run_id: str, pool: PoolChoice, gate: GateFlags, command: PoolCommand
) -> PoolBenchmark:
    """A pool run over the ``pool`` candidates of a stored run (``rescreen``, ``solve --run``): a new run.

    Raises:
        UsageError: no such run, or it has no such candidates (of that domain).
    """
    source = read_pool(flags.store, run_id, gate.domain)
    chosen = _selected(source.records, pool)
    if not chosen:
        of = f" of domain {gate.domain!r}" if gate.domain is not None else ""
        raise UsageError(f"run {source.run_id} has no {pool.value} candidates{of} to {command}")
    pairs: list[tuple[str, Candidate | None]] = [(key, record.candidate) for key, record in unique_keys(chosen)]
    options = gate_options(command, gate, None, source_run=source.run_id, pool=pool.value)
    return stored_pool(options, limit_items(pairs, flags.limit))


def _print_audit(report: AuditReport, source: str, console: Console) -> None:
    console.print(f"toolgate audit · {esc(source)} · pool {report.pool}", highlight=False)
    console.print(funnel_table(report, title="funnel"))
    bias = bias_table(report)
    if bias is not None:
        console.print(bias)
    mv = report.middle_value
    ranks = ", ".join(f"{rank}: {count}" for rank, count in mv.rank_counts.items())
    console.print(
        f"middle value: {mv.middle} of {mv.numeric} numeric candidates (middle_value_share "
        f"{pct(mv.middle_value_share)}, middle_value_accuracy {pct(mv.middle_value_accuracy)}); "
        f"answer rank counts (0 = smallest) {ranks}",
        highlight=False,
    )
    for agreement in report.agreement:
        table = Table(title=f"agreement {esc(agreement.first)} / {esc(agreement.second)}", title_justify="left")
        table.add_column("")
        table.add_column(f"{esc(agreement.second)} too easy", justify="right")
        table.add_column(f"{esc(agreement.second)} passed", justify="right")
        table.add_row(f"{esc(agreement.first)} too easy", str(agreement.both_solved), str(agreement.only_first))
        table.add_row(f"{esc(agreement.first)} passed", str(agreement.only_second), str(agreement.neither))
        console.print(table)
        console.print(f"agreement {pct(agreement.agreement)} of {agreement.n}", highlight=False)
    dup = report.duplicates
    console.print(
        f"duplicates: {dup.exact_duplicates} exact ({len(dup.exact_groups)} groups), {dup.near_pairs} near pairs "
        f"(Jaccard >= {dup.threshold}) in {len(dup.clusters)} clusters; largest cluster "
        f"{pct(dup.largest_cluster_share)} of {dup.candidates}",
        highlight=False,
    )
    for group in dup.exact_groups[:10]:
        console.print(f"  exact: {esc(', '.join(group))}", highlight=False)
    for cluster in dup.clusters[:10]:
        console.print(f"  near: {esc(', '.join(cluster))}", highlight=False)
    topics = report.topics
    herfindahl = "—" if topics.herfindahl is None else f"{topics.herfindahl:.4f}"
    shown = ", ".join(f"{esc(name)} {count}" for name, count in list(topics.counts.items())[:10])
    console.print(
        f"topics: {len(topics.counts)} over {topics.candidates} candidates; top {esc(topics.top_topic or '—')} "
        f"{pct(topics.top_share)}; Herfindahl {herfindahl}"
        f"{'; ' + shown if shown else ''}",
        highlight=False,
    )


@gate_command("domain", "time_limit", offline=True, annotations={"time_limit": NoScriptTimeLimitOpt})
def gate_audit(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Stored runs (ids, unique starts of ones, or 'latest'); several: a chain of runs, each on the "
            "survivors of the one before, joined into one record per candidate. Or give --candidates.",
            show_default=False,
        ),
    ] = None,
    candidates: Annotated[
        Path | None, typer.Option("--candidates", help="Audit a candidates file instead of a stored run.")
    ] = None,
    *,
    gate: GateFlags,
    flags: RunFlags,
) -> None:
    """Audit a pool: screens' letter bias, the middle-value cue, screen agreement, duplicates, topics, funnel.

    Several runs (a chain: the construction run, then rescreens and a solve on survivors) are audited as one pool,
    each candidate with every run's gates: the paper's Table 4 funnel.
    """
    if bool(run_ids) == (candidates is not None):
        raise UsageError("give a run id or --candidates FILE (one of them; several run ids: a chain)")
    if candidates is not None:
        domain_filter(gate.domain)
        pool = candidates_of_domain(load_candidates(existing_data(candidates, "--candidates")), gate.domain, candidates)
        records = [RecordedCandidate(candidate=c, outcome=decide(c.id)) for c in pool]
        source = str(candidates)
    else:
        assert run_ids
        chain = [read_pool(flags.store, ref, gate.domain) for ref in run_ids]
        records = chained_records([[record for _, record in stored.records] for stored in chain])
        source = ("runs " if len(chain) > 1 else "run ") + " -> ".join(stored.run_id for stored in chain)
        resources = _resources(flags.store, chain)
    if gate.domain is not None:
        source += f" · domain {gate.domain}"
    report = audit(records)
    if flags.as_json:
        data = {
            "source": source,
            "domain": gate.domain,
            "middle_value_share": report.middle_value.middle_value_share,
            "middle_value_accuracy": report.middle_value.middle_value_accuracy,
            **report.model_dump(mode="json"),
            **({"resources": resources} if candidates is None else {}),
        }
        sys.stdout.write(json_for_terminal(json.dumps(redact_tree(data), indent=2, ensure_ascii=False)) + "\n")
        return
    _print_audit(report, source, out)
    if candidates is None:
        out.print(resources_table(resources))


def _resources(store_url: str | None, chain: Sequence[StoredPool]) -> list[dict[str, Any]]:
    """Resource use per run and role (the paper's Table 2): the records' wall times, the call log's tokens."""
    from toolgauge.store import open_store

    st = open_store(store_url, create=False)
    try:
        rows = []
        for stored in chain:
            usage = role_usage(st, stored.run_id)
            for role in role_resources((r for _, r in stored.records), (), usage):
                used = role.usage or NO_CALLS
                rows.append({"run": stored.run_id, "role": role.role, "episodes": role.episodes,
                             "wall_seconds": role.wall_seconds, "agent_hours": role.agent_hours,
                             "calls": used.calls, "input_tokens": used.input_tokens,
                             "output_tokens": used.output_tokens, "model_seconds": used.model_seconds})  # fmt: skip
        return rows
    finally:
        st.close()


def resources_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Table 2 in the terminal: one row per run and role."""
    table = Table(title="resource use per role", title_justify="left")
    for header in ("run", "role", "episodes", "wall s", "agent-hours", "calls", "input tokens", "output tokens"):
        table.add_column(header, justify="left" if header in ("run", "role") else "right")
    for row in rows:
        wall, hours = row["wall_seconds"], row["agent_hours"]
        table.add_row(esc(row["run"]), esc(row["role"]), str(row["episodes"]),
                      "—" if wall is None else f"{wall:.1f}", "—" if hours is None else f"{hours:.3f}",
                      str(row["calls"]), str(row["input_tokens"]), str(row["output_tokens"]))  # fmt: skip
    return table


# --- gate export ----------------------------------------------------------------------------------------------

SUMMARY_FIELDS = (
    "key",
    "id",
    "outcome",
    "rejected_by",
    "reason",
    "topic",
    "answer",
    "release_seed",
    "verify_seconds",
    "screens",
    "solve_answer",
    "solve_seconds",
    "error",
    "duplicate_of",
    "audit_flags",
)


def _summary_row(
    key: str, record: RecordedCandidate | None, error: str | None, release: Mapping[str, Any]
) -> dict[str, Any]:
    if record is None:
        return {"key": key, "id": key, "error": error}
    gates = record.outcome.gates
    return {
        "key": key,
        "id": record.outcome.id,
        "outcome": record.outcome.outcome,
        "rejected_by": record.outcome.rejected_by,
        "reason": record.outcome.reason,
        "topic": record.candidate.topic if record.candidate is not None else None,
        "answer": release.get("answer"),
        "release_seed": release.get("seed"),
        "verify_seconds": gates.verify.seconds if gates.verify is not None else None,
        "screens": "; ".join(f"{s.screen} {s.correct}/{len(s.calls)}" for s in gates.screens or ()),
        "solve_answer": gates.solve.answer if gates.solve is not None else None,
        "solve_seconds": gates.solve.seconds if gates.solve is not None else None,
        "audit_flags": "; ".join(gates.audit_flags) or None,
    }


def _csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SUMMARY_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in SUMMARY_FIELDS})
    return buffer.getvalue()


def export_pool(
    pool: StoredPool,
    out_dir: Path,
    *,
    seed: int | None,
    config: Mapping[str, Any],
    domain: str | None = None,
    keep_duplicates: bool = False,
) -> dict[str, Any]:
    """Write the release files of a stored pool into ``out_dir``; returns the manifest.

    ``accepted.jsonl``: each accepted candidate in the candidate format, options re-shuffled by a fresh seed
    (``derive_seed(seed, id, "release")`` with ``seed``) and the answer letter updated. ``records.jsonl``: per
    accepted item, the release seed and permutation and the full record (the gates' letters are in the recorded
    candidate's order, which it holds). ``rejections.jsonl``: every other candidate with its full record, and each
    sample without a verdict. ``summary.csv``: one row per sample. ``manifest.json``: the run, counts and files.

    As the paper, exact duplicates are removed before release (unless ``keep_duplicates``): an accepted candidate
    whose question equals an earlier accepted one's (:func:`~toolgauge.benchmarks.toolgate.chain.release_duplicates`)
    goes to ``rejections.jsonl`` with ``duplicate_of``, its summary row names the copy kept, and the manifest's
    ``duplicates`` lists them (``counts.accepted`` counts the candidates released).
    """
    lines = {"accepted": [], "records": [], "rejections": []}  # type: dict[str, list[str]]
    rows: list[dict[str, Any]] = []
    counts = {"accepted": 0, "rejected": 0, "flagged": 0, "passed": 0, "errors": 0}
    outcomes = pool.outcomes()
    accepted = [(key, r) for key, r, _ in outcomes if r is not None and r.outcome.outcome == "accepted"]
    copies = {} if keep_duplicates else release_duplicates(accepted)

    def dumps(data: Any) -> str:
        return json.dumps(redact_tree(data), ensure_ascii=False) + "\n"

    for key, record, error in outcomes:
        release: dict[str, Any] = {}
        if record is None:
            counts["errors"] += 1
            lines["rejections"].append(dumps({"key": key, "id": key, "outcome": None, "error": error}))
        elif key in copies and record.candidate is not None:
            lines["rejections"].append(
                dumps(
                    {
                        "key": key,
                        "id": record.outcome.id,
                        "duplicate_of": copies[key],
                        "outcome": record.outcome.model_dump(mode="json"),
                        "candidate": record.candidate.model_dump(mode="json"),
                        "run": pool.run_id,
                    }
                )
            )
        elif record.outcome.outcome == "accepted" and record.candidate is not None:
            counts["accepted"] += 1
            candidate = record.candidate
            release_seed = derive_seed(seed, candidate.id, "release") if seed is not None else new_seed()
            released = shuffled(candidate, release_seed)
            release = {
                "seed": release_seed,
                "permutation": permutation_from_seed(release_seed),
                "answer": released.answer,
                "original_answer": candidate.answer,
            }
            lines["accepted"].append(dumps(released.model_dump(mode="json")))
            lines["records"].append(
                dumps(
                    {
                        "key": key,
                        "id": candidate.id,
                        "release": release,
                        "audit_flags": record.outcome.gates.audit_flags,
                        "candidate": candidate.model_dump(mode="json"),
                        "outcome": record.outcome.model_dump(mode="json"),
                        "run": pool.run_id,
                    }
                )
            )
        else:
            counts[record.outcome.outcome] += 1
            lines["rejections"].append(
                dumps(
                    {
                        "key": key,
                        "id": record.outcome.id,
                        "audit_flags": record.outcome.gates.audit_flags,
                        "outcome": record.outcome.model_dump(mode="json"),
                        "candidate": record.candidate.model_dump(mode="json") if record.candidate else record.raw,
                        "run": pool.run_id,
                    }
                )
            )
        rows.append({**_summary_row(key, record, error, release), "duplicate_of": copies.get(key)})
    files = {
        "accepted": "accepted.jsonl",
        "records": "records.jsonl",
        "rejections": "rejections.jsonl",
        "summary": "summary.csv",
    }
    try:  # the folder --out names, not its parents
        out_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out_dir}: cannot create the folder: {exc.strerror or exc}") from None
    for name in ("accepted", "records", "rejections"):
        write_lines_atomic(out_dir / files[name], lines[name])
    write_atomic(out_dir / files["summary"], _csv(rows))
    manifest = {
        "run": pool.run_id,
        "benchmark": pool.benchmark,
        "config": dict(config),
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "release_seed": seed,
        "domain": domain,
        "counts": counts,
        # Exact duplicates left out of accepted.jsonl (copy -> the key kept); empty with keep_duplicates.
        "duplicates": dict(copies),
        "files": files,
    }
    write_atomic(out_dir / "manifest.json", json.dumps(redact_tree(manifest), indent=2, ensure_ascii=False) + "\n")
    return manifest


@gate_command("domain", "time_limit", offline=True, annotations={"time_limit": NoScriptTimeLimitOpt})
def gate_export(
    run_id: Annotated[str, typer.Argument(help="The stored pool: a run id, a unique start of one, or 'latest'.")],
    out_dir: Annotated[Path, typer.Option("--out", help="The folder to write the release files into.")],
    seed: Annotated[
        int | None, typer.Option("--seed", help="Derive the release permutations from this number (default: fresh).")
    ] = None,
    keep_duplicates: Annotated[
        bool,
        typer.Option("--keep-duplicates", help="Release exact duplicate questions too (default: the first copy only)."),
    ] = False,
    *,
    gate: GateFlags,
    flags: RunFlags,
) -> None:
    """Export the accepted pool for release (re-shuffled, exact duplicates left out), every record and rejection."""
    from toolgauge.store import open_store

    pool = read_pool(flags.store, run_id, gate.domain)
    st = open_store(flags.store, create=False)
    try:
        run = st.get_run(pool.run_id)
    finally:
        st.close()
    config = run.config if run is not None else {}
    manifest = export_pool(pool, out_dir, seed=seed, config=config, domain=gate.domain, keep_duplicates=keep_duplicates)
    if flags.as_json:
        sys.stdout.write(json_for_terminal(json.dumps(manifest, indent=2, ensure_ascii=False)) + "\n")
        return
    counts = manifest["counts"]
    copies = len(manifest["duplicates"])
    left_out = f" ({copies} exact duplicate{'s' if copies != 1 else ''} left out)" if copies else ""
    if not counts["accepted"]:
        warn(f"run {pool.run_id} has no accepted candidates: accepted.jsonl is empty")
    out.print(
        f"exported run {esc(pool.run_id)} to {esc(out_dir)}: {counts['accepted']} accepted{left_out}; "
        f"{counts['rejected']} rejected, {counts['flagged']} flagged, {counts['passed']} passed and "
        f"{counts['errors']} without a verdict in rejections.jsonl; summary.csv has every candidate",
        highlight=False,
    )


# --- mounting ------------------------------------------------------------------------------------------------


def add_commands(groups: CommandGroups) -> None:
    """Mount the ``gate`` group: verify, screen, solve, check, audit, export, rescreen, run and seeds."""
    gate_app = typer.Typer(
        help="ToolGate: build tool-dependent items through executable gates, and audit and export the pools.",
        no_args_is_help=True,
    )
    pool_command = run_command(model=False, engine=GATE_ENGINE, sampling=False, epochs=False)
    for name, command in (
        ("verify", gate_verify),
        ("screen", gate_screen),
        ("solve", gate_solve),
        ("check", gate_check),
        ("rescreen", gate_rescreen),
    ):
        gate_app.command(name)(pool_command(command))
    gate_app.command("audit")(gate_audit)
    gate_app.command("export")(gate_export)
    add_run_command(gate_app)
    add_seeds_command(gate_app)
    groups.root.add_typer(gate_app, name="gate")
