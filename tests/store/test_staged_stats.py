"""A staged data file's statistics (``flows.store.delta.staged._stats``, the log's
``minValues``/``maxValues``/``nullCount``) taken in one query, not a reduction per column
(a standing's files are a few rows of a few dozen columns: the reductions were most of the
cost, issue 48, i48-overlap), and the same as a reduction per column makes them."""

from __future__ import annotations

import json
import math
from datetime import date
from typing import Any

import polars as pl
import pytest
from polars.lazyframe import engine

from flows.store.delta import staged


def _per_column(data: pl.DataFrame) -> dict[str, Any]:
    """The statistics made column by column (each column's own reductions)."""
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
        short = dtype == pl.String and column.str.len_chars().max() <= 64  # type: ignore[operator]
        if dtype.is_integer() or short:
            minimum[name], maximum[name] = column.min(), column.max()
        elif dtype.is_float() and not column.is_nan().any():
            for bounds, value in ((minimum, column.min()), (maximum, column.max())):
                if math.isfinite(value):  # type: ignore[arg-type]
                    bounds[name] = value
        elif dtype == pl.Date:
            minimum[name], maximum[name] = str(column.min()), str(column.max())
    return {"numRecords": data.height, "minValues": minimum, "maxValues": maximum,
            "nullCount": nulls}  # fmt: skip


FRAME = pl.DataFrame(
    {
        "i": [3, None, -1],
        "u": pl.Series([1, 2, 3], dtype=pl.UInt8),
        "f": [0.5, None, -2.25],
        "inf": [float("inf"), 1.0, -3.0],
        "nan": [float("nan"), 1.0, 2.0],
        "s": ["b", "a", None],
        "long": ["x" * 65, "y", "z"],
        "d": [date(2026, 1, 2), None, date(2025, 12, 31)],
        "b": [True, False, None],
        "none": pl.Series([None, None, None], dtype=pl.Float64),
        "l": [[1], [2, 3], []],
    }
)


@pytest.mark.parametrize("rows", [FRAME, FRAME.head(1), FRAME.clear()])
def test_a_files_statistics_are_each_columns_own(rows: pl.DataFrame) -> None:
    assert json.loads(staged._stats(rows)) == _per_column(rows)


def test_a_files_statistics_take_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """One query for the whole frame, no reduction of a column of its own."""
    queries, reductions = [0], [0]
    collect = engine._LocalEngine.collect

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        queries[0] += 1
        return collect(self, *args, **kwargs)

    monkeypatch.setattr(engine._LocalEngine, "collect", counted)
    for name in ("min", "max", "null_count", "any"):
        reduce = getattr(pl.Series, name)

        def reduced(self: pl.Series, *args: Any, _reduce: Any = reduce, **kwargs: Any) -> Any:
            reductions[0] += 1
            return _reduce(self, *args, **kwargs)

        monkeypatch.setattr(pl.Series, name, reduced)
    staged._stats(FRAME)
    assert (queries[0], reductions[0]) == (1, 0)
