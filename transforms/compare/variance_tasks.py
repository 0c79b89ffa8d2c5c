"""The variance of contrasts with the tasks a sample (``two_level``): per contrast and
stratum, the spread of the contrast over the stratum's tasks, a coverage pattern at a time,
with Satterthwaite's degrees of freedom (``transforms.compare.variance``).
"""

from __future__ import annotations

import polars as pl

from schemas.comparisons import DF, N_TASKS, Work
from transforms.compare.preparation import Prepared
from transforms.compare.variance_within import _STRATUM, sum_or_null

# The coverage pattern of every task where every unit ran every task (``_task_sample``).
_ALL_UNITS = "all"


def _task_sample(
    prep: Prepared, rows: pl.LazyFrame, contrasts: pl.LazyFrame, *, borrow: bool = True
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
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
    added per stratum, with Satterthwaite's degrees of freedom. Plans (``exactly`` runs
    them: a sum of floats over rows sorted in the plan, the bits of the steps eagerly);
    ``borrow`` False where every unit ran the same tasks (no pattern of a single task
    beside others: the borrowing's plan, whose joins cost even on no rows, left out)."""
    coef_w = pl.col(Work.COEF) * pl.col(Work.W)
    terms = (
        rows.join(
            prep.cells.lazy().select(Work.UNIT, Work.TASK, Work.MEAN), on=[Work.UNIT, Work.TASK]
        )
        .with_columns(
            (coef_w * (pl.col(Work.MEAN) - pl.col(Work.CENTRE))).alias(Work.VALUE),
            (coef_w * pl.col(Work.MEAN)).alias(Work.PART),
        )
        .sort(*_STRATUM, Work.TASK, Work.UNIT)
    )
    per_task = terms.group_by(*_STRATUM, Work.TASK, maintain_order=True).agg(
        pl.col(Work.VALUE).sum(),
        pl.col(Work.UNIT).n_unique().alias(Work.UNITS),
        *([pl.col(Work.UNIT).alias(Work.MEMBERS)] if borrow else []),
    )
    if borrow:
        # The pattern's text made from the members' lists once grouped: a text joined in
        # each group took 7 ms of a standing's 10,000 rows of pairs, the lists' join 1.5.
        members = pl.col(Work.MEMBERS).cast(pl.List(pl.String)).list.join(",")
        per_task = per_task.with_columns(members.alias(Work.PATTERN))
    else:
        # Every unit ran every task: each contrast's tasks in a stratum are one pattern,
        # its units (no list gathered nor text made: a standing's 25,000 rows of pairs).
        per_task = per_task.with_columns(pl.lit(_ALL_UNITS).alias(Work.PATTERN))
    # A pattern's tasks together, in task order: its sums run in the same order whatever
    # the other patterns (one pattern: in task order, as every full comparison).
    value = pl.col(Work.VALUE)
    patterns = (
        per_task.sort(*_STRATUM, Work.PATTERN, Work.TASK)
        .group_by(*_STRATUM, Work.PATTERN, maintain_order=True)
        .agg(
            pl.len().alias(Work.N),
            *([pl.col(Work.MEMBERS).first()] if borrow else []),
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
    if borrow:  # (its rows may be none: the sums below are of the same rows)
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


def _borrowed(terms: pl.LazyFrame, singles: pl.LazyFrame) -> pl.LazyFrame:
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


def _part_variance(terms: pl.LazyFrame, sets: pl.LazyFrame) -> pl.LazyFrame:
    """Per row of ``sets`` (contrast, stratum, ``SOURCE`` and its units, ``MEMBERS``): the
    tasks of the stratum all of them ran (``N``) and the sample variance of their part of
    the contrast over those tasks (``VAR``; null for fewer than two)."""
    wanted = sets.with_columns(pl.col(Work.MEMBERS).list.len().alias(Work.ALL))
    part = pl.col(Work.PART)
    per_task = (
        wanted.explode(Work.MEMBERS)
        .rename({Work.MEMBERS: Work.UNIT})
        .join(terms.select(*_STRATUM, Work.TASK, Work.UNIT, Work.PART), on=[*_STRATUM, Work.UNIT])
        .sort(*_STRATUM, Work.SOURCE, Work.TASK, Work.UNIT)
        .group_by(*_STRATUM, Work.SOURCE, Work.TASK, maintain_order=True)
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
