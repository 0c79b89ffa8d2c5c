"""The checks of several columns that tables name (``schemas.tables.Table.frame_checks``):
one polars expression each, read by the one-query validation (``schemas.validation``) and by
pandera's schemas (``schemas.models``) alike."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.comparisons import CI_HIGH, CI_LOW, N_RANKED, RANK_HIGH, RANK_LOW, RANK_UB

# The checks of several columns that tables name in ``Table.frame_checks``: true on a row
# that meets them (a null outcome passes, as pandera's checks ignore nulls).
FRAME_CHECKS: Final[dict[str, pl.Expr]] = {
    # (an interval may be null: no spread to measure)
    "low_below_high": (pl.col(CI_LOW) <= pl.col(CI_HIGH)).fill_null(True),
    # (a category's rank interval holds its rank)
    "rank_in_interval": (
        (pl.col(RANK_LOW) <= pl.col("rank")) & (pl.col("rank") <= pl.col(RANK_HIGH))
    ).fill_null(True),
    # (the rank interval holds the rank; the verdicts' bound is never above it)
    "ranks_within_group": (
        (pl.col(RANK_LOW) <= pl.col("rank"))
        & (pl.col("rank") <= pl.col(RANK_HIGH))
        & (pl.col(RANK_HIGH) <= pl.col(N_RANKED))
        & (pl.col(RANK_UB) <= pl.col("rank"))
    ),
}
