"""A Delta table's versions at OUT/<table>: opened, a night replaced (``write_night``) or rows
appended in one commit, read at a version, its history, restored or emptied, vacuumed
(see ``flows.store.delta``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final, Literal
from urllib.parse import quote, unquote

import polars as pl
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from flows.store.delta.frames import _arrow_stream, _night_frame, delta_ready
from flows.store.delta.healing import JSON_ERROR, broken_commits
from flows.store.delta.nights import NIGHT_COLUMN, check_night, night_predicate
from flows.store.errors import BrokenLog, StorageError, translate
from flows.store.location import Location, polars_options, storage_options
from flows.store.objects import list_files

_TABLE: Final = re.compile(r"^[a-z][a-z0-9_]*$")


def _table(location: Location, table: str) -> Location:
    if not _TABLE.match(table):
        raise ValueError(f"a table name is lower-case letters, digits and _, not {table!r}")
    return location.child(table)


def _options(location: Location) -> dict[str, str] | None:
    return storage_options(location) or None


@contextlib.contextmanager
def _errors(action: str, where: Location) -> Iterator[None]:
    try:
        yield
    except (StorageError, ValueError, CommitFailedError):  # a conflict: the caller may retry
        raise
    except Exception as exc:
        if JSON_ERROR in str(exc) and (broken := broken_commits(where)):
            raise _broken_log(action, where, broken) from None
        raise translate(exc, action, where.display) from None


def _broken_log(action: str, where: Location, broken: Sequence[str]) -> BrokenLog:
    """One line: which commit of the table cannot be read, and the one command that
    rewrites it (``where`` is OUT/<table>)."""
    out = where.display.rstrip("/").rsplit("/", 1)[0]
    return BrokenLog(
        f"cannot {action} {where.display}: {broken[0]} holds statistics that are not JSON "
        "(Infinity, written by cogscore before contract 1.4); run `cogscore repair "
        f"{out}` to rewrite them"
    )


# The tables' latest versions as a run opened them while it holds OUT's lease, by URI: no
# other run writes them meanwhile, and this run's own writes go through these handles (each
# moves to the version it commits), so a table is opened once a run, not once per use (an open
# replays the table's log: every file it adds, with their statistics).
Opened = dict[str, DeltaTable]


def _open(where: Location, opened: Opened | None = None) -> DeltaTable | None:
    if opened is not None and where.uri in opened:
        return opened[where.uri]
    with _errors("open table", where):
        try:
            table = DeltaTable(where.uri, storage_options=_options(where))
        except TableNotFoundError:
            return None
    if opened is not None:
        opened[where.uri] = table
    return table


# Every CHECKPOINT_EVERY versions a table's state is written whole into one Parquet file of
# its log (a checkpoint), from which an open starts: it replays only the commits after it.
# Delta's own default is a checkpoint every 100 commits, and a nightly makes one commit a
# table: 99 nights after a checkpoint an open replayed 99 commit files (docs/performance.md,
# "The nightly's growth, round three"). A checkpoint changes no row and no version.
CHECKPOINT_EVERY: Final = 10


def checkpoint_if_due(table: DeltaTable, before: int | None) -> bool:
    """After a run's commits moved ``table`` (an opened handle, at its latest version) from
    version ``before`` (None: it did not exist): write its checkpoint where they crossed a
    multiple of ``CHECKPOINT_EVERY``. Whether one was written."""
    if not checkpoint_due(table.version(), before):
        return False
    table.create_checkpoint()
    return True


def checkpoint_due(version: int, before: int | None) -> bool:
    """Whether a run's commits, from ``before`` (None: no table) to ``version``, crossed a
    multiple of ``CHECKPOINT_EVERY``."""
    return before is not None and version // CHECKPOINT_EVERY > before // CHECKPOINT_EVERY


def open_table(location: Location, table: str, version: int | None = None) -> DeltaTable:
    """`OUT/table` at `version` (None: the latest), opened (its log replayed) once for any
    number of reads; `StorageError` where no Delta table is."""
    where = _table(location, table)
    with _errors(f"read version {version} of table", where):
        try:
            return DeltaTable(where.uri, version=version, storage_options=_options(where))
        except TableNotFoundError:
            raise StorageError(f"cannot read {where.display}: no Delta table there") from None


def _commit(metadata: Mapping[str, Any] | None, night: str | None) -> CommitProperties:
    return CommitProperties(custom_metadata={**(metadata or {}), "night": night})


def write_night(
    location: Location,
    table: str,
    frame: pl.DataFrame,
    night: str | None,
    *,
    partition_by: Sequence[str] = (NIGHT_COLUMN,),
    commit_metadata: Mapping[str, Any] | None = None,
) -> int:
    """Replace night `night` of `OUT/table` by `frame` in one commit; the new table version.

    Every row of `frame` must belong to `night` (`ValueError` otherwise, before any write)
    in its night column, the first of `partition_by` (`dump_date`, or a standing's
    `as_of`). An empty frame deletes the night.
    `commit_metadata` (JSON values: run id, formula versions...) goes into the commit, beside
    `night`, and so into `history()`.
    """
    check_night(night)
    where = _table(location, table)
    # Plain Arrow strings, not polars' string views: a reader's filter (DuckDB over the
    # Arrow dataset) compares its literals with the files' types, and has no kernel for views.
    # Converted a slice at a time and streamed to delta-rs: a night's episode scores are
    # never held twice (a whole-frame copy cost 450 MB at 1.5 M episodes).
    column = partition_by[0]
    ready = _arrow_stream(_night_frame(frame, night, column))
    predicate = night_predicate(night, column)
    properties = _commit(commit_metadata, night)
    with _errors(f"write night {night} of table", where):
        existing = _open(where)
        if existing is None:
            write_deltalake(
                where.uri,
                ready,
                mode="overwrite",
                predicate=predicate,
                partition_by=list(partition_by),
                storage_options=_options(where),
                commit_properties=properties,
            )
            return 0  # a table's first version
        write_deltalake(
            existing,
            ready,
            mode="overwrite",
            predicate=predicate,
            commit_properties=properties,
            schema_mode=_schema_mode(existing, ready.schema),
        )
        return existing.version()


def append_rows(
    location: Location,
    table: str,
    frame: pl.DataFrame,
    *,
    partition_by: Sequence[str] = (NIGHT_COLUMN,),
    commit_metadata: Mapping[str, Any] | None = None,
    opened: Opened | None = None,
) -> int:
    """Append ``frame`` to the log table `OUT/table` in one commit (creating it with
    ``partition_by``); the new version. Nothing is replaced. ``opened``: the handles of a
    run holding the lease (the table's moves to the commit)."""
    where = _table(location, table)
    ready = _arrow_stream(delta_ready(frame))
    properties = CommitProperties(custom_metadata=dict(commit_metadata or {}))
    with _errors("append to table", where):
        existing = _open(where, opened)
        if existing is None:
            write_deltalake(
                where.uri,
                ready,
                mode="append",
                partition_by=list(partition_by),
                storage_options=_options(where),
                commit_properties=properties,
            )
            return 0
        write_deltalake(
            existing,
            ready,
            mode="append",
            commit_properties=properties,
            schema_mode=_schema_mode(existing, ready.schema),
        )
        return existing.version()


def add_columns(
    location: Location,
    table: str,
    model: pl.DataFrame,
    *,
    commit_metadata: Mapping[str, Any] | None = None,
    opened: Opened | None = None,
) -> int | None:
    """Give `OUT/table` the columns of ``model`` (a frame of its columns) that it lacks, as
    nullable columns in one metadata commit (no data file written): a table an earlier
    cogscore wrote, which this run does not rewrite, read by Delta's other readers (DuckDB's
    ``delta_scan`` under ``sql/views.sql``) with this version's columns, null in its rows;
    the version after it (the same where nothing lacks), None if there is no table."""
    from deltalake import Schema

    where = _table(location, table)
    with _errors("add columns to table", where):
        existing = _open(where, opened)
        if existing is None:
            return None
        have = {field.name for field in existing.schema().fields}
        wanted = delta_ready(model.clear()).to_arrow().schema
        lacking = [field for field in wanted if field.name not in have]
        if lacking:
            fields = Schema.from_arrow(pa.schema(lacking)).fields
            properties = CommitProperties(custom_metadata=dict(commit_metadata or {}))
            existing.alter.add_columns(list(fields), commit_properties=properties)
        return existing.version()


def _schema_mode(table: DeltaTable, schema: pa.Schema) -> Literal["merge"] | None:
    """ "merge" where `schema` adds columns to the table (a newer cogscore writing into an
    output that an earlier one wrote): the table gains them, its other nights read them as
    null. Otherwise None: a column the frame lacks stays an error, never a silent null."""
    have = {f.name for f in table.schema().fields}
    new = [name for name in schema.names if name not in have]
    missing = have - set(schema.names)
    return "merge" if new and not missing else None


def schema_mode_of(existing: DeltaTable, columns: Sequence[str]) -> Literal["merge"] | None:
    """``_schema_mode`` of an opened table for a frame of ``columns``."""
    have = {f.name for f in existing.schema().fields}
    new = [c for c in columns if c not in have]
    return "merge" if new and not have - set(columns) else None


def table_version(location: Location, table: str, opened: Opened | None = None) -> int | None:
    """The latest version of `OUT/table`, or None if it is not a Delta table (yet);
    ``opened``: the handles a run holding the lease keeps (``Opened``)."""
    existing = _open(_table(location, table), opened)
    return None if existing is None else existing.version()


def table_versions(
    location: Location, tables: Sequence[str], opened: Opened | None = None
) -> dict[str, int]:
    """The latest version of each of `tables` that exists (what a run records when done)."""
    versions = {table: table_version(location, table, opened) for table in tables}
    return {table: version for table, version in versions.items() if version is not None}


def missing_files(location: Location, table: str, version: int) -> list[str]:
    """The data files version ``version`` of ``OUT/table`` needs that are no longer there
    (``vacuum`` deleted them): one listing of the table, not a request per file.

    The log names each file by its path below the table, percent-encoded (a URI reference,
    the Delta protocol's ``add.path``): decoded, it is the listing's own relative path. (Its
    ``file_uris()`` encode the table's folder too: "sp ace" is "sp%20ace" there.)"""
    where = _table(location, table)
    with _errors(f"read version {version} of table", where):
        pinned = DeltaTable(where.uri, version=version, storage_options=_options(where))
        paths = pinned.get_add_actions().column("path").to_pylist()
        needed = [unquote(str(path)) for path in paths]
    if not needed:
        return []
    present = {info.relative for info in list_files(where)}
    return [path for path in needed if path not in present]


def dataset_at(location: Location, table: str, version: int, filesystem: Any = None) -> Any:
    """`OUT/table` at `version` as a pyarrow dataset (read through ``filesystem``, Arrow's
    own, where given), its errors said as every table's are."""
    where = _table(location, table)
    with _errors(f"read version {version} of table", where):
        pinned = DeltaTable(where.uri, version=version, storage_options=_options(where))
        return pinned.to_pyarrow_dataset(filesystem=filesystem)


def read_table(
    location: Location, table: str, version: int | None = None, at: DeltaTable | None = None
) -> pl.LazyFrame:
    """`OUT/table` at `version` (None: the latest) as a LazyFrame; `dump_date` a String.
    ``at``: the table at that version as ``open_table`` opened it (else opened here: once,
    its log replayed once)."""
    where = _table(location, table)
    table_at = open_table(location, table, version) if at is None else at
    with _errors(f"read version {version} of table", where):
        if where.is_local and quote(where.uri, safe="/") != where.uri:
            # polars' Delta reader takes the files' percent-encoded paths for paths (a folder
            # "sp ace" is looked for as "sp%20ace"): such a folder is read through Arrow's
            # own file system (filters still pushed down to the partitions).
            from pyarrow import fs

            native = fs.SubTreeFileSystem(where.uri, fs.LocalFileSystem())
            return pl.scan_pyarrow_dataset(table_at.to_pyarrow_dataset(filesystem=native))
        options = polars_options(storage_options(where))
        return pl.scan_delta(table_at, storage_options=options)


def add_actions(table_at: DeltaTable) -> pl.DataFrame:
    """The files of an opened table version as its log holds them: a row each, with its
    ``partition`` values, ``num_records`` and bounds (``min``, ``max``: structs of columns)."""
    return pl.DataFrame(table_at.get_add_actions(flatten=False))


def partition_values(actions: pl.DataFrame, column: str) -> list[str | None]:
    """The values of partition column ``column`` that rows of a table version hold, from
    its log's ``add_actions`` alone (no data file read; the null partition is None), in
    order."""
    return _partitions(actions, column)


def partitions_within(
    actions: pl.DataFrame, partition: str, column: str, low: str, high: str
) -> list[str | None]:
    """``partition_values`` of the data files that may hold a value of string ``column``
    from ``low`` to ``high`` (both included), by the files' statistics in the log: a file
    whose bounds lie outside is ruled out, one without them (none recorded, or a string
    too long for them) is not."""
    bounded = all(
        isinstance(dtype := actions.schema.get(side), pl.Struct)
        and column in {field.name for field in dtype.fields}
        for side in ("min", "max")
    )
    if not bounded:
        return _partitions(actions, partition)
    lowest, highest = pl.col("min").struct.field(column), pl.col("max").struct.field(column)
    outside = (highest < pl.lit(low)) | (lowest > pl.lit(high))
    return _partitions(actions, partition, outside.fill_null(False).not_())


def _partitions(
    actions: pl.DataFrame, partition: str, where: pl.Expr | None = None
) -> list[str | None]:
    """The values of ``partition`` of the add ``actions`` with rows (and ``where``)."""
    if actions.is_empty():
        return []
    held = pl.col("num_records").fill_null(1) > 0
    kept = actions.filter(held if where is None else held & where)
    values = kept.select(pl.col("partition").struct.field(partition)).to_series()
    return sorted(values.unique().to_list(), key=lambda v: (v is not None, v or ""))


def history(
    location: Location, table: str, limit: int | None = None, opened: Opened | None = None
) -> list[dict[str, Any]]:
    """The commits of `OUT/table`, newest first, each with our metadata (run id, night)."""
    where = _table(location, table)
    existing = _open(where, opened)
    if existing is None:
        return []
    with _errors("read the history of table", where):
        return existing.history(limit)


def restore(
    location: Location,
    table: str,
    version: int,
    commit_metadata: Mapping[str, Any] | None = None,
    opened: Opened | None = None,
) -> int:
    """Make `version`'s content the latest of `OUT/table` (a new commit); the new version."""
    where = _table(location, table)
    existing = _open(where, opened)
    if existing is None:
        raise StorageError(f"cannot restore {where.display}: no Delta table there")
    with _errors(f"restore version {version} of table", where):
        existing.restore(version, commit_properties=_commit(commit_metadata, None))
        existing.update_incremental()  # the handle moved to the restore's commit
        return existing.version()


def truncate(
    location: Location,
    table: str,
    commit_metadata: Mapping[str, Any] | None = None,
    opened: Opened | None = None,
) -> int:
    """Remove every row of `OUT/table` (a new commit; history and old versions stay)."""
    where = _table(location, table)
    existing = _open(where, opened)
    if existing is None:
        raise StorageError(f"cannot empty {where.display}: no Delta table there")
    with _errors("empty table", where):
        existing.delete(commit_properties=_commit(commit_metadata, None))
        existing.update_incremental()
        return existing.version()


def vacuum(
    location: Location,
    tables: Sequence[str],
    retain: timedelta = timedelta(days=7),
    dry_run: bool = False,
    keep: Mapping[str, Sequence[int]] | None = None,
) -> list[str]:
    """Delete files no version of the last `retain` needs, and uncommitted leftovers.

    Returns the deleted (or, with `dry_run`, deletable) files as `table/path`. Time travel to
    versions older than `retain` stops working, except to the versions in `keep` (per table:
    e.g. those the runs table pins). `retain` is counted in whole hours (delta-rs). Run it
    only while holding the lease: a running writer's staged files look like leftovers.
    """
    removed: list[str] = []
    for table in tables:
        where = _table(location, table)
        existing = _open(where)
        if existing is None:
            continue
        with _errors("vacuum table", where):
            paths = existing.vacuum(
                retention_hours=int(retain.total_seconds() // 3600),
                dry_run=dry_run,
                enforce_retention_duration=False,
                full=True,
                keep_versions=list((keep or {}).get(table, ())) or None,
            )
        removed.extend(f"{table}/{path}" for path in sorted(paths))
    return removed
