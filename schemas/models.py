"""The pandera schema of each output table, built from its declaration in ``schemas.tables``.

Only the writers import this module (pandera takes about 2 s to import, pandas with it): the
read commands need the tables' dtypes alone, which ``schemas.tables`` declares.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Final

import pandera.polars as pa
import polars as pl

from schemas.comparisons import CI_HIGH, CI_LOW, N_RANKED, RANK_HIGH, RANK_LOW
from schemas.tables import TABLES, Column, Table


def _low_below_high(data: pa.PolarsData) -> pl.LazyFrame:
    # (an interval may be null: no spread to measure)
    return data.lazyframe.select((pl.col(CI_LOW) <= pl.col(CI_HIGH)).fill_null(True))


def _ranks_within_group(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (pl.col(RANK_LOW) <= pl.col(RANK_HIGH))
        & (pl.col(RANK_HIGH) <= pl.col(N_RANKED))
        & (pl.col("rank") <= pl.col(N_RANKED))
    )


# The checks of several columns that tables name in ``Table.frame_checks``.
FRAME_CHECKS: Final[dict[str, Callable[[pa.PolarsData], pl.LazyFrame]]] = {
    "low_below_high": _low_below_high,
    "ranks_within_group": _ranks_within_group,
}


def _checks(column: Column) -> list[pa.Check]:
    checks = []
    if column.unit:
        checks.append(pa.Check.in_range(0.0, 1.0))
    if column.ge is not None:
        checks.append(pa.Check.ge(column.ge))
    if column.le is not None:
        checks.append(pa.Check.le(column.le))
    if column.isin is not None:
        checks.append(pa.Check.isin(list(column.isin)))
    return checks


def _column(name: str, column: Column, regex: bool = False) -> pa.Column:
    return pa.Column(
        column.dtype, checks=_checks(column), nullable=column.nullable, name=name, regex=regex
    )


def schema_of(table: Table | str) -> pa.DataFrameSchema:
    """The pandera schema of ``table`` (or of the table of that name), made once.

    >>> schema_of("regressions").unique
    ['dump_date', 'model', 'scope']
    """
    return _schema_named(table.name if isinstance(table, Table) else table)


@cache
def _schema_named(name: str) -> pa.DataFrameSchema:
    table = TABLES[name]
    # Names as plain strings: a StrEnum member as a column's name (Col.CATEGORY) makes
    # pandera's report of failures fail itself (polars: "String is incompatible with Enum").
    columns = {str(name): _column(str(name), c) for name, c in table.columns.items()}
    columns |= {pattern: _column(pattern, c, regex=True) for pattern, c in table.patterns.items()}
    return pa.DataFrameSchema(
        columns,
        checks=[pa.Check(FRAME_CHECKS[name], name=name) for name in table.frame_checks],
        strict=table.strict,
        ordered=table.ordered,
        unique=[str(c) for c in table.unique] if table.unique else None,
        name=table.name,
    )
