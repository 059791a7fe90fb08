"""The viewer's per-unit verdicts kept in the store (``schema.view_unit_sets`` and ``schema.view_units``).

A run's verdicts are computed once (from its stored outputs, by its benchmark's scoring) and written here in
chunks as they are made, with their counts by verdict and error class; every page then reads only its own
rows. A new computation writes a new generation beside the old one and switches the run's set row to it in
one transaction, so a reader always sees one whole generation; the old rows are deleted after.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from toolgauge.redact import SecretMasker
from toolgauge.results import SampleScore
from toolgauge.store import schema
from toolgauge.store.transcripts import pack, unpack

# Units inserted per statement while a run's verdicts are written.
WRITE_CHUNK = 1000
# Rows read either side of a sample for its previous and next sample before a grouped query decides.
SCAN = 200
TABLES = (schema.view_unit_sets, schema.view_units)


@dataclass(frozen=True)
class UnitSet:
    """A run's current verdicts: their generation, what they were computed from, counts and note."""

    run_id: str
    gen: int
    key: str
    units: int
    verdicts: dict[str, int]
    error_classes: dict[str, int]
    note: str | None
    error_chart: str | None = None


@dataclass(frozen=True)
class UnitFilter:
    """The sample list's filters: exact verdict and error class, a case-insensitive substring of the unit id."""

    verdict: str | None = None
    error_class: str | None = None
    query: str | None = None


@dataclass(frozen=True)
class StoredUnit:
    """One stored unit: its place in the run's order, its verdict and error class, and its score."""

    seq: int
    verdict: str
    error_class: str | None
    score: SampleScore


def ensure_tables(engine: Engine) -> None:
    """Create the two tables where they are missing (a store made before them; two viewers may race).

    Raises ``SQLAlchemyError`` when the store cannot be written (a read-only file or database user): a write
    that changes nothing is tried, as a store that has the tables could still refuse rows.
    """
    for attempt in range(3):
        try:
            schema.metadata.create_all(engine, tables=list(TABLES))
            with engine.begin() as conn:
                conn.execute(delete(schema.view_unit_sets).where(schema.view_unit_sets.c.run_id == ""))
            return
        except SQLAlchemyError:
            if attempt == 2:
                raise
            time.sleep(0.05 * (attempt + 1))


