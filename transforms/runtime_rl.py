"""Runtime RL: the seed's ``_composite_score``::

    progress = max(0.0, min(1.0, float(progress)))
    if solved:
        step_y = max(1, min(step_y, budget_n))
        eff = 1.0 if step_y <= min_explore else max(
            floor, 1.0 - (1.0 - floor) * (paid_used / paid_budget))
    else:
        eff = 0.0
    return round(0.55 * float(solved) + 0.25 * eff + 0.20 * progress, 4)

Inputs come from the interaction (contract): actions ordered by ``turn``; a feedback row
belongs to the latest action before it; ``step_y`` counts the actions before the first
solving feedback.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import Col, Kind
from schemas.tables import SCORE, Component
from transforms.episodes import KEY
from transforms.rounding import python_round4

STEP_Y: Final = "step_y"
PROGRESS_MAX: Final = "progress_max"
PROGRESS_LAST: Final = "progress_last"


COMPONENTS: tuple[Component, ...] = (
    Component.SUCCESS,
    Component.STEPS,
    Component.EFFICIENCY,
    Component.PROGRESS,
)


def interaction_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: ``success``, ``step_y`` (null unless solved), last and largest progress."""
    is_action = pl.col(Col.KIND) == Kind.ACTION
    feedback = pl.col(Col.KIND) == Kind.FEEDBACK
    solving = feedback & pl.col(Col.SOLVED).fill_null(False)
    with_value = feedback & pl.col(Col.VALUE).is_not_null()
    steps = (
        rows.filter(is_action | feedback)
        .select(*KEY, Col.TURN, Col.KIND, Col.SOLVED, Col.VALUE)
        .with_columns(
            is_action.cast(pl.Int64).cum_sum().over(KEY, order_by=Col.TURN).alias("actions_so_far")
        )
    )
    return steps.group_by(KEY).agg(
        solving.any().alias(Component.SUCCESS),
        pl.col("actions_so_far").filter(solving).min().alias(STEP_Y),
        pl.col(Col.VALUE).filter(with_value).max().alias(PROGRESS_MAX),
        pl.col(Col.VALUE)
        .filter(with_value)
        .sort_by(pl.col(Col.TURN).filter(with_value))
        .last()
        .alias(PROGRESS_LAST),
    )


def progress() -> pl.Expr:
    raw = pl.when(pl.col("progress") == "last").then(PROGRESS_LAST).otherwise(PROGRESS_MAX)
    return raw.fill_null(0.0).clip(0.0, 1.0)


def efficiency() -> pl.Expr:
    budget, min_explore, floor = pl.col("budget"), pl.col("min_explore"), pl.col("floor")
    step_y = pl.max_horizontal(pl.lit(1), pl.min_horizontal(STEP_Y, budget))
    paid_used = (step_y - min_explore).cast(pl.Float64)
    paid_budget = (budget - min_explore).cast(pl.Float64)
    decayed = pl.max_horizontal(floor, 1.0 - (1.0 - floor) * (paid_used / paid_budget))
    return (
        pl.when(~pl.col(Component.SUCCESS))
        .then(pl.lit(0.0))
        .when(step_y <= min_explore)
        .then(pl.lit(1.0))
        .otherwise(decayed)
    )


def score(episodes: pl.LazyFrame, version: str) -> pl.LazyFrame:
    solved = pl.col(Component.SUCCESS).fill_null(False)
    composite = (
        0.55 * solved.cast(pl.Float64)
        + 0.25 * pl.col(Component.EFFICIENCY)
        + 0.20 * pl.col(Component.PROGRESS)
    )
    return (
        episodes.with_columns(solved.alias(Component.SUCCESS))
        .with_columns(
            efficiency().alias(Component.EFFICIENCY),
            progress().alias(Component.PROGRESS),
            pl.col(STEP_Y).cast(pl.Int64).alias(Component.STEPS),
        )
        .with_columns(python_round4(composite).alias(SCORE))
    )
