"""Procedural learning: the seed's ``procedural_composite_score`` (v2), the same as the 7
new-formula tasks code it (v3: the trajectory and the score rounded to 4 places, Python's
``round``), the seed's previous ``0.5 x weighted mean + 0.5 x test score`` (v1), and the
previous formula as the 4 old-formula tasks code it (v4: a plain mean of the rounds, the
default of those tasks).

All sums run left to right over the rounds in ``round`` order (running sums), so the bits
equal the seed's Python; ``mean(xs)`` is that sum over ``len(xs)``.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import SCORE, Component
from schemas.contract import Category, Col, Kind
from transforms.associative import fraction_correct
from transforms.episodes import SEGMENT, of_kind
from transforms.formulas import formula
from transforms.rounding import python_round4

ZERO_GUARD: Final = 1e-9
# v2, the seed's four parts.
TRANSFER: Final = 0.30
ASYMPTOTE: Final = 0.25
TRAJECTORY: Final = 0.25
CONSISTENCY: Final = 0.20
FOUR_PARTS: Final = {
    "transfer": TRANSFER,
    "asymptote": ASYMPTOTE,
    "trajectory": TRAJECTORY,
    "consistency": CONSISTENCY,
}
# v1, the seed's previous formula: a half each.
HALF: Final = 0.5
# The tasks that still score with the previous formula, as they code it (v4): a plain mean
# of the practice rounds, `sum(learning_scores) / 5 * 0.5 + test * 0.5`.
OLD_FORMULA_TASKS: Final = (
    "boolean_circuit_proc_learning",
    "grammar_induction_proc_learning",
    "lights_out_variant_proc_learning",
    "voting_protocol_proc_learning",
)
# The plain mean of the rounds (v4's), beside the components.
ROUNDS_MEAN: Final = "rounds_mean"


COMPONENTS: tuple[Component, ...] = (
    Component.CORRECT_COUNT,
    Component.N_ITEMS,
    Component.ACCURACY,
    Component.TRANSFER,
    Component.ASYMPTOTE,
    Component.TRAJECTORY,
    Component.CONSISTENCY,
)


# Working columns of ``round_facts``: per round row, its episode's round count, the row's
# position (0..n-1 in round order) and half the count (at least 1).
_N, _POSITION, _K, _MEAN = "_rounds", "_position", "_last_half", "_mean_score"
_ASYMPTOTE, _COVARIANCE, _VARIANCE, _CONSISTENCY = "_sum_last", "_sum_xy", "_sum_xx", "_sum_iy"


def _running_sum(terms: pl.Expr) -> pl.Expr:
    """Each row's sum of its episode's terms up to it, left to right (in round order): an
    episode's last row holds the seed's Python ``sum``, to the bit."""
    return terms.cum_sum().over(SEGMENT)


def round_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: asymptote, trajectory and consistency of its ``round_end`` scores.

    The sums are running sums over the rows in round order, read at each episode's last
    row (window expressions over the episode number, not a Python-speed loop per group).
    """
    value, n, position, k = pl.col(Col.VALUE), pl.col(_N), pl.col(_POSITION), pl.col(_K)
    x_mean = (n - 1.0) / 2.0
    rounds = (
        of_kind(rows, Kind.ROUND_END, Col.ROUND, Col.VALUE)
        .sort(SEGMENT, Col.ROUND)
        .with_columns(
            pl.len().over(SEGMENT).cast(pl.Float64).alias(_N),
            pl.int_range(pl.len()).over(SEGMENT).cast(pl.Float64).alias(_POSITION),
            _running_sum(value).alias(_MEAN),
        )
        .with_columns(
            pl.max_horizontal(pl.lit(1.0), (n / 2.0).floor()).alias(_K),
            (pl.col(_MEAN).last().over(SEGMENT) / n).alias(_MEAN),
        )
        .with_columns(
            _running_sum(value * (position >= n - k).cast(pl.Float64)).alias(_ASYMPTOTE),
            _running_sum((position - x_mean) * (value - pl.col(_MEAN))).alias(_COVARIANCE),
            _running_sum((position - x_mean) * (position - x_mean)).alias(_VARIANCE),
            _running_sum((position + 1.0) * value).alias(_CONSISTENCY),
        )
    )
    sums = rounds.group_by(SEGMENT).agg(
        pl.col(_N, _K, _MEAN, _ASYMPTOTE, _COVARIANCE, _VARIANCE, _CONSISTENCY).last()
    )
    slope = pl.col(_COVARIANCE) / pl.col(_VARIANCE)
    normalised = (slope / (1.0 / (n - 1.0))).clip(-1.0, 1.0)
    return sums.select(
        SEGMENT,
        pl.col(_MEAN).alias(ROUNDS_MEAN),
        (pl.col(_ASYMPTOTE) / k).alias(Component.ASYMPTOTE),
        pl.when(n == 1.0)
        .then(pl.lit(0.5))
        .otherwise((normalised + 1.0) / 2.0)
        .alias(Component.TRAJECTORY),
        (pl.col(_CONSISTENCY) / (n * (n + 1.0) / 2.0)).alias(Component.CONSISTENCY),
    )


