"""Associative learning: ``score = correct / total_questions`` (no efficiency term)."""

from __future__ import annotations

import polars as pl

from schemas.columns import SCORE, Component
from schemas.contract import Category
from transforms.formulas import formula

COMPONENTS: tuple[Component, ...] = (Component.CORRECT_COUNT, Component.N_ITEMS, Component.ACCURACY)


def fraction_correct() -> pl.Expr:
    """Right items over items."""
    return pl.col(Component.CORRECT_COUNT).cast(pl.Float64) / pl.col(Component.N_ITEMS).cast(
        pl.Float64
    )


@formula(
    Category.ASSOCIATIVE_LEARNING,
    "v1",
    text="right items / items",
    components=COMPONENTS,
    default=True,
)
def score(episodes: pl.LazyFrame) -> pl.LazyFrame:
    accuracy = fraction_correct()
    return episodes.with_columns(accuracy.alias(SCORE), accuracy.alias(Component.ACCURACY))
