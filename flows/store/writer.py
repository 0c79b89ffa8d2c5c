"""A run's writes (``TableWriter``): ``Writer`` stages each night's tables as data files as
the night is done and commits every table once, then the run's rows in ``runs`` (the commit
point); ``DryRun`` makes and checks them and writes nothing; ``record_failure`` records a
run that failed, pinning nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import polars as pl
from deltalake.exceptions import CommitFailedError

from flows.store import delta, runs_table
from flows.store.catalog import EPISODE_SCORES, empty_table, fault_point, in_order
from flows.store.delta.staged import StagedFiles, StageTarget
from flows.store.errors import StorageError
from flows.store.lease import Lease
from flows.store.runs_table import RunRow
from schemas.columns import RunStatus
from schemas.tables import (
    TABLES,
)
from schemas.validation import validate

# Tables committed (then checkpointed) at once by a run's commit (``Writer.commit``): each
# commit is mostly delta-rs writing and renaming a log file, the GIL released. Read when
# called (tests set it; 1: one after the other).
COMMITTERS = 4

_COMMITTING = "cogscore-commit"  # their threads' name

_T = TypeVar("_T")

if TYPE_CHECKING:  # an Output makes a Writer (Output.writing)
    from flows.store.output import Output


class TableWriter(Protocol):
    """What a run writes through: its nights' tables staged one night at a time, then
    committed at once (``Writer``), or only checked (``DryRun``)."""

    def target(self, night: str | None, fingerprint: str) -> StageTarget | None:
        """Where the workers stage a night's episode rows (None: they keep them)."""
        ...

    def stage(self, table: str, frame: pl.DataFrame, night: str | None) -> None:
        """Night ``night`` of ``table`` will be ``frame`` (checked now)."""
        ...

    def stage_nights(self, table: str, frame: pl.DataFrame, nights: Sequence[str | None]) -> None:
        """Each night of ``nights`` of ``table`` will be ``frame``'s rows of it (none: the
        night emptied), checked now, all at once."""
        ...

    def stage_files(self, table: str, night: str | None, staged: Sequence[StagedFiles]) -> None:
        """Night ``night`` of ``table`` will be the files the workers staged."""
        ...

    def discard(self, staged: Sequence[StagedFiles]) -> None:
        """Staged episode rows of a night that failed: never to be committed."""
        ...

    def append(self, table: str, frame: pl.DataFrame) -> None:
        """Rows to append to the log table ``table`` at the commit (checked now)."""
        ...

    def night_done(self) -> None: ...

    def commit(self, rows: Sequence[RunRow]) -> dict[str, int]:
        """Every table's staged nights at once, then the run's rows: the versions."""
        ...


@dataclass
class DryRun:
    """Stands for a writer in a dry run: checks each table as ``Writer`` does, writes
    nothing, records nothing."""

    def target(self, night: str | None, fingerprint: str) -> StageTarget | None:
        return None

    def stage(self, table: str, frame: pl.DataFrame, night: str | None) -> None:

        validate(table, frame)

    def stage_nights(self, table: str, frame: pl.DataFrame, nights: Sequence[str | None]) -> None:
        validate(table, frame)

    def stage_files(self, table: str, night: str | None, staged: Sequence[StagedFiles]) -> None:
        raise AssertionError("a dry run stages no files")

    def discard(self, staged: Sequence[StagedFiles]) -> None:
        pass

    def append(self, table: str, frame: pl.DataFrame) -> None:

        validate(table, frame)

    def night_done(self) -> None:
        pass

    def commit(self, rows: Sequence[RunRow]) -> dict[str, int]:
        return {}


