"""The variance of a contrast of scores under a sampling design, and the inference from it
(README "Comparisons and statistics"; Miller, "Adding Error Bars to Evals", arXiv:2411.00640).

A contrast is ``E = Σ_u a_u S_u``, ``S_u = Σ_t w_{u,t} T_{u,t}`` a unit's score in a scope.
Two designs:

- ``two_level`` (the default): the tasks are a sample of the ability, the episodes a
  sample within each task. Clustered by task (Miller's clustered standard error, section
  2.3, with tasks as clusters), within strata ``c``: a task's influence is
  ``ψ_t = Σ_u a_u w_{u,t} (T_{u,t} − C_{u,c})`` (``C`` the unit's score in the stratum)
  and ``Var = Σ_c G_c/(G_c−1) Σ_{t∈c} ψ_t²``. The task-weighted ``overall`` score pools
  every task in one stratum; a category's score is its own stratum, and
  ``overall_by_category`` (an average of categories, which the benchmark fixes) is
  stratified by category. Each task score carries its own episodes' noise, so one episode
  per task (the tasks carry all of it) and many (both levels) are both right. A paired
  difference is paired over the tasks both models ran and, through the task scores, over
  the instances they shared. A stratum with one task in the contrast cannot say how tasks
  vary: its within-task variance stands in (``mixed``, or ``within_tasks`` where every
  stratum has one task). The reference is Student's t with Satterthwaite's degrees of
  freedom over the strata.
- ``within_tasks`` (the previous choice): the tasks are fixed, only the instances drawn
  within them are random: the cluster-robust variance with instances as clusters,
  ``Σ_t Σ_g (Σ_u a_u w_{u,t} k_{u,t} D_{u,t,g})²``; normal reference.

The pieces: ``variance_within`` (tasks fixed), ``variance_tasks`` (tasks a sample), here the
design's choice and their sum over the strata; ``inference`` (intervals, p-values, MDE).
"""

from __future__ import annotations

from typing import Final, Literal

import polars as pl

from schemas.comparisons import (
    DESIGN,
    DF,
    N_PAIRS,
    PAIRED,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    REASON_TEXT,
    SCOPE,
    Design,
    Unestimable,
    Work,
)
from transforms.compare.preparation import Prepared
from transforms.compare.variance_tasks import _task_sample
from transforms.compare.variance_within import (
    _STRATUM,
    _own_within,
    _pair_within,
    _within,
    sum_or_null,
)
from transforms.exact import exactly

DesignChoice = Literal["two_level", "within_tasks"]
DEFAULT_DESIGN: Final[DesignChoice] = "two_level"
# A standard error this small is the rounding of terms that are all the same (three
# episodes of 0.1 centre on a mean of 0.10000000000000002: 1e-17), not a spread measured.
NO_SPREAD: Final = 1e-12


def check_design(design: str) -> DesignChoice:
    if design not in (Design.TWO_LEVEL, Design.WITHIN_TASKS):
        raise ValueError(f"the design is 'two_level' or 'within_tasks', not {design!r}")
    return design  # type: ignore[return-value]


def variances(
    prep: Prepared, contrasts: pl.DataFrame, design: DesignChoice, *, zero_is_unknown: bool = True
) -> pl.DataFrame:
    """Per contrast (``CID``; rows ``UNIT``, ``COEF``, ``SCOPE``): ``VAR`` (the design's),
    ``VAR_WITHIN`` (tasks fixed), ``VAR_TASKS`` (tasks a sample; null where a category has
    one task), ``DF`` (null: normal), ``DESIGN`` (what ``VAR`` is), the tasks every unit
    covers (``N_TASKS``), the clusters shared by two units or more (``N_PAIRS``),
    ``PAIRED`` and ``WHY``: why ``VAR`` is null (``REASON_TEXT``, the strata named), else
    null.

    With ``zero_is_unknown`` (a comparison of models or nights: samples) a variance of 0
    (below ``NO_SPREAD``², the rounding of equal terms) is not an estimate either: the
    difference was the same on every task, which says nothing of how it varies, so
    ``VAR`` is null (``design`` ``none``, ``WHY`` the ``no spread`` text), never a
    p-value of 0 and an interval of zero width. Without it (a score's own interval, a
    formula's change of the same episodes) the 0 stays."""
    check_design(design)
    one_unit, two_units, same_tasks = _shapes(prep, contrasts)
    plan = contrasts.lazy()
    rows = plan.join(prep.weights.lazy(), on=[Work.UNIT, SCOPE]).cache()
    if one_unit:
        within = _own_within(prep, rows)
    elif two_units:
        within = _pair_within(prep, rows)
    else:
        within = _within(prep, rows)
    sampled, shared_tasks = _task_sample(prep, rows, plan, borrow=not same_tasks)
    strata = within.join(sampled, on=_STRATUM, how="full", coalesce=True).cache()
    combined = _combine(strata, design, zero_is_unknown)
    # (One query: every sum over its rows sorted, on the engine that sums them as the
    # eager steps did, ``transforms.exact.exactly``; a standing makes three variances, issue 48.)
    (made,) = exactly(combined.join(shared_tasks, on=Work.CID, how="left"))
    return made


