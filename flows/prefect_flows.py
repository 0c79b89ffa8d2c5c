"""The runs of ``flows.runs`` as Prefect flows: one task per file (or per batch of small
files, ``flows.score.batches``) that scores and stages it (retried; its scoring cached by
its files' content digests, the formula versions and the scorer, for
``COGSCORE_CACHE_DAYS``), logs through Prefect's logger, and a markdown artifact that
summarises each run.

``--dask-address`` runs the file tasks on an existing Dask cluster through prefect-dask's
``DaskTaskRunner``; the workers need ``PREFECT_API_URL`` pointing at the same Prefect server
(without it each worker would start a temporary server of its own).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast
from uuid import UUID

import prefect.settings
from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows import runs
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.importers.kaggle_nightly import Harvest
from flows.importers.names import NAMES_ENV
from flows.mappers import FILES_AT_ONCE, check_workers_reach
from flows.options import RUN_OPTIONS, run_options
from flows.outcome import Outcome
from flows.present.report import write_report
from flows.present.summary import outcome_markdown
from flows.records import RunContext, ended, new_run_id
from flows.score import (
    SCORER_CODE,
    FilePart,
    StageTarget,
    batches,
    score_batch,
    stage,
)
from flows.store.dumps import DumpFile, content_digest, modified_ns
from flows.store.location import ENV_OPTIONS
from schemas.version import COGSCORE_VERSION


def batch_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """A batch's result (``flows.score.batches``: a file, or small files scored together) is
    reused while each of its files' content (sha256) and place in the dump (its relative
    path and partitions are columns of the result), the formula versions and the scorer
    (its version and its code) are the same. It depends on no other file: ids repeated
    across files are rejected when the parts are assembled. A small file that changes
    misses the cache of its batch (the files scored with it are scored again); one added
    or removed among small files may move the batches after it.

    Without a content digest for every file there is no key: a key of the path alone once
    gave one dump's scores to another dump of the same layout."""
    batch: Sequence[DumpFile] = parameters["batch"]
    digests: Mapping[str, str] = parameters.get("digests") or {}
    for dump_file in batch:
        if not digests.get(dump_file.relative):
            raise ValueError(f"no content digest for {dump_file.relative}: refusing to cache it")
    formulas = json.dumps({str(k): v for k, v in sorted(parameters["formulas"].items())})
    files = [[digests[f.relative], f.relative, sorted(f.partitions.items())] for f in batch]
    parts = [json.dumps(files), formulas, COGSCORE_VERSION, SCORER_CODE]
    return CACHE_PREFIX + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


F = TypeVar("F", bound=Callable[..., Any])
CACHE_DAYS_ENV = "COGSCORE_CACHE_DAYS"
CACHE_DAYS = 2.0


def cache_days() -> float:
    """How long a file's cached result is kept (``COGSCORE_CACHE_DAYS``, default 2; 0: no
    cache, nothing persisted). Prefect never deletes a result it persisted, and a file's
    result holds every episode's row (about 600 bytes an episode, twice the dump's size):
    kept for 30 days, as before, a month of nights stayed on the worker's disk. The cache
    pays off within days (a night delivered again with one file changed, a run retried
    after a crash), so results older than this are deleted (``prune_cache``)."""
    text = os.environ.get(CACHE_DAYS_ENV, "").strip()
    try:
        days = float(text) if text else CACHE_DAYS
    except ValueError:
        days = -1.0
    if not days >= 0:  # also NaN
        raise ValueError(f"{CACHE_DAYS_ENV} must be a number of days >= 0, not {text!r}")
    return days


@task(
    cache_key_fn=batch_cache_key,
    persist_result=True,
    # Prefect also keeps each persisted result in memory for the flow run, by default: every
    # file's rows of a night, held to the end (1.3 GiB at 1.5 M episodes against 0.87).
    cache_result_in_memory=False,
    # Named for what it may do: a first run computes it ("Completed"), a later one may
    # find it in the cache ("Cached").
    task_run_name="score {name} (cacheable)",
)
def score_batch_task(
    batch: list[DumpFile], formulas: dict[str, str], digests: dict[str, str], name: str
) -> FilePart:
    """A batch scored (``name`` says which files), its result cached by content
    (``batch_cache_key``) for ``cache_days``; run inside ``file_task``, which retries."""
    return score_batch(batch, formulas, digests)


