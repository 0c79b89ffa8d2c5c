"""The pandera model of the canonical row frame (``transforms.ingest.normalise``).

Only names and dtypes are checked on the lazy frame (that costs nothing); what the data
must satisfy is the contract's rejection rules, which ``transforms.rules`` applies per
episode with every reason, rather than failing a whole file on the first bad row.
"""

from __future__ import annotations

from typing import Annotated

import pandera.polars as pa
import polars as pl


class DumpRows(pa.DataFrameModel):
    run_id: str = pa.Field(nullable=True)
    episode_id: str = pa.Field(nullable=True)
    model: str = pa.Field(nullable=True)
    task: str = pa.Field(nullable=True)
    category: str = pa.Field(nullable=True)
    turn: pl.Int64 = pa.Field(nullable=True)
    role: str = pa.Field(nullable=True)
    kind: str = pa.Field(nullable=True)
    item_id: str = pa.Field(nullable=True)
    content: str = pa.Field(nullable=True)
    expected: str = pa.Field(nullable=True)
    match: str = pa.Field(nullable=True)
    value: float = pa.Field(nullable=True)
    solved: bool = pa.Field(nullable=True)
    round: pl.Int64 = pa.Field(nullable=True)
    params: str = pa.Field(nullable=True)
    status: str = pa.Field(nullable=True)
    instance_id: str = pa.Field(nullable=True)
    reported_score: float = pa.Field(nullable=True)
    verdict: bool = pa.Field(nullable=True)
    input_tokens: pl.Int64 = pa.Field(nullable=True)  # contract 1.3
    output_tokens: pl.Int64 = pa.Field(nullable=True)
    cost_usd: float = pa.Field(nullable=True)
    latency_ms: float = pa.Field(nullable=True)
    single_run_started: Annotated[pl.Datetime, "us", "UTC"] = pa.Field(nullable=True)  # 1.4
    source_names: str = pa.Field(nullable=True)  # 1.5
    ts: Annotated[pl.Datetime, "us", "UTC"] = pa.Field(nullable=True)  # an episode's wall time
    file: str
    dump_date: str = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = True
