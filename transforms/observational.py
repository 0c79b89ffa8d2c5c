"""Observational learning: fraction of test cases fully correct; the mean positional
score of the items is a diagnostic, not part of the score."""

from __future__ import annotations

import polars as pl

from schemas.tables import SCORE, Component
from transforms.associative import fraction_correct
from transforms.items import POSITIONAL_MEAN

COMPONENTS: tuple[Component, ...] = (
    Component.CORRECT_COUNT,
    Component.N_ITEMS,
    Component.ACCURACY,
    Component.POSITIONAL,
)


def score(episodes: pl.LazyFrame, version: str) -> pl.LazyFrame:
    accuracy = fraction_correct()
    return episodes.with_columns(
        accuracy.alias(SCORE),
        accuracy.alias(Component.ACCURACY),
        pl.col(POSITIONAL_MEAN).alias(Component.POSITIONAL),
    )
