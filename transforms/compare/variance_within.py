"""The variance of contrasts with the tasks fixed (``within_tasks``, and ``two_level``'s
stand-in for a stratum of one task): the cluster-robust variance with instances as clusters,
``Σ_t Σ_g (Σ_u a_u w_{u,t} k_{u,t} D_{u,t,g})²``, per contrast and stratum; with the
shortcuts for one unit's score and for ``a - b`` (``transforms.compare.variance``).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import polars as pl

from schemas.comparisons import N_PAIRS, Work
from transforms.compare.preparation import ATOMS_AT_ONCE, Prepared
from transforms.exact import exactly

_STRATUM: Final = [Work.CID, Work.STRATUM]


def sum_or_null(value: pl.Expr, name: str) -> pl.Expr:
    """The sum, null when any term is null (polars' sum skips nulls)."""
    return pl.when(value.is_null().any()).then(None).otherwise(value.sum()).alias(name)


def _pair_within(prep: Prepared, rows: pl.LazyFrame) -> pl.LazyFrame:
    """``_within`` for contrasts ``a - b``, from per-task sufficient statistics instead of
    one row per contrast and cluster (which grows with the square of the models):

        Σ_t Σ_g (x_a D_a,g − x_b D_b,g)² = Σ_t x_a² S_a,t + x_b² S_b,t − 2 x_a x_b P_ab,t

    with ``x = w · k`` per unit and task, ``S_u,t = Σ_g D_u,g²`` and
    ``P_ab,t = Σ_g D_a,g D_b,g`` over the clusters both units have (the same algebra, summed
    in another order). A plan (``exactly`` runs it): the pairs of units are found at once,
    and a large night's products made a task at a time."""
    weights = _scaled_weights(prep, rows)
    self_part = _self_part(prep, weights)
    side = [Work.CID, Work.UNIT, Work.STRATUM, Work.TASK, Work.VALUE]
    a_side = weights.filter(pl.col(Work.COEF) > 0).select(side)
    b_side = weights.filter(pl.col(Work.COEF) < 0).select(side)
    both = a_side.join(b_side.drop(Work.STRATUM), on=[Work.CID, Work.TASK], suffix="_b").cache()
    (needed,) = exactly(both.select(Work.UNIT, Work.UNIT + "_b").unique())
    # A cluster's row meets every other unit's (units² rows per cluster), which for a whole
    # night of millions of episodes took gigabytes: a large night a task at a time (the same
    # sums; a small one at once, as a loop of small plans costs more than it saves).
    # (A task's atoms taken out as it is paired, not every task's at once: ``partition_by``
    # copied a night's atoms beside them, ~28 bytes an episode.)
    large = prep.atoms.height > ATOMS_AT_ONCE
    tasks = prep.tasks[Work.TASK].to_list() if large else [None]
    parts = (prep.atoms if t is None else prep.atoms.filter(pl.col(Work.TASK) == t) for t in tasks)
    made = (_cluster_products(atoms, needed) for atoms in parts)
    # (A large night's products summed as each task is paired: its pairs' rows one task's.)
    products = pl.concat([exactly(part)[0].lazy() if large else part for part in made])
    joined = both.join(products, on=[Work.UNIT, Work.UNIT + "_b", Work.TASK]).sort(
        *_STRATUM, Work.TASK
    )
    cross = joined.group_by(*_STRATUM, maintain_order=True).agg(
        (2.0 * pl.col(Work.VALUE) * pl.col(Work.VALUE + "_b") * pl.col(Work.CROSS))
        .sum()
        .alias(Work.CROSS),
        pl.col(N_PAIRS).sum().cast(pl.Int64),
        pl.col(Work.SHARED).sum(),
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


def _scaled_weights(prep: Prepared, rows: pl.LazyFrame) -> pl.LazyFrame:
    """``rows`` with ``VALUE`` = w · k (a unit's weight in the task times its small-sample
    factor) and the unit's clusters ``G``."""
    cell_terms = prep.cells.lazy().select(Work.UNIT, Work.TASK, Work.K, Work.G)
    weights = rows.join(cell_terms, on=[Work.UNIT, Work.TASK])
    return weights.with_columns((pl.col(Work.W) * pl.col(Work.K)).alias(Work.VALUE)).cache()


def _self_part(prep: Prepared, weights: pl.LazyFrame) -> pl.LazyFrame:
    """Per contrast and stratum: ``Σ_u Σ_t (coef · w · k)² · Σ_g D_u,t,g²`` (each unit's own
    terms), its episodes and clusters."""
    # Sorted before every sum, so that the same input gives the same bits (a join's rows
    # come in any order). (Each unit's own sums over its clusters: ``Prepared.own``, made
    # once; summed here over a night's atoms, twice a night, +148-176 MiB at 2 M episodes.)
    joined = weights.join(prep.own.lazy(), on=[Work.UNIT, Work.TASK])
    terms = joined.sort(*_STRATUM, Work.TASK, Work.UNIT)
    return terms.group_by(*_STRATUM, maintain_order=True).agg(
        sum_or_null(pl.col(Work.VALUE) ** 2 * pl.col(Work.SELF), Work.VAR_WITHIN),
        pl.col(Work.EPISODES).sum().alias(Work.TOTAL),
        pl.col(Work.G).sum().alias(Work.CLUSTERS),
    )


def _own_within(prep: Prepared, rows: pl.LazyFrame) -> pl.LazyFrame:
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


def _cluster_products(atoms: pl.DataFrame, needed: pl.DataFrame) -> pl.LazyFrame:
    """Per pair of units (``needed``) and task: ``Σ_g D_a,g D_b,g`` over their shared
    clusters, how many, and the episodes on them (``_pair_within``), from ``atoms``: a plan
    (``exactly`` runs it).

    A pair's products are summed in cluster order, in rows made in the order of (unit,
    unit_b, task, cluster) rather than sorted once made (a night of 20 models: 922,000 rows,
    whose joins and sort took two thirds of the night's tables): each pair, sorted, takes
    its first unit's clusters (a range of them sorted by unit, task and cluster) and looks
    up its second unit's on each (a table of every unit's value by cluster). (The clusters
    shared are one query; the ranges and look-ups are numpy's, not a query each.)"""
    # Only clusters that more than one unit has can pair two units.
    multi = atoms.lazy().group_by(Work.TASK, Work.CLUSTER).agg(pl.len().alias(Work.UNITS))
    kept = multi.filter(pl.col(Work.UNITS) > 1).with_row_index(_SLOT)
    (shared,) = exactly(
        atoms.lazy()
        .join(kept, on=[Work.TASK, Work.CLUSTER])
        .sort(Work.UNIT, Work.TASK, Work.CLUSTER)
        .select(Work.UNIT, Work.TASK, Work.CLUSTER, Work.DEV, Work.N, _SLOT)
    )
    unit = shared[Work.UNIT].to_numpy().astype(np.int64)
    slot = shared[_SLOT].to_numpy().astype(np.int64)
    # Units by code (a unit of a pair may have no shared cluster, or no cluster at all).
    first, second = (needed[c].to_numpy().astype(np.int64) for c in (Work.UNIT, Work.UNIT + "_b"))
    units = 1 + max(int(c.max(initial=0)) for c in (unit, second))
    units = max(units, 1 + int(first.max(initial=0)))
    slots = 1 + int(slot.max(initial=-1))  # every cluster kept has rows in ``shared``
    # Each unit's value and episodes on each cluster (absent: not there).
    where = unit * slots + slot
    there = np.zeros(units * slots, dtype=bool)
    there[where] = True
    dev, n = np.zeros(units * slots), np.zeros(units * slots, dtype=np.uint32)
    dev[where], n[where] = shared[Work.DEV].to_numpy(), shared[Work.N].to_numpy()
    # The pairs, sorted, each with the range of its first unit's rows in ``shared`` (sorted
    # by unit: a unit's rows start where the units before it end).
    length = np.bincount(unit, minlength=units)
    start = np.cumsum(length) - length
    order = np.lexsort((second, first))
    first, second = first[order], second[order]
    lengths = length[first]
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    row = np.repeat(start[first], lengths) + np.arange(int(lengths.sum())) - offsets
    unit_b = np.repeat(second, lengths)
    other = unit_b * slots + slot[row]
    both = there[other] if len(other) else np.zeros(0, dtype=bool)
    picked = [Work.UNIT, Work.TASK, Work.CLUSTER, Work.DEV, Work.N]
    return (
        shared.lazy()
        .select(pl.col(picked).gather(pl.lit(pl.Series(row, dtype=pl.Int64))))
        .with_columns(
            pl.lit(pl.Series(Work.UNIT + "_b", unit_b, needed.schema[Work.UNIT + "_b"])),
            pl.lit(pl.Series(Work.DEV + "_b", dev[other], pl.Float64)),
            pl.lit(pl.Series(Work.N + "_b", n[other], pl.UInt32)),
        )
        .filter(pl.lit(pl.Series(both, dtype=pl.Boolean)))
        .group_by(Work.UNIT, Work.UNIT + "_b", Work.TASK, maintain_order=True)
        .agg(
            (pl.col(Work.DEV) * pl.col(Work.DEV + "_b")).sum().alias(Work.CROSS),
            pl.len().alias(N_PAIRS),
            (pl.col(Work.N) + pl.col(Work.N + "_b")).sum().alias(Work.SHARED),
        )
    )


# Working column of ``_cluster_products``.
_SLOT: Final = "__slot"


def _within(prep: Prepared, rows: pl.LazyFrame) -> pl.LazyFrame:
    """Tasks fixed, per contrast and category: Σ_task Σ_cluster (Σ_unit coef · w · k ·
    dev)², every unit's influence values scaled by its own small-sample factor; the
    clusters, those shared by two units or more, and the episodes on them (a plan)."""
    cell_terms = prep.cells.lazy().select(Work.UNIT, Work.TASK, Work.K)
    return (
        rows.join(cell_terms, on=[Work.UNIT, Work.TASK])
        .join(prep.atoms.lazy(), on=[Work.UNIT, Work.TASK])
        .with_columns(
            (pl.col(Work.COEF) * pl.col(Work.W) * pl.col(Work.K) * pl.col(Work.DEV)).alias(
                Work.VALUE
            )
        )
        .sort(*_STRATUM, Work.TASK, Work.CLUSTER, Work.UNIT)
        .group_by(*_STRATUM, Work.TASK, Work.CLUSTER, maintain_order=True)
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
