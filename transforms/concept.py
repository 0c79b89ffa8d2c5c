"""Concept formation and language learning (one formula, the seed's ``_concept_score``)::

accuracy = correct_count / NUM_TEST_ITEMS
if accuracy == 0: return 0.0
effective_free = max(initial_examples, FREE_THRESHOLD)
efficiency = 1.0 if examples_used <= effective_free
             else max(0.0, 1.0 - paid_used / paid_budget)
return accuracy * (0.40 + 0.60 * efficiency)

The weights (``BASE``, ``EFFICIENCY``) are named once, below.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import SCORE, Component
from schemas.contract import Category
from transforms.formulas import formula

EXAMPLES: str = "n_examples"
# accuracy x (BASE + EFFICIENCY x efficiency)
BASE: Final = 0.40
EFFICIENCY: Final = 0.60


COMPONENTS: tuple[Component, ...] = (
    Component.CORRECT_COUNT,
    Component.N_ITEMS,
    Component.ACCURACY,
    Component.EXAMPLES_USED,
    Component.EFFICIENCY,
)


def accuracy() -> pl.Expr:
    num_test_items = pl.col("num_test_items").fill_null(pl.col(Component.N_ITEMS))
    return pl.col(Component.CORRECT_COUNT).cast(pl.Float64) / num_test_items.cast(pl.Float64)


def efficiency() -> pl.Expr:
    used = pl.col(EXAMPLES)
    effective_free = pl.max_horizontal("initial_examples", "free_threshold")
    paid_used = (used - effective_free).cast(pl.Float64)
    paid_budget = (pl.col("max_examples") - effective_free).cast(pl.Float64)
    decayed = pl.max_horizontal(pl.lit(0.0), 1.0 - paid_used / paid_budget)
    return pl.when(used <= effective_free).then(pl.lit(1.0)).otherwise(decayed)


@formula(
    (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING),
    "v1",
    text="accuracy x ({base:.2f} + {efficiency:.2f} x efficiency beyond the free examples); "
    "0 when no item is right",
    weights={"base": BASE, "efficiency": EFFICIENCY},
    components=COMPONENTS,
    default=True,
)
def score(episodes: pl.LazyFrame) -> pl.LazyFrame:
    acc, eff = pl.col(Component.ACCURACY), pl.col(Component.EFFICIENCY)
    return episodes.with_columns(
        accuracy().alias(Component.ACCURACY),
        efficiency().alias(Component.EFFICIENCY),
        pl.col(EXAMPLES).cast(pl.Int64).alias(Component.EXAMPLES_USED),
    ).with_columns(
        pl.when(acc == 0.0)
        .then(pl.lit(0.0))
        .otherwise(acc * (BASE + EFFICIENCY * eff))
        .alias(SCORE)
    )