class VerdictTable:
    """Reads and writes the viewer's verdicts of every run of one database (thread-safe: no state of its own)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def current(self, run_id: str) -> UnitSet | None:
        """The run's current set, or None when its verdicts were never written."""
        with self.engine.connect() as conn:
            row = conn.execute(select(schema.view_unit_sets).where(schema.view_unit_sets.c.run_id == run_id)).first()
        if row is None:
            return None
        m = row._mapping
        return UnitSet(
            run_id=m["run_id"], gen=m["gen"], key=m["key"], units=m["units"], verdicts=json.loads(m["verdicts"]),
            error_classes=json.loads(m["error_classes"]), note=m["note"], error_chart=m["error_chart"],
        )  # fmt: skip

    def write(
        self,
        run_id: str,
        key: str,
        units: Iterable[SampleScore],
        note: str | None,
        classify: Callable[[SampleScore], tuple[str, str | None]],
    ) -> UnitSet:
        """Write ``units`` (in order) as the run's new generation and make it current; old rows are deleted after.

        ``classify`` gives a unit's verdict and error class. Each unit is kept as its JSON with secrets masked,
        compressed; only one chunk of units is held at a time.
        """
        masker = SecretMasker()
        gen = secrets.randbelow(2**31 - 1) + 1  # two viewers writing one run's verdicts at once never share one
        verdicts: Counter[str] = Counter()
        classes: Counter[str] = Counter()
        chunk: list[dict[str, Any]] = []
        seq = 0
        try:
            for unit in units:
                verdict, error_class = classify(unit)
                verdicts[verdict] += 1
                if error_class:
                    classes[error_class] += 1
                chunk.append({"run_id": run_id, "gen": gen, "seq": seq, "unit_id": unit.id, "sample_key": unit.sample,
                              "epoch": unit.epoch, "verdict": verdict, "error_class": error_class,
                              "score": _packed(unit, masker)})  # fmt: skip
                seq += 1
                if len(chunk) >= WRITE_CHUNK:
                    self._insert(chunk)
                    chunk = []
            if chunk:
                self._insert(chunk)
            made = UnitSet(run_id, gen, key, seq, dict(verdicts), dict(classes.most_common()), note)
            before = self._switch(made)
        except BaseException:
            self._drop(run_id, gen)
            raise
        if before is not None and before != gen:  # the generation replaced: nobody reads it any more
            self._drop(run_id, before)
        return made

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(schema.view_units), rows)

    def _switch(self, made: UnitSet) -> int | None:
        """Make ``made`` the run's current set; the generation it replaces (None: the first)."""
        values = {"gen": made.gen, "key": made.key, "units": made.units, "verdicts": json.dumps(made.verdicts),
                  "error_classes": json.dumps(made.error_classes), "note": made.note,
                  "created_at": time.time()}  # fmt: skip
        sets = schema.view_unit_sets
        with self.engine.begin() as conn:
            before = conn.execute(select(sets.c.gen).where(sets.c.run_id == made.run_id)).scalar()
            if before is not None:
                conn.execute(update(sets).where(sets.c.run_id == made.run_id).values(**values))
            else:
                conn.execute(insert(sets).values(run_id=made.run_id, **values))
        return before

    def save_error_chart(self, made: UnitSet, svg: str) -> None:
        """Keep the drawing of the set's error classes with it (a newer set of the run is left alone)."""
        sets = schema.view_unit_sets
        with self.engine.begin() as conn:
            conn.execute(
                update(sets).where((sets.c.run_id == made.run_id) & (sets.c.gen == made.gen)).values(error_chart=svg)
            )

    def _drop(self, run_id: str, gen: int) -> None:
        c = schema.view_units.c
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(schema.view_units).where((c.run_id == run_id) & (c.gen == gen)))
        except SQLAlchemyError:
            pass  # rows of a generation no set names are never read; the next write of this run deletes them

    def _where(self, made: UnitSet, chosen: UnitFilter) -> Any:
        c = schema.view_units.c
        parts = [c.run_id == made.run_id, c.gen == made.gen]
        if chosen.verdict:
            parts.append(c.verdict == chosen.verdict)
        if chosen.error_class:
            parts.append(c.error_class == chosen.error_class)
        if chosen.query:
            # Case-insensitive: SQLite's LIKE already is (for ASCII, as its lower() is); PostgreSQL's ILIKE.
            if self.engine.dialect.name == "sqlite":
                parts.append(c.unit_id.contains(chosen.query, autoescape=True))
            else:
                parts.append(c.unit_id.icontains(chosen.query, autoescape=True))
        return and_(*parts)

    def page(self, made: UnitSet, chosen: UnitFilter, offset: int, limit: int) -> tuple[int, list[StoredUnit]]:
        """How many units match, and ``limit`` of them from ``offset`` in the run's order."""
        c = schema.view_units.c
        where = self._where(made, chosen)
        columns = (c.seq, c.verdict, c.error_class, c.score)
        with self.engine.connect() as conn:
            if chosen.query:
                # One pass over the ids in their index finds every match (its count and the page's places); then
                # only the page's rows are read.
                found = select(c.seq).with_hint(schema.view_units, "INDEXED BY ix_view_units_id", "sqlite")
                seqs = sorted(seq for (seq,) in conn.execute(found.where(where)))
                mine = (c.run_id == made.run_id) & (c.gen == made.gen) & c.seq.in_(seqs[offset : offset + limit])
                rows = conn.execute(select(*columns).where(mine).order_by(c.seq)).all()
                return len(seqs), [_stored(row) for row in rows]
            if chosen == UnitFilter():
                total = made.units
            else:
                total = int(conn.execute(select(func.count()).select_from(schema.view_units).where(where)).scalar_one())
            rows = conn.execute(select(*columns).where(where).order_by(c.seq).offset(offset).limit(limit)).all()
        return total, [_stored(row) for row in rows]

    def of_sample(self, made: UnitSet, sample_key: str) -> list[StoredUnit]:
        """Every unit of one sample (all epochs), in the run's order."""
        c = schema.view_units.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.seq, c.verdict, c.error_class, c.score)
                .where((c.run_id == made.run_id) & (c.gen == made.gen) & (c.sample_key == sample_key))
                .order_by(c.seq)
            ).all()
        return [_stored(row) for row in rows]

    def neighbours(self, made: UnitSet, sample_key: str, chosen: UnitFilter) -> tuple[str | None, str | None]:
        """The samples before and after ``sample_key`` in the sample list under ``chosen`` (None at either end).

        The list is of units, and a sample's units need not be next to each other (epochs): the samples are
        ordered by their first unit in the list, so previous and next never go round in a circle.
        """
        c = schema.view_units.c
        where = self._where(made, chosen)
        with self.engine.connect() as conn:

            def first_seq(key: str, *, filtered: bool = True) -> int | None:
                found = select(func.min(c.seq)).where(where if filtered else self._where(made, UnitFilter()))
                return conn.execute(found.where(c.sample_key == key)).scalar()

            mine = first_seq(sample_key)
            if mine is None:  # a sample the filters leave out: its place in the whole list
                mine = first_seq(sample_key, filtered=False)
            if mine is None:
                return None, None
            others = where & (c.sample_key != sample_key)
            # Mostly a sample's units are together: a few rows either side decide; else one grouped query does.
            before, decided = None, False
            best = -1
            ahead = conn.execute(
                select(c.seq, c.sample_key).where(others & (c.seq < mine)).order_by(c.seq.desc()).limit(SCAN)
            ).all()
            for seq, key in ahead:
                if seq < best:
                    decided = True
                    break
                start = first_seq(key)
                if start is not None and start > best:
                    before, best = key, start
            if not decided and len(ahead) == SCAN:
                firsts = _first_units(others)
                before = conn.execute(
                    select(firsts.c.sample_key).where(firsts.c.first < mine).order_by(firsts.c.first.desc()).limit(1)
                ).scalar()
            after = None
            seen: set[str] = set()
            behind = conn.execute(
                select(c.seq, c.sample_key).where(others & (c.seq > mine)).order_by(c.seq).limit(SCAN)
            ).all()
            for _seq, key in behind:
                if key in seen:
                    continue
                start = first_seq(key)
                if start is not None and start > mine:
                    after = key
                    break
                seen.add(key)
            if after is None and len(behind) == SCAN:
                firsts = _first_units(others)
                after = conn.execute(
                    select(firsts.c.sample_key).where(firsts.c.first > mine).order_by(firsts.c.first).limit(1)
                ).scalar()
        return before, after

    def scores(self, made: UnitSet, chunk: int = WRITE_CHUNK) -> Iterator[SampleScore]:
        """Every unit's score of the set, in order, read ``chunk`` rows at a time."""
        c = schema.view_units.c
        start = 0
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(c.seq, c.score)
                    .where((c.run_id == made.run_id) & (c.gen == made.gen) & (c.seq >= start))
                    .order_by(c.seq)
                    .limit(chunk)
                ).all()
            for _seq, data in rows:
                yield _unpacked(data)
            if len(rows) < chunk:
                return
            start = rows[-1][0] + 1


def _first_units(where: Any) -> Any:
    """Each sample's first unit (``first``) among the units ``where`` selects, as a subquery."""
    c = schema.view_units.c
    return select(c.sample_key, func.min(c.seq).label("first")).where(where).group_by(c.sample_key).subquery()


def _packed(unit: SampleScore, masker: SecretMasker) -> bytes:
    return pack(masker.json_text(unit.model_dump_json(exclude_defaults=True)).encode())


def _unpacked(data: bytes) -> SampleScore:
    return SampleScore.model_validate(unpack(data))


def _stored(row: Any) -> StoredUnit:
    seq, verdict, error_class, data = row
    return StoredUnit(seq, verdict, error_class, _unpacked(data))


def stored_sample_count(engine: Engine, run_id: str) -> int:
    """How many samples (tries) of a run are stored: what a running run's verdicts are computed from."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(schema.samples).where(schema.samples.c.run_id == run_id)
            ).scalar_one()
        )
