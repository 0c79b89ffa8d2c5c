"""``model_comparisons``: every pair of models of a night in each scope, the difference of
their scores with its uncertainty, the Holm verdict and a Wilcoxon signed-rank test over
the tasks both ran."""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np
import polars as pl

from schemas.columns import SCORE
from schemas.comparisons import (
    A_BETTER,
    APPROXIMATE_BELOW_DF,
    B_BETTER,
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DF,
    DIFF,
    MDE,
    MODEL_A,
    MODEL_B,
    N_EPISODES_A,
    N_EPISODES_B,
    N_PAIRS,
    N_TASKS,
    N_TASKS_A_BETTER,
    N_TASKS_B_BETTER,
    OVERALL,
    OVERALL_BY_CATEGORY,
    OVERALL_SCOPES,
    P_HOLM,
    P_VALUE,
    P_WILCOXON,
    PAIRED,
    REASON,
    REASON_APPROXIMATE,
    REASON_MDE,
    SCOPE,
    SCORE_A,
    SCORE_B,
    SE,
    SE_TASKS,
    SE_WITHIN,
    UNRESOLVED,
    VERDICT,
    Work,
)
from schemas.contract import DUMP_DATE, UNCATEGORISED, Col
from transforms.compare.inference import detectable, inference
from transforms.compare.preparation import Prepared, prepare, score_bounds_plan
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, variances
from transforms.exact import exactly
from transforms.stats import adjust_over, holm_levels, wilcoxon_signed_rank

COMPARISON_COLUMNS: Final = [
    DUMP_DATE,
    SCOPE,
    MODEL_A,
    MODEL_B,
    N_TASKS,
    N_EPISODES_A,
    N_EPISODES_B,
    N_PAIRS,
    PAIRED,
    SCORE_A,
    SCORE_B,
    DIFF,
    SE,
    SE_TASKS,
    SE_WITHIN,
    DF,
    DESIGN,
    CI_LOW,
    CI_HIGH,
    P_VALUE,
    P_HOLM,
    VERDICT,
    MDE,
    P_WILCOXON,
    N_TASKS_A_BETTER,
    N_TASKS_B_BETTER,
    REASON,
]


def model_comparisons(
    scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
    design: DesignChoice = DEFAULT_DESIGN,
    level: float | None = None,
) -> pl.DataFrame:
    """Per night (``dump_date``), scope (each category, ``overall`` and
    ``overall_by_category``) and ordered pair of models that share the scope:
    ``diff = score_a - score_b`` with its standard error under ``design`` (``se``; also
    ``se_tasks``, two-level, and ``se_within``, tasks fixed), degrees of freedom, a
    ``level`` interval (default ``1 - alpha``), p-value, Holm-adjusted p-value, verdict,
    minimum detectable effect, and the Wilcoxon signed-rank p-value over the tasks both
    models ran (``p_wilcoxon``) with the tasks each won.

    In a category scope every pair of models with episodes in it is compared; in the overall
    scopes only models covering the same categories. Holm runs over the unordered pairs of a
    night and scope: both rows of a pair carry the same ``p_value`` and ``p_holm``.
    """
    prep = prepare(scores, [DUMP_DATE, Col.MODEL])
    return comparisons_of(prep, alpha, power, design, level)


