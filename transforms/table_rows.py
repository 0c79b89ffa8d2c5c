"""A table of scores (one row per model, task and night: ``flows.importers.scores``) as
contract rows: per row one episode of two rows, an ``episode_start`` and an ``episode_end``
whose ``reported_score`` is the table's score (pure: no I/O)."""

from __future__ import annotations

import polars as pl

from schemas.contract import (
    DTYPES,
    DUMP_DATE,
    INSTANCE_ID,
    REPORTED_SCORE,
    SINGLE_RUN_STARTED,
    SOURCE_NAMES,
    Col,
    Kind,
    Role,
    Status,
)


def contract_rows(scores: pl.DataFrame) -> pl.DataFrame:
    """Two contract rows per score (``importable_scores``): ``episode_start`` (turn 0, ``params``
    ``{}``, ``instance_id``, ``single_run_started``: the row's time, contract 1.4;
    ``source_names``: what the table wrote, contract 1.5, where given) and
    ``episode_end`` (turn 1, ``status`` completed, ``reported_score``). The episode id is the
    night, model and task (unique in a dump), and the row's time where the table has several
    rows of them (runs that replace one another)."""
    cell = pl.concat_str(DUMP_DATE, Col.MODEL, Col.TASK, separator="/")
    several = pl.len().over(DUMP_DATE, Col.MODEL, Col.TASK) > 1
    when = pl.col(Col.TS).dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
    episode_id = pl.when(several).then(pl.concat_str(cell, pl.lit("@"), when)).otherwise(cell)
    start = scores.select(
        episode_id.alias(Col.EPISODE_ID),
        pl.lit(0).alias(Col.TURN),
        pl.lit(Kind.EPISODE_START.value).alias(Col.KIND),
        pl.lit("{}").alias(Col.PARAMS),
        pl.lit(None, pl.String).alias(Col.STATUS),
        pl.lit(None, pl.Float64).alias(REPORTED_SCORE),
        INSTANCE_ID,
        pl.col(Col.TS).alias(SINGLE_RUN_STARTED),
        _source_names(scores),
        *_common(),
    )
    end = scores.select(
        episode_id.alias(Col.EPISODE_ID),
        pl.lit(1).alias(Col.TURN),
        pl.lit(Kind.EPISODE_END.value).alias(Col.KIND),
        pl.lit(None, pl.String).alias(Col.PARAMS),
        pl.lit(Status.COMPLETED.value).alias(Col.STATUS),
        REPORTED_SCORE,
        pl.lit(None, pl.String).alias(INSTANCE_ID),
        pl.lit(None, pl.Datetime("us", "UTC")).alias(SINGLE_RUN_STARTED),
        pl.lit(None, pl.String).alias(SOURCE_NAMES),
        *_common(),
    )
    rows = pl.concat([start, end]).sort(DUMP_DATE, Col.EPISODE_ID, Col.TURN)
    columns = {str(c): t for c, t in DTYPES.items()}
    return rows.select(
        DUMP_DATE,
        *(
            (pl.col(c) if c in rows.columns else pl.lit(None)).cast(t).alias(c)
            for c, t in columns.items()
        ),
        pl.col(INSTANCE_ID).cast(pl.String),
        pl.col(REPORTED_SCORE).cast(pl.Float64),
        pl.col(SINGLE_RUN_STARTED).cast(pl.Datetime("us", "UTC")),
        pl.col(SOURCE_NAMES).cast(pl.String),
    )


def _source_names(scores: pl.DataFrame) -> pl.Expr:
    """The rows' ``source_names`` where they carry some (contract 1.5), else null."""
    given = pl.col(SOURCE_NAMES) if SOURCE_NAMES in scores.columns else pl.lit(None, pl.String)
    return given.alias(SOURCE_NAMES)


def _common() -> list[pl.Expr]:
    return [
        pl.col(Col.RUN_ID),
        pl.col(Col.MODEL),
        pl.col(Col.TASK),
        pl.col(Col.CATEGORY),
        pl.lit(Role.ENVIRONMENT.value).alias(Col.ROLE),
        pl.col(Col.TS),
        pl.col(DUMP_DATE),
    ]
