"""A rescore's significance: the same episodes under two formulas, so ``new - old`` is
paired episode by episode (and task by task)."""

from __future__ import annotations

import polars as pl

from schemas.columns import SCORE
from schemas.comparisons import (
    CHANGE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    DESIGN,
    DF,
    MDE,
    MODEL_A,
    MODEL_B,
    N_EPISODES_NEW,
    N_EPISODES_OLD,
    N_PAIRS,
    NEW_DIFF,
    NEW_SCORE,
    OLD_DIFF,
    OLD_SCORE,
    OVERALL,
    OVERALL_BY_CATEGORY,
    P_HOLM,
    P_NEW_DIFF,
    P_VALUE,
    PAIRED,
    RANK_CHANGE_SIGNIFICANT,
    SCOPE,
    SE,
    SIGNIFICANT,
    Work,
)
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from transforms.compare.inference import inference
from transforms.compare.pairs import two_unit_contrasts
from transforms.compare.preparation import TASK_KEY, Prepared, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, variances
from transforms.stats import adjust_over


def _rescore_prepared(
    old_scores: pl.DataFrame | pl.LazyFrame, new_scores: pl.DataFrame | pl.LazyFrame
) -> Prepared:
    old = old_scores.lazy().collect() if isinstance(old_scores, pl.LazyFrame) else old_scores
    new = new_scores.lazy().collect() if isinstance(new_scores, pl.LazyFrame) else new_scores
    columns = [DUMP_DATE, Col.MODEL, *TASK_KEY, Col.EPISODE_ID, SCORE]
    if INSTANCE_ID in old.columns and INSTANCE_ID in new.columns:
        columns.append(INSTANCE_ID)
    both = pl.concat(
        [
            old.select(columns).with_columns(pl.lit("old").alias(Work.VERSION)),
            new.select(columns).with_columns(pl.lit("new").alias(Work.VERSION)),
        ]
    )
    return prepare(both, [DUMP_DATE, Col.MODEL, Work.VERSION])


def _old_new(prep: Prepared) -> pl.DataFrame:
    """Per night, model and scope (categories and ``overall``: the scores ``rescore_diff``
    shows) present under both formulas: the old unit and score, the new ones (``_new``)."""
    table = prep.scope_table().filter(pl.col(SCOPE) != OVERALL_BY_CATEGORY)
    old = table.filter(pl.col(Work.VERSION) == "old").drop(Work.VERSION)
    new = table.filter(pl.col(Work.VERSION) == "new").drop(Work.VERSION)
    return old.join(new, on=[DUMP_DATE, Col.MODEL, SCOPE], suffix="_new", nulls_equal=True)


def rescore_significance(
    old_scores: pl.DataFrame | pl.LazyFrame,
    new_scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
    design: DesignChoice = DEFAULT_DESIGN,
    level: float | None = None,
) -> pl.DataFrame:
    """Per night, model and scope present under both formulas: ``delta = new_score -
    old_score`` with its standard error under ``design``, degrees of freedom, interval and
    p-value. The two scores are of the same episodes, so the difference is paired episode by
    episode (by instance where instances are given) and task by task; ``paired`` says
    ``full`` when every episode is scored under both.

    ``rank_change_significant`` (overall rows): null when the model's order against every
    model of its coverage group is unchanged; else whether at least one of the changed
    orders is significant (``rescore_rank_changes``, Holm over the night's changed pairs).
    """
    prep = _rescore_prepared(old_scores, new_scores)
    pairs = _old_new(prep).sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)
    pairs = pairs.with_row_index(Work.CID)
    contrasts = two_unit_contrasts(pairs, Work.UNIT + "_new", Work.UNIT)
    var = variances(prep, contrasts, design, zero_is_unknown=False)
    table = pairs.join(var, on=Work.CID, how="left")
    table = table.with_columns((pl.col(SCORE + "_new") - pl.col(SCORE)).alias(DELTA))
    table = inference(table, DELTA, alpha, power, level)
    changes = _rank_changes(prep, alpha, power, design, level)
    flipped = pl.concat(
        [
            changes.select(DUMP_DATE, pl.col(MODEL_A).alias(Col.MODEL), SIGNIFICANT),
            changes.select(DUMP_DATE, pl.col(MODEL_B).alias(Col.MODEL), SIGNIFICANT),
        ]
    )
    per_model = (
        flipped.group_by(DUMP_DATE, Col.MODEL)
        .agg(pl.col(SIGNIFICANT).any().alias(RANK_CHANGE_SIGNIFICANT))
        .with_columns(pl.lit(OVERALL).alias(SCOPE))
    )
    table = table.join(per_model, on=[DUMP_DATE, Col.MODEL, SCOPE], how="left", nulls_equal=True)
    return table.select(
        DUMP_DATE,
        Col.MODEL,
        SCOPE,
        pl.col(SCORE).alias(OLD_SCORE),
        pl.col(SCORE + "_new").alias(NEW_SCORE),
        DELTA,
        SE,
        DF,
        DESIGN,
        CI_LOW,
        CI_HIGH,
        P_VALUE,
        MDE,
        pl.col(Work.N).cast(pl.Int64).alias(N_EPISODES_OLD),
        pl.col(Work.N + "_new").cast(pl.Int64).alias(N_EPISODES_NEW),
        pl.col(N_PAIRS).fill_null(0),
        PAIRED,
        RANK_CHANGE_SIGNIFICANT,
    ).sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)


