"""Observational learning: fraction of test cases fully correct; the mean positional
score of the items is a diagnostic, not part of the score."""

from __future__ import annotations

import polars as pl

from schemas.columns import SCORE, Component
from schemas.contract import Category
from transforms.associative import fraction_correct
from transforms.formulas import formula
from transforms.items import POSITIONAL_MEAN

COMPONENTS: tuple[Component, ...] = (
    Component.CORRECT_COUNT,
    Component.N_ITEMS,
    Component.ACCURACY,
    Component.POSITIONAL,
)


@formula(
    Category.OBSERVATIONAL_LEARNING,
    "v1",
    text="right items / items (the positional score kept as a diagnostic)",
    components=COMPONENTS,
    default=True,
)
def score(episodes: pl.LazyFrame) -> pl.LazyFrame:
    accuracy = fraction_correct()
    return episodes.with_columns(
        accuracy.alias(SCORE),
        accuracy.alias(Component.ACCURACY),
        pl.col(POSITIONAL_MEAN).alias(Component.POSITIONAL),
    )
