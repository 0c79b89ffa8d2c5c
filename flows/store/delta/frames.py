"""Frames as Delta takes them (lake notes): Categorical, Enum and Null columns as String,
timestamps UTC in microseconds, the night column a String; a night's rows checked to be that
night's, and streamed to delta-rs as plain Arrow strings a slice at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import polars as pl
import pyarrow as pa

from flows.store.delta.nights import NIGHT_COLUMN
from schemas.columns import NIGHT_COLUMNS


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
