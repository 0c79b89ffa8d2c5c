"""Reading what a run wrote, whatever the store: tests compare tables, not files, so the
same tests hold for every storage layout. Read with deltalake/pyarrow directly (a reader
cogscore did not write), at the versions the latest finished run recorded."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from deltalake import DeltaTable

from flows.output import CORE_TABLES, TABLES


def latest_versions(out: Path | str) -> dict[str, int]:
    """The table versions named by the latest run that left a state (runs table, read with
    deltalake)."""
    runs = pl.from_arrow(DeltaTable(str(Path(out) / "runs")).to_pyarrow_table())
    assert isinstance(runs, pl.DataFrame)
    pinning = runs.filter(pl.col("status").is_in(["succeeded", "nothing_to_do"]))
    last = pinning.sort("finished", "started").row(-1, named=True)
    return dict(json.loads(last["table_versions"]))


def read_table(out: Path | str, name: str) -> pl.DataFrame:
    """Every row of table ``name`` in ``out``, ``dump_date`` a string, in a stable order."""
    version = latest_versions(out)[name]
    arrow = DeltaTable(str(Path(out) / name), version=version).to_pyarrow_table()
    frame = pl.from_arrow(arrow)
    assert isinstance(frame, pl.DataFrame)
    if "dump_date" in frame.columns:
        frame = frame.with_columns(pl.col("dump_date").cast(pl.String))
    columns = [c for c in frame.columns if frame[c].dtype != pl.List(pl.String)]
    return frame.select(sorted(frame.columns)).sort(columns, nulls_last=True)


def read_tables(out: Path | str, names: tuple[str, ...] = CORE_TABLES) -> dict[str, pl.DataFrame]:
    return {name: read_table(out, name) for name in names if name in TABLES}