@dataclass
class Writer:
    """Writes one run's tables into ``OUT``: each night's tables staged as data files as the
    night is done (memory holds one night), then, once every night is, one commit per table
    replacing all the run's nights of it, and the run's rows in ``runs`` last (the commit
    point). A reader of any table's latest version sees the whole run or none of it."""

    output: Output
    lease: Lease
    run_id: str
    staged: dict[str, dict[str | None, list[StagedFiles]]] = field(default_factory=dict)
    appended: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    # Per table, the commits whose statistics (an earlier cogscore's Infinity) were rewritten
    # before this run wrote (``delta.healing``): the run logs them.
    healed: dict[str, list[str]] = field(default_factory=dict)
    # The tables whose checkpoint the commit could not write, and why (``_checkpoints``).
    unchecked: dict[str, str] = field(default_factory=dict)
    # ``staged`` is added to from the run's thread and the standings' worker
    # (``flows.standing_writes``: other tables, the same dict).
    _staging: Lock = field(default_factory=Lock, repr=False)

    def target(self, night: str | None, fingerprint: str) -> StageTarget | None:
        return StageTarget(self.output.location, night, fingerprint)

    def stage(self, table: str, frame: pl.DataFrame, night: str | None) -> None:
        """Validate ``frame`` (pandera, data included) and stage it as night ``night`` of
        ``table`` (an empty frame empties the night)."""

        validate(TABLES[table], frame)  # one query; pandera's report if it fails
        self._write(table, frame, night)

    def stage_nights(self, table: str, frame: pl.DataFrame, nights: Sequence[str | None]) -> None:
        """Validate ``frame`` once (rows of several nights: one query for them all) and
        stage each night of ``nights`` as its rows, exactly as ``stage`` stages a night."""
        spec = TABLES[table]
        validate(spec, frame)
        if len(nights) == 1:
            self._write(table, frame, nights[0])
            return
        if spec.partition_by != (spec.night,) or None in nights:
            of_night = frame.partition_by(spec.night, as_dict=True, maintain_order=True)
            for night in nights:
                rows = of_night.get((night,))
                self._write(table, frame.clear() if rows is None else rows, night)
            return
        # Nights of a table partitioned by night alone: their files written together
        # (``delta.write_nights_files``), each night's rows in the table's order as ``_write``
        # orders them.
        order = [spec.night, *spec.sort]
        ordered = frame if in_order(frame, order) else frame.sort(order, nulls_last=True)
        dated = [night for night in nights if night is not None]
        for files in delta.write_nights_files(
            self.output.location, table, ordered, dated, spec.night
        ):
            self.stage_files(table, files.night, [files])

    def _write(self, table: str, frame: pl.DataFrame, night: str | None) -> None:
        """``frame`` (validated) written as night ``night`` of ``table``, staged."""
        spec = TABLES[table]
        order = list(spec.sort)
        ordered = frame if in_order(frame, order) else frame.sort(order, nulls_last=True)
        files = delta.write_data_files(
            self.output.location, table, ordered, night, partition_by=spec.partition_by
        )
        self.stage_files(table, night, [files])

    def stage_files(self, table: str, night: str | None, staged: Sequence[StagedFiles]) -> None:
        """Stage the files the workers wrote (validated there) as night ``night`` of
        ``table``; none: the night holds no rows."""
        if not staged:
            self.stage(table, empty_table(table), night)
            return
        with self._staging:
            self.staged.setdefault(table, {}).setdefault(night, []).extend(staged)

    def discard(self, staged: Sequence[StagedFiles]) -> None:
        delta.discard(self.output.location, EPISODE_SCORES, staged)

    def append(self, table: str, frame: pl.DataFrame) -> None:
        """Validate ``frame`` and keep it to append to the log table ``table`` at the
        commit (a log's rows are few: a run's)."""

        self.appended.setdefault(table, []).append(validate(table, frame))

    def night_done(self) -> None:
        """A night is staged: push the lease's expiry (a long rescore keeps it)."""
        self.lease.renew()

    def commit(self, rows: Sequence[RunRow]) -> dict[str, int]:
        """Each table's staged nights in one commit (every table readable, rows or not),
        then the run's rows, each naming every table's version: the commit point.

        The tables are independent until the runs table names their versions, so they are
        committed ``COMMITTERS`` at a time (delta-rs releases the GIL while it writes a
        commit); every one is committed, or has failed, before the runs table is written,
        and the first failure in the tables' order is the run's."""
        opened = self.output.opened()
        commit = self._commit_table
        made = each_table(lambda t: commit(t, opened), list(TABLES), COMMITTERS, _COMMITTING)
        before = {table: was for table, (was, _) in made.items()}
        versions = {table: version for table, (_, version) in made.items()}
        fault_point("before-commit")
        stamped = [_with_versions(row, versions) for row in rows]
        held = self.output.held_runs()
        runs_before = None if held is None else held.version()
        self.output.recorded(runs_table.record_run(self.output.location, stamped, held))
        fault_point("after-commit")
        self._checkpoints(opened, before, (held, runs_before))
        return versions

    def _commit_table(self, table: str, opened: delta.Opened | None) -> tuple[int | None, int]:
        """``table``'s version before this run and the version its commit made: its staged
        nights, its appended rows (a log), else this cogscore's columns added or, where it
        has none to add, an empty commit (each table moved, so the run records each)."""
        spec = TABLES[table]
        before = delta.table_version(self.output.location, table, opened)
        if added := self.appended.get(table):
            return before, delta.append_rows(
                self.output.location,
                table,
                pl.concat(added),
                partition_by=spec.partition_by,
                commit_metadata={"run_id": self.run_id},
                opened=opened,
            )
        if nights := self.staged.get(table):
            return before, self._commit_nights(table, nights)
        version = delta.add_columns(
            self.output.location,
            table,
            empty_table(table),
            commit_metadata={"run_id": self.run_id},
            opened=opened,
        )
        if version is not None:  # the version this run records: with this cogscore's columns
            return before, version
        return before, delta.write_night(
            self.output.location,
            table,
            empty_table(table),
            None,
            partition_by=spec.partition_by,
            commit_metadata={"run_id": self.run_id},
        )

    def _checkpoints(
        self,
        opened: delta.Opened | None,
        before: Mapping[str, int | None],
        runs: tuple[Any, int | None],
    ) -> None:
        """After the commit point: each table whose versions this run moved past a multiple
        of ``CHECKPOINT_EVERY`` checkpointed (``delta.tables.checkpoint_if_due``), so that the
        next open replays few commits. Committed already, the run does not fail on it: a
        checkpoint not written is written by a later run (``unchecked`` names the tables, and
        the run logs them as a warning)."""
        handles = [
            (table, (opened or {}).get(self.output.location.child(table).uri), was)
            for table, was in before.items()
        ]
        due = {table: (handle, was) for table, handle, was in handles if handle is not None}

        def checkpoint(table: str) -> str | None:
            handle, was = due[table]
            try:
                delta.checkpoint_if_due(handle, was)
            except Exception as error:  # an optimisation: the tables are committed and whole
                return str(error).splitlines()[0] if str(error) else repr(error)
            return None

        # Independent tables, checkpointed ``COMMITTERS`` at a time (as they were committed).
        for table, why in each_table(checkpoint, list(due), COMMITTERS, _COMMITTING).items():
            if why is not None:
                self.unchecked[table] = why
        held, was = runs
        if held is None:
            return
        try:
            if runs_table.tidy(held, was):  # compacted: its version moved
                self.output.recorded(held.version())
        except Exception as error:  # an optimisation: the tables are committed and whole
            self.unchecked[runs_table.RUNS] = (
                str(error).splitlines()[0] if str(error) else repr(error)
            )

    def _commit_nights(self, table: str, nights: dict[str | None, list[StagedFiles]]) -> int:
        """The staged nights of ``table`` in one commit; the table's version it made."""
        staged = [files for night in nights.values() for files in night]
        for attempt in (1, 2):  # another writer committed to these nights meanwhile: once more
            try:
                version = delta.commit_nights(
                    self.output.location,
                    table,
                    list(nights),
                    staged,
                    {"run_id": self.run_id},
                    self.output.opened(),
                )
                break
            except CommitFailedError as error:
                if (opened := self.output.opened()) is not None:  # opened again to retry
                    opened.pop(self.output.location.child(table).uri, None)
                if attempt == 2:
                    raise StorageError(
                        f"another writer changed {self.output.location.child(table).display}"
                        f" while this run wrote it, twice: {str(error).splitlines()[0]}; run "
                        "again when it is done (cogscore's own runs take turns through the lease)"
                    ) from None
        fault_point(f"wrote-{table}")
        return version