@task(
    retries=2,
    retry_delay_seconds=2,
    task_run_name="score {name}",
    # Never cached nor persisted itself: staged files belong to one run (a result reused by
    # another would name files that run never wrote); its scoring is (``score_batch_task``).
    cache_policy=NO_CACHE,
    persist_result=False,
)
def file_task(
    batch: list[DumpFile],
    formulas: dict[str, str],
    digests: dict[str, str],
    target: StageTarget | None,
    name: str,
    in_files: bool = False,
) -> FilePart:
    """One file's (or one batch of small files') whole job where it runs: scored (from the
    cache when its content was scored before), then, with a ``target``, its episode rows
    staged into OUT, so that only the slim columns come back (``in_files``, on a Dask
    worker: none of a scored episode, as ``flows.mappers.dask_mapper``'s). One task, not a
    scoring task and a staging task: mapped apart, every file was scored before the first
    was staged, and each scored file's rows waited in memory for their turn."""
    days = cache_days()
    if days:
        prune_cache(timedelta(days=days))
        cached = score_batch_task.with_options(cache_expiration=timedelta(days=days))
        part = cached(batch, formulas, digests, name)
        # A cached result may come from identical files written earlier: the manifest must
        # record these files' own modification times (nightly trusts them next time).
        for report, dump_file in zip(part.reports, batch, strict=True):
            report.mtime_ns = modified_ns(dump_file)
    else:
        part = score_batch(batch, formulas, digests)
    return part if target is None else stage(part, target, in_files=in_files)


def batch_name(batch: Sequence[DumpFile]) -> str:
    """A batch as its task is named: its file, or how many files from which."""
    first = batch[0].relative
    return first if len(batch) == 1 else f"{len(batch)} files from {first}"


CACHE_PREFIX = "cogscore-file-"
_PRUNE_EVERY = timedelta(hours=1)
_pruned: dict[Path, float] = {}  # result folder -> when this process last pruned it
_pruning = threading.Lock()


def prune_cache(keep: timedelta, now: float | None = None) -> list[Path]:
    """Delete this project's cached file results (``cogscore-file-*``) older than ``keep``
    from the local result storage, at most once an hour per process (each Dask worker
    prunes its own disk). Nothing else there is touched; results in a storage block
    (``PREFECT_DEFAULT_RESULT_STORAGE_BLOCK``) are left to that store's own lifecycle."""
    results = prefect.settings.get_current_settings().results
    if results.default_storage_block is not None:
        return []
    folder = Path(results.local_storage_path).expanduser()
    now = time.time() if now is None else now
    with _pruning:
        if now - _pruned.get(folder, -math.inf) < _PRUNE_EVERY.total_seconds():
            return []
        _pruned[folder] = now
    removed = []
    for path in folder.glob(CACHE_PREFIX + "*") if folder.is_dir() else ():
        try:
            if path.stat().st_mtime < now - keep.total_seconds():
                path.unlink()
                removed.append(path)
        except FileNotFoundError:  # pruned by another process meanwhile
            continue
    return removed


