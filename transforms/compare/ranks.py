"""Rank intervals that hold jointly, the rank bound of the verdicts, and significance tiers.

Every statement comes from the night's Holm-corrected comparisons (``model_comparisons``,
scope ``overall``; a category's ranks from its own scope): a model is certainly behind every
model significantly better than it and ahead of every model significantly worse. Holm
controls the chance of any false statement among all the night's pairs, so the ranks these
statements allow hold for all models at once (Mogstad, Romano, Shaikh and Wilhelm,
"Inference for Ranks with Applications to Mobility across Neighbourhoods and Academic
Achievement across Countries", Review of Economic Studies 91 (2024): the rank sets of
simultaneous pairwise tests)."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import RANK, SCORE
from schemas.comparisons import (
    A_BETTER,
    B_BETTER,
    DEFAULT_LEVEL,
    DIFF,
    GROUP_RANK,
    MODEL_A,
    MODEL_B,
    N_RANKED,
    OVERALL,
    OVERALL_SCOPES,
    P_HOLM,
    RANK_HIGH,
    RANK_LOW,
    RANK_UB,
    RANKED_AMONG,
    SCOPE,
    SCORE_A,
    TIER,
    VERDICT,
    Work,
)
from schemas.contract import DUMP_DATE, Col
from transforms.compare.pairs import comparisons_of
from transforms.compare.preparation import Prepared, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice
from transforms.exact import EXACT_ENGINE

RANK_SCHEMA: Final = {
    DUMP_DATE: pl.String,
    Col.MODEL: pl.String,
    RANKED_AMONG: pl.String,
    N_RANKED: pl.Int64,
    GROUP_RANK: pl.Int64,
    RANK_LOW: pl.Int64,
    RANK_HIGH: pl.Int64,
    RANK_UB: pl.Int64,
}


def rank_intervals(
    scores: pl.DataFrame | pl.LazyFrame,
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
    alpha: float = 0.05,
    power: float = 0.8,
) -> pl.DataFrame:
    """Per night and model: its rank by the overall score (each task weighing the same)
    among the models covering the same categories (``ranked_among``, ``n_ranked``,
    ``group_rank`` = rank of the point scores, 1 = best, ties share the better rank), an
    interval of that rank which holds for every model of the night at once at ``level``
    (``rank_low``, ``rank_high``), and the rank bound of the verdicts (``rank_ub``).

    ``rank_low`` is 1 + the models significantly better than it, ``rank_high`` the models
    ranked minus those significantly worse, "significantly" at ``1 - level`` in the
    night's Holm family of overall comparisons (under ``design``); ``rank_ub`` is 1 + the
    models the verdicts (Holm at ``alpha``) call better: LMArena's "rank (UB)", the best rank
    the verdicts leave it. At the default level and alpha, ``rank_ub == rank_low``."""
    prep = prepare(scores, [DUMP_DATE, Col.MODEL])
    comparisons = comparisons_of(prep, alpha, power, design, level)
    return rank_intervals_of(prep, comparisons, level)


def rank_intervals_of(
    prep: Prepared, comparisons: pl.DataFrame, level: float = DEFAULT_LEVEL
) -> pl.DataFrame:
    """``rank_intervals`` of prepared scores from their ``model_comparisons`` rows."""
    overall = scope_rank_intervals(prep, comparisons, level).filter(pl.col(SCOPE) == OVERALL)
    return overall.select(list(RANK_SCHEMA))


# category_rank_intervals: per night, model and category.
CATEGORY_RANK_SCHEMA: Final = {
    DUMP_DATE: pl.String,
    Col.MODEL: pl.String,
    Col.CATEGORY: pl.String,
    RANK: pl.Int64,
    RANK_LOW: pl.Int64,
    RANK_HIGH: pl.Int64,
}


def category_rank_intervals(
    prep: Prepared, comparisons: pl.DataFrame, level: float = DEFAULT_LEVEL
) -> pl.DataFrame:
    """Per night, model and category: its rank by the category's score among every model with
    a score in it (``rank``, 1 = best, ties share the better rank) and the interval of that
    rank, which holds for every model of the night's category at once at ``level``
    (``rank_low``, ``rank_high``): the overall ranks' statements
    (``scope_rank_intervals``) in the category's own Holm family of comparisons."""
    ranks = scope_rank_intervals(prep, comparisons, level).filter(
        ~pl.col(SCOPE).is_in(list(OVERALL_SCOPES))
    )
    return (
        ranks.rename({SCOPE: Col.CATEGORY, GROUP_RANK: RANK})
        .select(list(CATEGORY_RANK_SCHEMA))
        .cast(CATEGORY_RANK_SCHEMA)  # type: ignore[arg-type]
    )


