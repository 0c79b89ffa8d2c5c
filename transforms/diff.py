"""What a rescore moved: old and new scores and ranks per night, model and category, and
how sure the change is."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import FORMULA_VERSION, RANK, SCORE
from schemas.comparisons import (
    CI_HIGH,
    CI_LOW,
    DELTA,
    DESIGN,
    DF,
    DIFF_LEVEL,
    DIFF_LEVEL_CATEGORY,
    DIFF_LEVEL_MODEL,
    FORMULA_VERSIONS,
    MDE,
    N_PAIRS,
    NEW_FORMULA,
    NEW_RANK,
    NEW_SCORE,
    OLD_FORMULA,
    OLD_RANK,
    OLD_SCORE,
    OVERALL,
    P_VALUE,
    PAIRED,
    RANK_CHANGE_SIGNIFICANT,
    SCOPE,
    SE,
)
from schemas.contract import DUMP_DATE, Col
from schemas.formulas import REPORTED

KEY: Final = [DUMP_DATE, Col.MODEL, DIFF_LEVEL, Col.CATEGORY]


def _levels(models: pl.LazyFrame, categories: pl.LazyFrame) -> pl.LazyFrame:
    overall = models.select(
        DUMP_DATE,
        Col.MODEL,
        pl.lit(DIFF_LEVEL_MODEL).alias(DIFF_LEVEL),
        pl.lit(OVERALL).alias(Col.CATEGORY),
        SCORE,
        pl.col(RANK),
        pl.col(FORMULA_VERSIONS).alias(FORMULA_VERSION),
    )
    per_category = categories.select(
        DUMP_DATE,
        Col.MODEL,
        pl.lit(DIFF_LEVEL_CATEGORY).alias(DIFF_LEVEL),
        Col.CATEGORY,
        SCORE,
        pl.lit(None, pl.Int64).alias(RANK),
        FORMULA_VERSION,
    )
    return pl.concat([overall, per_category])


def rescore_diff(
    old_models: pl.LazyFrame,
    old_categories: pl.LazyFrame,
    new_models: pl.LazyFrame,
    new_categories: pl.LazyFrame,
) -> pl.LazyFrame:
    """One row per night, model and level (``category`` = ``overall`` for the model's
    score): old and new score, their difference, and for models the rank before and after.
    A side with no such row (a model that appears or disappears) is null."""
    old = _levels(old_models, old_categories).rename(
        {SCORE: OLD_SCORE, RANK: OLD_RANK, FORMULA_VERSION: OLD_FORMULA}
    )
    new = _levels(new_models, new_categories).rename(
        {SCORE: NEW_SCORE, RANK: NEW_RANK, FORMULA_VERSION: NEW_FORMULA}
    )
    return old.join(new, on=KEY, how="full", coalesce=True, nulls_equal=True).select(
        *KEY,
        OLD_SCORE,
        NEW_SCORE,
        (pl.col(NEW_SCORE) - pl.col(OLD_SCORE)).alias(DELTA),
        pl.col(OLD_RANK).cast(pl.Int64),
        pl.col(NEW_RANK).cast(pl.Int64),
        OLD_FORMULA,
        NEW_FORMULA,
    )


def reported_alone(scores: pl.DataFrame) -> int:
    """The episodes whose score is a reported score alone (formula version ``reported``: a
    score table imported, no formula input): a rescore leaves them as they are."""
    return scores.filter(pl.col(FORMULA_VERSION).cast(pl.String) == REPORTED).height


def with_significance(diff: pl.DataFrame, significance: pl.DataFrame) -> pl.DataFrame:
    """``rescore_diff`` rows with the uncertainty of each change (``rescore_significance``
    of ``transforms.compare``, joined on night, model and scope): standard error, interval,
    p-value, minimum detectable effect, pairing, the sampling design and its degrees of
    freedom, and on ``model`` rows whether the ranking change is significant. Null where the
    model is on one side only."""
    scope = pl.col(SCOPE).alias(Col.CATEGORY)
    columns = [SE, DF, DESIGN, CI_LOW, CI_HIGH, P_VALUE, MDE, N_PAIRS, PAIRED]
    columns += [RANK_CHANGE_SIGNIFICANT]
    joined = significance.select(DUMP_DATE, Col.MODEL, scope, *columns)
    return diff.join(
        joined, on=[DUMP_DATE, Col.MODEL, Col.CATEGORY], how="left", nulls_equal=True
    ).sort(KEY, nulls_last=True)
