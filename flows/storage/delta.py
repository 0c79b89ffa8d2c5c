"""The output tables as Delta Lake tables at OUT/<table>: one night replaced per commit.

A night is replaced with ONE predicate overwrite (`dump_date = '2026-12-01'`, or
`dump_date IS NULL` for an undated dump): delta-rs writes the new files, then commits a log
entry that removes that night's old files and adds the new ones. Other nights' files are not
touched (the same paths stay in the log), readers see the night before or after, never half,
and the table's history records every replacement with our commit metadata (run id, night).
A table that does not exist is created by its first write.

An undated night (`night=None`) is the partition `dump_date=__HIVE_DEFAULT_PARTITION__`:
delta-rs writes it, `dump_date IS NULL` replaces exactly it, and polars, pyarrow and DuckDB
read the column back as null (tested). It is workable.

Columns added by a newer cogscore (contract 1.1's `instance_id`, the rank intervals of
`model_scores`) are merged into an existing table by the first write that has them
(`schema_mode="merge"`): earlier nights read them as null; a frame that lacks one of the
table's columns is still refused.

Dtype hygiene (lake notes): delta-rs crashes on Categorical (cast to String), refuses
Null-typed columns (given String), and refuses time-zone-naive timestamps under the table's
protocol (made UTC; Delta stores microseconds). `dump_date` stays a String partition column:
`DeltaTable.partitions()` returns strings whatever the type, and a Date column written into a
String table would be cast silently.

Staged files, for "workers write their files, the driver commits once per night":
`write_data_files` writes a night's Parquet files into the table folder (not yet part of the
table: readers do not see them) and returns their `AddAction`s; `commit_files` commits any
number of such stagings for one night in one transaction. delta-rs expresses the overwrite
with `create_write_transaction(mode="overwrite", partition_filters=[("dump_date", "=",
night)])`: it derives the remove actions of that partition itself (an explicit `RemoveAction`
is only allowed with `mode="append"`). The undated partition is named by the empty string
(`None` is refused by the binding). Unlike a predicate write, nothing checks that the staged
files exist or hold what their stats say: that is the caller's contract.

Vacuum is never run implicitly. `vacuum(..., full=True)` removes every file that no version
in the retention window references and that is older than the window, which includes the
complete-but-uncommitted files that a killed run leaves behind once they are that old (the
default "lite" vacuum misses them). `uncommitted_files` finds those at any age: files named as
cogscore's writers name them that no commit of the log names. Either must run under the lease:
a running writer's staged files are unreferenced until its commit.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final, Literal
from urllib.parse import quote, unquote

import polars as pl
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from flows.storage import objects
from flows.storage.errors import BadLocation, LegacyLayout, NothingThere, StorageError, translate
from flows.storage.location import Location, polars_options, storage_options
from schemas.contract import DUMP_DATE
from schemas.tables import NIGHT_COLUMNS

NIGHT_COLUMN: Final = DUMP_DATE
NULL_PARTITION: Final = "__HIVE_DEFAULT_PARTITION__"
_NIGHT: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TABLE: Final = re.compile(r"^[a-z][a-z0-9_]*$")


def check_night(night: str | None) -> str | None:
    """`night` if it is None or a real date written YYYY-MM-DD, else `ValueError`.

    >>> check_night("2026-12-01"), check_night(None)
    ('2026-12-01', None)
    >>> check_night("2026-12-01' OR '1'='1")
    Traceback (most recent call last):
    ...
    ValueError: a night is a date written YYYY-MM-DD or None, not "2026-12-01' OR '1'='1"
    """
    if night is None:
        return None
    if not isinstance(night, str) or not _NIGHT.match(night):
        raise ValueError(f"a night is a date written YYYY-MM-DD or None, not {night!r}")
    date.fromisoformat(night)  # 2026-02-30 is refused here
    return night


def night_predicate(night: str | None, column: str = NIGHT_COLUMN) -> str:
    """The overwrite predicate of one night (validated, so nothing can be injected) in the
    table's night column (its first partition column: ``dump_date``, or a standing's
    ``as_of``).

    >>> night_predicate("2026-12-01"), night_predicate(None, "as_of")
    ("dump_date = '2026-12-01'", 'as_of IS NULL')
    """
    checked = check_night(night)
    if column not in NIGHT_COLUMNS:
        raise ValueError(f"a night column is one of {', '.join(NIGHT_COLUMNS)}, not {column!r}")
    return f"{column} IS NULL" if checked is None else f"{column} = '{checked}'"


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
        raise translate(exc, action, where.display) from None


def _open(where: Location) -> DeltaTable | None:
    with _errors("open table", where):
        try:
            return DeltaTable(where.uri, storage_options=_options(where))
        except TableNotFoundError:
            return None


def _instance(dtype: Any) -> pl.DataType:
    return dtype() if isinstance(dtype, type) else dtype  # type: ignore[no-any-return]


def _delta_dtype(dtype: pl.DataType) -> pl.DataType:
    if isinstance(dtype, pl.Categorical | pl.Enum | pl.Null):
        return pl.String()
    if isinstance(dtype, pl.Datetime):
        return pl.Datetime("us", "UTC")
    if isinstance(dtype, pl.List):
        return pl.List(_delta_dtype(_instance(dtype.inner)))
    if isinstance(dtype, pl.Struct):
        return pl.Struct({f.name: _delta_dtype(_instance(f.dtype)) for f in dtype.fields})
    return dtype


def delta_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with dtypes Delta takes: Categorical and Null as String, timestamps UTC in µs.

    A time-zone-naive timestamp is taken to be UTC already (every timestamp here is).

    >>> delta_ready(pl.DataFrame({"a": [None], "c": ["x"]},
    ...             schema={"a": pl.Null, "c": pl.Categorical})).dtypes
    [String, String]
    """
    columns = []
    for name, dtype in frame.schema.items():
        # A cast to UTC reads naive timestamps as UTC and converts zoned ones.
        wanted = pl.String() if name in NIGHT_COLUMNS else _delta_dtype(dtype)
        columns.append(pl.col(name).cast(wanted) if wanted != dtype else pl.col(name))
    return frame.select(columns)


