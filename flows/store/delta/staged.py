"""Staged files, for "workers write their files, the driver commits once per night":
``write_data_files`` writes a night's Parquet files into the table folder (not yet part of the
table) and returns their ``AddAction``s; ``commit_files`` and ``commit_nights`` commit any
number of such stagings in one transaction (see ``flows.store.delta``).
"""

from __future__ import annotations

import io
import json
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, cast
from urllib.parse import quote

import polars as pl
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from flows.store import objects
from flows.store.delta.frames import _night_frame, delta_ready
from flows.store.delta.nights import NIGHT_COLUMN, NULL_PARTITION, check_night
from flows.store.delta.tables import Opened, _errors, _open, _options, _schema_mode, _table
from flows.store.errors import StorageError
from flows.store.location import Location, polars_options, storage_options


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
    """A data file's statistics as Delta's log holds them: each column's nulls, and the
    bounds of its integers, dates, short strings and finite floats (of a column with no NaN),
    all taken in one query (a file of a standing: a handful of rows, a few dozen columns)."""
    columns = _stats_columns(data.schema, ())
    asked = _stats_asked(columns)
    got = data.select(asked).row(0, named=True) if asked else {}
    return _stats_json(columns, got, data.height)


def _stats_columns(schema: pl.Schema, partitions: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    """The columns a data file's statistics are of: its own (not ``partitions``), not nested."""
    return tuple((n, d) for n, d in schema.items() if n not in partitions and not d.is_nested())


@lru_cache(maxsize=64)
def _stats_asked(columns: tuple[tuple[str, Any], ...]) -> tuple[pl.Expr, ...]:
    """``_stats``' aggregations of ``columns`` (made once a schema: a table's files share it,
    and building them took as long as the query on a standing's few rows)."""
    asked: list[pl.Expr] = []
    for i, (name, dtype) in enumerate(columns):
        column = pl.col(name)
        asked.append(column.null_count().alias(f"{i}n"))
        if dtype.is_integer() or dtype.is_float() or dtype in (pl.String, pl.Date):
            asked += [column.min().alias(f"{i}lo"), column.max().alias(f"{i}hi")]
        if dtype == pl.String:
            asked.append(column.str.len_chars().max().alias(f"{i}len"))
        elif dtype.is_float():
            asked.append(column.is_nan().any().alias(f"{i}nan"))
    return tuple(asked)


def _stats_json(columns: Sequence[tuple[str, Any]], got: Mapping[str, Any], height: int) -> str:
    """The statistics of a file of ``height`` rows, from ``_stats_asked``' values ``got``."""
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for i, (name, dtype) in enumerate(columns):
        nulls[name] = got[f"{i}n"]
        if nulls[name] == height:
            continue
        low, high = got.get(f"{i}lo"), got.get(f"{i}hi")
        if dtype.is_integer() or (dtype == pl.String and got[f"{i}len"] <= 64):
            minimum[name], maximum[name] = low, high
        elif dtype.is_float() and not got[f"{i}nan"]:
            # A bound that is infinite is left out, as delta-rs leaves it (null): JSON has no
            # Infinity, and a log holding one is unreadable to every Delta reader.
            for bounds, value in ((minimum, low), (maximum, high)):
                if math.isfinite(cast(float, value)):
                    bounds[name] = value
        elif dtype == pl.Date:
            minimum[name], maximum[name] = str(low), str(high)
    stats = {"numRecords": height, "minValues": minimum, "maxValues": maximum}
    return json.dumps({**stats, "nullCount": nulls}, allow_nan=False)


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
    # Each partition's rows are taken out as it is written (a few at once), not all at once
    # (``partition_by``: a copy of the whole frame beside it, +66 MiB a chunk of 200,000
    # episodes while a file is scored).
    groups = ready.select(columns).unique(maintain_order=True).rows()

    def write(values: tuple[Any, ...]) -> AddAction:
        rows = ready if len(groups) == 1 else ready.filter(_in_partition(columns, values))
        data = rows.drop(columns)  # one partition (a night's table, most): no copy at all
        return _put_file(where, columns, values, data, _stats(data))

    if len(groups) > 1:  # encoded and put side by side (polars and the store release the GIL)
        with ThreadPoolExecutor(min(len(groups), PARTITIONS_AT_ONCE)) as pool:
            adds = list(pool.map(write, groups))
    else:
        adds = [write(values) for values in groups]
    # (the schema of no rows: the columns, without converting a night of them)
    return StagedFiles(night, adds, ready.head(0).to_arrow().schema, tuple(columns))


def write_nights_files(
    location: Location,
    table: str,
    frame: pl.DataFrame,
    nights: Sequence[str],
    column: str = NIGHT_COLUMN,
) -> list[StagedFiles]:
    """Each night of ``nights`` (dated, partitioned by the night column ``column`` alone):
    ``frame``'s rows of it written as ``write_data_files`` writes them (a night without rows:
    no file), the same files, statistics and schema, uncommitted. One conversion and one
    statistics query for every night (a standing table's night is a handful of rows, and a
    query a file was 3/4 of staging a rescore's standings: docs/performance.md, "A batch's
    files")."""
    for night in nights:
        check_night(night)
    if None in nights:
        raise ValueError("a batch of nights is of dated nights")
    where = _table(location, table)
    if column not in frame.columns:
        raise ValueError(f"the frame has no {column} column (nights {nights})")
    ready = delta_ready(frame)
    if not ready.get_column(column).is_in(list(nights)).fill_null(False).all():
        raise ValueError(f"rows of other nights than {', '.join(nights)} in a write of them")
    # Each night's rows together, in their order (a stable sort), taken out as slices.
    grouped = ready.sort(column, maintain_order=True)
    columns = _stats_columns(ready.schema, (column,))
    got = grouped.group_by(column, maintain_order=True).agg(
        pl.len().alias(_ROWS), *_stats_asked(columns)
    )
    data, schema = grouped.drop(column), ready.head(0).to_arrow().schema
    where_rows, start = {}, 0
    for row in got.rows(named=True):
        where_rows[row[column]] = (start, row)
        start += row[_ROWS]
    staged = []
    for night in nights:
        adds = []
        if night in where_rows:
            first, stats = where_rows[night]
            rows = data.slice(first, stats[_ROWS])  # (no copy)
            made = _stats_json(columns, stats, stats[_ROWS])
            adds.append(_put_file(where, (column,), (night,), rows, made))
        staged.append(StagedFiles(night, adds, schema, (column,)))
    return staged


_ROWS: Final = "numRecords"  # (a name no ``_stats_asked`` aggregation takes)


def _put_file(
    where: Location, columns: Sequence[str], values: Sequence[Any], data: pl.DataFrame, stats: str
) -> AddAction:
    """``data`` (one partition's rows, without its partition columns) written as a new
    data file of the partition ``values`` of ``columns``: its ``AddAction``."""
    key = f"{_partition_path(columns, values)}/part-{uuid.uuid4()}.parquet"
    buffer = io.BytesIO()
    data.write_parquet(buffer, compression="snappy")
    content = buffer.getvalue()
    if objects.put_if_absent(where, key, content) is None:
        raise StorageError(f"cannot stage {where.child(key).display}: it exists")
    partitions = {c: (None if v is None else str(v)) for c, v in zip(columns, values, strict=True)}
    return AddAction(key, len(content), partitions, int(time.time() * 1000), True, stats)


def _in_partition(columns: Sequence[str], values: Sequence[Any]) -> pl.Expr:
    """The rows of one partition: ``columns`` equal to ``values`` (null to null)."""
    return pl.all_horizontal(
        pl.col(c).eq_missing(pl.lit(v)) for c, v in zip(columns, values, strict=True)
    )


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
    opened: Opened | None = None,
) -> int:
    """Replace nights ``nights`` of `OUT/table` by the staged files, in one commit (a
    reader of the table's latest version sees all of them replaced, or none); the version.

    ``staged`` holds at least one `StagedFiles` (for the columns), possibly of no file: a
    night staged with no file is emptied. Every file must be of one of ``nights``.
    ``opened``: the handles of a run holding the lease (the table's, moved to the commit)."""
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
        existing = _open(where, opened)
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


