"""A night's episodes held compact: text of few distinct values as Categorical.

A scored night reaches its reduction (aggregates, comparisons, regressions) as a few
columns per episode (``schemas.tables.SLIM_DTYPES``). As String each text value costs a
16-byte view per row (and its bytes, where longer than 12); as Categorical, 4 bytes. polars
frees categories once no frame uses them. Joins need both sides in the same dtype: the
small frames a reduction makes are turned back into text (``plain``) before they meet the
tables' text.
"""

from __future__ import annotations

import polars as pl

from schemas.tables import SLIM_DTYPES


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its columns of ``SLIM_DTYPES`` in their compact dtypes.

    >>> compact(pl.DataFrame({"model": ["m"], "x": [1]})).dtypes
    [Categorical, Int64]
    """
    return frame.cast({c: t for c, t in SLIM_DTYPES.items() if c in frame.columns})


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its Categorical columns as text again.

    >>> plain(compact(pl.DataFrame({"model": ["m"]}))).dtypes
    [String]
    """
    return frame.cast({c: pl.String for c, t in frame.schema.items() if t == pl.Categorical})
