"""Validating a table with its pandera model in one polars query, pandera's report on failure.

pandera's polars backend runs each check as a query of its own, plus a few per column for
nulls and a few Python calls around each: 55 queries and 33-40 ms for a file's episode rows,
whatever their number, a sixth of the time a worker spends on a file. ``validate`` asks the
same questions of the frame in one query, each check built by pandera's own check backend
from the model (nothing is listed twice), and passes the frame when every answer is yes.
When any is not, or the model holds something this does not read (coercion, element-wise
checks, parsers, unique columns, pattern columns in an ordered model), pandera validates the
frame itself and raises its report, so a failure is always pandera's ``SchemaErrors``, with
every failure case.

The answers are at least as strict as pandera's (NaN counts as null in every column that
may not hold nulls, as pandera counts it in float columns; duplicates count nulls as equal,
as polars' ``is_duplicated`` does): where they pass, pandera passes too.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData
from pandera.backends.polars.checks import PolarsCheckBackend
from pandera.backends.polars.register import register_polars_backends
from pandera.config import CONFIG
from pandera.constants import CHECK_OUTPUT_KEY


def validate(
    model: type[pa.DataFrameModel] | pa.DataFrameSchema, frame: pl.DataFrame
) -> pl.DataFrame:
    """``frame`` when it meets ``model`` (a model or a schema; checked in one query); else
    pandera's lazy validation raises its ``SchemaErrors``.

    >>> class Scores(pa.DataFrameModel):
    ...     score: float = pa.Field(ge=0)
    >>> validate(Scores, pl.DataFrame({"score": [0.5]})).height
    1
    >>> validate(Scores, pl.DataFrame({"score": [-1.0]}))
    Traceback (most recent call last):
    ...
    pandera.errors.SchemaErrors: ...
    """
    if not _passes(_schema(model), frame):
        model.validate(frame, lazy=True)  # raises: the failure, reported by pandera
    return frame


def _schema(model: type[pa.DataFrameModel] | pa.DataFrameSchema) -> pa.DataFrameSchema:
    _register()
    return model if isinstance(model, pa.DataFrameSchema) else _model_schema(model)


@cache
def _register() -> None:
    # pandera registers its polars checks on its first validation: in a fresh worker, this
    # may come first.
    register_polars_backends(use_narwhals_backend=CONFIG.use_narwhals_backend)


@cache
def _model_schema(model: type[pa.DataFrameModel]) -> pa.DataFrameSchema:
    return model.to_schema()


def _passes(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> bool:
    """Whether every check of ``schema`` holds on ``frame`` (False also where this cannot
    tell: then pandera decides)."""
    if CONFIG.use_narwhals_backend or not _readable(schema):
        return False
    lazy = frame.lazy()
    columns = _matched(schema, lazy)
    if columns is None:
        return False
    for name, column in columns:
        data = PolarsData(lazy.select(name), name)
        if column.dtype is not None and not column.dtype.check(frame.schema[name], data):
            return False
    answers = [_check(lazy, "*", check) for check in schema.checks]
    for name, column in columns:
        answers += [_check(lazy, name, check) for check in column.checks]
        if not column.nullable:
            answers.append(_no_nulls(lazy, name, frame.schema[name]))
    if schema.unique:
        unique = schema.unique
        subsets = [unique] if all(isinstance(u, str) for u in unique) else unique
        answers += [lazy.select(~pl.struct(*s).is_duplicated().any()) for s in subsets]
    if not answers:
        return True
    named = [a.select(pl.all().alias(f"answer_{i}")) for i, a in enumerate(answers)]
    return bool(pl.concat(named, how="horizontal").collect().row(0) == (True,) * len(answers))


def _matched(schema: pa.DataFrameSchema, lazy: pl.LazyFrame) -> list[tuple[str, Any]] | None:
    """Each column of the frame with the model's column that names it (a pattern column,
    every column it matches, as polars selects them); None unless every model column is
    there, there is no other (``strict``) and they are in the model's order (``ordered``)."""
    names = lazy.collect_schema().names()
    matched: list[tuple[str, Any]] = []
    for column in schema.columns.values():
        found = (
            lazy.select(pl.col(column.selector)).collect_schema().names()
            if column.regex
            else ([column.name] if column.name in names else [])
        )
        if not found:
            return None
        matched += [(name, column) for name in found]
    if schema.strict and sorted(n for n, _ in matched) != sorted(names):
        return None  # another column, or one matched twice
    literal = [c.name for c in schema.columns.values() if not c.regex]
    if schema.ordered and [n for n in names if n in literal] != literal:
        return None
    return matched


def _readable(schema: pa.DataFrameSchema) -> bool:
    """The model says nothing this module does not check as pandera does."""
    columns = schema.columns.values()
    return (
        schema.strict in (True, False)  # not "filter"
        and not schema.coerce
        and not getattr(schema, "parsers", None)
        and not getattr(schema, "drop_invalid_rows", False)
        and not schema.add_missing_columns
        and all(not c.coerce and c.required and not getattr(c, "parsers", None) for c in columns)
        and not (schema.ordered and any(c.regex for c in columns))
        and all(not check.element_wise for check in _all_checks(schema))
    )


def _all_checks(schema: pa.DataFrameSchema) -> list[pa.Check]:
    return [*schema.checks, *(check for c in schema.columns.values() for check in c.checks)]


def _check(lazy: pl.LazyFrame, key: str, check: pa.Check) -> pl.LazyFrame:
    """One row, one boolean: whether ``check`` holds on every row (a null outcome fails
    unless the check ignores nulls), as pandera's check backend judges it.

    A built-in check's function is looked up again first, as pandera's ``Check.__call__``
    does: a check made before pandera registered its polars checks (pandera caches a
    model's schema, and importing ``flows`` makes some) has none for polars data."""
    name = getattr(check._check_fn, "__name__", None)
    if name is not None and check.is_builtin_check(name):
        check._check_fn = check.get_builtin_check_fn(name)
    out = PolarsCheckBackend(check).apply(PolarsData(lazy, key))
    if isinstance(out, bool):
        return pl.LazyFrame({CHECK_OUTPUT_KEY: [out]})
    outcome = pl.col(CHECK_OUTPUT_KEY)
    outcome = outcome | outcome.is_null() if check.ignore_na else outcome.fill_null(False)
    return out.select(outcome.all())


def _no_nulls(lazy: pl.LazyFrame, name: str, dtype: pl.DataType) -> pl.LazyFrame:
    value = pl.col(name)
    missing = value.is_null() | value.is_nan() if dtype.is_float() else value.is_null()
    return lazy.select(~missing.any())
