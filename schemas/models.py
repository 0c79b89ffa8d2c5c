"""The pandera schema of each output table, built from its declaration in ``schemas.tables``.

Imported only to report a table that fails validation (``schemas.validation`` checks a
passing table without pandera, which takes about 2 s to import, pandas with it), and by the
tests that hold that check to pandera's.
"""

from __future__ import annotations

from functools import cache

import pandera.polars as pa

from schemas.checks import FRAME_CHECKS
from schemas.columns import Column, Table
from schemas.tables import TABLES


def _frame_check(name: str) -> pa.Check:
    """The named check of several columns (``schemas.validation.FRAME_CHECKS``)."""
    check = FRAME_CHECKS[name]
    return pa.Check(lambda data: data.lazyframe.select(check), name=name)


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
        checks=[_frame_check(name) for name in table.frame_checks],
        strict=table.strict,
        ordered=table.ordered,
        unique=[str(c) for c in table.unique] if table.unique else None,
        name=table.name,
    )
