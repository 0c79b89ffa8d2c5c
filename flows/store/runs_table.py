"""The `runs` table: one row per run and night, appended LAST; the commit point readers pin.

Delta commits one table at a time, so a run that replaces a night in five tables makes five
commits, and a reader of the tables' latest versions can see some replaced and some not. The
run's rows in `OUT/runs` are appended in one commit after every table is written; each row
names the version of every output table at that moment (`table_versions`, a JSON object
`{"episode_scores": 12, ...}`), so the latest succeeded run names one consistent state of the
whole output, and so does any earlier succeeded run (time travel by run id).

What a reader sees:

- `read_pinned(out, table)`: the table at the version the latest succeeded run recorded.
  Mid-run and after a crash it keeps seeing the previous succeeded run's output, whole.
- `delta.read_table(out, table)` (the latest version): mid-run, the nights this run has
  already replaced in the tables it has reached; after a crash, that same mix, until the next
  run repairs it. Only tools that want "whatever is there now" should read this way.

The repair rule: every run, once it holds the lease and before it writes, calls `repair`:
each table whose latest version is beyond the version pinned by the latest succeeded run is
restored to the pinned version (a new commit, so history keeps the failed run's commits), and
a table no succeeded run pinned is emptied. Latest is then pinned again. The failed run's
nights are nights that no succeeded row records with their current input fingerprint
(`night_fingerprints`), so `nightly` plans them as new or changed and scores them again.
Files a killed run wrote but never committed stay until `Output.vacuum` (which deletes
them whatever their age). An output whose first run was killed holds no runs table: every
table it committed is emptied, and its files are no obstacle (`delta.check_layout`).

A failed run that could still write (an exception, not kill -9) appends its rows with status
`failed`: they record what it did but pin nothing. "Latest" is the greatest `finished` time
(then `started`, then run id): runs do not overlap (the lease), so host clocks would have to
be wrong by the length of a run to misorder them.

A row's `night` is the night it reports (`None`: the undated night of an undated dump); a run
that scored nothing (nightly with nothing new) writes one row with `night` and
`input_fingerprint` both null, so that it still records the versions it saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import polars as pl
from deltalake import CommitProperties, DeltaTable, write_deltalake

from flows.store.delta.nights import check_night
from flows.store.delta.tables import (
    Opened,
    _open,
    checkpoint_due,
    history,
    read_table,
    restore,
    schema_mode_of,
    table_version,
    truncate,
)
from flows.store.errors import StorageError, translate
from flows.store.location import Location, storage_options
from schemas.columns import PINNING, RUN_COUNTS, RunStatus
from schemas.tables import RUNS_TABLE

RUNS: Final = RUNS_TABLE.name
RUNS_SCHEMA: Final = pl.Schema(RUNS_TABLE.dtypes)


# Commits that change no row: a table whose only commits after its pin are these is intact.
_NO_DATA_CHANGE: Final = frozenset({"VACUUM START", "VACUUM END"})


@dataclass(frozen=True)
class RunRow:
    """One row of the runs table: a run's report on one night (or on no night)."""

    run_id: str
    kind: str  # score | nightly | rescore
    status: RunStatus
    started: datetime
    finished: datetime
    night: str | None
    table_versions: Mapping[str, int]
    counts: Mapping[str, int] = field(default_factory=dict)  # RUN_COUNTS; absent = null
    formula_versions: Mapping[str, str] = field(default_factory=dict)
    scorer_version: str = ""
    input_fingerprint: str | None = None
    formula_set: Mapping[str, str] = field(default_factory=dict)
    input: str | None = None
    partitioned: bool | None = None
    files: Sequence[Mapping[str, Any]] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        unknown = set(self.counts) - set(RUN_COUNTS)
        if unknown:
            raise ValueError(f"unknown count columns {sorted(unknown)}")
        check_night(self.night)
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "status": RunStatus(self.status).value,
            "started": self.started.astimezone(UTC),
            "finished": self.finished.astimezone(UTC),
            "night": self.night,
            **{column: self.counts.get(column) for column in RUN_COUNTS},
            "formula_versions": json.dumps(dict(self.formula_versions), sort_keys=True),
            "formula_set": json.dumps(dict(self.formula_set), sort_keys=True),
            "scorer_version": self.scorer_version,
            "input": self.input,
            "partitioned": self.partitioned,
            "input_fingerprint": self.input_fingerprint,
            "files": json.dumps(list(self.files), default=str),
            "table_versions": json.dumps(dict(self.table_versions), sort_keys=True),
            "details": json.dumps(dict(self.details), sort_keys=True, default=str),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RunRow:
        return cls(
            run_id=record["run_id"],
            kind=record["kind"],
            status=RunStatus(record["status"]),
            started=record["started"],
            finished=record["finished"],
            night=record["night"],
            table_versions=json.loads(record["table_versions"]),
            counts={c: record[c] for c in RUN_COUNTS if record[c] is not None},
            formula_versions=json.loads(record["formula_versions"]),
            scorer_version=record["scorer_version"],
            input_fingerprint=record["input_fingerprint"],
            formula_set=json.loads(record.get("formula_set") or "{}"),
            input=record.get("input"),
            partitioned=record.get("partitioned"),
            files=json.loads(record.get("files") or "[]"),
            details=json.loads(record.get("details") or "{}"),
        )


