"""Procedural learning: the seed's ``procedural_composite_score`` (v2) and the previous
``0.5 x weighted mean + 0.5 x test score`` (v1).

All sums run left to right over the rounds in ``round`` order (``cum_sum().last()``), so the
bits equal the seed's Python; ``mean(xs)`` is that sum over ``len(xs)``.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import Col, Kind
from schemas.tables import SCORE, Component
from transforms.associative import fraction_correct
from transforms.episodes import SEGMENT

ZERO_GUARD: Final = 1e-9


COMPONENTS: tuple[Component, ...] = (
    Component.CORRECT_COUNT,
    Component.N_ITEMS,
    Component.ACCURACY,
    Component.TRANSFER,
    Component.ASYMPTOTE,
    Component.TRAJECTORY,
    Component.CONSISTENCY,
)


def _seqsum(terms: pl.Expr) -> pl.Expr:
    return terms.cum_sum().last()


def round_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: asymptote, trajectory and consistency of its ``round_end`` scores."""
    scores = pl.col(Col.VALUE).sort_by(Col.ROUND)
    n = pl.len().cast(pl.Float64)
    k = pl.max_horizontal(pl.lit(1), pl.len() // 2).cast(pl.Float64)
    position = pl.int_range(pl.len()).cast(pl.Float64)  # 0..n-1 in round order
    in_last_k = (position >= n - k).cast(pl.Float64)
    mean_score = _seqsum(scores) / n
    x_mean = (n - 1.0) / 2.0
    slope = _seqsum((position - x_mean) * (scores - mean_score)) / _seqsum(
        (position - x_mean) * (position - x_mean)
    )
    normalised = (slope / (1.0 / (n - 1.0))).clip(-1.0, 1.0)
    trajectory = pl.when(pl.len() == 1).then(pl.lit(0.5)).otherwise((normalised + 1.0) / 2.0)
    return (
        rows.filter(pl.col(Col.KIND) == Kind.ROUND_END)
        .group_by(SEGMENT)
        .agg(
            (_seqsum(scores * in_last_k) / k).alias(Component.ASYMPTOTE),
            trajectory.alias(Component.TRAJECTORY),
            (_seqsum((position + 1.0) * scores) / (n * (n + 1.0) / 2.0)).alias(
                Component.CONSISTENCY
            ),
        )
    )


def score(episodes: pl.LazyFrame, version: str) -> pl.LazyFrame:
    test = pl.col(Component.TRANSFER)
    asymptote, consistency = pl.col(Component.ASYMPTOTE), pl.col(Component.CONSISTENCY)
    if version == "v1":
        composite = 0.5 * consistency + 0.5 * test
    else:
        four_parts = (
            0.30 * test
            + 0.25 * asymptote
            + 0.25 * pl.col(Component.TRAJECTORY)
            + 0.20 * consistency
        )
        guarded = (asymptote < ZERO_GUARD) & (test < ZERO_GUARD)
        composite = pl.when(guarded).then(pl.lit(0.0)).otherwise(four_parts)
    return episodes.with_columns(
        fraction_correct().alias(Component.TRANSFER), fraction_correct().alias(Component.ACCURACY)
    ).with_columns(composite.alias(SCORE))
