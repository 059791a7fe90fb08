"""A sample's named steps (``sample_steps``): saved as each finishes, reused when the sample is resumed.

A long sample made of stages (ToolGate's round: proposal, verify, each screen, solve) saves each stage's result
the moment it finishes; a sample stopped by Ctrl-C, ``kill -9`` or a failed write resumes after its last saved
step instead of from the start. Each step row notes the id of the sample's last model call when it was saved
(``calls_through``): before a resume the engine forgets the calls of unfinished samples (``Store.forget_calls``),
and it keeps those, so the transcript of a resumed sample holds the calls of the steps it reused, once, and those
of the work it redid.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import delete, func, inspect, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from toolgauge.store import schema
from toolgauge.store.access import StoreAccess, StorePart
from toolgauge.store.model_calls import roles_of


class SampleSteps(StorePart):
    """Saves and reads the named steps of a run's samples.

    Args:
        access: the store's engine, flush (a step's model calls are committed before the step) and write errors.
    """

    def __init__(self, access: StoreAccess):
        super().__init__(access)
        self._table_seen = False

    def _has_table(self) -> bool:
        """Whether the store has the table (one opened read-only may be older); checked once it is found."""
        if not self._table_seen:
            self._table_seen = schema.sample_steps.name in inspect(self._engine).get_table_names()
        return self._table_seen

    def load(self, run_id: str, sample_key: str) -> dict[str, Any]:
        """The saved steps of one sample: name -> value (decoded JSON), in the order they were saved."""
        if not self._has_table():
            return {}
        c = schema.sample_steps.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                select(c.step, c.value)
                .where((c.run_id == run_id) & (c.sample_key == sample_key))
                .order_by(c.created_at, c.step)
            )
            return {step: json.loads(value) for step, value in rows}

    def save(self, run_id: str, sample_key: str, step: str, value: Any) -> None:
        """Commit one finished step now, after the model calls buffered before it; a step saved before is kept.

        Raises:
            StoreWriteError: the database refused the write (the sample then fails and runs again on resume).
        """
        self._flush()
        c = schema.model_calls.c
        mine = (c.run_id == run_id) & ((c.sample_key == sample_key) | roles_of(self._engine, sample_key))
        try:
            with self._engine.begin() as conn:
                last_call = conn.execute(select(func.max(c.id)).where(mine)).scalar()
                conn.execute(
                    schema.sample_steps.insert().values(
                        run_id=run_id,
                        sample_key=sample_key,
                        step=step,
                        value=json.dumps(value, ensure_ascii=False),
                        calls_through=last_call,
                        created_at=time.time(),
                    )
                )
        except IntegrityError:
            return  # the same (run, sample, step) was saved before: the first value stands
        except SQLAlchemyError as exc:
            raise self._write_error(f"saving step {step!r} of sample {sample_key} of run {run_id}", exc) from exc

    def drop_from(self, run_id: str, sample_key: str, step: str) -> None:
        """Forget ``step`` and the steps saved after it, with the model calls made since the step before it.

        For a step a resumed sample cannot reuse (saved by another version): it is redone, and so is what followed.
        """
        s = schema.sample_steps.c
        c = schema.model_calls.c
        of_sample = (s.run_id == run_id) & (s.sample_key == sample_key)
        self._flush()
        try:
            with self._engine.begin() as conn:
                rows = conn.execute(
                    select(s.step, s.calls_through).where(of_sample).order_by(s.created_at, s.step)
                ).all()
                names = [name for name, _ in rows]
                if step not in names:
                    return
                at = names.index(step)
                before = [through for _, through in rows[:at] if through is not None]
                calls = (c.run_id == run_id) & ((c.sample_key == sample_key) | roles_of(self._engine, sample_key))
                if before:
                    calls = calls & (c.id > max(before))
                conn.execute(delete(schema.model_calls).where(calls))
                conn.execute(delete(schema.sample_steps).where(of_sample & s.step.in_(names[at:])))
        except SQLAlchemyError as exc:
            raise self._write_error(f"dropping step {step!r} of sample {sample_key} of run {run_id}", exc) from exc

    def of_run(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Every saved step of a run: sample -> step -> value (finished and unfinished samples alike)."""
        if not self._has_table():
            return {}
        c = schema.sample_steps.c
        found: dict[str, dict[str, Any]] = {}
        with self._engine.connect() as conn:
            for key, step, value in conn.execute(
                select(c.sample_key, c.step, c.value).where(c.run_id == run_id).order_by(c.sample_key, c.created_at)
            ):
                found.setdefault(key, {})[step] = json.loads(value)
        return found

    def kept_through(self, run_id: str) -> dict[str, int]:
        """Per sample with a saved step that followed a model call: the id of the last call its steps keep."""
        if not self._has_table():
            return {}
        c = schema.sample_steps.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                select(c.sample_key, func.max(c.calls_through))
                .where((c.run_id == run_id) & c.calls_through.is_not(None))
                .group_by(c.sample_key)
            )
            return {key: int(through) for key, through in rows}