def read_staged_columns(
    location: Location, table: str, adds: Sequence[AddAction], columns: Sequence[str | pl.Expr]
) -> pl.DataFrame:
    """``columns`` (names, or expressions of columns, none a partition column) of the rows of
    staged files ``adds``, one file after another in their order: only those columns read (a
    ranged read of each on an object store), each expression applied to a file's rows as it
    is read. A file at a time: one scan of a category's 80 files took 28 MiB for 5.9 MiB of
    ids (their pages decoded side by side), file by file 3 MiB."""
    where = _table(location, table)
    options = polars_options(storage_options(where))
    needed: list[str] = []
    for column in columns:
        names = [column] if isinstance(column, str) else column.meta.root_names()
        needed += [name for name in names if name not in needed]
    frames = []
    with _errors("read staged files of table", where):
        for add in adds:
            uri = where.child(add.path).uri  # OUT may be named like a pattern: literal
            rows = pl.read_parquet(uri, columns=needed, glob=False, storage_options=options)
            frames.append(rows.select(columns))
    return pl.concat(frames) if frames else pl.DataFrame()


def discard(location: Location, table: str, staged: Sequence[StagedFiles]) -> None:
    """Delete staged files that will never be committed (their night failed, or they were
    written again): nothing else refers to them."""
    _table(location, table)  # a valid table name
    for files in staged:
        for add in files.adds:
            objects.delete(location, f"{table}/{add.path}")