def scope_rank_intervals(
    prep: Prepared, comparisons: pl.DataFrame, level: float = DEFAULT_LEVEL
) -> pl.DataFrame:
    """Per night, scope and model: its rank by the scope's score among the models it is
    compared with there (``ranked_among``: in the overall scopes those covering the same
    categories, in a category every model with a score in it; ``n_ranked`` of them;
    ``group_rank``), the rank's interval that holds for all of them at once at ``level``
    (``rank_low``: 1 + the models significantly better; ``rank_high``: the models ranked
    less those significantly worse, at ``1 - level`` in the scope's Holm family of
    ``comparisons``) and the verdicts' bound (``rank_ub``)."""
    # In a category every model is compared with every other: the scope is the group.
    overall = pl.col(SCOPE).is_in(list(OVERALL_SCOPES))
    among = pl.when(overall).then(pl.col(Work.GROUP)).otherwise(pl.lit("")).alias(RANKED_AMONG)
    group = [DUMP_DATE, SCOPE, RANKED_AMONG]
    # (One query: counts and ranks, no float summed.)
    points = (
        prep.scopes.lazy()
        .join(prep.units.lazy(), on=Work.UNIT)
        .with_columns(among)
        .select(
            DUMP_DATE,
            SCOPE,
            Col.MODEL,
            RANKED_AMONG,
            pl.len().over(group).cast(pl.Int64).alias(N_RANKED),
            pl.col(SCORE).rank("min", descending=True).over(group).cast(pl.Int64).alias(GROUP_RANK),
        )
    )
    joint = pl.col(P_HOLM) < 1.0 - level
    statements = (
        comparisons.lazy()
        .group_by(DUMP_DATE, SCOPE, MODEL_A)
        .agg(
            (joint & (pl.col(DIFF) < 0)).sum().cast(pl.Int64).alias(Work.ABOVE),
            (joint & (pl.col(DIFF) > 0)).sum().cast(pl.Int64).alias(Work.BELOW),
            (pl.col(VERDICT) == B_BETTER).sum().cast(pl.Int64).alias(Work.BETTER),
        )
        .rename({MODEL_A: Col.MODEL})
    )
    counts = [Work.ABOVE, Work.BELOW, Work.BETTER]
    key = [DUMP_DATE, SCOPE, Col.MODEL]
    return (
        points.join(statements, on=key, how="left", nulls_equal=True)
        .with_columns(pl.col(counts).fill_null(0))
        .with_columns(
            (1 + pl.col(Work.ABOVE)).alias(RANK_LOW),
            (pl.col(N_RANKED) - pl.col(Work.BELOW)).alias(RANK_HIGH),
            (1 + pl.col(Work.BETTER)).alias(RANK_UB),
        )
        .select(SCOPE, *RANK_SCHEMA)
        .cast({SCOPE: pl.String, **RANK_SCHEMA})  # type: ignore[arg-type, dict-item]
        .sort(DUMP_DATE, SCOPE, RANKED_AMONG, GROUP_RANK, Col.MODEL, nulls_last=True)
        .collect(engine=EXACT_ENGINE)
    )


def significance_tiers(comparisons: pl.DataFrame, scope: str = OVERALL) -> pl.DataFrame:
    """Per night, significance tiers of the models compared in ``scope`` (the Holm verdicts
    of ``model_comparisons``): tier 1 is the best-scoring model and every model not
    significantly worse than it; those removed, tier 2 is the best of the rest and the
    models not significantly worse than it; and so on. In the overall scopes comparisons
    exist only between models covering the same categories, so each coverage group is
    tiered on its own (a model alone in its group has no comparison and no tier)."""
    rows = comparisons.filter(pl.col(SCOPE) == scope)
    out: list[tuple[str | None, str, int]] = []
    for (date,), night in rows.group_by(DUMP_DATE, maintain_order=True):
        score = dict(zip(night[MODEL_A].to_list(), night[SCORE_A].to_list(), strict=True))
        worse = {
            (a, b)
            for a, b, v in zip(
                night[MODEL_A].to_list(),
                night[MODEL_B].to_list(),
                night[VERDICT].to_list(),
                strict=True,
            )
            if v == A_BETTER
        }
        neighbours: dict[str, set[str]] = {m: set() for m in score}
        for a, b in zip(night[MODEL_A].to_list(), night[MODEL_B].to_list(), strict=True):
            neighbours[a].add(b)
        seen: set[str] = set()
        for start in sorted(score):
            if start in seen:
                continue
            group = {start} | neighbours[start]
            seen |= group
            remaining = sorted(group)
            tier = 1
            while remaining:
                best = min(remaining, key=lambda m: (-score[m], m))
                members = [m for m in remaining if m == best or (best, m) not in worse]
                out.extend((date, m, tier) for m in members)
                remaining = [m for m in remaining if m not in members]
                tier += 1
    return pl.DataFrame(
        out, schema={DUMP_DATE: pl.String, Col.MODEL: pl.String, TIER: pl.Int64}, orient="row"
    ).sort(DUMP_DATE, TIER, Col.MODEL, nulls_last=True)
