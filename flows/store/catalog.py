"""The output's tables by name: each table's name, partition layout, an empty frame of it
and a frame conformed to its columns; and the points where tests stop a run (``fault_point``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import polars as pl

from flows.store import runs_table
from flows.store.runs_table import RUNS
from schemas.tables import (
    CATEGORY_SCORES_TABLE,
    EPISODE_SCORES_TABLE,
    MODEL_COMPARISONS_TABLE,
    MODEL_SCORES_TABLE,
    REGRESSIONS_TABLE,
    REJECTS_TABLE,
    REPLACED_EPISODES_TABLE,
    RESCORE_DIFF_TABLE,
    STANDING_EPISODES_TABLE,
    STANDING_TABLES,
    TABLES,
    TASK_SCORES_TABLE,
)

EPISODE_SCORES: Final = EPISODE_SCORES_TABLE.name


REJECTS: Final = REJECTS_TABLE.name


REPLACED_EPISODES: Final = REPLACED_EPISODES_TABLE.name  # contract 1.4


TASK_SCORES: Final = TASK_SCORES_TABLE.name


CATEGORY_SCORES: Final = CATEGORY_SCORES_TABLE.name


MODEL_SCORES: Final = MODEL_SCORES_TABLE.name


RESCORE_DIFF: Final = RESCORE_DIFF_TABLE.name  # written by rescores only


MODEL_COMPARISONS: Final = MODEL_COMPARISONS_TABLE.name


REGRESSIONS: Final = REGRESSIONS_TABLE.name


# The latest standing's episodes from earlier nights (empty where it is a night's own): not a
# table of results, what the next run makes its standing from.
STANDING_EPISODES: Final = STANDING_EPISODES_TABLE.name


# The tables every run writes (rescore_diff only a rescore).
CORE_TABLES: Final = (
    EPISODE_SCORES,
    REJECTS,
    REPLACED_EPISODES,
    TASK_SCORES,
    CATEGORY_SCORES,
    MODEL_SCORES,
    MODEL_COMPARISONS,
    REGRESSIONS,
    *(table.name for table in STANDING_TABLES),
)


ALL_TABLES: Final = (*TABLES, RUNS)


# Each table's partition columns, as its folders are laid out (the runs table has none).
LAYOUTS: Final[Mapping[str, tuple[str, ...]]] = {
    **{name: spec.partition_by for name, spec in TABLES.items()},
    RUNS: (),
}


PAUSE_AT = "COGSCORE_PAUSE_AT"  # fault injection for tests: a point name, and


PAUSE_FLAG = "COGSCORE_PAUSE_FLAG"  # a file to create when the run reaches it


def fault_point(name: str) -> None:
    """Where tests kill a run (kill -9): with ``COGSCORE_PAUSE_AT=name`` the run writes the
    flag file and waits there. Does nothing otherwise."""
    if os.environ.get(PAUSE_AT) == name:
        import time

        Path(os.environ[PAUSE_FLAG]).write_text(name)
        time.sleep(300)


def empty_table(table: str) -> pl.DataFrame:
    """A table no run wrote: no rows, the columns of its model (a regex column left out)."""
    if table == RUNS:
        return runs_table.RUNS_SCHEMA.to_frame()
    return TABLES[table].empty()


def conform(table: str, frame: pl.LazyFrame) -> pl.LazyFrame:
    """``frame`` (a version of ``table``) with the model's columns first, in its order, those
    it lacks as nulls (written before a newer cogscore added them), then any others."""
    if table not in TABLES:
        return frame
    have = frame.collect_schema()
    model = empty_table(table).schema
    known = [
        pl.col(name) if name in have else pl.lit(None, dtype).alias(name)
        for name, dtype in model.items()
    ]
    return frame.select(*known, *(name for name in have if name not in model))


def in_order(frame: pl.DataFrame, order: Sequence[str]) -> bool:
    """Whether ``frame`` is sorted by ``order`` already (no nulls in its keys): a night's
    episode scores come sorted, and a second sort of them cost 800 MB at 1.5 M episodes.

    >>> in_order(pl.DataFrame({"a": [1, 1, 2], "b": ["y", "z", "a"]}), ["a", "b"])
    True
    >>> in_order(pl.DataFrame({"a": [1, 1, 2], "b": ["z", "y", "a"]}), ["a", "b"])
    False
    """
    if frame.height < 2 or frame.select(pl.any_horizontal(pl.col(order).is_null().any())).item():
        return frame.height < 2
    later = pl.lit(True)  # rows equal on every key are in order
    for key in reversed(order):
        here, before = pl.col(key), pl.col(key).shift(1)
        later = (here > before) | ((here == before) & later)
    return bool(frame.select(later.slice(1).all()).item())
