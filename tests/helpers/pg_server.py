"""A throwaway PostgreSQL server for tests: initdb in a temporary folder, 127.0.0.1 on a free port.

As root, the server runs as the ``postgres`` (or ``nobody``) user, since PostgreSQL refuses to run as
root. The superuser ``toolgauge`` logs in with a password over TCP, so URLs carry a secret that error
messages must mask. ``stop``/``start``/``kill`` let a test take the server away mid-run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "toolgauge"
# Starts on a new port after the picked one was taken: a port found free is bound only after initdb, and by then
# another process may hold it.
PORT_RETRIES = 3
# What the server logs when its port is taken.
PORT_TAKEN = ("Address already in use", "could not bind")


class PgUnavailable(Exception):
    """No PostgreSQL server can be started here (the reason is the message)."""


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PgUnavailable("PostgreSQL server binaries (initdb, pg_ctl) not found; install the postgresql package")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> tuple[list[str], int | None, int | None]:
    """The command prefix and uid/gid to run the server with (an unprivileged user when we are root)."""
    if os.geteuid() != 0:
        return [], None, None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            if shutil.which("runuser"):
                return ["runuser", "-u", name, "--"], entry.pw_uid, entry.pw_gid
    raise PgUnavailable("running as root and found neither runuser nor a postgres/nobody user to run PostgreSQL as")


class PgServer:
    """One PostgreSQL cluster in a temporary folder; ``url(db)`` gives a store URL with the password."""

    def __init__(self) -> None:
        self.bin = _pg_bin()
        self.prefix, uid, gid = _run_as()
        self.password = secrets.token_hex(12)
        self.port = _free_port()
        # Whether the server ever started: from then on its URLs are out, so it keeps its port.
        self._started = False
        self.base = Path(tempfile.mkdtemp(prefix="toolgauge-pg-"))
        self.data = self.base / "data"
        self.sockets = self.base / "sockets"
        self.log = self.base / "server.log"
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        self.base.chmod(0o755)  # the server user must reach its folders
        for folder in (self.data, self.sockets):
            folder.mkdir()
        if uid is not None and gid is not None:
            for path in (self.data, self.sockets, pwfile):
                os.chown(path, uid, gid)
            self.log.touch()
            os.chown(self.log, uid, gid)
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}", "--auth-host=scram-sha-256",
            "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run(
            [*self.prefix, str(self.bin / tool), *args], capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode != 0:
            raise PgUnavailable(f"{tool} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections.

        The first start moves to a new free port when another process took the picked one (up to
        ``PORT_RETRIES`` times); a restart keeps the port, which the URLs handed out name.

        Raises:
            PgUnavailable: the server did not start (pg_ctl's message).
        """
        for retry in range(PORT_RETRIES + 1):
            logged = self.log.stat().st_size if self.log.exists() else 0
            options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
            try:
                self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "60", "start")
            except PgUnavailable:
                if self._started or retry == PORT_RETRIES or not self._port_taken(since=logged):
                    raise
                self.port = _free_port()
                continue
            self._started = True
            return

    def _port_taken(self, *, since: int) -> bool:
        """Whether the server's log after byte ``since`` says its port was taken."""
        try:
            with self.log.open("rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
        except OSError:
            return False
        return any(sign in text for sign in PORT_TAKEN)

    def stop(self) -> None:
        """Stop at once: every connection is cut, like a server crash or a network loss."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def kill(self) -> None:
        """``kill -9`` the postmaster (its backends then exit on their own)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def url(self, database: str = "postgres", *, password: bool = True) -> str:
        """A ``postgresql://`` store URL for ``database``."""
        secret = f":{self.password}" if password else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its store URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        """Stop the server (if running) and delete its folder."""
        with contextlib.suppress(PgUnavailable):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base, ignore_errors=True)
