"""Running the vectorised pipeline on row dicts, as the tests need it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from schemas.contract import DTYPES, FILE, OPTIONAL_DTYPES
from transforms.duplicates import duplicate_episodes, episode_ids, reject_duplicates
from transforms.ingest import normalise, partition_values
from transforms.pipeline import rejects_of, score_rows
from transforms.registry import resolve

Row = Mapping[str, Any]


def rows_frame(rows: Sequence[Row]) -> pl.LazyFrame:
    """The canonical frame of the rows, one ``normalise`` per file as ``flows.score`` does."""
    columns = {**{str(c): t for c, t in DTYPES.items()}, **OPTIONAL_DTYPES}
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


def chunked(frame: pl.DataFrame, cuts: Sequence[int], whole: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` with each column in chunks ending at ``cuts`` (row positions), as a file's
    columns come from the reader, but the ``whole`` columns in one chunk (as a column made
    from a literal is)."""
    ends = sorted({c for c in cuts if 0 < c < frame.height} | {frame.height})
    starts = [0, *ends[:-1]]

    def cut(column: pl.Series) -> pl.Series:
        column = column.rechunk()
        if column.name in whole:
            return column
        pieces = [column.slice(s, e - s) for s, e in zip(starts, ends, strict=True)]
        return pl.concat(pieces, rechunk=False)

    return pl.DataFrame([cut(c) for c in frame.get_columns()])


def run_pipeline(
    rows: Sequence[Row], formulas: Mapping[str, str] | None = None, cuts: Sequence[int] = ()
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(scores, rejects) of rows grouped by their "file", every file at once; ``cuts``: the
    rows come in chunks ending there, as a file's come from the Parquet reader."""
    frame = rows_frame(rows)
    if cuts:
        # From a step's output, not a frame's scan: polars' scan of an in-memory frame
        # hands its rows on in one chunk.
        parts = chunked(frame.collect(), cuts)
        frame = pl.LazyFrame(schema=parts.schema).map_batches(lambda _: parts, schema=parts.schema)
    # Collected in steps, as flows.score collects them (the scores and unscored rows, then
    # the ids repeated across files): one plan of every step carried the scoring plan into
    # each of its readers, and polars' search for the subplans they share took 0.8 s of an
    # example's 0.85 (a dump of 500 rows).
    plans = score_rows(frame, resolve(formulas or {}))
    scored, unscored = pl.collect_all(list(plans), engine="in-memory")
    scores, rejects = scored.lazy(), rejects_of(unscored.lazy()).collect().lazy()
    duplicates = duplicate_episodes(episode_ids(scores, rejects)).collect().lazy()
    marked = reject_duplicates(scores, rejects, duplicates)
    kept, rejected = pl.collect_all(list(marked), engine="in-memory")
    return kept, rejected


def rules_by_key(rejects: pl.DataFrame) -> dict[tuple[str | None, str], set[str]]:
    return {
        (r["episode_id"], r[FILE]): set(r["rules"])
        for r in rejects.select("episode_id", FILE, "rules").to_dicts()
    }