def _shapes(prep: Prepared, contrasts: pl.DataFrame) -> tuple[bool, bool, bool]:
    """Whether every contrast is one unit's score (one row, coefficient +1: its interval),
    whether every one is ``unit_a - unit_b`` (two rows, coefficients +1 and -1), and whether
    every unit ran the same tasks (then no task's coverage pattern differs from another's,
    and none borrows a variance: ``variance_tasks._task_sample``)."""
    shape = (
        contrasts.lazy()
        .group_by(Work.CID)
        .agg(
            pl.len().alias(Work.ROWS),
            pl.col(Work.COEF).min().alias(Work.LOW),
            pl.col(Work.COEF).max(),
        )
    )
    rows, low, high = pl.col(Work.ROWS), pl.col(Work.LOW), pl.col(Work.COEF)
    one = ((rows == 1) & (low == 1.0)).all().alias(Work.ROWS)
    two = ((rows == 2) & (low == -1.0) & (high == 1.0)).all().alias(Work.LOW)
    cells = prep.cells.lazy()
    every = pl.col(Work.UNIT).n_unique().cast(pl.Int64) * pl.col(Work.TASK).n_unique()
    same = cells.select((pl.len().cast(pl.Int64) == every).alias(Work.ALL))
    flags, coverage = exactly(shape.select(one, two), same)
    return bool(flags[Work.ROWS][0]), bool(flags[Work.LOW][0]), bool(coverage[Work.ALL][0])


