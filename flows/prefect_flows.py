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
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any, cast
from uuid import UUID

import prefect.settings
from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows import runs
from flows.io import DumpFile, content_digest, modified_ns
from flows.score import (
    SCORER_CODE,
    SCORER_VERSION,
    FilePart,
    StageTarget,
    score_file,
    stage,
)
from flows.storage.location import ENV_OPTIONS
from flows.summary import enforce_strict, outcome_markdown
from schemas.contract import Category


def file_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """A file's result is reused while its content (sha256), the formula versions and the
    scorer (its version and its code) are the same, and while it sits at the same place in
    the dump (its relative path and partitions are columns of the result). It depends on no
    other file: ids repeated across files are rejected when the parts are assembled.

    Without a content digest there is no key: a key of the path alone once gave one dump's
    scores to another dump of the same layout."""
    dump_file: DumpFile = parameters["dump_file"]
    digest = parameters.get("digest")
    if not digest:
        raise ValueError(f"no content digest for {dump_file.relative}: refusing to cache it")
    formulas = json.dumps({str(k): v for k, v in sorted(parameters["formulas"].items())})
    place = json.dumps([dump_file.relative, sorted(dump_file.partitions.items())])
    parts = [digest, place, formulas, SCORER_VERSION, SCORER_CODE]
    return "cogscore-file-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


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


@task(
    retries=2,
    retry_delay_seconds=2,
    task_run_name="stage {part.report.file}",
    # Never cached nor persisted: staged files belong to one run (a result reused by another
    # would name files that run never wrote), and hashing a file's scores would cost time.
    cache_policy=NO_CACHE,
    persist_result=False,
)
def stage_task(part: FilePart, target: StageTarget) -> FilePart:
    """Write a scored file's episode rows into OUT (uncommitted) where it was scored, and
    pass on the slim columns."""
    return stage(part, target)


def prefect_mapper(
    files: Sequence[DumpFile],
    formulas: dict[Category, str],
    digests: Mapping[str, str],
    target: StageTarget | None = None,
) -> list[FilePart]:
    """The file tasks, submitted to the flow's task runner (local threads, or Dask): each
    file scored (cached by content), then its rows staged (with a ``target``)."""
    logger = get_run_logger()
    logger.info("scoring %d files", len(files))
    # Every task gets its file's content digest: the cache key is made of it.
    known = [digests.get(f.relative) or content_digest(f) for f in files]
    futures = score_file_task.map(files, unmapped(formulas), known)
    if target is not None:
        futures = stage_task.map(futures, unmapped(target))
    # Prefect's own progress display: a progress artifact of the flow run, per night.
    night = files[0].partitions.get("dump_date", "undated") if files else "undated"
    artifact = cast(UUID, create_progress_artifact(0.0, description=f"night {night}: scored"))
    parts = []
    for done, (dump_file, future) in enumerate(zip(files, futures, strict=True), 1):
        part = future.result()
        # A cached result may come from an identical file written earlier: the manifest
        # must record this file's own modification time (nightly trusts it next time).
        part.report.mtime_ns = modified_ns(dump_file)
        parts.append(part)
        logger.info("scored %d/%d: %s", done, len(files), dump_file.relative)
        update_progress_artifact(artifact, 100.0 * done / len(files))
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


def _flag(value: bool | str | None, variable: str) -> bool:
    """A deployment parameter, else its environment variable (``COGSCORE_STRICT=1``)."""
    if value is None:
        value = os.environ.get(variable, "")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


STRICT_ENV = "COGSCORE_STRICT"
MARKER_ENV = "COGSCORE_REQUIRE_MARKER"


FAIL_ON_REGRESSION_ENV = "COGSCORE_FAIL_ON_REGRESSION"


def _regression(
    baseline: str | None,
    baseline_nights: int | None,
    regression_margin: float | None,
    harness_error_tolerance: float | None,
) -> runs.RegressionOptions:
    """A flow's regression options, else their environment variables (as the command
    line's), else the defaults."""

    def given(value: Any, variable: str, kind: Callable[[str], Any]) -> Any:
        text = os.environ.get(variable)
        return value if value is not None else kind(text) if text else None

    return runs.regression_options(
        given(baseline, "COGSCORE_BASELINE", str),
        given(baseline_nights, "COGSCORE_BASELINE_NIGHTS", int),
        given(regression_margin, "COGSCORE_REGRESSION_MARGIN", float),
        given(harness_error_tolerance, "COGSCORE_HARNESS_ERROR_TOLERANCE", float),
    )


def _context(
    kind: str, storage_options: list[str] | None, regression: runs.RegressionOptions
) -> runs.RunContext:
    """The run's record names the flow run: one id in Prefect's UI and in OUT/runs.
    ``storage_options`` (KEY=VALUE) become this process's, as ``--storage-option`` does."""
    from prefect.runtime import flow_run

    if storage_options:
        os.environ[ENV_OPTIONS] = ",".join(storage_options)
    return runs.RunContext(
        run_id=str(flow_run.id or runs.new_run_id()),
        command=f"prefect flow cogscore-{kind} ({flow_run.name})",
        engine="prefect",
        regression=regression,
    )


