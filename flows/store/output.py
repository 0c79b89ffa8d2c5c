"""The output ``OUT``: one boundary that every reader and writer of the tables goes through.

``OUT`` is a local folder or an object-store URL (``s3://bucket/prefix``). Every table is a
Delta Lake table at ``OUT/<table>`` (``flows.store.delta``), partitioned by ``dump_date``;
a run replaces each night it scored with one predicate overwrite per table, then appends its
rows to ``OUT/runs`` (``flows.store.runs_table``): that commit, made last, names the
version of every table, and is the commit point. cogscore's own readers (the terminal, the
report, the next run) read the versions that the latest finished run named, so they never
see half of a run; ``as_of`` reads them as any earlier run left them.

A run holds ``OUT``'s lease (``flows.store.lease``) from before its first write to after
its commit; before writing, it repairs what a crashed run left (tables brought back to the
pinned versions; commits whose statistics an earlier cogscore wrote as ``Infinity``, which no
Delta reader parses, rewritten: ``flows.store.delta.healing``). ``cogscore repair`` does the
same without a run. What the manifest used to say (the input, each night's fingerprint, files
and formula versions, the output's formula set) is read back from the runs table:
``Output.state`` (``flows.store.state``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from flows.store import delta, objects, runs_table
from flows.store.catalog import ALL_TABLES, LAYOUTS, conform, empty_table
from flows.store.delta import healing
from flows.store.errors import BrokenLog, LegacyLayout, NoOutput, UnknownRun
from flows.store.lease import Holder, Lease, break_lease, check_conditional_writes, lease_holder
from flows.store.location import Location
from flows.store.runs_table import RUNS
from flows.store.state import OutputState
from flows.store.writer import Writer
from schemas.columns import NIGHT_COLUMNS, PINNING
from schemas.tables import (
    TABLES,
)

# A store that ignores conditional writes is refused unless this is set (at the user's risk:
# two writers could overwrite each other's commits there).
ALLOW_UNSAFE = "COGSCORE_ALLOW_UNSAFE_STORE"


@dataclass(frozen=True)
class Output:
    """``OUT``: its Delta tables, its runs table and its lease."""

    location: Location
    # The runs table as last read, by its version: a run reads it about ten times (its
    # state, the versions of each table it reads back), 5 ms each, a table open for the
    # version alone. A version is never written twice, so a read at it stays true.
    _runs_read: dict[int, pl.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    # Each table at a version, opened once (its log replayed once) however often a run
    # reads it (the runs table, the regressions' baseline, the ids check, the standings...):
    # a version is never written twice, so an opened version stays true.
    _tables_at: dict[tuple[str, int], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    # Each table version's files as its log holds them (``delta.add_actions``), read once:
    # a rescore asks the episode scores' for every night it checks (``flows.repeats``), a
    # standing asks its tables' nights more than once.
    _actions_at: dict[tuple[str, int], pl.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    # While this process holds OUT's lease (``writing``), no other run writes: the tables'
    # latest versions are opened once (``opened``: the checks, the repair, the commit), and
    # the runs table's version is read once and moved by this run's own records (``recorded``).
    _latest: dict[str, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    _held_runs: dict[str, int | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    # The runs table as last opened (its latest then; under the lease, moved by this run's
    # records): its rows at that version are read from it, not from a second open. And the
    # state made of its rows, by (version, as_of): a version is never written twice.
    _runs_open: dict[str, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    _states: dict[tuple[int, str | None], OutputState] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    @classmethod
    def at(cls, where: str | Path | Output, options: Mapping[str, str] | None = None) -> Output:
        """The output at ``where`` (a path, made absolute, or a URL) with storage options."""
        if isinstance(where, Output):
            return where
        return cls(Location.parse(str(where), options))

    @property
    def display(self) -> str:
        """Where it is, safe to print (no credentials)."""
        return self.location.display

    def __str__(self) -> str:
        return self.display

    # --- reading ------------------------------------------------------------------------------

    def require(self, unfinished: bool = False) -> Output:
        """This output, where a run has recorded into it; else ``NoOutput`` (exit 2): the
        read commands and ``vacuum`` never answer "empty" for a mistyped path, nor create
        anything there. ``unfinished``: also an output that holds only what a first run
        killed before its commit left (``unfinished``), which ``status``, ``history``,
        ``vacuum`` and ``unlock`` can tell about and clean up. A local ``OUT`` that is a file
        (or below one) is ``NoOutput`` too: bad input, not a store that fails."""
        blocked = self.location.file_in_the_way()
        if blocked is not None:
            what = "is" if blocked == self.location.uri else f"is inside {blocked}, which is"
            raise NoOutput(
                f"{self.display} {what} a file, not a folder: OUT is the folder a score or "
                "nightly run writes its tables to"
            )
        if self.runs_version() is not None:
            return self

        left = self.unfinished()
        if left is None:
            raise NoOutput(
                f"no cogscore output at {self.display} (it holds no runs table): check the "
                "path; a score or nightly run creates the output"
            )
        if unfinished:
            return self
        raise NoOutput(f"no run finished in {self.display}: {describe_unfinished(left)}")

    def unfinished(self) -> dict[str, Any] | None:
        """What an output without a runs table holds of a run that never recorded itself
        (killed, or failed on a full disk, before its commit point): the tables it
        committed, the files it wrote and never committed, its lease; None where none of
        these is there (no cogscore output). A table folder holding a file that no cogscore
        run wrote is ``LegacyLayout`` (exit 2), as for a run."""
        tables = [t for t in ALL_TABLES if delta.table_version(self.location, t) is not None]
        files = sum(len(found) for found in self.uncommitted().values())
        lease = lease_holder(self.location)
        if not tables and not files and lease is None:
            return None
        return {"tables_committed": tables, "files_uncommitted": files, "lease": lease}

    def uncommitted(self) -> dict[str, list[Any]]:
        """Per table, the data files that killed or failed runs wrote and no commit names
        (``delta.uncommitted_files``): what ``vacuum`` deletes whatever ``--retain`` says."""
        found = {t: delta.uncommitted_files(self.location, t, LAYOUTS[t]) for t in ALL_TABLES}
        return {table: files for table, files in found.items() if files}

    def runs(self) -> pl.DataFrame:
        """Every row of the runs table, oldest run first (none before the first run)."""
        return self._runs_at(self.runs_version())

    def _runs_at(self, version: int | None) -> pl.DataFrame:
        """The runs table's rows at ``version`` (None: no runs table), read once."""
        if version is None:
            return runs_table.RUNS_SCHEMA.to_frame()
        if version not in self._runs_read:
            self._runs_read.clear()
            opened = self._runs_open.get(RUNS)
            at = opened if opened is not None and opened.version() == version else None
            self._runs_read[version] = runs_table.read_runs(self.location, version, at)
        return self._runs_read[version]

    def runs_version(self) -> int | None:
        """The runs table's latest version (None before the first run): it moves with every
        run recorded (while this process holds the lease, only with its own: read once).
        Each call without the lease opens it (another run may have recorded since); its
        rows at that version are then read from that open (``runs``)."""
        if RUNS in self._held_runs:
            return self._held_runs[RUNS]
        opened = runs_table.open_runs(self.location)
        self._runs_open.clear()
        if opened is None:
            return None
        self._runs_open[RUNS] = opened
        return int(opened.version())

    def held_runs(self) -> Any:
        """The runs table as this run, holding the lease, opened it (its records move it),
        None without the lease or before the first run: what ``record_run`` appends through."""
        return self._runs_open.get(RUNS) if RUNS in self._held_runs else None

    def recorded(self, version: int) -> None:
        """This run, holding the lease, recorded into the runs table: its version now."""
        if RUNS in self._held_runs:
            self._held_runs[RUNS] = version

    def opened(self) -> dict[str, Any] | None:
        """The tables' latest versions as this run, holding the lease, opened them (None
        without the lease: each use opens the table again)."""
        return self._latest if RUNS in self._held_runs else None

    def pinned_rows(
        self, as_of: str | None = None, rows: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """The rows of the runs whose versions are states, up to run ``as_of`` (included);
        of ``rows`` (the runs table's rows at a version read already), else of ``runs()``."""
        rows = self.runs() if rows is None else rows
        if as_of is not None:
            if rows.filter(pl.col("run_id") == as_of).is_empty():
                raise UnknownRun(
                    f"--as-of {as_of}: no such run in {self.location.child(RUNS).display}"
                    " (cogscore history lists the runs)"
                )
            position = rows.with_row_index().filter(pl.col("run_id") == as_of)["index"].max()
            rows = rows.head(int(position) + 1)  # type: ignore[arg-type]
        return rows.filter(pl.col("status").is_in(PINNING))

    def versions(self, as_of: str | None = None) -> dict[str, int]:
        """Each table's version as the latest finished run (or run ``as_of``) left it."""
        rows = self.pinned_rows(as_of)
        if rows.is_empty():
            return {}
        return dict(json.loads(rows["table_versions"][-1]))

    def check_as_of(self, as_of: str | None) -> None:
        """Refuse (``UnknownRun``, exit 2) a run ``as_of`` that the output never recorded,
        or whose tables ``vacuum`` has deleted files of: named, not a crash on reading."""
        if as_of is None:
            return

        for table, version in self.versions(as_of).items():
            gone = delta.missing_files(self.location, table, version)
            if gone:
                raise UnknownRun(
                    f"--as-of {as_of}: the tables as that run left them are gone ({table} "
                    f"version {version} lacks {len(gone)} data file(s)): vacuum deleted them, "
                    "as it deletes what no table version of its --retain period needs; runs "
                    "within that period can still be read"
                )

    def read(self, table: str, as_of: str | None = None) -> pl.DataFrame:
        """Table ``table`` as the latest finished run (or run ``as_of``) left it; an empty
        frame of the table's columns where no run wrote it. ``dump_date`` is a string."""
        version = self.versions(as_of).get(table)
        if version is None:
            return empty_table(table)
        return self.scan(table, as_of).collect()

    def scan(self, table: str, as_of: str | None = None) -> pl.LazyFrame:
        """``read`` as a LazyFrame: a filter on ``dump_date`` and a selection of columns read
        only those nights' files and columns. The columns are the table's model's, in its
        order (a column that a newer cogscore added reads as null in versions written before
        it), then any others."""
        version = self.versions(as_of).get(table)
        if version is None:
            return empty_table(table).lazy()
        frame = delta.read_table(self.location, table, version, self._table_at(table, version))
        schema = frame.collect_schema()
        nights = [pl.col(c).cast(pl.String) for c in NIGHT_COLUMNS if c in schema]
        return conform(table, frame.with_columns(nights) if nights else frame)

    def nights_held(self, table: str, column: str, as_of: str | None = None) -> list[str | None]:
        """The nights (values of the night column ``column``) table ``table`` holds rows of,
        as the latest finished run (or run ``as_of``) left it: from its Delta log, no data
        file read (a scan of the column opens every night's files)."""
        version = self.versions(as_of).get(table)
        if version is None:
            return []
        return delta.partition_values(self._actions(table, version), column)

    def nights_within(
        self, table: str, night: str, column: str, between: tuple[str, str]
    ) -> list[str | None]:
        """``nights_held`` (of night column ``night``) whose files may hold a value of
        string ``column`` within ``between`` (both included), as the latest finished run
        left the table: by the files' statistics in its Delta log, no data file read."""
        version = self.versions().get(table)
        if version is None:
            return []
        return delta.partitions_within(self._actions(table, version), night, column, *between)

    def _actions(self, table: str, version: int) -> pl.DataFrame:
        """``table``'s files at ``version`` (``delta.add_actions``), read once."""
        if (table, version) not in self._actions_at:
            self._actions_at[(table, version)] = delta.add_actions(self._table_at(table, version))
        return self._actions_at[(table, version)]

    def _table_at(self, table: str, version: int) -> Any:
        """``table`` at ``version``, opened once (``_tables_at``)."""
        if (table, version) not in self._tables_at:
            self._tables_at[(table, version)] = delta.open_table(self.location, table, version)
        return self._tables_at[(table, version)]

    def state(self, as_of: str | None = None) -> OutputState:
        """What the output holds, from its runs table: the input, the formula set, whether it
        is a dump of nights, and per night its input fingerprint, formula versions, counts
        and files (the latest finished run that scored each). ``is_new`` for a new output."""
        return self.read_state(as_of)[1]

    def read_state(self, as_of: str | None = None) -> tuple[int | None, OutputState]:
        """The runs table's latest version and ``state`` at it, from one open of the table
        (what a run plans from, and checks under the lease that no other run moved)."""
        version = self.runs_version()  # one open of the runs table, its rows read from it
        return version, self._state_at(version, as_of)

    def _state_at(self, version: int | None, as_of: str | None) -> OutputState:
        if version is None or (version, as_of) not in self._states:
            made = OutputState.of_runs(self.pinned_rows(as_of, self._runs_at(version)))
            if version is None:
                return made
            self._states[(version, as_of)] = made
        return self._states[(version, as_of)]

    # --- upkeep -------------------------------------------------------------------------------

    def vacuum(
        self, retain_hours: float = 30 * 24, dry_run: bool = False, run_id: str = "vacuum"
    ) -> int:
        """Delete the data files that no table version of the last ``retain_hours`` needs,
        and those of killed runs that no commit names, whatever their age: how many
        (``dry_run``: how many would go). Only Parquet data files are deleted, and of the
        uncommitted ones only those named as cogscore names them: a file of someone else's in
        a table folder (a note) stays. Held under the lease: a run in progress holds it
        (its staged files are uncommitted until it commits), so vacuum is refused while one
        goes (``OutputBusy``); and of the uncommitted files only those written before vacuum
        took the lease go (a run whose lease it took over, gone, cannot commit them). Time
        travel (``--as-of``) to runs older than ``retain_hours`` stops working."""
        from datetime import timedelta

        with Lease(self.location, run_id, "cogscore vacuum") as lease:
            assert lease.holder is not None
            taken = lease.holder.acquired
            doomed = delta.vacuum(
                self.location,
                list(ALL_TABLES),
                retain=timedelta(hours=retain_hours),
                dry_run=True,
            )
            doomed = [path for path in doomed if path.endswith(".parquet")]
            for table, files in self.uncommitted().items():
                doomed.extend(f"{table}/{f.relative}" for f in files if f.modified < taken)
            doomed = sorted(set(doomed))
            if not dry_run:
                for path in doomed:
                    objects.delete(self.location, path)
        return len(doomed)

    def unlock(self, run_id: str) -> Holder:
        """Break the lease of run ``run_id``, gone (``lease.break_lease``: guarded); the
        holder it was."""
        return break_lease(self.location, run_id)

    def repair(self, run_id: str = "repair") -> tuple[dict[str, list[str]], dict[str, int]]:
        """Under the lease: rewrite the commits whose statistics are not JSON (an earlier
        cogscore's ``Infinity``: ``delta.healing``), then bring every table back to the
        version the latest succeeded run pinned, as a run does before it writes. What was
        done: per table, the commit files rewritten; and the tables restored, at their new
        versions. Refused while a run holds the lease (``OutputBusy``)."""
        with Lease(self.location, run_id, "cogscore repair"):
            healed = healing.heal(self.location, list(ALL_TABLES))
            return healed, runs_table.repair(self.location, list(TABLES))

    # --- writing ------------------------------------------------------------------------------

    @contextmanager
    def writing(self, run_id: str, command: str = "") -> Iterator[Writer]:
        """Hold the lease for a run, repair what a crashed run left, and yield a writer; the
        lease is released however the run ends. Refused: a store that ignores conditional
        writes (``UnsafeStore``), another run holding the lease (``OutputBusy``), an output
        in the old snapshot layout or with files of its own where a table goes
        (``LegacyLayout``)."""
        delta.check_path(self.location)
        allow = os.environ.get(ALLOW_UNSAFE, "").strip().lower() in ("1", "true", "yes")
        check_conditional_writes(self.location, allow_unsafe=allow)
        with Lease(self.location, run_id, command) as lease:
            healed: dict[str, list[str]] = {}
            try:
                self._prepared()
            except BrokenLog:  # an earlier cogscore's Infinity in a log: rewritten, then on
                self._latest.clear()
                healed = healing.heal(self.location, list(ALL_TABLES))
                self._prepared()
            # The layout check opened the runs table (the repair read its rows through it):
            # this run's records go through that handle, which they move.
            runs = self._latest.pop(self.location.child(RUNS).uri, None)
            self._runs_open.clear()
            if runs is not None:
                self._runs_open[RUNS] = runs
            self._held_runs[RUNS] = None if runs is None else int(runs.version())
            try:
                yield Writer(self, lease, run_id, healed=healed)
                self._keep_committed()
            finally:
                self._held_runs.clear()
                self._latest.clear()

    def _keep_committed(self) -> None:
        """A run's handles, each at the version its commit left (nothing moves them once the
        lease is let go): kept as those versions' opens, for the reads after the run (its
        summary reads the standings it wrote) instead of opening them again."""
        names = {self.location.child(table).uri: table for table in ALL_TABLES}
        for uri, handle in self._latest.items():
            if uri in names:
                self._tables_at.setdefault((names[uri], int(handle.version())), handle)

    def _prepared(self) -> None:
        """What a run checks and repairs, holding the lease, before it writes (each table
        opened once, for both)."""
        delta.check_layout(self.location, LAYOUTS, self._latest)
        _check_legacy(self.location)
        runs_table.repair(self.location, list(TABLES), self._latest)


def describe_unfinished(left: Mapping[str, Any]) -> str:
    """``Output.unfinished`` in words: what a first run that never finished left.

    >>> describe_unfinished({"tables_committed": [], "files_uncommitted": 6, "lease": None})
    ... # doctest: +NORMALIZE_WHITESPACE
    'a run into it was killed or failed before its commit point: 6 data file(s) it wrote
    and never committed; the next score or nightly repairs it, cogscore vacuum deletes them'
    """
    tables = left.get("tables_committed") or []
    held = f"; its lease is still held: {left['lease']}" if left.get("lease") else ""
    return (
        "a run into it was killed or failed before its commit point: "
        f"{left.get('files_uncommitted', 0)} data file(s) it wrote and never committed"
        + (f", table(s) {', '.join(tables)} committed but recorded by no run" if tables else "")
        + held
        + "; the next score or nightly repairs it, cogscore vacuum deletes them"
    )


def night_levels(state: OutputState) -> dict[str | None, float]:
    """The level of each night's intervals (``None``: an undated dump's), from
    ``Output.state``: the level of the run that scored the night."""
    levels: dict[str | None, float] = {night: entry.level for night, entry in state.nights.items()}
    if state.undated is not None:
        levels[None] = state.undated.level
    return levels


def _check_legacy(location: Location) -> None:
    """The snapshot store's manifest, where an earlier cogscore left it."""
    if location.is_local and os.path.lexists(os.path.join(location.uri, "manifest.json")):
        raise LegacyLayout(
            f"{location.display} holds tables of an earlier cogscore (manifest.json): score "
            "into a new folder (a rescore of every night rebuilds the tables from the dumps)"
        )