def _combine(strata: pl.LazyFrame, design: DesignChoice, zero_is_unknown: bool) -> pl.LazyFrame:
    """Per contrast: the design's variance summed over the strata (categories), its
    Satterthwaite degrees of freedom, what it is (``DESIGN``) and why it is null (``WHY``)."""
    var_within, var_tasks = pl.col(Work.VAR_WITHIN), pl.col(Work.VAR_TASKS)
    if design == Design.TWO_LEVEL:
        fallback = pl.col(Work.STRATUM_TASKS) < 2
        part = pl.when(fallback).then(var_within).otherwise(var_tasks)
        part_df = (
            pl.when(fallback)
            .then(pl.col(Work.CLUSTERS) - 1)
            .otherwise(pl.col(Work.TASK_DF))
            .cast(pl.Float64)
        )
        cause: pl.Expr = (
            pl.when(part.is_null() & fallback)
            .then(pl.lit(Unestimable.ONE_EPISODE.value))
            .when(part.is_null())
            .then(pl.lit(Unestimable.ONE_TASK.value))
        )
    else:
        fallback = pl.lit(True)
        part, part_df = var_within, pl.lit(None, pl.Float64)
        cause = pl.when(part.is_null()).then(pl.lit(Unestimable.TASKS_FIXED.value))
    strata = strata.with_columns(
        part.alias(Work.VALUE),
        part_df.alias(DF),
        fallback.alias(Work.FALLBACK),
        cause.alias(Work.CAUSE),
    )
    summed = (
        strata.sort(*_STRATUM)
        .group_by(Work.CID, maintain_order=True)
        .agg(
            sum_or_null(pl.col(Work.VALUE), Work.VAR),
            _df_of_strata(),
            sum_or_null(var_within, Work.VAR_WITHIN),
            sum_or_null(var_tasks, Work.VAR_TASKS),
            pl.col(Work.FALLBACK).all().alias(Work.ALL_FALLBACK),
            pl.col(Work.FALLBACK).any().alias(Work.ANY_FALLBACK),
            pl.col(N_PAIRS).sum().cast(pl.Int64),
            pl.col(Work.SHARED).sum(),
            pl.col(Work.TOTAL).sum(),
        )
    )
    per_contrast = summed.join(_why(strata), on=Work.CID, how="left")
    if zero_is_unknown:
        zero = pl.col(Work.VAR) <= NO_SPREAD**2
        per_contrast = per_contrast.with_columns(
            pl.when(zero)
            .then(pl.lit(REASON_TEXT[Unestimable.NO_SPREAD]))
            .otherwise(Work.WHY)
            .alias(Work.WHY),
            pl.when(~zero).then(Work.VAR).alias(Work.VAR),
        )
    label = (
        pl.when(pl.col(Work.VAR).is_null())
        .then(pl.lit(Design.NONE.value))
        .when(pl.col(Work.ALL_FALLBACK))
        .then(pl.lit(Design.WITHIN_TASKS.value))
        .when(pl.col(Work.ANY_FALLBACK))
        .then(pl.lit(Design.MIXED.value))
        .otherwise(pl.lit(Design.TWO_LEVEL.value))
    )
    paired = (
        pl.when(pl.col(N_PAIRS) == 0)
        .then(pl.lit(PAIRED_NONE))
        .when(pl.col(Work.SHARED) == pl.col(Work.TOTAL))
        .then(pl.lit(PAIRED_FULL))
        .otherwise(pl.lit(PAIRED_PARTIAL))
    )
    # The normal where the tasks are fixed (the previous choice, unchanged); no df without
    # a variance.
    known = pl.col(Work.VAR).is_not_null() & pl.lit(design == Design.TWO_LEVEL)
    return per_contrast.with_columns(
        label.alias(DESIGN),
        paired.alias(PAIRED),
        pl.when(known).then(pl.col(DF)).alias(DF),
    ).select(
        Work.CID,
        Work.VAR,
        Work.VAR_WITHIN,
        Work.VAR_TASKS,
        DF,
        DESIGN,
        N_PAIRS,
        PAIRED,
        Work.WHY,
    )


def _why(strata: pl.LazyFrame) -> pl.LazyFrame:
    """Per contrast whose variance is null: why, each cause once with its strata named
    (``REASON_TEXT``), in the causes' order."""
    causes = list(Unestimable)
    text = pl.col(Work.CAUSE)
    for cause in causes:
        if "{}" in REASON_TEXT[cause]:  # the strata go there
            explained = pl.format(REASON_TEXT[cause], Work.STRATUM)
        else:
            explained = pl.lit(REASON_TEXT[cause])
        text = pl.when(pl.col(Work.CAUSE) == cause.value).then(explained).otherwise(text)
    return (
        strata.filter(pl.col(Work.CAUSE).is_not_null())
        .with_columns(pl.col(Work.STRATUM).cast(pl.String))
        .group_by(Work.CID, Work.CAUSE)
        .agg(pl.col(Work.STRATUM).unique().sort().str.join(", "))
        .with_columns(
            pl.col(Work.CAUSE)
            .replace_strict(
                [c.value for c in causes], list(range(len(causes))), return_dtype=pl.Int64
            )
            .alias(Work.ORDER),
            text.alias(Work.WHY),
        )
        .sort(Work.CID, Work.ORDER)
        .group_by(Work.CID, maintain_order=True)
        .agg(pl.col(Work.WHY).str.join("; "))
    )


def _df_of_strata() -> pl.Expr:
    """Satterthwaite's degrees of freedom of a sum of independent variance estimates ``v``
    (``VALUE``), each with its own ``df``: ``(Σ v)² / Σ (v² / df)`` (all zero: ``Σ df``)."""
    v, df = pl.col(Work.VALUE), pl.col(DF)
    total = v.sum()
    return pl.when(total > 0).then(total**2 / (v**2 / df).sum()).otherwise(df.sum()).alias(DF)
