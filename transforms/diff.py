"""What a rescore moved: old and new scores and ranks per night, model and category, and
how sure the change is."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.comparisons import (
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DF,
    MDE,
    N_PAIRS,
    P_VALUE,
    PAIRED,
    RANK_CHANGE_SIGNIFICANT,
    SCOPE,
    SE,
)
from schemas.contract import DUMP_DATE, Col
from schemas.formulas import REPORTED
from schemas.tables import FORMULA_VERSION, SCORE

LEVEL: Final = "level"  # "model" (overall) or "category"
OVERALL: Final = "overall"
KEY: Final = [DUMP_DATE, Col.MODEL, LEVEL, Col.CATEGORY]


def _levels(models: pl.LazyFrame, categories: pl.LazyFrame) -> pl.LazyFrame:
    overall = models.select(
        DUMP_DATE,
        Col.MODEL,
        pl.lit("model").alias(LEVEL),
        pl.lit(OVERALL).alias(Col.CATEGORY),
        SCORE,
        pl.col("rank"),
        pl.col("formula_versions").alias(FORMULA_VERSION),
    )
    per_category = categories.select(
        DUMP_DATE,
        Col.MODEL,
        pl.lit("category").alias(LEVEL),
        Col.CATEGORY,
        SCORE,
        pl.lit(None, pl.Int64).alias("rank"),
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
        {SCORE: "old_score", "rank": "old_rank", FORMULA_VERSION: "old_formula"}
    )
    new = _levels(new_models, new_categories).rename(
        {SCORE: "new_score", "rank": "new_rank", FORMULA_VERSION: "new_formula"}
    )
    return old.join(new, on=KEY, how="full", coalesce=True, nulls_equal=True).select(
        *KEY,
        "old_score",
        "new_score",
        (pl.col("new_score") - pl.col("old_score")).alias("delta"),
        pl.col("old_rank").cast(pl.Int64),
        pl.col("new_rank").cast(pl.Int64),
        "old_formula",
        "new_formula",
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