def prefect_mapper(
    files: Sequence[DumpFile],
    formulas: dict[str, str],
    digests: Mapping[str, str],
    target: StageTarget | None = None,
) -> list[FilePart]:
    """The file tasks, submitted to the flow's task runner (local threads, or Dask): each
    file (or batch of small files, ``flows.score.batches``) scored (cached by content), then
    its rows staged (with a ``target``). On Dask (a ``DaskTaskRunner``) a task hands back no
    row of the episodes it scored: the night is read back from the files its workers staged
    in ``OUT`` (``flows.coded``), which each worker must reach (``check_workers_reach``)."""
    logger = get_run_logger()
    logger.info("scoring %d files", len(files))
    client = _dask_client()
    if client is not None and target is not None:
        check_workers_reach(client, target.location)
    # Every task gets its files' content digests: the cache key is made of them.
    known = {f.relative: digests.get(f.relative) or content_digest(f) for f in files}
    groups = batches(files)
    futures = file_task.map(
        groups,
        unmapped(formulas),
        [{f.relative: known[f.relative] for f in batch} for batch in groups],
        unmapped(target),
        [batch_name(batch) for batch in groups],
        unmapped(client is not None),
    )
    # Prefect's own progress display: a progress artifact of the flow run, per night.
    night = files[0].partitions.get("dump_date", "undated") if files else "undated"
    artifact = cast(UUID, create_progress_artifact(0.0, description=f"night {night}: scored"))
    parts, done = [], 0
    for batch, future in zip(groups, futures, strict=True):
        parts.append(future.result())
        done += len(batch)
        logger.info("scored %d/%d: %s", done, len(files), batch_name(batch))
        update_progress_artifact(artifact, 100.0 * done / len(files))
    return parts


def _dask_client() -> Any | None:
    """The Dask client of the running flow's task runner (prefect-dask's
    ``DaskTaskRunner``), or None where its tasks run in this process."""
    prefect_dask = sys.modules.get("prefect_dask")  # not imported: no such runner was made
    runner = getattr(FlowRunContext.get(), "task_runner", None)
    if prefect_dask is None or not isinstance(runner, prefect_dask.DaskTaskRunner):
        return None
    return runner.client


def _publish(outcome: Outcome) -> Outcome:
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


def _context(kind: str, storage_options: list[str] | None, **given: Any) -> RunContext:
    """The run's context, its options from the flow's parameters (``given``; null: the
    worker's environment variables, as on the command line; ``flows.options``). Its record
    names the flow run: one id in Prefect's UI and in OUT/runs. ``storage_options``
    (KEY=VALUE) become this process's, as ``--storage-option`` does."""
    from prefect.runtime import flow_run

    cache_days()  # a bad COGSCORE_CACHE_DAYS fails the run here, before any file's task
    if storage_options:
        os.environ[ENV_OPTIONS] = ",".join(storage_options)
    return RunContext(
        run_id=str(flow_run.id or new_run_id()),
        command=f"prefect flow cogscore-{kind} ({flow_run.name})",
        engine="prefect",
        options=run_options(**given),
    )


