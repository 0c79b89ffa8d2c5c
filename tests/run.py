"""Running the vectorised pipeline on row dicts, as the tests need it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from schemas.contract import DTYPES, FILE, OPTIONAL_DTYPES, Col
from schemas.formulas import resolve
from transforms.duplicates import duplicate_episodes, episode_ids, reject_duplicates
from transforms.ingest import normalise, partition_values
from transforms.pipeline import rejects_of, score_rows

Row = Mapping[str, Any]


def rows_frame(rows: Sequence[Row]) -> pl.LazyFrame:
    """The canonical frame of the rows, one ``normalise`` per file as ``flows.score`` does."""
    columns = {**{str(c): t for c, t in DTYPES.items() if c != Col.TS}, **OPTIONAL_DTYPES}
    parts = []
    for file in sorted({r[FILE] for r in rows}):
        frame = pl.DataFrame(
            [{c: r.get(c) for c in columns} for r in rows if r[FILE] == file],
            schema=columns,
            orient="row",
        )
        parts.append(
            normalise(frame.lazy(), frame.schema, file=file, partitions=partition_values(file))
        )
    return pl.concat(parts)


def run_pipeline(
    rows: Sequence[Row], formulas: Mapping[str, str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(scores, rejects) of rows grouped by their "file", every file at once."""
    scores, unscored = score_rows(rows_frame(rows), resolve(formulas or {}))
    rejects = rejects_of(unscored)
    duplicates = duplicate_episodes(episode_ids(scores, rejects))
    marked = reject_duplicates(scores, rejects, duplicates)
    kept, rejected = pl.collect_all(list(marked), engine="in-memory")  # as flows.score runs it
    return kept, rejected


def rules_by_key(rejects: pl.DataFrame) -> dict[tuple[str | None, str], set[str]]:
    return {
        (r["episode_id"], r[FILE]): set(r["rules"])
        for r in rejects.select("episode_id", FILE, "rules").to_dicts()
    }