def unordered_pairs(scopes: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Unordered pairs (model_a < model_b) of units sharing ``by`` and the scope; the
    overall scopes pair only models that cover the same categories."""
    left = scopes.select(*by, SCOPE, Col.MODEL, Work.UNIT, SCORE, Work.N, Work.GROUP)
    pairs = left.join(left, on=[*by, SCOPE], suffix="_b", nulls_equal=True).filter(
        (pl.col(Col.MODEL) < pl.col(Col.MODEL + "_b"))
        & (
            ~pl.col(SCOPE).is_in(list(OVERALL_SCOPES))
            | (pl.col(Work.GROUP) == pl.col(Work.GROUP + "_b"))
        )
    )
    return pairs.sort([*by, SCOPE, Col.MODEL, Col.MODEL + "_b"], nulls_last=True).with_row_index(
        Work.CID
    )


def two_unit_contrasts(pairs: pl.DataFrame, unit_a: str, unit_b: str) -> pl.DataFrame:
    """Contrasts ``unit_a - unit_b`` of each row (``CID``) of ``pairs``."""
    return pl.concat(
        [
            pairs.select(
                Work.CID, pl.col(unit_a).alias(Work.UNIT), pl.lit(1.0).alias(Work.COEF), SCOPE
            ),
            pairs.select(
                Work.CID, pl.col(unit_b).alias(Work.UNIT), pl.lit(-1.0).alias(Work.COEF), SCOPE
            ),
        ]
    )


class Known(NamedTuple):
    """Pairs compared already, for units that are an earlier night's with only the episodes
    of the ``changed`` models new (a standing made from the one before it): that night's
    ``model_comparisons`` rows (any night column; the standing's own, as made). A pair of
    models neither of which changed has the same episodes, so the same statistics to the
    bit: each is a function of the pair's own cells and clusters, summed in an order the
    other units do not move (the units are the same models, or more: a model added is a
    changed one; the others' codes keep their order, which is what orders the sums). Those
    are taken from the rows, and only the pairs of a changed model are
    estimated; what depends on every pair (Holm, its levels and MDE, the verdicts) and on
    the level (the intervals and p-values, from the standard errors kept) is made again.

    ``intervals``: the standing before's score intervals (``score_intervals``' rows, any
    night column), made at the same level and in the same design (a standing made earlier
    in the run): an unchanged model's are of its own cells alone, so they are kept to the
    bit (``scores.score_intervals_known``). None: every model's are made again."""

    comparisons: pl.DataFrame
    changed: frozenset[str]
    intervals: pl.DataFrame | None = None


# The columns of a pair compared already that its comparison keeps as they are (``Known``).
_KEPT_AS_THEY_ARE: Final = [
    DF,
    DESIGN,
    N_PAIRS,
    PAIRED,
    N_TASKS,
    P_WILCOXON,
    N_TASKS_A_BETTER,
    N_TASKS_B_BETTER,
]
# The columns of ``model_comparisons`` a pair compared already is taken from (``Known``).
KNOWN_COLUMNS: Final = [
    SCOPE,
    MODEL_A,
    MODEL_B,
    SE,
    SE_WITHIN,
    SE_TASKS,
    *_KEPT_AS_THEY_ARE,
    REASON,
]


def comparisons_of(
    prep: Prepared,
    alpha: float = 0.05,
    power: float = 0.8,
    design: DesignChoice = DEFAULT_DESIGN,
    level: float | None = None,
    known: Known | None = None,
) -> pl.DataFrame:
    pairs = unordered_pairs(prep.scope_table(), [DUMP_DATE])
    kept = None if known is None else _known_pairs(pairs, known)
    fresh = pairs
    if kept is not None:
        fresh = pairs.filter(~pl.col(Work.CID).is_in(kept[Work.CID].implode()))
    half = fresh
    if kept is None or not fresh.is_empty():
        var = variances(prep, two_unit_contrasts(fresh, Work.UNIT, Work.UNIT + "_b"), design)
        (half,) = exactly(
            fresh.lazy()
            .join(var.lazy(), on=Work.CID, how="left")
            .with_columns((pl.col(SCORE) - pl.col(SCORE + "_b")).alias(DIFF))
            .join(task_signed_ranks(prep, fresh).lazy(), on=Work.CID, how="left")
        )
    if kept is not None:
        half = pl.concat([half, kept], how="diagonal_relaxed").sort(Work.CID)
    half = _held(inference(half, DIFF, alpha, power, level), prep)
    half = adjust_over(half, P_VALUE, [DUMP_DATE, SCOPE], "holm", P_HOLM)
    # The MDE of the verdict as shown: at the level Holm tests the pair at on the night.
    family = [DUMP_DATE, SCOPE]
    half = holm_levels(half, P_VALUE, P_HOLM, family, alpha, Work.HOLM_LEVEL)
    # (From here on one query: each step is per row, no row summed.)
    lazy = half.lazy().with_columns(detectable(half, Work.HOLM_LEVEL, power))
    verdict = (
        pl.when(pl.col(P_HOLM).is_null() | (pl.col(P_HOLM) >= alpha))
        .then(pl.lit(UNRESOLVED))
        .when(pl.col(DIFF) > 0)
        .then(pl.lit(A_BETTER))
        .when(pl.col(DIFF) < 0)
        .then(pl.lit(B_BETTER))
        .otherwise(pl.lit(UNRESOLVED))
    )
    lazy = lazy.with_columns(verdict.alias(VERDICT), _reason().alias(REASON))
    forward = lazy.rename(
        {
            Col.MODEL: MODEL_A,
            Col.MODEL + "_b": MODEL_B,
            Work.N: N_EPISODES_A,
            Work.N + "_b": N_EPISODES_B,
            SCORE: SCORE_A,
            SCORE + "_b": SCORE_B,
        }
    ).with_columns(pl.col(N_EPISODES_A, N_EPISODES_B).cast(pl.Int64))
    swapped_verdict = (
        pl.when(pl.col(VERDICT) == A_BETTER)
        .then(pl.lit(B_BETTER))
        .when(pl.col(VERDICT) == B_BETTER)
        .then(pl.lit(A_BETTER))
        .otherwise(pl.col(VERDICT))
    )
    backward = forward.with_columns(
        pl.col(MODEL_B).alias(MODEL_A),
        pl.col(MODEL_A).alias(MODEL_B),
        pl.col(N_EPISODES_B).alias(N_EPISODES_A),
        pl.col(N_EPISODES_A).alias(N_EPISODES_B),
        pl.col(SCORE_B).alias(SCORE_A),
        pl.col(SCORE_A).alias(SCORE_B),
        -pl.col(DIFF),
        (-pl.col(CI_HIGH)).alias(CI_LOW),
        (-pl.col(CI_LOW)).alias(CI_HIGH),
        swapped_verdict.alias(VERDICT),
        pl.col(N_TASKS_B_BETTER).alias(N_TASKS_A_BETTER),
        pl.col(N_TASKS_A_BETTER).alias(N_TASKS_B_BETTER),
    )
    (both,) = exactly(
        pl.concat([forward, backward])
        .with_columns(
            pl.col(N_TASKS).fill_null(0),
            pl.col(N_PAIRS).fill_null(0),
            pl.col(N_TASKS_A_BETTER).fill_null(0),
            pl.col(N_TASKS_B_BETTER).fill_null(0),
        )
        .sort(DUMP_DATE, SCOPE, MODEL_A, MODEL_B, nulls_last=True)
        .select(COMPARISON_COLUMNS)
    )
    return both


def _known_pairs(pairs: pl.DataFrame, known: Known) -> pl.DataFrame:
    """The rows of ``pairs`` (unordered, ``CID``) of two unchanged models that ``known``
    compared, with what each pair's statistics are (``comparisons_of`` before inference:
    the variances as the squares of the standard errors, whose roots are those errors to
    the bit), the difference of their scores and the Wilcoxon test (one query)."""
    b = Col.MODEL + "_b"
    rows = (
        known.comparisons.lazy()
        .filter(pl.col(MODEL_A) < pl.col(MODEL_B))
        .select(
            SCOPE,
            pl.col(MODEL_A).cast(pl.String).alias(Col.MODEL),
            pl.col(MODEL_B).cast(pl.String).alias(b),
            (pl.col(SE) ** 2).alias(Work.VAR),
            (pl.col(SE_WITHIN) ** 2).alias(Work.VAR_WITHIN),
            (pl.col(SE_TASKS) ** 2).alias(Work.VAR_TASKS),
            *_KEPT_AS_THEY_ARE,
            # why the variance is null (the reason of a row without a standard error is that
            # alone: the MDE's and the approximate interval's need one)
            pl.when(pl.col(SE).is_null()).then(pl.col(REASON)).alias(Work.WHY),
        )
    )
    changed = sorted(known.changed)
    same = ~pl.col(Col.MODEL).is_in(changed) & ~pl.col(b).is_in(changed)
    (kept,) = exactly(
        pairs.lazy()
        .filter(same)
        .join(rows, on=[SCOPE, Col.MODEL, b], how="inner")
        .with_columns((pl.col(SCORE) - pl.col(SCORE + "_b")).alias(DIFF))
    )
    return kept


def _held(half: pl.DataFrame, prep: Prepared) -> pl.DataFrame:
    """The interval of ``a - b`` held to the differences two scores in ``SCORE_RANGE`` can
    have (``[-1, 1]``; a side an episode of either scored past is left open): the true
    difference lies there, so no coverage is lost, and a t interval on few tasks no longer
    reaches to -6 (whether it holds 0, so the verdict, is unchanged). One query."""
    bounds = score_bounds_plan(prep)
    low_a, high_a = pl.col(Work.LOWEST), pl.col(Work.HIGHEST)
    low_b, high_b = pl.col(Work.LOWEST + "_b"), pl.col(Work.HIGHEST + "_b")
    (held,) = exactly(
        half.lazy()
        .join(bounds, on=[Work.UNIT, SCOPE], how="left")
        .join(
            bounds.rename({c: c + "_b" for c in (Work.UNIT, Work.LOWEST, Work.HIGHEST)}),
            on=[Work.UNIT + "_b", SCOPE],
            how="left",
        )
        .with_columns(
            pl.when(pl.col(CI_LOW).is_not_null())
            .then(pl.max_horizontal(CI_LOW, low_a - high_b))
            .alias(CI_LOW),
            pl.when(pl.col(CI_HIGH).is_not_null())
            .then(pl.min_horizontal(CI_HIGH, high_a - low_b))
            .alias(CI_HIGH),
        )
        .drop(Work.LOWEST, Work.HIGHEST, Work.LOWEST + "_b", Work.HIGHEST + "_b")
    )
    return held


def _reason() -> pl.Expr:
    """Why a row's statistics are null (``WHY``), its MDE past the scores' range, or its
    interval approximate (few degrees of freedom); null where none applies."""
    estimated = pl.col(SE).is_not_null()
    df = pl.col(DF).round(1).cast(pl.String).fill_null("infinite (the normal)")
    mde = pl.when(estimated & pl.col(MDE).is_null()).then(pl.format(REASON_MDE, df))
    # (rounded: Satterthwaite's sum gives 13.000000000000002 for 14 tasks)
    approximate = pl.when(estimated & (pl.col(DF).round(6) < APPROXIMATE_BELOW_DF)).then(
        pl.format(REASON_APPROXIMATE, df)
    )
    joined = pl.concat_str([pl.col(Work.WHY), mde, approximate], separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def task_signed_ranks(prep: Prepared, pairs: pl.DataFrame) -> pl.DataFrame:
    """Per pair (``CID``): the Wilcoxon signed-rank test of the task score differences
    ``T_a,t - T_b,t`` over the tasks of the scope both units ran (as
    ``scipy.stats.wilcoxon`` with its defaults: zero differences dropped, two-sided;
    ``transforms.stats.wilcoxon_signed_rank``; null where scipy gives none), and the tasks
    each side won. Pairs with the same number of tasks are tested at once."""
    cells = prep.cells.lazy().select(Work.UNIT, Col.CATEGORY, Work.TASK, Work.MEAN)
    # (overall_by_category averages the categories: a task in none is not in it)
    in_categories = (pl.col(SCOPE) == OVERALL_BY_CATEGORY) & (pl.col(Col.CATEGORY) != UNCATEGORISED)
    in_scope = (pl.col(SCOPE) == OVERALL) | in_categories | (pl.col(SCOPE) == pl.col(Col.CATEGORY))
    each_task = (
        pairs.lazy()
        .select(Work.CID, SCOPE, Work.UNIT, Work.UNIT + "_b")
        .join(cells, on=Work.UNIT)
        .join(
            cells.select(
                pl.col(Work.UNIT).alias(Work.UNIT + "_b"),
                Work.TASK,
                pl.col(Work.MEAN).alias(Work.MEAN + "_b"),
            ),
            on=[Work.UNIT + "_b", Work.TASK],
        )
        .filter(in_scope)
        .with_columns((pl.col(Work.MEAN) - pl.col(Work.MEAN + "_b")).alias(Work.VALUE))
        .sort(Work.CID, Work.TASK)
    )
    per_pair = each_task.group_by(Work.CID, maintain_order=True).agg(
        (pl.col(Work.VALUE) > 0).sum().cast(pl.Int64).alias(N_TASKS_A_BETTER),
        (pl.col(Work.VALUE) < 0).sum().cast(pl.Int64).alias(N_TASKS_B_BETTER),
        pl.len().alias(Work.ROWS),
    )
    # (One query: a pair's differences are its run of the rows in pair order; each length's
    # pairs taken from them in numpy, not a query a length.)
    differences, flat = exactly(per_pair, each_task.select(Work.VALUE))
    values = flat[Work.VALUE].to_numpy()
    lengths = differences[Work.ROWS].to_numpy().astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    p = np.full(differences.height, np.nan)
    for n in np.unique(lengths):
        rows = np.flatnonzero(lengths == n)
        p[rows] = wilcoxon_signed_rank(values[starts[rows][:, None] + np.arange(n)])
    return pl.DataFrame(
        [
            differences[Work.CID],
            pl.Series(P_WILCOXON, p, pl.Float64, nan_to_null=True),
            differences[N_TASKS_A_BETTER],
            differences[N_TASKS_B_BETTER],
        ]
    )