def run_parameters(kind: str) -> Callable[[F], F]:
    """Give flow ``kind``'s function the run options it takes (``flows.options.RUN_OPTIONS``,
    where each is declared once) as parameters, each None by default (the worker's
    environment variable, then the option's default): it receives them in ``**run``."""

    def add(function: F) -> F:
        signature = inspect.signature(function, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        own += [
            inspect.Parameter(
                option.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                # None, in a deployment's parameters too: the worker's environment decides
                annotation=option.kind | None,
            )
            for option in RUN_OPTIONS
            if kind in option.commands
        ]
        function.__signature__ = signature.replace(parameters=own)  # type: ignore[attr-defined]
        return function

    return add


def _files_at_once() -> TaskRunner[PrefectFuture[Any]]:
    """The flows' task runner: as many files at once as the local engine scores
    (``FILES_AT_ONCE``), unless ``PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS`` says
    otherwise. Prefect's default runs every submitted task at once: every file of a night
    in memory together (a night of 1.5 M episodes peaked at 19 GiB against 0.8 locally)."""
    configured = prefect.settings.get_current_settings().tasks.runner.thread_pool_max_workers
    runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(configured or FILES_AT_ONCE)
    return cast(TaskRunner[PrefectFuture[Any]], runner)  # a runner of these futures


@flow(name="cogscore-score", validate_parameters=False, task_runner=_files_at_once())
@run_parameters("score")
def score_flow(
    input_root: Path | str,
    out: Path | str,
    formulas: list[str] | None = None,
    storage_options: list[str] | None = None,
    **run: Any,
) -> Outcome:
    """Score every file of the dump at ``input_root`` into the tables under ``out``.
    ``strict``: the flow ends Failed when any input was not scored; ``fail_on_regression``
    (default COGSCORE_FAIL_ON_REGRESSION): when a regression alert fires."""
    context = _context("score", storage_options, **run)
    outcome = runs.score(input_root, out, formulas or [], prefect_mapper, context)
    return ended(_publish(outcome))


@flow(name="cogscore-nightly", validate_parameters=False, task_runner=_files_at_once())
@run_parameters("nightly")
def nightly_flow(
    dump_root: Path | str,
    out: Path | str,
    formulas: list[str] | None = None,
    *,
    verify: bool = False,
    storage_options: list[str] | None = None,
    runs_to_import: str | None = None,
    tasks: str | None = None,
    task_timeout: float | None = None,
    task_memory: int | None = None,
    report: str | None = None,
    names: str | None = None,
    **run: Any,
) -> Outcome:
    """Score the dump_date partitions that are new or changed since the last run (the
    scheduled deployment of ``prefect.yaml`` passes the paths as strings). A harness
    benchmark's nightly (the deployment ``harness-nightly``): ``runs_to_import`` and
    ``tasks`` import the harness runs that arrived first (``cogscore nightly --runs``),
    ``names`` (default COGSCORE_NAMES) names their models (a names file), ``report`` writes
    the report after the run. ``strict``: the
    flow ends Failed when any input was not scored; ``require_marker``: a night is scored
    only once its folder holds ``_SUCCESS`` (else it is reported as waiting). Both default
    to the environment variables COGSCORE_STRICT and COGSCORE_REQUIRE_MARKER.
    ``fail_on_regression`` (default COGSCORE_FAIL_ON_REGRESSION): the flow ends Failed when
    a regression alert fires on a night it scored; the regression options default to
    COGSCORE_BASELINE, COGSCORE_BASELINE_NIGHTS, COGSCORE_REGRESSION_MARGIN and
    COGSCORE_HARNESS_ERROR_TOLERANCE; ``level`` (the intervals') to COGSCORE_LEVEL."""
    context = _context("nightly", storage_options, **run)
    harvest = None
    if runs_to_import is not None or tasks is not None:
        if runs_to_import is None or tasks is None:
            raise ValueError("runs_to_import and tasks go together (cogscore nightly --runs)")
        harvest = Harvest(
            runs_to_import,
            Path(tasks).resolve(),
            DEFAULT_TIMEOUT if task_timeout is None else task_timeout,
            DEFAULT_TASK_MEMORY if task_memory is None else task_memory,
            _names_file(names),
        )
    outcome = runs.nightly(
        dump_root, out, formulas or [], prefect_mapper, verify=verify, context=context,
        harvest=harvest,
    )  # fmt: skip
    if report is not None:
        get_run_logger().info("report: %s", write_report(outcome.out, Path(report)))
    return ended(_publish(outcome))


def _names_file(names: str | None) -> Path | None:
    """The names file of a nightly flow's harness runs: the parameter, else COGSCORE_NAMES."""
    chosen = names or os.environ.get(NAMES_ENV)
    return Path(chosen).resolve() if chosen else None


def harvest_parameters(harvest: Harvest | None) -> dict[str, Any]:
    """``nightly_flow``'s parameters of the harness runs to import first."""
    if harvest is None:
        return {}
    return {
        "runs_to_import": harvest.runs,
        "tasks": str(harvest.tasks),
        "task_timeout": harvest.timeout,
        "task_memory": harvest.task_memory,
        **({"names": str(harvest.names)} if harvest.names is not None else {}),
    }


@flow(name="cogscore-rescore", validate_parameters=False, task_runner=_files_at_once())
@run_parameters("rescore")
def rescore_flow(
    dump_root: Path | str,
    out: Path | str,
    formulas: list[str],
    *,
    since: date | None = None,
    until: date | None = None,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    storage_options: list[str] | None = None,
    **run: Any,
) -> Outcome:
    """Rescore a range of nights with chosen formula versions; write what it moved
    (``dry_run``: compute and show it, change nothing)."""
    context = _context("rescore", storage_options, **run)
    outcome = runs.rescore(
        dump_root, out, formulas, since=since, until=until, mapper=prefect_mapper,
        dry_run=dry_run, diff_out=diff_out, context=context,
    )  # fmt: skip
    return ended(_publish(outcome))