def _night_frame(
    frame: pl.DataFrame, night: str | None, column: str = NIGHT_COLUMN
) -> pl.DataFrame:
    if column not in frame.columns:
        raise ValueError(f"the frame has no {column} column (night {night})")
    ready = delta_ready(frame)
    values = ready.get_column(column)
    stray = values.is_not_null() if night is None else (values != night) | values.is_null()
    if stray.any():
        raise ValueError(f"rows of other nights than {night} in a write of night {night}")
    return ready


_SLICE: Final = 100_000  # rows converted to Arrow at a time


def _arrow_stream(frame: pl.DataFrame) -> pa.RecordBatchReader:
    """``frame`` as Arrow record batches (plain strings), converted slice by slice."""
    oldest = pl.CompatLevel.oldest()
    schema = frame.head(0).to_arrow(compat_level=oldest).schema

    def batches() -> Iterator[pa.RecordBatch]:
        for start in range(0, frame.height, _SLICE):
            table = frame.slice(start, _SLICE).to_arrow(compat_level=oldest)
            yield from table.cast(schema).to_batches()

    return pa.RecordBatchReader.from_batches(schema, batches())


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
) -> int:
    """Append ``frame`` to the log table `OUT/table` in one commit (creating it with
    ``partition_by``); the new version. Nothing is replaced."""
    where = _table(location, table)
    ready = _arrow_stream(delta_ready(frame))
    properties = CommitProperties(custom_metadata=dict(commit_metadata or {}))
    with _errors("append to table", where):
        existing = _open(where)
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


def _schema_mode(table: DeltaTable, schema: pa.Schema) -> Literal["merge"] | None:
    """ "merge" where `schema` adds columns to the table (a newer cogscore writing into an
    output that an earlier one wrote): the table gains them, its other nights read them as
    null. Otherwise None: a column the frame lacks stays an error, never a silent null."""
    have = {f.name for f in table.schema().fields}
    new = [name for name in schema.names if name not in have]
    missing = have - set(schema.names)
    return "merge" if new and not missing else None


def schema_mode_at(
    location: Location, table: str, columns: Sequence[str]
) -> Literal["merge"] | None:
    """``_schema_mode`` of the table at ``OUT/table`` (None where it does not exist yet)."""
    existing = _open(_table(location, table))
    if existing is None:
        return None
    have = {f.name for f in existing.schema().fields}
    new = [c for c in columns if c not in have]
    return "merge" if new and not have - set(columns) else None


def table_version(location: Location, table: str) -> int | None:
    """The latest version of `OUT/table`, or None if it is not a Delta table (yet)."""
    existing = _open(_table(location, table))
    return None if existing is None else existing.version()


def table_versions(location: Location, tables: Sequence[str]) -> dict[str, int]:
    """The latest version of each of `tables` that exists (what a run records when done)."""
    versions = {table: table_version(location, table) for table in tables}
    return {table: version for table, version in versions.items() if version is not None}


