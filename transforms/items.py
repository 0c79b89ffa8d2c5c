"""Items and answers: the answer that counts for each item, graded.

The answer with the highest ``turn`` for an ``item_id`` counts; an item without one is
graded against the empty string (wrong in every mode, since ``expected`` is not blank).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import DEFAULT_MATCH, Category, Col, Kind
from schemas.tables import Component
from transforms.episodes import KEY
from transforms.matching import ANSWER, CORRECT, EXPECTED, MODE, POSITIONAL, grade

UNKNOWN_ANSWERS: Final = "unknown_answers"
POSITIONAL_MEAN: Final = "positional_mean"


def _items(rows: pl.LazyFrame) -> pl.LazyFrame:
    return rows.filter(pl.col(Col.KIND) == Kind.ITEM).select(
        *KEY, Col.ITEM_ID, Col.TURN, pl.col(Col.EXPECTED).alias(EXPECTED), Col.MATCH, Col.CATEGORY
    )


def _answers(rows: pl.LazyFrame) -> pl.LazyFrame:
    return rows.filter(pl.col(Col.KIND) == Kind.ANSWER).select(
        *KEY, Col.ITEM_ID, Col.TURN, Col.CONTENT
    )


def unknown_answers(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: answers whose item_id names no item of the episode (null names none)."""
    items = _items(rows).select(*KEY, Col.ITEM_ID).unique()
    return (
        _answers(rows)
        .join(items, on=[*KEY, Col.ITEM_ID], how="anti")
        .group_by(KEY)
        .agg(pl.len().alias(UNKNOWN_ANSWERS))
    )


def graded_items(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: ``correct_count``, ``n_items`` and (observational learning) the mean
    positional score of its items (summed left to right in item order)."""
    last_answers = (
        _answers(rows)
        .filter(pl.col(Col.ITEM_ID).is_not_null())
        .group_by([*KEY, Col.ITEM_ID])
        .agg(pl.col(Col.CONTENT).sort_by(Col.TURN).last().alias(ANSWER))
    )
    default_mode = pl.col(Col.CATEGORY).replace_strict(
        {c.value: m.value for c, m in DEFAULT_MATCH.items()}, default=None, return_dtype=pl.String
    )
    pairs = (
        _items(rows)
        .filter(pl.col(EXPECTED).is_not_null())
        .join(last_answers, on=[*KEY, Col.ITEM_ID], how="left")
        .with_columns(pl.col(Col.MATCH).fill_null(default_mode).alias(MODE))
    )
    # The positional diagnostic is observational learning's only: spare the others' items.
    observational = pl.col(Col.CATEGORY) == Category.OBSERVATIONAL_LEARNING
    graded = grade(pairs, [*KEY, Col.ITEM_ID, Col.TURN], positional_where=observational)
    positional = pl.col(POSITIONAL).fill_null(0.0).sort_by(Col.TURN).cum_sum().last()
    return graded.group_by(KEY).agg(
        pl.col(CORRECT).sum().cast(pl.Int64).alias(Component.CORRECT_COUNT),
        pl.len().cast(pl.Int64).alias(Component.N_ITEMS),
        (positional / pl.len().cast(pl.Float64)).alias(POSITIONAL_MEAN),
    )
