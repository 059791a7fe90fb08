"""Run leases: the ``run_locks`` row that lets one process at a time run a run, refreshed as the process writes.

Inserting the row is the atomic "acquire" (its primary key, on SQLite and PostgreSQL alike); the holder refreshes
``heartbeat_at`` with its group commits (``heartbeat``), at most every ``HEARTBEAT_SECONDS``. Who the holder is, and
whether it is gone, is :mod:`toolgauge.store.lease`.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, delete, insert, inspect, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from toolgauge.errors import RunLocked, StoreWriteError
from toolgauge.store import schema
from toolgauge.store.lease import HEARTBEAT_SECONDS, LockHolder, is_stale, pid_start_time, this_host


class Leases:
    """The leases one store (one process) holds, and the ``run_locks`` rows behind them.

    Args:
        engine: the store's engine.
        write_error: builds the one-line error of a failed write (``what``, the database error).
    """

    def __init__(self, engine: Engine, *, write_error: Callable[[str, BaseException], StoreWriteError]):
        self._engine = engine
        self._write_error = write_error
        self.owner = secrets.token_hex(16)
        self.held: set[str] = set()
        # Runs whose lease another process took over (ours went stale): never written into again.
        self.taken_over: set[str] = set()
        # When the held leases were last refreshed (time.monotonic()).
        self.last_heartbeat = 0.0

    def acquire(self, run_id: str) -> None:
        """Take the lease on ``run_id``, or raise ``RunLocked`` naming the holder; see ``Store.acquire_run_lock``."""
        if run_id in self.held:
            return
        for _ in range(5):
            now = time.time()
            row = {
                "run_id": run_id,
                "owner": self.owner,
                "hostname": this_host(),
                "pid": os.getpid(),
                "pid_started": pid_start_time(os.getpid()),
                "acquired_at": now,
                "heartbeat_at": now,
            }
            try:
                with self._engine.begin() as conn:
                    conn.execute(insert(schema.run_locks).values(**row))
            except IntegrityError:
                holder = self.holder(run_id)
                if holder is None:
                    continue  # released in between: try again
                if not is_stale(holder):
                    raise RunLocked(
                        f"run {run_id} is being run by {holder.describe()}; wait for it or stop it"
                    ) from None
                # Take over only the stale lease we looked at; a racing taker deletes nothing and loses the insert.
                self._delete(run_id, holder.owner, f"taking over the stale lease on run {run_id}")
                continue
            except SQLAlchemyError as exc:
                raise self._write_error(f"taking the lease on run {run_id}", exc) from exc
            self.held.add(run_id)
            self.last_heartbeat = time.monotonic()
            return
        raise RunLocked(f"run {run_id}: could not take its lease (other processes keep taking it); try again")

    def release(self, run_id: str) -> None:
        """Give back the lease on ``run_id`` (a no-op when not held)."""
        if run_id not in self.held:
            return
        self.held.discard(run_id)
        self._delete(run_id, self.owner, f"releasing the lease on run {run_id}")

    def _delete(self, run_id: str, owner: str, what: str) -> None:
        """Delete ``owner``'s lease row on ``run_id`` (none if another owner holds it now)."""
        locks = schema.run_locks.c
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(schema.run_locks).where((locks.run_id == run_id) & (locks.owner == owner)))
        except SQLAlchemyError as exc:
            raise self._write_error(what, exc) from exc

    def live_holders(self) -> dict[str, LockHolder]:
        """Return the holders of every lease that is not stale, by run id."""
        if "run_locks" not in inspect(self._engine).get_table_names():
            return {}  # a store written before leases existed, opened read-only
        with self._engine.connect() as conn:
            rows = conn.execute(select(schema.run_locks)).mappings().all()
        holders = [LockHolder(**dict(r)) for r in rows]
        return {h.run_id: h for h in holders if not is_stale(h)}

    def holder(self, run_id: str) -> LockHolder | None:
        """Return who holds the lease on ``run_id``, or None."""
        with self._engine.connect() as conn:
            row = conn.execute(select(schema.run_locks).where(schema.run_locks.c.run_id == run_id)).mappings().first()
        return LockHolder(**dict(row)) if row else None

    def heartbeat_due(self) -> bool:
        """Whether a lease is held and was last refreshed ``HEARTBEAT_SECONDS`` ago or more."""
        return bool(self.held) and time.monotonic() - self.last_heartbeat >= HEARTBEAT_SECONDS

    def check_not_taken_over(self) -> None:
        """Raise ``StoreWriteError`` when another process took over one of our runs (we must not write again)."""
        if self.taken_over:
            raise self.taken_over_error(min(self.taken_over))

    def heartbeat(self, conn: Connection) -> None:
        """Refresh the held leases in ``conn``'s transaction; raise ``StoreWriteError`` when one was taken over."""
        locks = schema.run_locks.c
        for run_id in sorted(self.held):
            result = conn.execute(
                update(schema.run_locks)
                .where((locks.run_id == run_id) & (locks.owner == self.owner))
                .values(heartbeat_at=time.time())
            )
            if result.rowcount == 0:
                # Our lease went stale and another process took the run over: never write into it again.
                self.held.discard(run_id)
                self.taken_over.add(run_id)
                raise self.taken_over_error(run_id)
        self.last_heartbeat = time.monotonic()

    def taken_over_error(self, run_id: str) -> StoreWriteError:
        """The error of a write into a run whose lease another process took over."""
        return StoreWriteError(
            f"run {run_id}: another process took over this run's lease (ours went stale); stopping, "
            "the rows it did not write are re-done by that process"
        )
