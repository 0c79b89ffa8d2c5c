"""The model and category rows a leaderboard is drawn from, for the terminal's tests: three
models whose names are long (Hugging Face ids), the second and third not told apart."""

from __future__ import annotations

from typing import Any

import polars as pl

from schemas.contract import Category

LONG_NAMES = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct-FP8",
]


def three_models(
    more: dict[str, list[Any]] | None = None, overrides: dict[str, Any] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(models, categories) rows of ``LONG_NAMES``, ranked 1-3 with the rank interval of the
    second and third spanning places 2-3; ``more``: columns added to the models' rows."""
    models = pl.DataFrame(
        {
            "model": LONG_NAMES,
            "rank": [1, 2, 3],
            "score": [0.9, 0.8, 0.7],
            "ci_low": [0.85, 0.75, 0.65],
            "ci_high": [0.95, 0.85, 0.75],
            "categories_covered": [6, 6, 6],
            "ranked_among": [",".join(Category)] * 3,
            "rank_low": [1, 2, 2],
            "rank_high": [1, 3, 3],  # the rank's interval is shown where it spans places
            **(more or {}),
        },
        schema_overrides=overrides,
    )
    categories = pl.DataFrame(
        {
            "model": [m for m in LONG_NAMES for _ in Category],
            "category": [str(c) for _ in LONG_NAMES for c in Category],
            "score": [0.5] * (len(LONG_NAMES) * len(Category)),
        }
    )
    return models, categories
