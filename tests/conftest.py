"""Shared fixtures: where the real benchmark data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """Return the real-data directory (``TOOLGAUGE_DATA_DIR``, default ``../shared/data``)."""
    return Path(os.environ.get("TOOLGAUGE_DATA_DIR", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real-data directory; tests that need it skip with a reason where it is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set TOOLGAUGE_DATA_DIR)")
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
    """A real PostgreSQL server for the session (tests/pg_server.py); skips with the reason where none can start."""
    from pg_server import PgServer, PgUnavailable

    try:
        server = PgServer()
        server.start()
    except PgUnavailable as exc:
        if os.environ.get("CI") == "true":  # CI installs PostgreSQL (make test): a skip there would hide that
            pytest.fail(f"CI must run the PostgreSQL store tests: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    yield server
    server.close()


@pytest.fixture()
def pg_url(pg_server) -> str:
    """A store URL (with password) for a fresh database of its own on the session's PostgreSQL server."""
    import secrets

    return pg_server.create_database(f"tg_{secrets.token_hex(6)}")
