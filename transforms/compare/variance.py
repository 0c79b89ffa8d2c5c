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
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
import polars as pl
from scipy import special  # scipy.stats's t is these (0.4 s more to import)

from schemas.comparisons import (
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DF,
    MDE,
    N_PAIRS,
    N_TASKS,
    P_VALUE,
    PAIRED,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    SCOPE,
    SE,
    SE_TASKS,
    SE_WITHIN,
    Design,
    Work,
)
from transforms.compare.preparation import ATOMS_AT_ONCE, TASK_KEY, Prepared
from transforms.stats import normal_p_values, z_quantile

DesignChoice = Literal["two_level", "within_tasks"]
DEFAULT_DESIGN: Final[DesignChoice] = "two_level"
_STRATUM: Final = [Work.CID, Work.STRATUM]


def sum_or_null(value: pl.Expr, name: str) -> pl.Expr:
    """The sum, null when any term is null (polars' sum skips nulls)."""
    return pl.when(value.is_null().any()).then(None).otherwise(value.sum()).alias(name)


def check_design(design: str) -> DesignChoice:
    if design not in (Design.TWO_LEVEL, Design.WITHIN_TASKS):
        raise ValueError(f"the design is 'two_level' or 'within_tasks', not {design!r}")
    return design  # type: ignore[return-value]


def variances(prep: Prepared, contrasts: pl.DataFrame, design: DesignChoice) -> pl.DataFrame:
    """Per contrast (``CID``; rows ``UNIT``, ``COEF``, ``SCOPE``): ``VAR`` (the design's),
    ``VAR_WITHIN`` (tasks fixed), ``VAR_TASKS`` (tasks a sample; null where a category has
    one task), ``DF`` (null: normal), ``DESIGN`` (what ``VAR`` is), the tasks every unit
    covers (``N_TASKS``), the clusters shared by two units or more (``N_PAIRS``) and
    ``PAIRED``."""
    check_design(design)
    rows = contrasts.join(prep.weights, on=[Work.UNIT, SCOPE])
    if _one_unit(contrasts):
        within = _own_within(prep, rows)
    elif _two_units(contrasts):
        within = _pair_within(prep, rows)
    else:
        within = _within(prep, rows)
    sampled, shared_tasks = _task_sample(prep, rows, contrasts)
    strata = within.join(sampled, on=_STRATUM, how="full", coalesce=True)
    return _combine(strata, design).join(shared_tasks, on=Work.CID, how="left")


def _one_unit(contrasts: pl.DataFrame) -> bool:
    """Every contrast is one unit's score (one row, coefficient +1): its interval."""
    return bool(contrasts[Work.CID].is_unique().all()) and bool((contrasts[Work.COEF] == 1.0).all())


def _two_units(contrasts: pl.DataFrame) -> bool:
    """Every contrast is ``unit_a - unit_b`` (two rows, coefficients +1 and -1)."""
    shape = contrasts.group_by(Work.CID).agg(
        pl.len().alias(Work.ROWS),
        pl.col(Work.COEF).min().alias(Work.LOW),
        pl.col(Work.COEF).max(),
    )
    two = (shape[Work.ROWS] == 2) & (shape[Work.LOW] == -1.0) & (shape[Work.COEF] == 1.0)
    return bool(two.all())


