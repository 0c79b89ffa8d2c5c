"""Intervals of the scores themselves (``category_scores``, ``model_scores``): each score
is a contrast of one unit, with the variance of the comparisons' design."""

from __future__ import annotations

from typing import Final

import numpy as np
import polars as pl

from schemas.columns import SCORE, SCORE_RANGE
from schemas.comparisons import CI_HIGH, CI_LOW, DEFAULT_LEVEL, DESIGN, DF, SCOPE, SE, Work
from schemas.contract import DUMP_DATE, Col
from transforms.compact import plain
from transforms.compare.inference import inference
from transforms.compare.pairs import Known
from transforms.compare.preparation import Prepared, prepare, score_bounds
from transforms.compare.variance import DEFAULT_DESIGN, NO_SPREAD, DesignChoice, variances
from transforms.stats import bounded_mean_interval

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
    interval. Where every episode of the scope lies in ``SCORE_RANGE`` ([0, 1]), a mean
    of bounded scores: Korn and Graubard's interval (``transforms.stats.
    bounded_mean_interval``: the t interval's coverage fell to 89-93% on few tasks of the
    published table's shape, with its many scores of 0 and 1; this one keeps 94% or more,
    docs/comparisons.md), inside the range, never of zero width (every score the same: the
    effective sample of its tasks). Elsewhere ``score ± t_df · se`` (the normal where the
    tasks are fixed), held to the bound no episode scored past, null where the standard
    error is zero. Null where no variance can be estimated (``design`` ``none``: one task
    with one episode)."""
    return score_intervals_of(prepare(scores, [DUMP_DATE, Col.MODEL]), level, design)


def score_intervals_of(
    prep: Prepared, level: float = DEFAULT_LEVEL, design: DesignChoice = DEFAULT_DESIGN
) -> pl.DataFrame:
    table = prep.scope_table().sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)
    table = table.with_row_index(Work.CID)
    contrasts = table.select(Work.CID, Work.UNIT, pl.lit(1.0).alias(Work.COEF), SCOPE)
    var = variances(prep, contrasts, design, zero_is_unknown=False)
    table = table.join(var, on=Work.CID, how="left")
    table = table.join(score_bounds(prep), on=[Work.UNIT, SCOPE], how="left")
    table = inference(table, SCORE, alpha=1.0 - level, level=level)
    low, high = _bounded(table, level)
    bounded = pl.col(Work.LOWEST).is_not_null() & pl.col(Work.HIGHEST).is_not_null()
    spread = pl.col(SE) > NO_SPREAD
    return table.with_columns(
        pl.when(bounded)
        .then(low)
        .when(spread)
        .then(pl.max_horizontal(CI_LOW, Work.LOWEST))
        .alias(CI_LOW),
        pl.when(bounded)
        .then(high)
        .when(spread)
        .then(pl.min_horizontal(CI_HIGH, Work.HIGHEST))
        .alias(CI_HIGH),
    ).select(SCORE_INTERVAL_COLUMNS)


def score_intervals_known(
    prep: Prepared,
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
    known: Known | None = None,
) -> pl.DataFrame:
    """``score_intervals_of``, where ``known`` holds the standing before's intervals
    (``Known.intervals``): only the ``changed`` models' are made (their units alone,
    ``Prepared.of_units``); each other model's rows are its rows before, on this night (a
    unit's interval is of its own cells alone: the same bits)."""
    if known is None or known.intervals is None:
        return score_intervals_of(prep, level, design)
    changed = pl.col(Col.MODEL).is_in(sorted(known.changed))
    fresh = score_intervals_of(prep.of_units(changed), level, design)
    kept = (
        prep.units.filter(~changed)
        .select(DUMP_DATE, Col.MODEL)
        .join(plain(known.intervals).drop(DUMP_DATE), on=Col.MODEL)
        .select(SCORE_INTERVAL_COLUMNS)
    )
    together = pl.concat([plain(fresh), kept], how="vertical_relaxed")
    return together.sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)


def _bounded(table: pl.DataFrame, level: float) -> tuple[pl.Series, pl.Series]:
    """Korn and Graubard's ``level`` interval of each row's score as a mean of values in
    ``SCORE_RANGE`` (null where no variance is estimated)."""
    low, high = SCORE_RANGE
    width = high - low
    share = (table[SCORE].to_numpy() - low) / width
    variance = table[Work.VAR].to_numpy().astype(np.float64) / width**2  # null -> NaN
    df = table[DF].to_numpy().astype(np.float64)
    lower, upper = bounded_mean_interval(share, variance, df, level)
    return (
        pl.Series(low + width * lower).fill_nan(None),
        pl.Series(low + width * upper).fill_nan(None),
    )
