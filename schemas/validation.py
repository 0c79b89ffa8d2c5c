"""Validating a table in one polars query, read from its declaration; pandera's report on
failure.

pandera's polars backend runs each check as a query of its own, plus a few per column for
nulls and a few Python calls around each: 55 queries and 33-40 ms for a file's episode rows,
whatever their number, a sixth of the time a worker spends on a file. And importing pandera
(pandas with it) takes about 1.2 s of CPU, most of what a run of a small night costs (issue
30). ``validate`` asks the questions of each table's declaration (``schemas.tables``: the
same declaration ``schemas.models`` builds the pandera schema from, nothing listed twice)
in one query, each as pandera's built-in check asks it, and passes the frame when every
answer is yes; pandera is not imported. When any is not, pandera validates the frame itself
and raises its report, so a failure is always pandera's ``SchemaErrors``, with every failure
case.

The answers are at least as strict as pandera's (NaN counts as null in every column that
may not hold nulls, as pandera counts it in float columns; duplicates count nulls as equal,
as polars' ``is_duplicated`` does; dtypes must be equal): where they pass, pandera passes
too (``tests/schemas/test_validation.py`` holds them to pandera's on changed tables).
"""

from __future__ import annotations

import re

import polars as pl

from schemas.checks import FRAME_CHECKS
from schemas.columns import Column, Table
from schemas.tables import TABLES


def validate(table: Table | str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` when it meets ``table``'s declaration (checked in one query); else pandera's
    lazy validation of its schema (``schemas.models``) raises its ``SchemaErrors``.

    >>> from schemas.tables import REJECTS_TABLE
    >>> none = pl.DataFrame(schema=REJECTS_TABLE.dtypes)
    >>> validate(REJECTS_TABLE, none).height
    0
    >>> validate("rejects", none.drop("file"))
    Traceback (most recent call last):
    ...
    pandera.errors.SchemaErrors: ...
    """
    spec = TABLES[table] if isinstance(table, str) else table
    if not passes(spec, frame):
        from schemas.models import schema_of  # pandera: imported only to report

        schema_of(spec).validate(frame, lazy=True)  # raises: the failure, reported by pandera
    return frame


def passes(table: Table, frame: pl.DataFrame) -> bool:
    """Whether ``frame`` meets every rule of ``table`` (False also where this cannot tell:
    then pandera decides)."""
    columns = _matched(table, frame.columns)
    if columns is None:
        return False
    if any(frame.schema[name] != column.dtype for name, column in columns):
        return False
    answers = [FRAME_CHECKS[name] for name in table.frame_checks]
    answers = [(check | check.is_null()).all() for check in answers]
    for name, column in columns:
        answers += [(check | check.is_null()).all() for check in _checks(name, column)]
        if not column.nullable:
            answers.append(~_missing(name, frame.schema[name]).any())
    if table.unique:
        answers.append(~pl.struct(*table.unique).is_duplicated().any())
    if not answers:
        return True
    named = [answer.alias(f"answer_{i}") for i, answer in enumerate(answers)]
    # Eager: the in-memory engine (a lazy query's default, polars 2's streaming engine, took
    # ~0.7 ms more to set up each: 22 tables checked in a nightly, 59 ms against 42).
    return frame.select(named).row(0) == (True,) * len(answers)


def _checks(name: str, column: Column) -> list[pl.Expr]:
    """The column's checks, each as pandera's built-in check of ``schemas.models`` asks it
    (``in_range``, ``ge``, ``le``, ``isin``): true on a row that meets it, null on a null."""
    value = pl.col(name)
    checks = []
    if column.unit:
        checks.append(value.ge(0.0).and_(value.le(1.0)))
    if column.ge is not None:
        checks.append(value.ge(column.ge))
    if column.le is not None:
        checks.append(value.le(column.le))
    if column.isin is not None:
        checks.append(value.is_in([str(v) for v in column.isin]))
    return checks


def _missing(name: str, dtype: pl.DataType) -> pl.Expr:
    value = pl.col(name)
    return value.is_null() | value.is_nan() if dtype.is_float() else value.is_null()


def _matched(table: Table, names: list[str]) -> list[tuple[str, Column]] | None:
    """Each column of the frame with the declared column that names it (a pattern column,
    every column it matches); None unless every declared column is there, there is no other
    (``strict``) and they are in the declared order (``ordered``)."""
    matched = [(name, column) for name, column in table.columns.items() if name in names]
    if len(matched) < len(table.columns):
        return None
    for pattern, column in table.patterns.items():
        found = [name for name in names if re.fullmatch(pattern, name)]
        if not found:
            return None
        matched += [(name, column) for name in found]
    if table.strict and sorted(n for n, _ in matched) != sorted(names):
        return None  # another column, or one matched twice
    if table.ordered and (
        table.patterns or [n for n in names if n in table.columns] != list(table.columns)
    ):
        return None
    return matched