def record_run(
    location: Location, rows: Sequence[RunRow], existing: DeltaTable | None = None
) -> int:
    """Append a run's rows in one commit (the run's commit point); the runs table's version.

    Every row of the run carries the same run id and `table_versions`: the versions of all
    output tables after the run's last write (`delta.table_versions`). A row's status is its
    night's: a run that scored some nights and failed others records both (the failed
    nights' rows pin nothing), and the run's own outcome is in `details`. ``existing``: the
    runs table as the run holding the lease opened it (moved to the version recorded), else
    opened here.
    """
    if not rows:
        raise ValueError("a run records at least one row")
    first = rows[0]
    for row in rows:
        if (row.run_id, dict(row.table_versions)) != (first.run_id, dict(first.table_versions)):
            raise ValueError("the rows of one run share run id and table versions")
    frame = pl.DataFrame([row.record() for row in rows], schema=RUNS_SCHEMA, orient="row")
    where = location.child(RUNS)
    pinning = [row for row in rows if row.status.value in PINNING]
    metadata = {"run_id": first.run_id, "status": (pinning or list(rows))[0].status.value}
    ready = frame.to_arrow(compat_level=pl.CompatLevel.oldest())  # no string views
    properties = CommitProperties(custom_metadata=metadata)
    if existing is None:
        existing = _open(where)  # opened once: the append, its columns and its version
    try:
        if existing is None:
            write_deltalake(
                where.uri,
                ready,
                mode="append",
                storage_options=storage_options(where) or None,
                commit_properties=properties,
            )
            return 0  # the table's first version
        write_deltalake(
            existing,
            ready,
            mode="append",
            commit_properties=properties,
            # Columns a newer cogscore adds (the 1.2 counts) join an older runs table;
            # its earlier rows read them as null.
            schema_mode=schema_mode_of(existing, frame.columns),
        )
    except Exception as exc:
        raise translate(exc, f"record run {first.run_id} in", where.display) from None
    return existing.version()


def open_runs(location: Location, opened: Opened | None = None) -> DeltaTable | None:
    """The runs table's latest version, opened (its log replayed), or None before the first
    run; ``opened``: the handles of the run holding the lease (``delta.tables.Opened``)."""
    return _open(location.child(RUNS), opened)


def tidy(existing: DeltaTable, before: int | None) -> bool:
    """After a run recorded through ``existing`` (the runs table, moved to its record) from
    version ``before``: where a checkpoint is due (``checkpoint_due``), the table's
    files compacted into one first (each run appends a file of its rows, and every read of
    the rows opens each file: 150 files after 150 nightlies), then checkpointed. The rows
    are the same (an OPTIMIZE commit, no data change); the handle moves to it. Whether it
    was due."""
    if not checkpoint_due(existing.version(), before):
        return False
    existing.optimize.compact()
    existing.create_checkpoint()  # due: the compaction only moved the version further
    return True


