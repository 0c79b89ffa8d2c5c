"""Reading one dump file into the canonical row frame.

The contract lets files differ: nullable columns may be missing, integer widths vary, extra
columns are allowed. ``schema_problems`` judges a file's schema (from its footer, so nothing
is read) and ``normalise`` projects, casts and fills it into the canonical frame of
``schemas.contract.DTYPES`` plus the file and its hive partition values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from schemas.contract import (
    DTYPES,
    DUMP_DATE,
    FILE,
    INSTANCE_ID,
    NULLABLE,
    OPTIONAL_DTYPES,
    REQUIRED,
    Col,
)
from schemas.rules import Rule

_STRINGS: Final = (pl.String, pl.Categorical, pl.Enum)
_INTEGERS: Final = (
    pl.Int8,
    pl.Int16,
    pl.Int32,
    pl.Int64,
    pl.UInt8,
    pl.UInt16,
    pl.UInt32,
    pl.UInt64,
)
_FLOATS: Final = (pl.Float32, pl.Float64)


def _accepts(column: str, dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.Null):  # an all-null column written without a type
        return True
    if column == INSTANCE_ID:  # an id: text, or a number harnesses count instances with
        return isinstance(dtype, _STRINGS + _INTEGERS)
    target = OPTIONAL_DTYPES[column] if column in OPTIONAL_DTYPES else DTYPES[Col(column)]
    if isinstance(target, pl.String):
        return isinstance(dtype, _STRINGS)
    if isinstance(target, pl.Int64):
        return isinstance(dtype, _INTEGERS)
    if isinstance(target, pl.Float64):
        return isinstance(dtype, _FLOATS + _INTEGERS)
    if isinstance(target, pl.Datetime):
        return isinstance(dtype, pl.Datetime)
    return dtype == target


def schema_problems(schema: Mapping[str, pl.DataType]) -> list[tuple[Rule, str]]:
    """What in a file's schema breaks the contract; empty when the file can be read.

    >>> schema_problems({"turn": pl.Int16()})[0][0].value
    'missing_column'
    """
    problems: list[tuple[Rule, str]] = [
        (Rule.MISSING_COLUMN, f"required column `{c}` is missing")
        for c in REQUIRED
        if c not in schema
    ]
    problems += [
        (
            Rule.WRONG_COLUMN_TYPE,
            f"column `{c}` has type {schema[c]}; the contract allows {_allowed(c)}",
        )
        for c in (*Col, *OPTIONAL_DTYPES)
        if c in schema and not _accepts(c, schema[c])
    ]
    return problems


def _allowed(column: str) -> str:
    if column == INSTANCE_ID:
        return "a string or an integer"
    if column in OPTIONAL_DTYPES:
        return str(OPTIONAL_DTYPES[column])
    return str(DTYPES[Col(column)])


def normalise(
    rows: pl.LazyFrame,
    schema: Mapping[str, pl.DataType],
    *,
    file: str | pl.Expr,
    partitions: Mapping[str, str],
) -> pl.LazyFrame:
    """The canonical frame (``schemas.rows.DumpRows``): every contract column in its
    canonical dtype, the optional columns of contracts 1.1 to 1.5 (null where absent), ``file``,
    and the hive ``dump_date`` (null for a dump not partitioned by it; other partition keys
    are not used by scoring). ``file``: the file's path in the dump, or an expression of
    each row's (rows of several files of one schema, scanned together)."""
    columns = [
        pl.col(c).cast(DTYPES[c], strict=False) if c in schema else pl.lit(None, DTYPES[c]).alias(c)
        for c in (*REQUIRED, *NULLABLE)
        if c != Col.TS
    ]
    # Not scored, read for an episode's wall time (``transforms.usage``): any time zone's
    # instants (a naive time read as UTC), as the optional columns' timestamps are cast.
    when = pl.col(Col.TS).cast(DTYPES[Col.TS]) if Col.TS in schema else pl.lit(None, DTYPES[Col.TS])
    optional = [
        pl.col(c).cast(t) if c in schema else pl.lit(None, t).alias(c)
        for c, t in OPTIONAL_DTYPES.items()
    ]
    return rows.select(
        *columns,
        *optional,
        when.alias(Col.TS),
        (pl.lit(file, pl.String) if isinstance(file, str) else file).alias(FILE),
        pl.lit(partitions.get(DUMP_DATE), pl.String).alias(DUMP_DATE),
    )


def partition_values(relative_path: str) -> dict[str, str]:
    """Hive ``key=value`` folder names of a file path relative to the dump root.

    >>> partition_values("dump_date=2026-12-01/part-0.parquet")
    {'dump_date': '2026-12-01'}
    """
    folders = relative_path.split("/")[:-1]
    return dict(part.split("=", 1) for part in folders if "=" in part)