def each_table(
    call: Callable[[str], _T], tables: Sequence[str], at_once: int, name: str
) -> dict[str, _T]:
    """``call`` of each of ``tables``, ``at_once`` at a time on threads named ``name``, by
    table in their order; every call ended (done or failed) before the first failure, in
    that order, is raised (a run's commits and checkpoints, a batch of standings staged)."""
    if len(tables) <= 1 or at_once <= 1:
        return {table: call(table) for table in tables}
    with ThreadPoolExecutor(at_once, thread_name_prefix=name) as pool:
        futures = [pool.submit(call, table) for table in tables]
        wait(futures)
    return {table: future.result() for table, future in zip(tables, futures, strict=True)}


def _with_versions(row: RunRow, versions: Mapping[str, int]) -> RunRow:
    from dataclasses import replace

    return replace(row, table_versions=dict(versions))


def record_failure(output: Output, rows: Sequence[RunRow]) -> None:
    """Record a run that failed (its rows pin nothing); never raises over the first error."""
    from dataclasses import replace

    try:
        versions = delta.table_versions(output.location, list(TABLES))  # (opened again)
        failed = [replace(r, status=RunStatus.FAILED, table_versions=versions) for r in rows]
        output.recorded(runs_table.record_run(output.location, failed))
    except Exception:  # the run's own error is what the user must see
        pass
