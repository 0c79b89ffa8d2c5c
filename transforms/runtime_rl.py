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
solving feedback. The weights (``SUCCESS``, ``EFFICIENCY``, ``PROGRESS``) are named once,
below.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import FEEDBACK_OUT_OF_RANGE, SCORE, Component
from schemas.contract import Category, Col, Kind
from transforms.episodes import SEGMENT, of_kind
from transforms.formulas import formula
from transforms.rounding import python_round4

STEP_Y: Final = "step_y"
PROGRESS_MAX: Final = "progress_max"
PROGRESS_LAST: Final = "progress_last"
FIRST_SOLVING_TURN: Final = "first_solving_turn"
# round(SUCCESS x solved + EFFICIENCY x efficiency + PROGRESS x progress, 4)
SUCCESS: Final = 0.55
EFFICIENCY: Final = 0.25
PROGRESS: Final = 0.20


COMPONENTS: tuple[Component, ...] = (
    Component.SUCCESS,
    Component.STEPS,
    Component.EFFICIENCY,
    Component.PROGRESS,
)


def interaction_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode with feedback: ``success``, ``step_y`` (null unless solved), last and
    largest progress, and feedback values outside [0, 1] (a warning)."""
    value = pl.col(Col.VALUE)
    feedback = of_kind(rows, Kind.FEEDBACK, Col.TURN, Col.SOLVED, Col.VALUE)
    # Elementwise, then a plain minimum (a filter inside an aggregation is a slow path).
    solving_turn = pl.when(pl.col(Col.SOLVED).fill_null(False)).then(pl.col(Col.TURN)).min()
    per_episode = (
        feedback.group_by(SEGMENT)
        .agg(
            solving_turn.alias(FIRST_SOLVING_TURN),
            ((value < 0.0) | (value > 1.0)).fill_null(False).sum().alias(FEEDBACK_OUT_OF_RANGE),
        )
        .cache()
    )  # read twice: the result's base, and the solved episodes' steps
    valued = feedback.filter(value.is_not_null()).group_by(SEGMENT)
    progress = valued.agg(
        value.max().alias(PROGRESS_MAX), value.max_by(Col.TURN).alias(PROGRESS_LAST)
    )
    # step_y: the actions before the first solving feedback (by turn).
    solved = per_episode.filter(pl.col(FIRST_SOLVING_TURN).is_not_null())
    steps = (
        of_kind(rows, Kind.ACTION, Col.TURN)
        .join(solved.select(SEGMENT, FIRST_SOLVING_TURN), on=SEGMENT)
        .filter(pl.col(Col.TURN) < pl.col(FIRST_SOLVING_TURN))
        .group_by(SEGMENT)
        .agg(pl.len().alias(STEP_Y))
    )
    success = pl.col(FIRST_SOLVING_TURN).is_not_null()
    return (
        per_episode.join(progress, on=SEGMENT, how="left")
        .join(steps, on=SEGMENT, how="left")
        .with_columns(
            success.alias(Component.SUCCESS),
            pl.when(success).then(pl.col(STEP_Y).fill_null(0)).alias(STEP_Y),
        )
        .drop(FIRST_SOLVING_TURN)
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


@formula(
    Category.RUNTIME_RL,
    "v1",
    text="round({success:.2f} x solved + {efficiency:.2f} x efficiency + {progress:.2f} x "
    "progress, 4)",
    weights={"success": SUCCESS, "efficiency": EFFICIENCY, "progress": PROGRESS},
    components=COMPONENTS,
    default=True,
)
def score(episodes: pl.LazyFrame) -> pl.LazyFrame:
    solved = pl.col(Component.SUCCESS).fill_null(False)
    composite = (
        SUCCESS * solved.cast(pl.Float64)
        + EFFICIENCY * pl.col(Component.EFFICIENCY)
        + PROGRESS * pl.col(Component.PROGRESS)
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
