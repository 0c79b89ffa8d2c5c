"""Small frames for the storage tests."""

from __future__ import annotations

import polars as pl


def night_frame(night: str | None, n: int = 5, offset: int = 0) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "episode_id": [f"e{offset + i}" for i in range(n)],
            "model": ["m1", "m2"] * (n // 2) + ["m1"] * (n % 2),
            "score": [float(offset + i) / 10 for i in range(n)],
            "dump_date": [night] * n,
        },
        schema={
            "episode_id": pl.String,
            "model": pl.String,
            "score": pl.Float64,
            "dump_date": pl.String,
        },
    )