def rescore_rank_changes(
    old_scores: pl.DataFrame | pl.LazyFrame,
    new_scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
    design: DesignChoice = DEFAULT_DESIGN,
    level: float | None = None,
) -> pl.DataFrame:
    """Per night, every pair of models (same categories covered, under both formulas)
    whose overall order changed: ``old_diff`` and ``new_diff`` (``score_a - score_b``,
    ``model_a`` the model ahead under the new formula), ``change = new_diff - old_diff``
    with its standard error (a four-score contrast, paired episode by episode and instance
    by instance), interval, p-value, ``p_holm`` (Holm over the night's changed pairs),
    ``significant`` (``p_holm < alpha``: the formula moves the two models past each other
    by more than the instances sampled explain) and ``p_new_diff`` (the raw p-value of the
    new order itself, as in ``model_comparisons``)."""
    prep = _rescore_prepared(old_scores, new_scores)
    return _rank_changes(prep, alpha, power, design, level)


def _rank_changes(
    prep: Prepared, alpha: float, power: float, design: DesignChoice, level: float | None
) -> pl.DataFrame:
    table = _old_new(prep).filter(pl.col(SCOPE) == OVERALL)
    cols = [DUMP_DATE, Col.MODEL, Work.UNIT, Work.UNIT + "_new", SCORE, SCORE + "_new"]
    left = table.select(*cols, Work.GROUP, Work.GROUP + "_new")
    pairs = (
        left.join(left, on=DUMP_DATE, suffix="_b", nulls_equal=True)
        .filter(
            (pl.col(Col.MODEL) != pl.col(Col.MODEL + "_b"))
            & (pl.col(Work.GROUP) == pl.col(Work.GROUP + "_b"))
            & (pl.col(Work.GROUP + "_new") == pl.col(Work.GROUP + "_new_b"))
        )
        .with_columns(
            (pl.col(SCORE) - pl.col(SCORE + "_b")).alias(OLD_DIFF),
            (pl.col(SCORE + "_new") - pl.col(SCORE + "_new_b")).alias(NEW_DIFF),
        )
        # model_a is ahead under the new formula (the first by name on a tie).
        .filter(
            (pl.col(NEW_DIFF) > 0)
            | ((pl.col(NEW_DIFF) == 0) & (pl.col(Col.MODEL) < pl.col(Col.MODEL + "_b")))
        )
        .filter(pl.col(OLD_DIFF).sign() != pl.col(NEW_DIFF).sign())
        .sort(DUMP_DATE, Col.MODEL, Col.MODEL + "_b", nulls_last=True)
        .with_row_index(Work.CID)
        .with_columns(pl.lit(OVERALL).alias(SCOPE))
    )

    def contrast(units: list[tuple[str, float]]) -> pl.DataFrame:
        return pl.concat(
            [
                pairs.select(
                    Work.CID, pl.col(u).alias(Work.UNIT), pl.lit(c).alias(Work.COEF), SCOPE
                )
                for u, c in units
            ]
        )

    unit, new = Work.UNIT, Work.UNIT + "_new"
    change = contrast([(new, 1.0), (new + "_b", -1.0), (unit, -1.0), (unit + "_b", 1.0)])
    new_only = two_unit_contrasts(pairs, new, new + "_b")
    var = variances(prep, change, design, zero_is_unknown=False)
    table = pairs.join(var, on=Work.CID, how="left")
    table = table.with_columns((pl.col(NEW_DIFF) - pl.col(OLD_DIFF)).alias(CHANGE))
    table = inference(table, CHANGE, alpha, power, level)
    new_p = inference(
        pairs.join(variances(prep, new_only, design), on=Work.CID, how="left"),
        NEW_DIFF,
        alpha,
        power,
        level,
    ).select(Work.CID, pl.col(P_VALUE).alias(P_NEW_DIFF))
    table = adjust_over(table.join(new_p, on=Work.CID), P_VALUE, [DUMP_DATE], "holm", P_HOLM)
    return table.select(
        DUMP_DATE,
        pl.col(Col.MODEL).alias(MODEL_A),
        pl.col(Col.MODEL + "_b").alias(MODEL_B),
        OLD_DIFF,
        NEW_DIFF,
        CHANGE,
        SE,
        CI_LOW,
        CI_HIGH,
        P_VALUE,
        P_HOLM,
        (pl.col(P_HOLM) < alpha).fill_null(False).alias(SIGNIFICANT),
        P_NEW_DIFF,
    ).sort(DUMP_DATE, MODEL_A, MODEL_B, nulls_last=True)
