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
from transforms.compare.preparation import ATOMS_AT_ONCE, TASK_KEY, Prepared

_STRATUM: Final = [Work.CID, Work.STRATUM]


def sum_or_null(value: pl.Expr, name: str) -> pl.Expr:
    """The sum, null when any term is null (polars' sum skips nulls)."""
    return pl.when(value.is_null().any()).then(None).otherwise(value.sum()).alias(name)


def _pair_within(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``_within`` for contrasts ``a - b``, from per-task sufficient statistics instead of
    one row per contrast and cluster (which grows with the square of the models):

        Σ_t Σ_g (x_a D_a,g − x_b D_b,g)² = Σ_t x_a² S_a,t + x_b² S_b,t − 2 x_a x_b P_ab,t

    with ``x = w · k`` per unit and task, ``S_u,t = Σ_g D_u,g²`` and
    ``P_ab,t = Σ_g D_a,g D_b,g`` over the clusters both units have (the same algebra, summed
    in another order)."""
    weights = _scaled_weights(prep, rows)
    self_part = _self_part(prep, weights)
    # (Steps that sum no float are taken together, lazily, a query for several: a standing
    # makes three variances, issue 48; every sum is still a query of its own over its rows
    # sorted, as it was.)
    side = [Work.CID, Work.UNIT, *TASK_KEY, Work.STRATUM, Work.TASK, Work.VALUE]
    a_side = weights.lazy().filter(pl.col(Work.COEF) > 0).select(side)
    b_side = weights.lazy().filter(pl.col(Work.COEF) < 0).select(side)
    pairs = a_side.join(b_side.drop(Work.TASK, Work.STRATUM), on=[Work.CID, *TASK_KEY], suffix="_b")
    both, needed = pl.collect_all([pairs, pairs.select(Work.UNIT, Work.UNIT + "_b").unique()])
    # A cluster's row meets every other unit's (units² rows per cluster), which for a whole
    # night of millions of episodes took gigabytes: a large night a task at a time (the same
    # sums; a small one at once, as a loop of small plans costs more than it saves).
    # (A task's atoms taken out as it is paired, not every task's at once: ``partition_by``
    # copied a night's atoms beside them, ~28 bytes an episode.)
    large = prep.atoms.height > ATOMS_AT_ONCE
    tasks = prep.tasks[Work.TASK].to_list() if large else [None]
    parts = (prep.atoms if t is None else prep.atoms.filter(pl.col(Work.TASK) == t) for t in tasks)
    products = pl.concat([_cluster_products(atoms, needed) for atoms in parts]).sort(
        Work.UNIT, Work.UNIT + "_b", Work.TASK
    )
    joined = (
        both.lazy()
        .join(products.lazy(), on=[Work.UNIT, Work.UNIT + "_b", Work.TASK])
        .sort(*_STRATUM, *TASK_KEY)
        .collect()
    )
    cross = joined.group_by(*_STRATUM, maintain_order=True).agg(
        (2.0 * pl.col(Work.VALUE) * pl.col(Work.VALUE + "_b") * pl.col(Work.CROSS))
        .sum()
        .alias(Work.CROSS),
        pl.col(N_PAIRS).sum().cast(pl.Int64),
        pl.col(Work.SHARED).sum(),
    )
    return (
        self_part.lazy()
        .join(cross.lazy(), on=_STRATUM, how="left")
        .with_columns(
            # A sum of squares: never below 0, whatever the rounding of the expansion.
            (pl.col(Work.VAR_WITHIN) - pl.col(Work.CROSS).fill_null(0.0)).clip(lower_bound=0.0),
            pl.col(N_PAIRS).fill_null(0),
            pl.col(Work.SHARED).fill_null(0),
        )
        .with_columns((pl.col(Work.CLUSTERS) - pl.col(N_PAIRS)).alias(Work.CLUSTERS))
        .select(*_STRATUM, Work.VAR_WITHIN, Work.CLUSTERS, N_PAIRS, Work.SHARED, Work.TOTAL)
        .collect()
    )


def _scaled_weights(prep: Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``VALUE`` = w · k (a unit's weight in the task times its small-sample
    factor), the unit's clusters ``G`` and the task's code."""
    cell_terms = prep.cells.lazy().select(Work.UNIT, *TASK_KEY, Work.K, Work.G)
    weights = rows.lazy().join(cell_terms, on=[Work.UNIT, *TASK_KEY])
    weights = weights.with_columns((pl.col(Work.W) * pl.col(Work.K)).alias(Work.VALUE))
    return weights.join(prep.tasks.lazy(), on=TASK_KEY).collect()  # (one query)


def _self_part(prep: Prepared, weights: pl.DataFrame) -> pl.DataFrame:
    """Per contrast and stratum: ``Σ_u Σ_t (coef · w · k)² · Σ_g D_u,t,g²`` (each unit's own
    terms), its episodes and clusters."""
    # Sorted before every sum, so that the same input gives the same bits (a join's rows
    # come in any order). (Each unit's own sums over its clusters: ``Prepared.own``, made
    # once; summed here over a night's atoms, twice a night, +148-176 MiB at 2 M episodes.)
    joined = weights.lazy().join(prep.own.lazy(), on=[Work.UNIT, Work.TASK])
    terms = joined.sort(*_STRATUM, *TASK_KEY, Work.UNIT).collect()  # (one query, then the sums)
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
    clusters, how many, and the episodes on them (``_pair_within``), from ``atoms``.

    A pair's products are summed in cluster order, in rows made in the order of (unit,
    unit_b, task, cluster) rather than sorted once made (a night of 20 models: 922,000 rows,
    whose joins and sort took two thirds of the night's tables): each pair, sorted, takes
    its first unit's clusters (a range of them sorted by unit, task and cluster) and looks
    up its second unit's on each (a table of every unit's value by cluster)."""
    # Only clusters that more than one unit has can pair two units.
    multi = atoms.group_by(Work.TASK, Work.CLUSTER).agg(pl.len().alias(Work.UNITS))
    kept = multi.filter(pl.col(Work.UNITS) > 1).with_row_index(_SLOT)
    shared = atoms.join(kept, on=[Work.TASK, Work.CLUSTER]).sort(Work.UNIT, Work.TASK, Work.CLUSTER)
    # Units by code (a unit of a pair may have no shared cluster, or no cluster at all).
    columns = (shared[Work.UNIT], needed[Work.UNIT + "_b"])
    units = 1 + max(int(c.drop_nulls().to_numpy().max(initial=0)) for c in columns)
    slots = kept.height
    # Each unit's value and episodes on each cluster (absent: not there).
    where = shared[Work.UNIT].to_numpy().astype(np.int64) * slots + shared[_SLOT].to_numpy()
    there = np.zeros(units * slots, dtype=bool)
    there[where] = True
    dev, n = np.zeros(units * slots), np.zeros(units * slots, dtype=np.uint32)
    dev[where], n[where] = shared[Work.DEV].to_numpy(), shared[Work.N].to_numpy()
    # The pairs, sorted, each with the range of its first unit's rows in ``shared``.
    ranges = shared.group_by(Work.UNIT).agg(pl.len().alias(_LEN)).sort(Work.UNIT)
    ranges = ranges.with_columns((pl.col(_LEN).cum_sum() - pl.col(_LEN)).alias(_START))
    pairs = needed.sort(Work.UNIT, Work.UNIT + "_b").join(
        ranges, on=Work.UNIT, maintain_order="left"
    )
    rows = pairs.select(
        Work.UNIT + "_b",
        pl.int_ranges(pl.col(_START), pl.col(_START) + pl.col(_LEN), dtype=pl.Int64).alias(_ROW),
    ).explode(_ROW)
    made = shared.select(Work.UNIT, Work.TASK, Work.CLUSTER, Work.DEV, Work.N, _SLOT)[rows[_ROW]]
    other = rows[Work.UNIT + "_b"].to_numpy().astype(np.int64) * slots + made[_SLOT].to_numpy()
    both = there[other] if len(other) else np.zeros(0, dtype=bool)
    made = made.with_columns(
        rows[Work.UNIT + "_b"].alias(Work.UNIT + "_b"),
        pl.Series(Work.DEV + "_b", dev[other]),
        pl.Series(Work.N + "_b", n[other]),
    ).filter(pl.Series(both))
    return made.group_by(Work.UNIT, Work.UNIT + "_b", Work.TASK, maintain_order=True).agg(
        (pl.col(Work.DEV) * pl.col(Work.DEV + "_b")).sum().alias(Work.CROSS),
        pl.len().alias(N_PAIRS),
        (pl.col(Work.N) + pl.col(Work.N + "_b")).sum().alias(Work.SHARED),
    )


# Working columns of ``_cluster_products``.
_SLOT: Final = "__slot"
_LEN: Final = "__len"
_START: Final = "__start"
_ROW: Final = "__row"


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
