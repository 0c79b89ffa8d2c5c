"""The shared clusters' products of every pair of units (``variance_within._cluster_products``,
the bulk of a night's comparisons over many models) made in order without a sort: the same
bits as the plain formulation (the rows of every pair joined, sorted, then summed), on nights
where units miss clusters, clusters have one unit, and the terms' order changes their sum."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from schemas.comparisons import N_PAIRS, Work
from transforms.compare.variance_within import _cluster_products
from transforms.exact import exactly


def plain_cluster_products(atoms: pl.DataFrame, needed: pl.DataFrame) -> pl.DataFrame:
    """The formulation before issue 48: every pair's rows by joins, sorted, then summed."""
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


def night(seed: int, units: int, tasks: int, clusters: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Atoms of a night (each unit on a random share of each task's clusters, in a shuffled
    order; deviations of many magnitudes, so that adding them in another order changes the
    last bits) and the pairs a contrast needs (some units in none)."""
    rng = np.random.default_rng(seed)
    unit, task, cluster = np.meshgrid(
        np.arange(units), np.arange(tasks), np.arange(clusters), indexing="ij"
    )
    # Each unit on a share of the clusters (the first two on all); the last unit on none (a
    # pair may still name it).
    there = (rng.random(unit.size) < rng.uniform(0.3, 1.0)) | (unit.ravel() < 2)
    there &= unit.ravel() < units - 1
    order = rng.permutation(int(there.sum()))
    atoms = pl.DataFrame(
        {
            Work.UNIT: unit.ravel()[there][order].astype(np.uint32),
            Work.TASK: task.ravel()[there][order].astype(np.uint32),
            Work.CLUSTER: (cluster.ravel()[there][order] * 7 + 3).astype(np.int64),
            Work.DEV: (rng.standard_normal(int(there.sum())) * 10.0 ** rng.integers(-9, 3))[order],
            Work.N: rng.integers(1, 5, int(there.sum())).astype(np.uint32)[order],
        }
    )
    pairs = [
        (a, b)
        for a in range(units)
        for b in range(units)
        if (a, b) in ((0, 1), (0, units - 1), (units - 1, 0)) or (a != b and rng.random() < 0.6)
    ]
    needed = pl.DataFrame(
        {
            Work.UNIT: [a for a, _ in pairs],
            Work.UNIT + "_b": [b for _, b in pairs],
        },
        schema={Work.UNIT: pl.UInt32, Work.UNIT + "_b": pl.UInt32},
    ).sample(fraction=1.0, shuffle=True, seed=seed)
    return atoms, needed


@pytest.mark.parametrize(
    ("seed", "units", "tasks", "clusters"),
    [(0, 3, 1, 5), (1, 6, 3, 40), (2, 20, 4, 60), (3, 9, 7, 1), (4, 12, 2, 300)],
)
def test_the_pairs_products_are_the_plain_formulations_bits(
    seed: int, units: int, tasks: int, clusters: int
) -> None:
    atoms, needed = night(seed, units, tasks, clusters)
    (made,) = exactly(_cluster_products(atoms, needed))
    plain = plain_cluster_products(atoms, needed)
    assert made.height == plain.height > 0
    assert_frame_equal(made, plain, check_exact=True)
    assert made[Work.CROSS].to_numpy().tobytes() == plain[Work.CROSS].to_numpy().tobytes()


def test_a_night_where_no_cluster_is_shared_has_no_products() -> None:
    atoms, needed = night(5, 4, 2, 10)
    alone = atoms.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(Work.CLUSTER))
    (made,) = exactly(_cluster_products(alone, needed))
    assert made.is_empty() and made.schema == plain_cluster_products(alone, needed).schema