def missing_files(location: Location, table: str, version: int) -> list[str]:
    """The data files version ``version`` of ``OUT/table`` needs that are no longer there
    (``vacuum`` deleted them): one listing of the table, not a request per file."""
    from flows.storage.objects import list_files

    where = _table(location, table)
    with _errors(f"read version {version} of table", where):
        pinned = DeltaTable(where.uri, version=version, storage_options=_options(where))
        prefix = where.uri.rstrip("/") + "/"
        needed = [uri.removeprefix(prefix) for uri in pinned.file_uris()]
    if not needed:
        return []
    present = {info.relative for info in list_files(where)}
    return [path for path in needed if path not in present]


def read_table(location: Location, table: str, version: int | None = None) -> pl.LazyFrame:
    """`OUT/table` at `version` (None: the latest) as a LazyFrame; `dump_date` a String."""
    where = _table(location, table)
    if _open(where) is None:
        raise StorageError(f"cannot read {where.display}: no Delta table there")
    with _errors(f"read version {version} of table", where):
        if where.is_local and quote(where.uri, safe="/") != where.uri:
            # polars' Delta reader takes the files' percent-encoded paths for paths (a folder
            # "sp ace" is looked for as "sp%20ace"): such a folder is read through Arrow's
            # own file system (filters still pushed down to the partitions).
            from pyarrow import fs

            native = fs.SubTreeFileSystem(where.uri, fs.LocalFileSystem())
            table_at = DeltaTable(where.uri, version=version)
            return pl.scan_pyarrow_dataset(table_at.to_pyarrow_dataset(filesystem=native))
        options = polars_options(storage_options(where))
        return pl.scan_delta(where.uri, version=version, storage_options=options)