def _files_at_once() -> TaskRunner[PrefectFuture[Any]]:
    """The flows' task runner: as many files at once as the local engine scores
    (``runs.FILES_AT_ONCE``), unless ``PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS`` says
    otherwise. Prefect's default runs every submitted task at once: every file of a night
    in memory together (a night of 1.5 M episodes peaked at 19 GiB against 0.8 locally)."""
    configured = prefect.settings.get_current_settings().tasks.runner.thread_pool_max_workers
    runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(configured or runs.FILES_AT_ONCE)
    return cast(TaskRunner[PrefectFuture[Any]], runner)  # a runner of these futures


@flow(name="cogscore-score", validate_parameters=False, task_runner=_files_at_once())
def score_flow(
    input_root: Path | str,
    out: Path | str,
    formulas: list[str] | None = None,
    strict: bool | None = None,
    require_marker: bool | None = None,
    storage_options: list[str] | None = None,
    baseline: str | None = None,
    baseline_nights: int | None = None,
    regression_margin: float | None = None,
    harness_error_tolerance: float | None = None,
    fail_on_regression: bool | None = None,
) -> runs.Outcome:
    """Score every file of the dump at ``input_root`` into the tables under ``out``.
    ``strict``: the flow ends Failed when any input was not scored; ``fail_on_regression``
    (default COGSCORE_FAIL_ON_REGRESSION): when a regression alert fires."""
    regression = _regression(baseline, baseline_nights, regression_margin, harness_error_tolerance)
    outcome = runs.score(
        input_root,
        out,
        formulas or [],
        prefect_mapper,
        _flag(require_marker, MARKER_ENV),
        _context("score", storage_options, regression),
    )
    return enforce_strict(
        _publish(outcome),
        _flag(strict, STRICT_ENV),
        _flag(fail_on_regression, FAIL_ON_REGRESSION_ENV),
    )


@flow(name="cogscore-nightly", validate_parameters=False, task_runner=_files_at_once())
def nightly_flow(
    dump_root: Path | str,
    out: Path | str,
    formulas: list[str] | None = None,
    verify: bool = False,
    strict: bool | None = None,
    require_marker: bool | None = None,
    storage_options: list[str] | None = None,
    baseline: str | None = None,
    baseline_nights: int | None = None,
    regression_margin: float | None = None,
    harness_error_tolerance: float | None = None,
    fail_on_regression: bool | None = None,
) -> runs.Outcome:
    """Score the dump_date partitions that are new or changed since the last run (the
    scheduled deployment of ``prefect.yaml`` passes the paths as strings). ``strict``: the
    flow ends Failed when any input was not scored; ``require_marker``: a night is scored
    only once its folder holds ``_SUCCESS`` (else it is reported as waiting). Both default
    to the environment variables COGSCORE_STRICT and COGSCORE_REQUIRE_MARKER.
    ``fail_on_regression`` (default COGSCORE_FAIL_ON_REGRESSION): the flow ends Failed when
    a regression alert fires on a night it scored; the regression options default to
    COGSCORE_BASELINE, COGSCORE_BASELINE_NIGHTS, COGSCORE_REGRESSION_MARGIN and
    COGSCORE_HARNESS_ERROR_TOLERANCE."""
    regression = _regression(baseline, baseline_nights, regression_margin, harness_error_tolerance)
    outcome = runs.nightly(
        dump_root,
        out,
        formulas or [],
        prefect_mapper,
        verify,
        _flag(require_marker, MARKER_ENV),
        _context("nightly", storage_options, regression),
    )
    return enforce_strict(
        _publish(outcome),
        _flag(strict, STRICT_ENV),
        _flag(fail_on_regression, FAIL_ON_REGRESSION_ENV),
    )


@flow(name="cogscore-rescore", validate_parameters=False, task_runner=_files_at_once())
def rescore_flow(
    dump_root: Path | str,
    out: Path | str,
    formulas: list[str],
    since: date | None = None,
    until: date | None = None,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    strict: bool | None = None,
    require_marker: bool | None = None,
    storage_options: list[str] | None = None,
    baseline: str | None = None,
    baseline_nights: int | None = None,
    regression_margin: float | None = None,
    harness_error_tolerance: float | None = None,
) -> runs.Outcome:
    """Rescore a range of nights with chosen formula versions; write what it moved
    (``dry_run``: compute and show it, change nothing)."""
    regression = _regression(baseline, baseline_nights, regression_margin, harness_error_tolerance)
    outcome = runs.rescore(
        dump_root,
        out,
        formulas,
        since,
        until,
        prefect_mapper,
        dry_run,
        diff_out,
        _flag(require_marker, MARKER_ENV),
        _context("rescore", storage_options, regression),
    )
    return enforce_strict(_publish(outcome), _flag(strict, STRICT_ENV))
