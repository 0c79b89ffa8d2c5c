"""The variances' sums in one query keep the bits of the same steps taken eagerly
(``transforms.compare.preparation.exactly``; issue 48, i48-variance4).

A standing's variances were each eager step a polars query of its own (a sort, then a
group_by summing floats); in one lazy query polars' streaming engine summed a group's parts
as they came, and its optimiser dropped the sort's order where only sums read it: the last
bit of some intervals moved. ``exactly`` runs a plan on the in-memory engine with that
optimisation off. Held here against the eager steps over groups of 1 to 5,000 terms (polars
sums a sorted key's runs of 128 or more pairwise, several keys' groups compensated), terms
of magnitudes 1e-5 to 1e5 whose sums round differently in another order."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from transforms.exact import exactly

SIZES = [1, 2, 3, 5, 17, 127, 128, 129, 300, 1000, 5000]


def _terms(seed: int) -> pl.DataFrame:
    """Groups ``g`` (and ``h``, the same groups as a second key) of the sizes above, each
    term ``v`` with a weight ``w`` and a place ``o`` that orders it, rows shuffled."""
    rng = np.random.default_rng(seed)
    g = np.concatenate([np.full(n, i) for i, n in enumerate(SIZES)])
    return pl.DataFrame(
        {
            "g": g,
            "h": g % 2,
            "o": rng.permutation(len(g)),
            "v": rng.normal(size=len(g)) * 10 ** rng.uniform(-5, 5, len(g)),
            "w": rng.normal(size=len(g)),
        }
    ).sample(fraction=1.0, shuffle=True, seed=seed)


def _sums() -> list[pl.Expr]:
    v = pl.col("v")
    return [
        v.sum().alias("sum"),
        (v**2 * pl.col("w")).sum().alias("weighted"),
        ((v - v.mean()) ** 2).sum().alias("centred"),
        v.mean().alias("mean"),
    ]


@pytest.mark.parametrize("keys", [["g"], ["g", "h"]])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sums_in_one_query_are_the_eager_steps_bits(keys: list[str], seed: int) -> None:
    terms = _terms(seed)
    # Eagerly, as the variances were: the rows joined, sorted, then summed, a query each.
    places = terms.select("o")
    joined = terms.join(places, on="o")
    eager = joined.sort(*keys, "o").group_by(keys, maintain_order=True).agg(_sums())
    # (and joined to more, as a variance's pieces are: where nothing after the sums reads
    # their order, polars' optimiser took the sort before them for unread too)
    groups = terms.select(keys).unique()
    eager = eager.join(groups, on=keys).sort(keys)
    plan = (
        terms.lazy()
        .join(places.lazy(), on="o")
        .sort(*keys, "o")
        .group_by(keys, maintain_order=True)
        .agg(_sums())
        .join(groups.lazy(), on=keys)
    )
    (lazy,) = exactly(plan.sort(keys))
    assert lazy.height == len(SIZES)
    assert_frame_equal(lazy, eager, check_exact=True)
    for column in ("sum", "weighted", "centred", "mean"):
        assert lazy[column].to_numpy().tobytes() == eager[column].to_numpy().tobytes()
