"""DuckDB over an output: every table registered as the latest finished run (or run
``as_of``) left it, through deltalake's Arrow datasets (any DuckDB version, local folders
and object stores alike, filters pushed down), then the views of ``sql/views.sql``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from deltalake import DeltaTable

from flows.output import TABLES, Output, conform, empty_table
from flows.storage.location import storage_options
from flows.storage.runs_table import RUNS

VIEWS = Path(__file__).resolve().parents[1] / "sql" / "views.sql"


def connect(output: Output, as_of: str | None = None, con: Any = None) -> Any:
    """A DuckDB connection (``con``, or a new one) with OUT's tables and views."""
    import duckdb

    con = con or duckdb.connect()
    versions = output.versions(as_of)
    for table in (*TABLES, RUNS):
        where = output.location.child(table)
        version = versions.get(table)
        if table == RUNS:
            version = None if output.runs().is_empty() else _runs_version(output)
        if version is None:
            relation = empty_table(table).to_arrow()
        else:
            delta = DeltaTable(
                where.uri, version=version, storage_options=storage_options(where) or None
            )
            relation = delta.to_pyarrow_dataset()
            model = set(empty_table(table).columns)
            if not model <= set(relation.schema.names):  # written before a column existed
                frame = pl.scan_pyarrow_dataset(relation)
                relation = conform(table, frame).collect().to_arrow()
        con.register(table, relation)
    con.execute(VIEWS.read_text())
    return con


def _runs_version(output: Output) -> int | None:
    from flows.storage import delta

    return delta.table_version(output.location, RUNS)