def _with_transfer(episodes: pl.LazyFrame) -> pl.LazyFrame:
    return episodes.with_columns(
        fraction_correct().alias(Component.TRANSFER), fraction_correct().alias(Component.ACCURACY)
    )


@formula(
    Category.PROCEDURAL_LEARNING,
    "v1",
    text="{consistency:.1f} x weighted learning mean + {transfer:.1f} x test score (the seed's "
    "previous formula)",
    weights={"consistency": HALF, "transfer": HALF},
    components=COMPONENTS,
)
def previous(episodes: pl.LazyFrame) -> pl.LazyFrame:
    composite = HALF * pl.col(Component.CONSISTENCY) + HALF * pl.col(Component.TRANSFER)
    return _with_transfer(episodes).with_columns(composite.alias(SCORE))


def four_parts() -> pl.Expr:
    """The seed's ``procedural_composite_score`` with its zero guard (unrounded)."""
    test = pl.col(Component.TRANSFER)
    asymptote, consistency = pl.col(Component.ASYMPTOTE), pl.col(Component.CONSISTENCY)
    composite = (
        TRANSFER * test
        + ASYMPTOTE * asymptote
        + TRAJECTORY * pl.col(Component.TRAJECTORY)
        + CONSISTENCY * consistency
    )  # the seed's order of terms, as the tasks write it too
    guarded = (asymptote < ZERO_GUARD) & (test < ZERO_GUARD)
    return pl.when(guarded).then(pl.lit(0.0)).otherwise(composite)


@formula(
    Category.PROCEDURAL_LEARNING,
    "v2",
    text="{transfer:.2f} x transfer + {asymptote:.2f} x asymptote + {trajectory:.2f} x "
    "trajectory + {consistency:.2f} x consistency (the seed's)",
    weights=FOUR_PARTS,
    components=COMPONENTS,
)
def seed_four_parts(episodes: pl.LazyFrame) -> pl.LazyFrame:
    return _with_transfer(episodes).with_columns(four_parts().alias(SCORE))


@formula(
    Category.PROCEDURAL_LEARNING,
    "v3",
    text="v2 as the new-formula tasks code it: round({transfer:.2f} x transfer + "
    "{asymptote:.2f} x asymptote + {trajectory:.2f} x round(trajectory, 4) + "
    "{consistency:.2f} x consistency, 4)",
    weights=FOUR_PARTS,
    components=COMPONENTS,
    default=True,
)
def tasks_four_parts(episodes: pl.LazyFrame) -> pl.LazyFrame:
    """``_learning_curve_slope`` returns ``round(trajectory, 4)`` and
    ``procedural_composite_score`` ``round(raw, 4)`` (Python's round: exact on the binary
    value, ``transforms.rounding``); the zero guard returns 0.0 before either."""
    rounded = python_round4(pl.col(Component.TRAJECTORY)).alias(Component.TRAJECTORY)
    return (
        _with_transfer(episodes)
        .with_columns(rounded)
        .with_columns(python_round4(four_parts()).alias(SCORE))
    )


@formula(
    Category.PROCEDURAL_LEARNING,
    "v4",
    text="the previous formula as the old-formula tasks code it: mean of the rounds x "
    "{mean:.1f} + test score x {transfer:.1f} (a plain mean, not the weighted one of v1)",
    weights={"mean": HALF, "transfer": HALF},
    components=COMPONENTS,
    tasks=OLD_FORMULA_TASKS,
)
def tasks_previous(episodes: pl.LazyFrame) -> pl.LazyFrame:
    composite = pl.col(ROUNDS_MEAN) * HALF + pl.col(Component.TRANSFER) * HALF
    return _with_transfer(episodes).with_columns(composite.alias(SCORE))