def read_runs(
    location: Location, version: int | None = None, at: DeltaTable | None = None
) -> pl.DataFrame:
    """Every row of the runs table (none if no run was recorded), oldest run first; at
    ``version`` (None: the latest). ``at``: the runs table opened at that version (its latest
    where ``version`` is None), read without opening it again."""
    if version is None and at is None:
        at = open_runs(location)
        if at is None:
            return RUNS_SCHEMA.to_frame()
    rows = read_table(location, RUNS, version, at).collect()
    # A runs table written by an earlier cogscore lacks the later columns: null there.
    missing = [pl.lit(None, t).alias(c) for c, t in RUNS_SCHEMA.items() if c not in rows.columns]
    rows = rows.with_columns(missing)
    return rows.sort(["finished", "started", "run_id", "night"], nulls_last=False)


def _run_rows(
    location: Location, run_id: str | None, latest: DeltaTable | None = None
) -> pl.DataFrame:
    runs = read_runs(location, None, latest)
    if run_id is None:
        runs = runs.filter(pl.col("status").is_in(PINNING))
        if runs.is_empty():
            return runs
        run_id = runs.row(-1, named=True)["run_id"]
    return runs.filter(pl.col("run_id") == run_id)


def latest_finished(location: Location, latest: DeltaTable | None = None) -> RunRow | None:
    """The last row of the latest succeeded run, or None if no run has succeeded;
    ``latest``: the runs table's latest version, opened (else opened here)."""
    rows = _run_rows(location, None, latest)
    return None if rows.is_empty() else RunRow.from_record(rows.row(-1, named=True))


def versions_as_of(location: Location, run_id: str | None = None) -> dict[str, int]:
    """The table versions a succeeded run recorded (None: the latest succeeded run)."""
    rows = _run_rows(location, run_id)
    if rows.is_empty():
        which = f"run {run_id}" if run_id else "succeeded run"
        raise StorageError(f"no {which} in {location.child(RUNS).display}")
    pinning = rows.filter(pl.col("status").is_in(PINNING))
    if pinning.is_empty():
        row = RunRow.from_record(rows.row(-1, named=True))
        raise StorageError(f"run {row.run_id} {row.status}: its table versions are not a state")
    return dict(RunRow.from_record(pinning.row(-1, named=True)).table_versions)


def read_pinned(location: Location, table: str, run_id: str | None = None) -> pl.LazyFrame:
    """`OUT/table` as the latest succeeded run (or run `run_id`) left it."""
    versions = versions_as_of(location, run_id)
    if table not in versions:
        run = run_id or "the latest succeeded run"
        raise StorageError(f"{run} recorded no version of {location.child(table).display}")
    return read_table(location, table, versions[table])


def night_fingerprints(location: Location) -> dict[str | None, str]:
    """Per night, the input fingerprint the latest succeeded run that scored it recorded.

    What `nightly` compares a dump's nights with: a night absent here, or with another
    fingerprint, is new or changed (a failed run's nights are absent).
    """
    runs = read_runs(location).filter(
        pl.col("status").is_in(PINNING) & pl.col("input_fingerprint").is_not_null()
    )
    return {row["night"]: row["input_fingerprint"] for row in runs.iter_rows(named=True)}


def repair(
    location: Location, tables: Sequence[str], opened: Opened | None = None
) -> dict[str, int]:
    """Bring every table back to the version the latest succeeded run pinned; what moved.

    Call with the lease held, before writing (see the module's docstring for the rule).
    Returns {table: its new version} for the tables restored or emptied. Vacuum commits
    (which change no row) and an earlier repair are not undone again. ``opened``: the
    handles of the run holding the lease (``delta.tables.Opened``).
    """
    runs = open_runs(location, opened)  # the layout check's handle, under the lease
    latest = None if runs is None else latest_finished(location, runs)
    pins = dict(latest.table_versions) if latest is not None else {}
    repaired: dict[str, int] = {}
    for table in tables:
        version = table_version(location, table, opened)
        if version is None:
            continue
        pinned = pins.get(table)
        if pinned is not None and version <= pinned:
            continue
        mark = {"repair": "restore" if pinned is not None else "empty", "to_version": pinned}
        limit = None if pinned is None else version - pinned
        newer = history(location, table, limit=limit, opened=opened)
        changes = [c for c in newer if c.get("operation") not in _NO_DATA_CHANGE]
        if not changes or all(changes[0].get(key) == value for key, value in mark.items()):
            continue  # only vacuums since, or repaired already by a run that then failed too
        if pinned is None:
            repaired[table] = truncate(location, table, mark, opened)
        else:
            repaired[table] = restore(location, table, pinned, mark, opened)
    return repaired
