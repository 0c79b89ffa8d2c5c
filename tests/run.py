"""Running the vectorised pipeline on row dicts, as the tests need it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from schemas.contract import DTYPES, DUMP_DATE, FILE
from schemas.formulas import resolve
from transforms.ingest import normalise, partition_values
from transforms.pipeline import duplicate_episodes, score_rows

ROW_SCHEMA = {**{str(c): t for c, t in DTYPES.items()}, FILE: pl.String()}


def run_pipeline(
    rows: Sequence[Mapping[str, Any]], formulas: Mapping[str, str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(scores, rejects) of rows grouped by their "file", as ``flows.score`` would give."""
    chosen = resolve(formulas or {})
    frame = pl.DataFrame(
        [{c: r.get(c) for c in ROW_SCHEMA} for r in rows], schema=ROW_SCHEMA, orient="row"
    )
    lazy = []
    for (file,), part in frame.group_by(FILE, maintain_order=True):
        schema = {c: t for c, t in ROW_SCHEMA.items() if c != FILE}
        lazy.append(
            normalise(
                part.drop(FILE).lazy(),
                schema,
                file=str(file),
                partitions=partition_values(str(file)),
            )
        )
    rows_lf = pl.concat(lazy) if lazy else None
    if rows_lf is None:
        raise ValueError("no rows")
    duplicates = duplicate_episodes(rows_lf.select(FILE, "episode_id"))
    scores, rejects = pl.collect_all(list(score_rows(rows_lf, chosen, duplicates)))
    return scores, rejects


def rules_by_key(rejects: pl.DataFrame) -> dict[tuple[str | None, str], set[str]]:
    return {
        (r["episode_id"], r[FILE]): set(r["rules"])
        for r in rejects.select("episode_id", FILE, "rules").to_dicts()
    }


__all__ = ["DUMP_DATE", "rules_by_key", "run_pipeline"]
