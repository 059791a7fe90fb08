"""Make a ToolGate pool run from its options, and read the configs the code before the options model stored.

``eval toolgate``, the ``gate`` pool commands, the API, sweeps and ``rescore`` all make the run here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgauge.benchmarks.toolgate.loader import load_candidates
from toolgauge.benchmarks.toolgate.options import COMMAND_GATES, ToolgateOptions
from toolgauge.benchmarks.toolgate.protocol import PoolBenchmark, PoolSettings
from toolgauge.benchmarks.toolgate.records import Candidate
from toolgauge.errors import UsageError
from toolgauge.selection import existing_data, limit_items

if TYPE_CHECKING:
    from toolgauge.benchmarks.toolgate.construction import ConstructionBenchmark
    from toolgauge.models.base import ModelClient


def build(options: ToolgateOptions) -> PoolBenchmark:
    """The pool run of ``options``: the candidates of its file (of its domain, the first ``limit``), its gates.

    Raises:
        UsageError: a gate without its screens or solver, an unknown domain, no candidates of the domain.
        MissingDataPath, DataError: no candidates file, or a bad line in it.
    """
    if options.command == "run":
        raise UsageError("a gate run is started with `toolgauge gate run`")
    bench = _pool(options)
    if options.ids is not None:  # the keys of a stored pool: rebuilt to score its stored results (no candidates)
        return bench
    domain_filter(options.domain)  # an unknown domain is a usage error before the file is read
    assert options.candidates is not None  # the options model checks it
    path = existing_data(options.candidates, "--candidates")
    pool = limit_items(candidates_of_domain(load_candidates(path), options.domain, path), options.limit)
    if {"verify", "solve"} & set(bench.settings.gates):
        require_code_environment({c.domain for c in pool}, options.unsafe_no_sandbox)
    resolved = options.model_copy(update={"candidates": path.resolve()})
    return PoolBenchmark(settings=bench.settings, source=str(path.resolve()), pairs=[(c.id, c) for c in pool],
                         domain=options.domain, options=resolved)  # fmt: skip


def stored_pool(options: ToolgateOptions, pairs: list[tuple[str, Candidate | None]]) -> PoolBenchmark:
    """The pool run of ``options`` over candidates taken from a stored run (``gate rescreen``, ``gate solve --run``).

    ``options`` names the run (``source_run``) and which of its candidates (``pool``); their keys are stored.
    """
    keys = tuple(key for key, _ in pairs)
    bench = _pool(options.model_copy(update={"ids": keys}))
    bench.pairs = pairs
    if {"verify", "solve"} & set(bench.settings.gates):
        require_code_environment({c.domain for _, c in pairs if c is not None}, options.unsafe_no_sandbox)
    return bench


def require_code_environment(domains: Iterable[str], unsafe_no_sandbox: bool) -> None:
    """Gates that run code need bubblewrap (or the opt-out) and the libraries of the candidates' domains.

    A domain without a folder in toolgauge is not checked (the gate commands warn of it).

    Raises:
        UsageError: no bubblewrap and no opt-out (how to install it), or a domain's libraries missing (the pip hint).
    """
    from toolgauge.benchmarks.toolgate.domains import domain_names, get_domain
    from toolgauge.sandbox import allow_unisolated, require_isolation

    if unsafe_no_sandbox:
        allow_unisolated(True)
    require_isolation(allow_unsafe=unsafe_no_sandbox)
    for name in sorted(set(domains) & set(domain_names())):
        get_domain(name).require_installed()


def _pool(options: ToolgateOptions) -> PoolBenchmark:
    """The pool run's settings from ``options`` (with the stored keys as its samples, when it has them)."""
    gates = options.chosen_gates()
    if "screens" in gates and not options.screen:
        raise UsageError("give at least one --screen SPEC")
    if "solve" in gates and options.solver is None:
        raise UsageError("give the solver: --solver SPEC")
    settings = PoolSettings(
        command=options.command,  # type: ignore[arg-type]  # "run" is refused above
        gates=gates,
        screens=options.screen if "screens" in gates else (),
        solver=options.solver if "solve" in gates else None,
        time_limit=options.time_limit,
        fixed_order=options.fixed_order,
        all_screens=options.all_screens,
        seed=options.seed,
        solver_steps=options.solver_steps,
        domain_checks=options.domain_checks and "verify" in gates,
    )
    return PoolBenchmark(settings=settings, source=options.source(), pairs=[(key, None) for key in options.ids or ()],
                         domain=options.domain, source_run=options.source_run, options=options)  # fmt: skip


