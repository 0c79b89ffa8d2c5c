"""The runs of ``flows.runs`` as Prefect flows: one task per file (retried, cached by the
file's content digest, the formula versions and the scorer version), logs through Prefect's
logger, and a markdown artifact that summarises each run.

``--dask-address`` runs the file tasks on an existing Dask cluster through prefect-dask's
``DaskTaskRunner``; the workers need ``PREFECT_API_URL`` pointing at the same Prefect server
(without it each worker would start a temporary server of its own).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact
from prefect.context import TaskRunContext

from flows import runs
from flows.io import DumpFile
from flows.score import SCORER_CODE, SCORER_VERSION, FilePart, score_file
from flows.summary import outcome_markdown
from schemas.contract import Category


def file_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """A file's result is reused while its path, its content, the formula versions and the
    scorer (its version and its code) are the same. It depends on no other file: ids
    repeated across files are rejected when the parts are assembled."""
    dump_file: DumpFile = parameters["dump_file"]
    formulas = json.dumps({str(k): v for k, v in sorted(parameters["formulas"].items())})
    parts = [dump_file.relative, parameters["digest"] or "", formulas, SCORER_VERSION, SCORER_CODE]
    return "cogscore-file-" + hashlib.sha256("|".join(parts).encode()).hexdigest()


@task(
    retries=2,
    retry_delay_seconds=2,
    cache_key_fn=file_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    task_run_name="score {dump_file.relative}",
)
def score_file_task(
    dump_file: DumpFile, formulas: dict[Category, str], digest: str | None
) -> FilePart:
    return score_file(dump_file, formulas, digest)


def prefect_mapper(
    files: Sequence[DumpFile], formulas: dict[Category, str], digests: Mapping[str, str]
) -> list[FilePart]:
    """The file tasks, submitted to the flow's task runner (local threads, or Dask)."""
    logger = get_run_logger()
    logger.info("scoring %d files", len(files))
    futures = score_file_task.map(
        files, unmapped(formulas), [digests.get(f.relative) for f in files]
    )
    parts = []
    for done, (dump_file, future) in enumerate(zip(files, futures, strict=True), 1):
        part = future.result()
        # A cached result may come from an identical file written earlier: the manifest
        # must record this file's own modification time (nightly trusts it next time).
        part.report.mtime_ns = dump_file.path.stat().st_mtime_ns
        parts.append(part)
        logger.info("scored %d/%d: %s", done, len(files), dump_file.relative)
    return parts


def _publish(outcome: runs.Outcome) -> runs.Outcome:
    get_run_logger().info(
        "%s run: scored nights %s, unchanged %s, %.1f s",
        outcome.kind,
        outcome.nights_scored or "-",
        outcome.nights_unchanged or "-",
        outcome.seconds,
    )
    create_markdown_artifact(
        outcome_markdown(outcome),
        key=f"cogscore-{outcome.kind}",
        description=f"cogscore {outcome.kind} run {outcome.run_id}",
    )
    return outcome


@flow(name="cogscore-score", validate_parameters=False)
def score_flow(input_root: Path, out: Path, formulas: list[str] | None = None) -> runs.Outcome:
    """Score every file of the dump at ``input_root`` into the tables under ``out``."""
    return _publish(runs.score(Path(input_root), Path(out), formulas or [], prefect_mapper))


@flow(name="cogscore-nightly", validate_parameters=False)
def nightly_flow(
    dump_root: Path, out: Path, formulas: list[str] | None = None, verify: bool = False
) -> runs.Outcome:
    """Score the dump_date partitions that are new or changed since the last run (the
    scheduled deployment of ``prefect.yaml`` passes the paths as strings)."""
    return _publish(
        runs.nightly(Path(dump_root), Path(out), formulas or [], prefect_mapper, verify)
    )


@flow(name="cogscore-rescore", validate_parameters=False)
def rescore_flow(
    dump_root: Path,
    out: Path,
    formulas: list[str],
    since: date | None = None,
    until: date | None = None,
) -> runs.Outcome:
    """Rescore a range of nights with chosen formula versions; write what it moved."""
    return _publish(
        runs.rescore(Path(dump_root), Path(out), formulas, since, until, prefect_mapper)
    )