def history(location: Location, table: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The commits of `OUT/table`, newest first, each with our metadata (run id, night)."""
    where = _table(location, table)
    existing = _open(where)
    if existing is None:
        return []
    with _errors("read the history of table", where):
        return existing.history(limit)


def restore(
    location: Location,
    table: str,
    version: int,
    commit_metadata: Mapping[str, Any] | None = None,
) -> int:
    """Make `version`'s content the latest of `OUT/table` (a new commit); the new version."""
    where = _table(location, table)
    existing = _open(where)
    if existing is None:
        raise StorageError(f"cannot restore {where.display}: no Delta table there")
    with _errors(f"restore version {version} of table", where):
        existing.restore(version, commit_properties=_commit(commit_metadata, None))
        return DeltaTable(where.uri, storage_options=_options(where)).version()


def truncate(
    location: Location, table: str, commit_metadata: Mapping[str, Any] | None = None
) -> int:
    """Remove every row of `OUT/table` (a new commit; history and old versions stay)."""
    where = _table(location, table)
    existing = _open(where)
    if existing is None:
        raise StorageError(f"cannot empty {where.display}: no Delta table there")
    with _errors("empty table", where):
        existing.delete(commit_properties=_commit(commit_metadata, None))
        return DeltaTable(where.uri, storage_options=_options(where)).version()


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


# What delta-rs cannot take in a local table's path (deltalake 1.6, measured): `[`, `]`, `^`
# and `|` make it panic (its file URL's host), `%XX` is decoded (the log is then looked for
# in another folder than the one written), `\` and control characters are refused or mangled.
_UNUSABLE: Final = re.compile(r"[\[\]^|%\\\x00-\x1f\x7f]")


def check_path(location: Location) -> None:
    """`BadLocation` if `location` is a local folder whose path delta-rs cannot use: a run
    into it would stage files, then fail (a panic) at its first commit.

    >>> check_path(Location.parse("/data/out[1]"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    flows.storage.errors.BadLocation: /data/out[1]: a local output's path cannot hold '[' ...
    """
    bad = _UNUSABLE.search(location.uri) if location.is_local else None
    if bad is not None:
        raise BadLocation(
            f"{location.display}: a local output's path cannot hold {bad.group()!r} "
            "(delta-rs cannot use it): choose another folder"
        )


def check_layout(location: Location, layouts: Mapping[str, Sequence[str]]) -> None:
    """`LegacyLayout` if OUT holds the snapshot store's layout instead of Delta tables, or a
    table folder without a Delta log holds a file that no cogscore run wrote.

    The snapshot store (flows/store.py) keeps `OUT/current` and `OUT/_versions/`, and its
    tables are plain hive-partitioned Parquet: writing Delta tables over them would mix both.
    `layouts` gives each table's partition columns (see `uncommitted_files`): a folder
    holding only what a killed run wrote (its first run's staged files, before any table was
    created) is no obstacle: the next run commits beside them, and `vacuum` deletes them.
    """
    if location.is_local:
        import os

        legacy = [n for n in ("current", "_versions") if os.path.lexists(f"{location.uri}/{n}")]
        if legacy:
            raise LegacyLayout(
                f"{location.display} holds the snapshot layout ({', '.join(legacy)}):"
                " write Delta tables into a new folder, or convert this one first"
            )
    for table, partition_by in layouts.items():
        if _open(_table(location, table)) is None:
            uncommitted_files(location, table, partition_by)  # refuses another's files


# --- what killed runs leave: data files no commit ever named ---------------------------

_UUID: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# The names cogscore's writers give data files: `write_data_files`' `part-<uuid>.parquet`
# (and the temporary file a local put writes first, `<name>.<hex>.tmp`), and delta-rs's own
# (`write_deltalake`: `part-00000-<uuid>-c000.snappy.parquet`).
_DATA_FILE: Final = re.compile(
    rf"part-(?:{_UUID}\.parquet(?:\.[0-9a-f]{{32}}\.tmp)?"
    rf"|\d{{5}}-{_UUID}-c\d{{3}}(?:\.[a-z0-9]+)?\.parquet)"
)


def written_by_cogscore(relative: str, partition_by: Sequence[str]) -> bool:
    """Whether `relative` (a path below a table folder) is where cogscore's writers put a
    data file of a table partitioned by `partition_by`: a `column=value` folder per
    partition column, in order (`dump_date` a date or the null partition), then a data
    file's name.

    >>> name = "part-5fea540b-2ba2-4466-b179-825890065b1d.parquet"
    >>> written_by_cogscore(f"dump_date=2026-11-30/category=runtime_rl/{name}",
    ...                     ["dump_date", "category"])
    True
    >>> written_by_cogscore(f"dump_date=2026-11-30/{name}", ["dump_date", "category"])
    False
    >>> written_by_cogscore("dump_date=2026-11-30/part-0.parquet", ["dump_date"])
    False
    """
    *folders, name = relative.split("/")
    if len(folders) != len(partition_by) or not _DATA_FILE.fullmatch(name):
        return False
    for column, folder in zip(partition_by, folders, strict=True):
        key, sep, value = folder.partition("=")
        if key != column or not sep or not value:
            return False
        if column == NIGHT_COLUMN and value != NULL_PARTITION and not _NIGHT.match(value):
            return False
    return True


def _listed(where: Location) -> list[objects.ObjectInfo]:
    """Every file below `where` but hidden ones (`_delta_log`); none where nothing is."""
    try:
        return objects.list_files(where, suffix=None)
    except NothingThere:
        return []


def _active(where: Location, table: DeltaTable) -> set[str]:
    """The data files of the table's latest version, as paths below `where`."""
    prefix = where.uri.rstrip("/") + "/"
    return {unquote(uri.removeprefix(prefix)) for uri in table.file_uris()}


def _named_by_log(where: Location, since: float) -> set[str]:
    """The data files that the commits still in the log of `OUT/table` (at `where`) written
    after `since` (a POSIX time) add or remove. A commit cleaned from the log is older than
    Delta's log retention, and no version it made can be read any more."""
    log = where.child("_delta_log")
    commits = [
        info.relative
        for info in _listed(log)
        if re.fullmatch(r"\d{20}\.json", info.relative) and info.modified.timestamp() >= since
    ]

    def paths(name: str) -> set[str]:
        found = set()
        for line in objects.get_bytes(log, name).splitlines():
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if isinstance(action.get(kind), dict) and "path" in action[kind]:
                    found.add(unquote(action[kind]["path"]))
        return found

    named: set[str] = set()
    with ThreadPoolExecutor(8) as pool:  # one request a commit on an object store
        for found in pool.map(paths, commits):
            named |= found
    return named


def uncommitted_files(
    location: Location, table: str, partition_by: Sequence[str]
) -> list[objects.ObjectInfo]:
    """The data files in `OUT/table` that no commit of its log names: what killed (or
    failed) runs wrote and never committed. Only files of the names and folders cogscore's
    writers give (`written_by_cogscore`) count: another's file in a table stays where it is.
    In a folder without a Delta log (a first run killed before its commits) every file must
    be such a file: one that is not is `LegacyLayout` (someone else's folder)."""
    where = _table(location, table)
    with _errors("list the files of table", where):
        existing = _open(where)
        files = _listed(where)
        if existing is None:
            foreign = [f for f in files if not written_by_cogscore(f.relative, partition_by)]
            if foreign:
                raise LegacyLayout(
                    f"{where.display} holds files but no Delta log ({foreign[0].relative}, "
                    "...), and not only what a killed cogscore run leaves: not cogscore's table"
                )
            return files
        active = _active(where, existing)
        ours = [
            f
            for f in files
            if f.relative not in active and written_by_cogscore(f.relative, partition_by)
        ]
        if not ours:
            return []
        # A file is committed, if ever, after it was written: only commits written since the
        # oldest of them are read (the store's own clock for both; an hour of slack).
        named = _named_by_log(where, min(f.modified.timestamp() for f in ours) - 3600)
        return [f for f in ours if f.relative not in named]


# --- staged files: written by workers, committed once per night by the driver ---------


@dataclass(frozen=True)
class StageTarget:
    """Where the episode scores of a night's files are staged, and their provenance."""

    location: Location
    night: str | None
    fingerprint: str


@dataclass(frozen=True)
class StagedFiles:
    """Files of one night written into a table folder but not committed (picklable)."""

    night: str | None
    adds: list[AddAction]
    schema: pa.Schema = field(repr=False)
    partition_by: tuple[str, ...]


def _partition_path(partition_by: Sequence[str], values: Sequence[Any]) -> str:
    parts = []
    for column, value in zip(partition_by, values, strict=True):
        text = NULL_PARTITION if value is None else quote(str(value), safe="-_.")
        parts.append(f"{column}={text}")
    return "/".join(parts)


def _stats(data: pl.DataFrame) -> str:
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name, dtype in data.schema.items():
        column = data.get_column(name)
        if dtype.is_nested():
            continue
        nulls[name] = column.null_count()
        if column.null_count() == column.len():
            continue
        numeric = dtype.is_integer() or (dtype.is_float() and not column.is_nan().any())
        short = dtype == pl.String and column.str.len_chars().max() <= 64  # type: ignore[operator]
        if numeric or short:
            minimum[name], maximum[name] = column.min(), column.max()
        elif dtype == pl.Date:
            minimum[name], maximum[name] = str(column.min()), str(column.max())
    return json.dumps(
        {"numRecords": data.height, "minValues": minimum, "maxValues": maximum, "nullCount": nulls}
    )


# A staged night's partitions written at once: encoding takes a core each, a store's put
# waits on the network (the six categories of a 100,000-episode night's episode scores: 0.07
# s -> 0.04 s on 2 cores).
PARTITIONS_AT_ONCE: Final = 4


def write_data_files(
    location: Location,
    table: str,
    frame: pl.DataFrame,
    night: str | None,
    partition_by: Sequence[str] = (NIGHT_COLUMN,),
) -> StagedFiles:
    """Write `frame` (one night) as Parquet files into `OUT/table/`, uncommitted.

    One file per partition, named with a fresh UUID (`part-<uuid>.parquet`, so two workers
    never collide), partition columns left out of the files as Delta does; `night` is the
    value of the first (the night column). Readers do not see them until `commit_files`; a
    killed run leaves them to `vacuum`.
    """
    check_night(night)
    where = _table(location, table)
    ready = _night_frame(frame, night, partition_by[0])
    columns = list(partition_by)
    groups = ready.partition_by(columns, as_dict=True, maintain_order=True) if ready.height else {}

    def write(values: tuple[Any, ...], group: pl.DataFrame) -> AddAction:
        key = f"{_partition_path(columns, values)}/part-{uuid.uuid4()}.parquet"
        buffer = io.BytesIO()
        data = group.drop(columns)
        data.write_parquet(buffer, compression="snappy")
        content = buffer.getvalue()
        if objects.put_if_absent(where, key, content) is None:
            raise StorageError(f"cannot stage {where.child(key).display}: it exists")
        partitions = {
            c: (None if v is None else str(v)) for c, v in zip(columns, values, strict=True)
        }
        return AddAction(key, len(content), partitions, int(time.time() * 1000), True, _stats(data))

    if len(groups) > 1:  # encoded and put side by side (polars and the store release the GIL)
        with ThreadPoolExecutor(min(len(groups), PARTITIONS_AT_ONCE)) as pool:
            adds = list(pool.map(write, groups.keys(), groups.values()))
    else:
        adds = [write(values, group) for values, group in groups.items()]
    return StagedFiles(night, adds, ready.to_arrow().schema, tuple(columns))


def _same_columns(table: DeltaTable, schema: pa.Schema) -> bool:
    """The table's columns are the staged files' (in any order), of the same types."""
    ours = {f.name: str(f.type) for f in DeltaSchema.from_arrow(schema).fields}
    return {f.name: str(f.type) for f in table.schema().fields} == ours


def commit_files(
    location: Location,
    table: str,
    night: str | None,
    staged: Sequence[StagedFiles],
    commit_metadata: Mapping[str, Any] | None = None,
) -> int:
    """Replace night `night` of `OUT/table` by the staged files, in one commit; the version."""
    return commit_nights(location, table, [night], staged, commit_metadata)


def _night_filter(
    nights: Sequence[str | None], column: str = NIGHT_COLUMN
) -> list[tuple[str, str, Any]]:
    """The partition filter of ``nights`` (validated) in the night column ``column``: every
    night of a dated run, or the undated night of an undated one (its partition value is
    null, matched as "")."""
    checked = [check_night(n) for n in nights]
    if None in checked:
        if len(checked) > 1:
            raise ValueError("an undated night is replaced alone")
        return [(column, "=", "")]
    return [(column, "in", sorted(set(checked)))]


def commit_nights(
    location: Location,
    table: str,
    nights: Sequence[str | None],
    staged: Sequence[StagedFiles],
    commit_metadata: Mapping[str, Any] | None = None,
) -> int:
    """Replace nights ``nights`` of `OUT/table` by the staged files, in one commit (a
    reader of the table's latest version sees all of them replaced, or none); the version.

    ``staged`` holds at least one `StagedFiles` (for the columns), possibly of no file: a
    night staged with no file is emptied. Every file must be of one of ``nights``."""
    where = _table(location, table)
    if not staged:
        raise ValueError(f"nothing staged for {table}: not even its columns")
    filters = _night_filter(nights, staged[0].partition_by[0])
    if any(s.night not in nights for s in staged):
        raise ValueError(f"files staged for another night than {', '.join(map(str, nights))}")
    first = staged[0]
    if any(s.schema != first.schema or s.partition_by != first.partition_by for s in staged):
        raise ValueError(f"files staged for {table} differ in columns")
    adds = [add for s in staged for add in s.adds]
    properties = CommitProperties(
        custom_metadata={**(commit_metadata or {}), "nights": ",".join(map(str, nights))}
    )
    with _errors("commit the nights of table", where):
        existing = _open(where)
        if existing is None:
            create_table_with_add_actions(
                where.uri,
                DeltaSchema.from_arrow(first.schema),
                adds,
                mode="error",
                partition_by=list(first.partition_by),
                storage_options=_options(where),
                commit_properties=properties,
            )
            return 0  # a table's first version
        if _schema_mode(existing, first.schema) == "merge":  # as write_night merges them
            have = {f.name for f in existing.schema().fields}
            ours = DeltaSchema.from_arrow(first.schema).fields
            existing.alter.add_columns([f for f in ours if f.name not in have])
        if not _same_columns(existing, first.schema):
            raise StorageError(f"cannot commit to {where.display}: the staged columns differ")
        existing.create_write_transaction(
            list[AddAction | RemoveAction](adds),
            mode="overwrite",
            schema=first.schema,
            partition_by=list(first.partition_by),
            partition_filters=filters,
            commit_properties=properties,
        )
        existing.update_incremental()  # the binding does not move the table to its commit
        return existing.version()


def read_staged(location: Location, table: str, staged: StagedFiles) -> pl.DataFrame:
    """The rows of staged (uncommitted) files, partition columns included."""
    where = _table(location, table)
    options = polars_options(storage_options(where))
    frames = []
    with _errors("read staged files of table", where):
        for add in staged.adds:
            uri = where.child(add.path).uri  # OUT may be named like a pattern: literal
            frame = pl.read_parquet(uri, glob=False, storage_options=options)
            values = {c: add.partition_values.get(c) for c in staged.partition_by}
            frames.append(
                frame.with_columns(pl.lit(v, pl.String).alias(c) for c, v in values.items())
            )
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def discard(location: Location, table: str, staged: Sequence[StagedFiles]) -> None:
    """Delete staged files that will never be committed (their night failed, or they were
    written again): nothing else refers to them."""
    _table(location, table)  # a valid table name
    for files in staged:
        for add in files.adds:
            objects.delete(location, f"{table}/{add.path}")
