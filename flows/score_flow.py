"""``cogscore score`` as a Prefect flow: plan, one task per file, write."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task

from flows.io import DumpFile
from flows.score import (
    FileReport,
    ScoreResult,
    assemble,
    plan_dump,
    score_file,
    write_outputs,
)
from schemas.contract import Category
from schemas.formulas import resolve


@task(retries=2, retry_delay_seconds=1, task_run_name="score {dump_file.relative}")
def score_file_task(
    dump_file: DumpFile, duplicates: pl.DataFrame, formulas: dict[Category, str]
) -> tuple[pl.DataFrame, pl.DataFrame, FileReport]:
    return score_file(dump_file, duplicates, formulas)


@flow(name="cogscore-score", validate_parameters=False)
def score_flow(input_root: Path, out: Path, formulas: list[str] | None = None) -> ScoreResult:
    """Score every episode of the dump at ``input_root`` into the tables under ``out``."""
    from datetime import UTC, datetime

    logger = get_run_logger()
    started = datetime.now(UTC)
    chosen = resolve(formulas or [])
    plan = plan_dump(input_root)
    logger.info("%d files to score under %s", len(plan.files), input_root)
    parts = []
    for done, dump_file in enumerate(plan.files, 1):
        parts.append(score_file_task(dump_file, plan.duplicates, chosen))
        logger.info("scored %d/%d: %s", done, len(plan.files), dump_file.relative)
    result = assemble(parts, chosen)
    result.timings["score_s"] = round((datetime.now(UTC) - started).total_seconds(), 3)
    write_outputs(result, input_root, out, started)
    logger.info("wrote %s", out)
    return result
