"""The runs other tables imported into a night hold already, as ``cogscore import-scores``
reads them: a table's row whose run another table's file in the night holds (the same model
and task, started at the same instant, with the same score) is **unchanged**: counted, not
imported again and not a row a reader must look at. A table exported by ``cogscore export``
and imported again is mostly such rows (every cell the published table gave it); only what
differs is imported or reported. (A row of a run the night holds as a harness run file is
imported: the table's record of the run, which stands beside it, contract 1.5.)"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import polars as pl

from schemas.contract import REPORTED_SCORE, SINGLE_RUN_STARTED, Col, Kind

# What a held run is read as: its cell, start and score.
_START = (Col.EPISODE_ID, Col.MODEL, Col.TASK, SINGLE_RUN_STARTED)


def held_runs(files: Collection[Path]) -> pl.DataFrame:
    """Every single run (contract 1.4) ``files`` (other tables' in a night) hold: its model,
    task, start (``single_run_started``) and reported score (``reported_score``)."""
    frames = []
    for path in sorted(files):
        schema = pl.read_parquet_schema(path)
        if not {*_START, REPORTED_SCORE, Col.KIND} <= set(schema):
            continue  # no single run there (contract 1.3 and earlier, or no reported score)
        rows = pl.scan_parquet(path).select(*_START, Col.KIND, REPORTED_SCORE)
        starts = rows.filter(pl.col(Col.KIND) == Kind.EPISODE_START).select(*_START)
        ends = (
            rows.filter(
                (pl.col(Col.KIND) == Kind.EPISODE_END) & pl.col(REPORTED_SCORE).is_not_null()
            )
            .group_by(Col.EPISODE_ID)
            .agg(pl.col(REPORTED_SCORE).last())
        )
        frames.append(starts.join(ends, on=Col.EPISODE_ID).drop(Col.EPISODE_ID).collect())
    if not frames:
        return pl.DataFrame(
            schema={
                Col.MODEL: pl.String,
                Col.TASK: pl.String,
                SINGLE_RUN_STARTED: pl.Datetime("us", "UTC"),
                REPORTED_SCORE: pl.Float64,
            }
        )
    return pl.concat(frames, how="vertical_relaxed").with_columns(
        pl.col(SINGLE_RUN_STARTED).cast(pl.Datetime("us", "UTC"))
    )


def without_held(scores: pl.DataFrame, held: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``scores`` (a night's rows of a table: model, task, ``ts``, ``reported_score``) less
    those whose run ``held`` has already with the same score; how many those were."""
    same = held.select(
        Col.MODEL,
        Col.TASK,
        pl.col(SINGLE_RUN_STARTED).alias(Col.TS),
        REPORTED_SCORE,
    ).unique()
    left = scores.join(same, on=[Col.MODEL, Col.TASK, Col.TS, REPORTED_SCORE], how="anti")
    return left, scores.height - left.height
