"""A night's episodes held compact: text of few distinct values as Categorical.

A scored night reaches its reduction (aggregates, comparisons, regressions) as a few
columns per episode (``schemas.columns.HELD_DTYPES``). As String each text value costs a
16-byte view per row (and its bytes, where longer than 12); as Categorical, 4 bytes. polars
frees categories once no frame uses them. Joins need both sides in the same dtype: the
small frames a reduction makes are turned back into text (``plain``) before they meet the
tables' text.
"""

from __future__ import annotations

import polars as pl

from schemas.columns import CODED_IDS, HELD_DTYPES


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its columns of ``HELD_DTYPES`` in their compact dtypes; ids already
    coded (``coded``) stay so.

    >>> compact(pl.DataFrame({"model": ["m"], "x": [1]})).dtypes
    [Categorical, Int64]
    >>> compact(pl.DataFrame({"episode_id": [3]}, schema={"episode_id": pl.UInt32})).dtypes
    [UInt32]
    """
    schema = frame.schema
    return frame.cast(
        {
            c: t
            for c, t in HELD_DTYPES.items()
            if c in schema and not (c in CODED_IDS and schema[c] == CODED_IDS[c])
        }
    )


def coded(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (the episodes of one category, or fewer) with its ids coded
    (``schemas.columns.CODED_IDS``): each ``episode_id`` and ``instance_id`` its dense rank
    in text order among the frame's, null where it is null. Within the frame the codes sort
    and compare as the text does.

    >>> ids = pl.DataFrame({"episode_id": ["b", "a", "c"], "instance_id": ["x", None, "x"]})
    >>> coded(ids).rows()
    [(2, 1), (1, None), (3, 1)]
    """
    return frame.with_columns(
        pl.col(c).rank("dense").cast(t) for c, t in CODED_IDS.items() if c in frame.columns
    )


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its Categorical columns as text again.

    >>> plain(compact(pl.DataFrame({"model": ["m"]}))).dtypes
    [String]
    """
    text = [c for c, t in frame.schema.items() if t == pl.Categorical]
    # (None to cast: the frame as it is, not a polars query that copies nothing; issue 48.)
    return frame.cast({c: pl.String for c in text}) if text else frame


def owned(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` in buffers of its own.

    Text taken out of a larger frame (a filter, a join) stays views into that frame's
    buffers and keeps all of them alive: the few reject rows and slim columns a worker hands
    back for each file would pin most of the file's text until the night ends (~0.5 MB a
    file of 10,000 episodes). Through Arrow, the text is copied out, the values only.

    >>> big = pl.DataFrame({"id": [f"an-episode-id-{i:06}" for i in range(10_000)]})
    >>> views = pl.CompatLevel.newest()
    >>> size = lambda f: f.to_arrow(compat_level=views).get_total_buffer_size()
    >>> size(big.head(10)) > 100_000, size(owned(big.head(10))) < 1_000
    (True, True)
    """
    copy = pl.from_arrow(frame.to_arrow())
    assert isinstance(copy, pl.DataFrame)
    return copy.cast(frame.schema)
