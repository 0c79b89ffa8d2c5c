"""Intervals of the scores themselves (``category_scores``, ``model_scores``): each score
is a contrast of one unit, with the variance of the comparisons' design."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.comparisons import CI_HIGH, CI_LOW, DEFAULT_LEVEL, DESIGN, DF, SCOPE, SE, Work
from schemas.contract import DUMP_DATE, Col
from schemas.tables import SCORE
from transforms.compare.preparation import Prepared, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, inference, variances

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
    interval ``score ± t_df · se`` (the normal where the tasks are fixed). The interval is
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
    spread = pl.col(SE) > NO_SPREAD
    return (
        inference(table, SCORE, alpha=1.0 - level, level=level)
        .with_columns(pl.when(spread).then(CI_LOW), pl.when(spread).then(CI_HIGH))
        .select(SCORE_INTERVAL_COLUMNS)
    )
