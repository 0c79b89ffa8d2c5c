"""Intervals of the scores themselves (``category_scores``, ``model_scores``): each score
is a contrast of one unit, with the variance of the comparisons' design."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import SCORE, SCORE_RANGE
from schemas.comparisons import CI_HIGH, CI_LOW, DEFAULT_LEVEL, DESIGN, DF, SCOPE, SE, Work
from schemas.contract import DUMP_DATE, Col
from transforms.compare.inference import inference
from transforms.compare.preparation import TASK_KEY, Prepared, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, variances

# A standard error this small is the rounding of scores that are all the same (three
# episodes of 0.1 centre on a mean of 0.10000000000000002: 1e-17), not a spread measured.
NO_SPREAD: Final = 1e-12
SCORE_INTERVAL_COLUMNS: Final = [
    DUMP_DATE,
    Col.MODEL,
    SCOPE,
    SCORE,
    SE,
    DF,
    DESIGN,
    CI_LOW,
    CI_HIGH,
]


def score_intervals(
    scores: pl.DataFrame | pl.LazyFrame,
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
) -> pl.DataFrame:
    """Per night, model and scope (each category, ``overall``, ``overall_by_category``):
    the score, its standard error under ``design``, degrees of freedom and a ``level``
    interval ``score ± t_df · se`` (the normal where the tasks are fixed), held to
    ``SCORE_RANGE`` ([0, 1]: a mean of scores in it is in it, so the interval loses no
    coverage; a bound an episode of the scope scored past is left open). The interval is
    null where no spread can be measured: no variance to estimate (``design`` ``none``: one
    task with one episode), or a standard error of zero (every score the same; below
    ``NO_SPREAD``): never an interval of zero width."""
    return score_intervals_of(prepare(scores, [DUMP_DATE, Col.MODEL]), level, design)


def score_intervals_of(
    prep: Prepared, level: float = DEFAULT_LEVEL, design: DesignChoice = DEFAULT_DESIGN
) -> pl.DataFrame:
    table = prep.scope_table().sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)
    table = table.with_row_index(Work.CID)
    contrasts = table.select(Work.CID, Work.UNIT, pl.lit(1.0).alias(Work.COEF), SCOPE)
    table = table.join(variances(prep, contrasts, design), on=Work.CID, how="left")
    table = table.join(_score_bounds(prep), on=[Work.UNIT, SCOPE], how="left")
    spread = pl.col(SE) > NO_SPREAD
    return (
        inference(table, SCORE, alpha=1.0 - level, level=level)
        .with_columns(
            pl.when(spread).then(pl.max_horizontal(CI_LOW, Work.LOWEST)).alias(CI_LOW),
            pl.when(spread).then(pl.min_horizontal(CI_HIGH, Work.HIGHEST)).alias(CI_HIGH),
        )
        .select(SCORE_INTERVAL_COLUMNS)
    )


def _score_bounds(prep: Prepared) -> pl.DataFrame:
    """Per unit and scope: the bounds of ``SCORE_RANGE`` its interval is held to (``LOWEST``,
    ``HIGHEST``), each null where an episode of the scope scored past it."""
    low, high = SCORE_RANGE
    return (
        prep.weights.select(Work.UNIT, SCOPE, *TASK_KEY)
        .join(
            prep.cells.select(Work.UNIT, *TASK_KEY, Work.LOWEST, Work.HIGHEST),
            on=[Work.UNIT, *TASK_KEY],
        )
        .group_by(Work.UNIT, SCOPE)
        .agg(
            pl.when(pl.col(Work.LOWEST).min() >= low).then(pl.lit(low)).alias(Work.LOWEST),
            pl.when(pl.col(Work.HIGHEST).max() <= high).then(pl.lit(high)).alias(Work.HIGHEST),
        )
    )