def _pair_within(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``_within`` for contrasts ``a - b``, from per-task sufficient statistics instead of
    one row per contrast and cluster (which grows with the square of the models):

        Σ_t Σ_g (x_a D_a,g − x_b D_b,g)² = Σ_t x_a² S_a,t + x_b² S_b,t − 2 x_a x_b P_ab,t

    with ``x = w · k`` per unit and task, ``S_u,t = Σ_g D_u,g²`` and
    ``P_ab,t = Σ_g D_a,g D_b,g`` over the clusters both units have (the same algebra, summed
    in another order)."""
    weights = _scaled_weights(prep, rows)
    self_part = _self_part(prep, weights)
    side = [Work.CID, Work.UNIT, *TASK_KEY, Work.STRATUM, Work.TASK, Work.VALUE]
    a_side = weights.filter(pl.col(Work.COEF) > 0).select(side)
    b_side = weights.filter(pl.col(Work.COEF) < 0).select(side)
    both = a_side.join(b_side.drop(Work.TASK, Work.STRATUM), on=[Work.CID, *TASK_KEY], suffix="_b")
    needed = both.select(Work.UNIT, Work.UNIT + "_b").unique()
    # A cluster's row meets every other unit's (units² rows per cluster), which for a whole
    # night of millions of episodes took gigabytes: a large night a task at a time (the same
    # sums; a small one at once, as a loop of small plans costs more than it saves).
    large = prep.atoms.height > ATOMS_AT_ONCE
    parts = prep.atoms.partition_by(Work.TASK, maintain_order=True) if large else [prep.atoms]
    products = pl.concat([_cluster_products(atoms, needed) for atoms in parts]).sort(
        Work.UNIT, Work.UNIT + "_b", Work.TASK
    )
    cross = (
        both.join(products, on=[Work.UNIT, Work.UNIT + "_b", Work.TASK])
        .sort(*_STRATUM, *TASK_KEY)
        .group_by(*_STRATUM, maintain_order=True)
        .agg(
            (2.0 * pl.col(Work.VALUE) * pl.col(Work.VALUE + "_b") * pl.col(Work.CROSS))
            .sum()
            .alias(Work.CROSS),
            pl.col(N_PAIRS).sum().cast(pl.Int64),
            pl.col(Work.SHARED).sum(),
        )
    )
    return (
        self_part.join(cross, on=_STRATUM, how="left")
        .with_columns(
            # A sum of squares: never below 0, whatever the rounding of the expansion.
            (pl.col(Work.VAR_WITHIN) - pl.col(Work.CROSS).fill_null(0.0)).clip(lower_bound=0.0),
            pl.col(N_PAIRS).fill_null(0),
            pl.col(Work.SHARED).fill_null(0),
        )
        .with_columns((pl.col(Work.CLUSTERS) - pl.col(N_PAIRS)).alias(Work.CLUSTERS))
        .select(*_STRATUM, Work.VAR_WITHIN, Work.CLUSTERS, N_PAIRS, Work.SHARED, Work.TOTAL)
    )


def _scaled_weights(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``VALUE`` = w · k (a unit's weight in the task times its small-sample
    factor), the unit's clusters ``G`` and the task's code."""
    cell_terms = prep.cells.select(Work.UNIT, *TASK_KEY, Work.K, Work.G)
    weights = rows.join(cell_terms, on=[Work.UNIT, *TASK_KEY])
    weights = weights.with_columns((pl.col(Work.W) * pl.col(Work.K)).alias(Work.VALUE))
    return weights.join(prep.tasks, on=TASK_KEY)


def _self_part(prep: Prepared, weights: pl.DataFrame) -> pl.DataFrame:
    """Per contrast and stratum: ``Σ_u Σ_t (coef · w · k)² · Σ_g D_u,t,g²`` (each unit's own
    terms), its episodes and clusters."""
    # Sorted before every sum, so that the same input gives the same bits (a join's rows
    # come in any order).
    own = prep.atoms.group_by(Work.UNIT, Work.TASK, maintain_order=True).agg(
        (pl.col(Work.DEV) ** 2).sum().alias(Work.SELF), pl.col(Work.N).sum().alias(Work.EPISODES)
    )
    terms = weights.join(own, on=[Work.UNIT, Work.TASK])
    terms = terms.sort(*_STRATUM, *TASK_KEY, Work.UNIT)
    return terms.group_by(*_STRATUM, maintain_order=True).agg(
        sum_or_null(pl.col(Work.VALUE) ** 2 * pl.col(Work.SELF), Work.VAR_WITHIN),
        pl.col(Work.EPISODES).sum().alias(Work.TOTAL),
        pl.col(Work.G).sum().alias(Work.CLUSTERS),
    )


def _own_within(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``_within`` for one unit's score (its interval): its own terms alone, from per-task
    sums of squares (``_within`` would join every cluster of the unit once per scope that
    holds its task: three rows an episode)."""
    return (
        _self_part(prep, _scaled_weights(prep, rows))
        .with_columns(
            pl.lit(0, pl.Int64).alias(N_PAIRS),
            pl.lit(0, pl.UInt32).alias(Work.SHARED),
        )
        .select(*_STRATUM, Work.VAR_WITHIN, Work.CLUSTERS, N_PAIRS, Work.SHARED, Work.TOTAL)
    )


def _cluster_products(atoms: pl.DataFrame, needed: pl.DataFrame) -> pl.DataFrame:
    """Per pair of units (``needed``) and task: ``Σ_g D_a,g D_b,g`` over their shared
    clusters, how many, and the episodes on them (``_pair_within``), from ``atoms``."""
    # Only clusters that more than one unit has can pair two units.
    multi = atoms.group_by(Work.TASK, Work.CLUSTER).agg(pl.len().alias(Work.UNITS))
    shared = atoms.join(multi.filter(pl.col(Work.UNITS) > 1), on=[Work.TASK, Work.CLUSTER])
    return (
        shared.join(needed, on=Work.UNIT)
        .join(
            shared,
            left_on=[Work.UNIT + "_b", Work.TASK, Work.CLUSTER],
            right_on=[Work.UNIT, Work.TASK, Work.CLUSTER],
            suffix="_b",
        )
        .sort(Work.UNIT, Work.UNIT + "_b", Work.TASK, Work.CLUSTER)
        .group_by(Work.UNIT, Work.UNIT + "_b", Work.TASK, maintain_order=True)
        .agg(
            (pl.col(Work.DEV) * pl.col(Work.DEV + "_b")).sum().alias(Work.CROSS),
            pl.len().alias(N_PAIRS),
            (pl.col(Work.N) + pl.col(Work.N + "_b")).sum().alias(Work.SHARED),
        )
    )


def _within(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """Tasks fixed, per contrast and category: Σ_task Σ_cluster (Σ_unit coef · w · k ·
    dev)², every unit's influence values scaled by its own small-sample factor; the
    clusters, those shared by two units or more, and the episodes on them."""
    return (
        rows.join(prep.cells.select(Work.UNIT, *TASK_KEY, Work.K), on=[Work.UNIT, *TASK_KEY])
        .join(prep.tasks, on=TASK_KEY)
        .join(prep.atoms, on=[Work.UNIT, Work.TASK])
        .with_columns(
            (pl.col(Work.COEF) * pl.col(Work.W) * pl.col(Work.K) * pl.col(Work.DEV)).alias(
                Work.VALUE
            )
        )
        .sort(*_STRATUM, *TASK_KEY, Work.CLUSTER, Work.UNIT)
        .group_by(*_STRATUM, *TASK_KEY, Work.CLUSTER, maintain_order=True)
        .agg(
            sum_or_null(pl.col(Work.VALUE), Work.VALUE),
            pl.col(Work.UNIT).n_unique().alias(Work.UNITS),
            pl.col(Work.N).sum(),
        )
        .group_by(*_STRATUM, maintain_order=True)
        .agg(
            sum_or_null(pl.col(Work.VALUE) ** 2, Work.VAR_WITHIN),
            pl.len().cast(pl.Int64).alias(Work.CLUSTERS),
            (pl.col(Work.UNITS) > 1).sum().cast(pl.Int64).alias(N_PAIRS),
            pl.col(Work.N).filter(pl.col(Work.UNITS) > 1).sum().alias(Work.SHARED),
            pl.col(Work.N).sum().alias(Work.TOTAL),
        )
    )


def _task_sample(
    prep: Prepared, rows: pl.DataFrame, contrasts: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tasks a sample, per contrast and stratum: the variance ``VAR_TASKS`` of the contrast
    over the stratum's tasks (null where the stratum has one task in the contrast, or where
    a part of it cannot be estimated), its degrees of freedom ``TASK_DF`` and the stratum's
    tasks ``STRATUM_TASKS``; and per contrast the tasks every unit covers.

    The tasks of a stratum fall into coverage patterns, the units of the contrast that ran
    them (all of them, in a full comparison; each model alone, where two models ran other
    tasks). Each pattern is a sample of its own: ``ψ_t = Σ_unit coef · w · task score``
    varies over its ``k`` tasks, ``k/(k−1) Σ_t (ψ_t − ψ̄)²`` (``k − 1`` degrees of
    freedom): tasks both models ran are paired, tasks one ran are that model's own sample
    (two models on disjoint tasks: Welch's standard error and degrees of freedom). A
    pattern of a single task cannot say how tasks vary: it borrows the variance of its
    units' part of the contrast over every task they all ran (a model alone: all of its
    tasks), or, where they share only that one task, each unit's own variance over its
    tasks, their covariance left out (the pairing counted as none: conservative). A unit
    with a single task in a stratum where it is needed leaves the variance null: nothing
    estimates how its tasks vary (never a variance of 0 for want of one). The pieces are
    added per stratum, with Satterthwaite's degrees of freedom."""
    coef_w = pl.col(Work.COEF) * pl.col(Work.W)
    terms = (
        rows.join(prep.cells.select(Work.UNIT, *TASK_KEY, Work.MEAN), on=[Work.UNIT, *TASK_KEY])
        .with_columns(
            (coef_w * (pl.col(Work.MEAN) - pl.col(Work.CENTRE))).alias(Work.VALUE),
            (coef_w * pl.col(Work.MEAN)).alias(Work.PART),
        )
        .sort(*_STRATUM, *TASK_KEY, Work.UNIT)
    )
    per_task = terms.group_by(*_STRATUM, *TASK_KEY, maintain_order=True).agg(
        pl.col(Work.VALUE).sum(),
        pl.col(Work.UNIT).n_unique().alias(Work.UNITS),
        pl.col(Work.UNIT).alias(Work.MEMBERS),
        pl.col(Work.UNIT).cast(pl.String).str.join(",").alias(Work.PATTERN),
    )
    # A pattern's tasks together, in task order: its sums run in the same order whatever
    # the other patterns (one pattern: in task order, as every full comparison).
    value = pl.col(Work.VALUE)
    patterns = (
        per_task.sort(*_STRATUM, Work.PATTERN, *TASK_KEY)
        .group_by(*_STRATUM, Work.PATTERN, maintain_order=True)
        .agg(
            pl.len().alias(Work.N),
            pl.col(Work.MEMBERS).first(),
            (value**2).sum().alias(Work.SQUARES),
            ((value - value.mean()) ** 2).sum().alias(Work.CENTRED),
        )
        .with_columns(pl.len().over(_STRATUM).alias(Work.PATTERNS))
    )
    tasks = pl.col(Work.N).cast(pl.Float64)
    # One pattern: ψ is centred on the units' scores in the stratum, which are its means.
    spread = pl.when(pl.col(Work.PATTERNS) == 1).then(Work.SQUARES).otherwise(Work.CENTRED)
    own = patterns.filter(pl.col(Work.N) > 1).select(
        *_STRATUM,
        (pl.lit("pattern ") + pl.col(Work.PATTERN)).alias(Work.SOURCE),
        (spread * tasks / (tasks - 1.0)).alias(Work.VALUE),
        (tasks - 1.0).alias(DF),
    )
    singles = patterns.filter((pl.col(Work.N) == 1) & (pl.col(Work.PATTERNS) > 1))
    pieces = [own]
    if singles.height:
        pieces.append(_borrowed(terms, singles.select(*_STRATUM, Work.PATTERN, Work.MEMBERS)))
    per_stratum = (
        pl.concat(pieces)
        .sort(*_STRATUM, Work.SOURCE)
        .group_by(*_STRATUM, maintain_order=True)
        .agg(sum_or_null(value, Work.VAR_TASKS), _satterthwaite(Work.TASK_DF))
    )
    sampled = (
        per_task.group_by(*_STRATUM, maintain_order=True)
        .agg(pl.len().cast(pl.Int64).alias(Work.STRATUM_TASKS))
        .join(per_stratum, on=_STRATUM, how="left")
        .with_columns(
            pl.when(pl.col(Work.STRATUM_TASKS) > 1).then(pl.col(Work.VAR_TASKS)),
        )
    )
    n_units = contrasts.group_by(Work.CID).agg(pl.col(Work.UNIT).n_unique().alias(Work.ALL))
    shared_tasks = (
        per_task.join(n_units, on=Work.CID)
        .group_by(Work.CID)
        .agg((pl.col(Work.UNITS) == pl.col(Work.ALL)).sum().cast(pl.Int64).alias(N_TASKS))
    )
    return sampled, shared_tasks


def _borrowed(terms: pl.DataFrame, singles: pl.DataFrame) -> pl.DataFrame:
    """The variance pieces (``SOURCE``, ``VALUE``, ``DF``) of the coverage patterns of a
    single task (``singles``: per contrast, stratum and pattern, its ``MEMBERS``): the
    variance of the members' part of the contrast over the tasks all of them ran where
    those are two or more, else each member's own (null: a member of one task). A source
    that stands in for several patterns counts once per pattern."""
    joint = _part_variance(terms, singles.rename({Work.PATTERN: Work.SOURCE}))
    shared = joint.filter(pl.col(Work.N) > 1)
    members = (
        joint.filter(pl.col(Work.N) < 2)
        .select(*_STRATUM, Work.MEMBERS)
        .explode(Work.MEMBERS)
        .select(
            *_STRATUM,
            pl.col(Work.MEMBERS).cast(pl.String).alias(Work.SOURCE),
            pl.concat_list(Work.MEMBERS).alias(Work.MEMBERS),
        )
    )
    each = _part_variance(terms, members.unique(maintain_order=True))
    source = [*_STRATUM, Work.SOURCE]
    uses = (
        pl.concat([shared.select(source), members.select(source)])
        .group_by(source, maintain_order=True)
        .agg(pl.len().alias(Work.USES))
    )
    # (A member's own variance is the same estimate whichever pattern asks for it.)
    estimates = pl.concat([shared, each]).select(*source, Work.VAR, Work.N).unique(source)
    tasks = pl.col(Work.N).cast(pl.Float64)
    return uses.join(estimates, on=source).select(
        *_STRATUM,
        (pl.lit("units ") + pl.col(Work.SOURCE)).alias(Work.SOURCE),
        (pl.col(Work.USES).cast(pl.Float64) * pl.col(Work.VAR)).alias(Work.VALUE),
        (tasks - 1.0).alias(DF),
    )


def _part_variance(terms: pl.DataFrame, sets: pl.DataFrame) -> pl.DataFrame:
    """Per row of ``sets`` (contrast, stratum, ``SOURCE`` and its units, ``MEMBERS``): the
    tasks of the stratum all of them ran (``N``) and the sample variance of their part of
    the contrast over those tasks (``VAR``; null for fewer than two)."""
    wanted = sets.with_columns(pl.col(Work.MEMBERS).list.len().alias(Work.ALL))
    part = pl.col(Work.PART)
    per_task = (
        wanted.explode(Work.MEMBERS)
        .rename({Work.MEMBERS: Work.UNIT})
        .join(terms.select(*_STRATUM, *TASK_KEY, Work.UNIT, Work.PART), on=[*_STRATUM, Work.UNIT])
        .sort(*_STRATUM, Work.SOURCE, *TASK_KEY, Work.UNIT)
        .group_by(*_STRATUM, Work.SOURCE, *TASK_KEY, maintain_order=True)
        .agg(part.sum(), pl.len().alias(Work.UNITS), pl.col(Work.ALL).first())
        .filter(pl.col(Work.UNITS) == pl.col(Work.ALL))
    )
    spread = per_task.group_by(*_STRATUM, Work.SOURCE, maintain_order=True).agg(
        pl.len().alias(Work.N),
        pl.when(pl.len() > 1)
        .then(((part - part.mean()) ** 2).sum() / (pl.len().cast(pl.Float64) - 1.0))
        .alias(Work.VAR),
    )
    return wanted.drop(Work.ALL).join(spread, on=[*_STRATUM, Work.SOURCE], how="left")


def _satterthwaite(name: str) -> pl.Expr:
    """Satterthwaite's degrees of freedom of a sum of independent variance estimates
    ``VALUE``, each with its ``DF``: ``(Σ v)² / Σ (v² / df)`` (all zero: ``Σ df``; one
    estimate: its own, to the bit)."""
    v, df = pl.col(Work.VALUE), pl.col(DF)
    total = v.sum()
    return (
        pl.when(pl.len() == 1)
        .then(df.first())
        .when(total > 0)
        .then(total**2 / (v**2 / df).sum())
        .otherwise(df.sum())
        .alias(name)
    )


def _combine(strata: pl.DataFrame, design: DesignChoice) -> pl.DataFrame:
    """Per contrast: the design's variance summed over the strata (categories), its
    Satterthwaite degrees of freedom, and what it is (``DESIGN``)."""
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
    else:
        fallback = pl.lit(True)
        part, part_df = var_within, pl.lit(None, pl.Float64)
    per_contrast = (
        strata.with_columns(
            part.alias(Work.VALUE), part_df.alias(DF), fallback.alias(Work.FALLBACK)
        )
        .sort(*_STRATUM)
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
    ).select(Work.CID, Work.VAR, Work.VAR_WITHIN, Work.VAR_TASKS, DF, DESIGN, N_PAIRS, PAIRED)


def _df_of_strata() -> pl.Expr:
    """Satterthwaite's degrees of freedom of a sum of independent variance estimates ``v``
    (``VALUE``), each with its own ``df``: ``(Σ v)² / Σ (v² / df)`` (all zero: ``Σ df``)."""
    v, df = pl.col(Work.VALUE), pl.col(DF)
    total = v.sum()
    return pl.when(total > 0).then(total**2 / (v**2 / df).sum()).otherwise(df.sum()).alias(DF)


def inference(
    frame: pl.DataFrame,
    estimate: str,
    alpha: float = 0.05,
    power: float = 0.8,
    level: float | None = None,
) -> pl.DataFrame:
    """Adds ``SE``, ``SE_WITHIN``, ``SE_TASKS``, ``CI_LOW``, ``CI_HIGH`` (a ``level``
    interval; default ``1 - alpha``), ``P_VALUE`` (two-sided) and ``MDE`` (the true
    difference a level-``alpha`` test detects with probability ``power``) from ``estimate``,
    ``VAR`` and ``DF``: Student's t with ``DF`` degrees of freedom, the normal where ``DF``
    is null. A zero standard error gives p = 1 for a zero estimate, else 0."""
    level = 1.0 - alpha if level is None else level
    se = frame[Work.VAR].sqrt()
    est = frame[estimate]
    df = frame[DF].to_numpy().astype(np.float64)  # null -> NaN: the normal
    z = (est / se).to_numpy().astype(np.float64)  # null -> NaN
    normal = np.isnan(df)
    t_df = np.where(normal, 1.0, df)  # (a placeholder where the normal is used)
    p = np.where(normal, normal_p_values(z), 2.0 * special.stdtr(t_df, -np.abs(z)))
    p = np.where(np.isnan(z), np.nan, p)
    p = np.where((se.to_numpy() == 0.0) & (est.to_numpy() == 0.0), 1.0, p)

    def quantile(q: float) -> np.ndarray:
        return np.where(normal, z_quantile(q), special.stdtrit(t_df, q))

    half = quantile(0.5 + level / 2.0)
    detect = quantile(1.0 - alpha / 2.0) + quantile(power)
    return frame.with_columns(
        se.alias(SE),
        frame[Work.VAR_WITHIN].sqrt().alias(SE_WITHIN),
        frame[Work.VAR_TASKS].sqrt().alias(SE_TASKS),
        (est - pl.Series(half) * se).alias(CI_LOW),
        (est + pl.Series(half) * se).alias(CI_HIGH),
        pl.Series(P_VALUE, p, pl.Float64).fill_nan(None),
        (pl.Series(detect) * se).alias(MDE),
    )


def detectable(frame: pl.DataFrame, alpha: str, power: float = 0.8) -> pl.Series:
    """``MDE`` at each row's own test level (column ``alpha``: Holm's step, say): the true
    difference a two-sided test at that level detects with probability ``power``,
    ``(t_{1−α/2} + t_{power}) · SE`` with the row's ``DF`` (the normal where it is null)."""
    df = frame[DF].to_numpy().astype(np.float64)
    level = frame[alpha].to_numpy().astype(np.float64)  # null -> NaN
    normal = np.isnan(df)
    t_df = np.where(normal, 1.0, df)

    def quantile(q: np.ndarray) -> np.ndarray:
        return np.where(normal, special.ndtri(q), special.stdtrit(t_df, q))

    factor = quantile(1.0 - level / 2.0) + quantile(np.full(len(level), power))
    return (pl.Series(factor) * frame[SE]).fill_nan(None).alias(MDE)