def restore(options: ToolgateOptions) -> PoolBenchmark | ConstructionBenchmark:
    """A stored run's benchmark from its options, to score its stored results again (it runs no gate)."""
    if options.command == "run":
        from toolgauge.benchmarks.toolgate.construction import rescore_run

        assert options.run is not None  # the options model checks it
        return rescore_run(options.run)
    if options.ids is not None:
        return _pool(options)
    if options.candidates is None:
        raise UsageError("this ToolGate run names no candidates file")
    pool = candidates_of_domain(load_candidates(Path(options.candidates)), options.domain, Path(options.candidates))
    return _pool(options.model_copy(update={"ids": tuple(c.id for c in limit_items(pool, options.limit))}))


def roles(values: Mapping[str, Any], model: str) -> dict[str, str]:
    """The model spec of each role a pool run asks for: ``screen:<name>`` per screen, ``solver``."""
    del model  # the gates' models are the screens and the solver, not the evaluated model
    options = ToolgateOptions.model_validate(dict(values))
    if options.command == "run":
        return {}
    gates = options.chosen_gates()
    found = {s.role: s.spec for s in options.screen} if "screens" in gates else {}
    if "solve" in gates and options.solver is not None:
        found[options.solver.name] = options.solver.spec
    return found


def run_model(bench: PoolBenchmark, spec: str, timeout: float) -> tuple[str, ModelClient]:
    """The run's model, shown as its gates and their models.

    The roles answer; a role of ``spec``'s model shares its client (``run_setup.role_clients``), and the pool asks
    it nothing else.
    """
    from toolgauge.models.spec import resolve_model

    return run_label(bench.settings), resolve_model(spec, timeout=timeout)


def run_label(settings: PoolSettings) -> str:
    """The run's model label: the gates and the models that answer them (passwords masked)."""
    from toolgauge.models.spec import display_spec

    parts: list[str] = []
    if "verify" in settings.gates:
        parts.append("verify")
    if "screens" in settings.gates:
        parts += [f"screen:{s.name}" for s in settings.screens]
    if "solve" in settings.gates and settings.solver is not None:
        parts.append(f"solver:{display_spec(settings.solver.spec)}")
    return " + ".join(parts)


def candidates_of_domain(candidates: list[Candidate], domain: str | None, path: Path) -> list[Candidate]:
    """The candidates of ``domain`` (all when None); none left is a usage error naming what the file holds."""
    kept = of_domain(candidates, domain, lambda c: c.domain)
    if not kept:
        raise UsageError(
            f"{path}: no candidates of domain {domain!r} (the file has: {found_domains(c.domain for c in candidates)})"
        )
    return kept


def domain_filter(domain: str | None) -> str | None:
    """Check ``--domain`` before anything is read: an unknown domain is a one-line usage error.

    Raises:
        UsageError: no folder of that name in ``toolgate/domains`` (the message lists the known ones).
    """
    if domain is not None:
        from toolgauge.benchmarks.toolgate.domains import get_domain

        get_domain(domain)
    return domain


def found_domains(domains: Iterable[str | None]) -> str:
    """``chem 3, fem 1``: how many items of each domain (``unknown`` for None), for a message."""
    counts: dict[str, int] = {}
    for name in domains:
        key = name or "unknown"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def of_domain(items: Sequence[Any], domain: str | None, domain_of: Callable[[Any], str | None]) -> list[Any]:
    """The items of ``domain`` (all of them when it is None)."""
    if domain is None:
        return list(items)
    return [item for item in items if domain_of(item) == domain]


_STORED_POOL = re.compile(r"run:(?P<run>\S+) \((?P<pool>\w+)\)")


def migrate_toolgate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A ToolGate config stored before the options model (main@ffe3fb4), or a ``gate run``'s, as the model's fields.

    A pool run kept ``kind: pool``, its settings (screens and solver as records with ``model``; its gates even when
    they were its command's, which the options leave unsaid), the resolved candidates file and the number ``n`` of
    candidates it took (the first ``n`` of its domain: ``limit``); a pool taken from a stored run kept
    ``source_run`` and the keys ``ids``. A ``gate run`` keeps ``kind: construction``.
    """
    kind = config.get("kind")
    if kind is None:
        return dict(config)
    old = {k: v for k, v in config.items() if k not in ("kind", "n", "epochs")}
    if kind == "construction":
        return {"command": "run", "run": {k: v for k, v in old.items() if k != "command"}}
    if kind != "pool":
        raise UsageError("this ToolGate run is neither a pool run nor a gate run")
    values: dict[str, Any] = {
        **{k: v for k, v in old.items() if k not in ("screens", "candidates", "ids")},
        "screen": old.get("screens") or (),
    }
    if list(values.get("gates") or ()) == list(COMMAND_GATES.get(str(values.get("command")), ())):
        del values["gates"]  # the command's own gates, which the options leave unsaid (so the run resumes)
    if "ids" in old:
        found = _STORED_POOL.fullmatch(str(old.get("candidates", "")))
        values.update(ids=old["ids"], pool=found["pool"] if found else None)
    else:
        values.update(candidates=old["candidates"], limit=config["n"])
    return values
