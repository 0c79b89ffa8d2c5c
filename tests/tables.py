"""Reading what a run wrote, whatever the store: tests compare tables, not files, so the
same tests hold for every storage layout."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from flows.warehouse import CORE_TABLES, TABLES


def read_table(out: Path, name: str) -> pl.DataFrame:
    """Every row of table ``name`` in ``out``, ``dump_date`` a string, in a stable order."""
    frame = pl.scan_parquet(out / name, hive_partitioning=True).collect()
    if "dump_date" in frame.columns:
        frame = frame.with_columns(pl.col("dump_date").cast(pl.String))
    columns = [c for c in frame.columns if frame[c].dtype != pl.List(pl.String)]
    return frame.select(sorted(frame.columns)).sort(columns, nulls_last=True)


def read_tables(out: Path, names: tuple[str, ...] = CORE_TABLES) -> dict[str, pl.DataFrame]:
    return {name: read_table(out, name) for name in names if name in TABLES}
