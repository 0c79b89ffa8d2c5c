"""How a plan whose sums must keep their bits is run (issue 48, i48-variance4).

Polars' in-memory engine sums a group's floats as its eager steps do (in the group's row
order: several keys' groups with compensation, a sorted key's runs of 128 or more
pairwise), one query or many; its streaming engine (``collect``'s default) sums a group's
parts as they come and adds them, which moved the last bit of some intervals. And its
optimiser, left to itself, drops the order a sort gave the rows where only sums or running
extremes read it (``check_order_observe``: in exact arithmetic they do not see order), so
they met the rows in a join's order (tests/transforms/test_exact_sums.py).

It is also how the queries over a benchmark's cells run (task, category and model rows, a
standing's health, hypotheses and changes: thousands of rows, not a night's episodes): the
streaming engine, a lazy query's default, takes about 0.7 ms more to set one up (a nightly's
standing 30-40 ms more, issue 48), and their sums then keep the bits of the eager steps too.
"""

from __future__ import annotations

from typing import Final

import polars as pl

EXACT_ENGINE: Final = "in-memory"
EXACT_FLAGS: Final = pl.QueryOptFlags(check_order_observe=False)


def exactly(*plans: pl.LazyFrame) -> list[pl.DataFrame]:
    """``plans`` in one query, run as ``EXACT_ENGINE`` and ``EXACT_FLAGS`` say: each sum over
    rows sorted in the plan has the bits of the same steps taken eagerly, a query each."""
    return pl.collect_all(plans, engine=EXACT_ENGINE, optimizations=EXACT_FLAGS)
