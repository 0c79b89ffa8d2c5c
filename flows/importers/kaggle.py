"""``cogscore import-kaggle``: LearningBench harness runs in, contract rows out.

For every ``.run.json`` below RUNS (a folder or an object-store URL), the task it ran is
found in TASKS (a local folder of task files) by its registered name, the run is replayed
through that task file under the real harness (``flows.importers.kaggle_replay``, in a worker
process) and its rows (``transforms.kaggle_rows``) are written as Parquet below DUMP_ROOT:
``dump_date=<the run's start date, or --date>/<run>-<digest>.parquet``, one file per run.

A run is named by its identity (``RunRecord.identity``: model, task, harness run id, start
time) and its content (``kaggle_files.run_digest``), both kept in its file's metadata: the
same run under two names, in two folders or saved again with other bytes is imported once
(the other copies reported ``duplicate_run``), and two different runs never share a file,
even under one file name and start time (the second gets an episode id and a file of its
own). Idempotent: a file's name
and bytes depend only on the run (and the date it goes to), so a second import of the same
runs writes nothing (a file already there with the same bytes is left as it is: not even its
modification time changes). A run file changed since it was imported (the same name and start
time, other content) replaces its own rows, and the report says so (``replaced``).

Every run ends in the report: imported (rows written or already there) or rejected with its
reason (``schemas.kaggle.Reason``), never dropped; one run's failure, whatever it is, is that
run's reason, and the others are imported. A night that received runs is marked complete
(``_SUCCESS``) once the import is done.

The parts: ``kaggle_plan`` (the runs read and placed before any replay), ``kaggle_worker``
(the replay worker, from the importer's side), ``kaggle_dump`` (a run's rows in the dump),
``kaggle_report`` (the report); here the import itself.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from flows.importers.kaggle_dump import (
    _Dump,
    harness_named,
    parquet_bytes,
    rows_of,
    run_id_of,
    usage_beyond_bounds,
    write_if_changed,
)
from flows.importers.kaggle_files import RunFileError, RunRecord, TaskFile, index_tasks, parse_run
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.importers.kaggle_plan import _list_runs, _place, _plan, _Planned, _read
from flows.importers.kaggle_report import ImportReport, RunReport
from flows.importers.kaggle_worker import HarnessMissing, WorkerGone, _Workers
from flows.importers.names import keep_names, names_for
from flows.store.dumps import SUCCESS_MARKER
from flows.store.errors import StorageError
from flows.store.location import Location
from flows.store.objects import put_if_absent
from schemas.kaggle import IMPORTED_WITH_NOTE, Outcome, Reason
from transforms.names import NameError_, Names


def model_label(slug: str) -> str:
    """A model slug as the harness writes it in file and folder names
    (``kaggle_benchmarks.utils.normalize_name``).

    >>> model_label("anthropic/claude-opus-4-6@default")
    'anthropic_claude-opus-4-6default'
    """
    name = slug.replace(" ", "_").replace("/", "_").replace("\\", "_")
    return re.sub(r"[^a-zA-Z0-9_.-]", "", name)


def model_disagreement(relative: str, record: RunRecord, models: set[str]) -> str | None:
    """Where a run's folder or file name names another model than its slug, in words (None:
    they agree). The file name names one when it is the harness's
    (``<task>-run_id_<id>_<model>``); the folder, when it is named as a model of the import
    (the layout ``<model>/<run>``: a folder ``2026-04-12`` or ``batch`` names none)."""
    label = model_label(record.model)
    said = []
    run_id = run_id_of(relative)
    if harness_named(relative) and not run_id.endswith(f"_{label}"):
        said.append(f"its file name {run_id!r} does not end with it")
    folder = relative.rsplit("/", 2)[-2] if "/" in relative else None
    if folder is not None and folder != label and folder in models:
        said.append(f"its folder is {folder!r}")
    if not said:
        return None
    return f"the run's model slug is {record.model!r} ({label}), but " + " and ".join(said)


def import_runs(
    runs: Location,
    tasks: Path,
    out: Location,
    *,
    date: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    task_memory: int = DEFAULT_TASK_MEMORY,
    on_run: Callable[[RunReport], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    names: Path | None = None,
) -> ImportReport:
    """Import every run below ``runs`` (see the module's docstring); ``names``: a names file
    (``transforms.names``: each run's model is named by it, the dump's names or the rule)."""
    started = time.monotonic()
    named = names_for(out, names)  # a bad names file: refused before any work
    listed = _list_runs(runs)
    if on_start:
        on_start(len(listed))
    index = index_tasks(tasks)
    plans = [_plan(runs, item, date) for item in listed]
    dump = _Dump(out)
    _place(plans, dump, date)
    labels = {model_label(p.record.model) for p in plans if p.record and p.record.model}
    limits = {"timeout": timeout, "task_memory": task_memory}
    reports: list[RunReport] = []
    workers = _Workers()
    try:
        for plan in plans:
            if plan.key is not None:
                try:
                    _import_one(
                        runs,
                        plan,
                        index,
                        out,
                        dump=dump,
                        labels=labels,
                        names=named,
                        limits=limits,
                        workers=workers,
                    )
                except (StorageError, HarnessMissing):
                    raise
                except Exception as error:  # one run's failure never stops the others
                    plan.report.outcome, plan.report.written = Outcome.REJECTED, False
                    plan.report.reasons, plan.report.detail = [], None
                    plan.report.note(Reason.IMPORT_FAILED, f"{type(error).__name__}: {error}")
            reports.append(plan.report)
            if on_run:
                on_run(plan.report)
    finally:
        workers.close()
    report = ImportReport(reports, 0.0, new_models=named.new)
    _mark_nights(out, report)
    report.seconds = time.monotonic() - started
    return report


def _import_one(
    runs: Location,
    plan: _Planned,
    index: dict[str, TaskFile],
    out: Location,
    *,
    dump: _Dump,
    labels: set[str],
    names: Names,
    limits: dict[str, float],
    workers: _Workers,
) -> None:
    report, key = plan.report, plan.key
    assert key is not None and plan.record is not None
    try:
        data = _read(runs, plan.listed)
        record = parse_run(data)
    except RunFileError as error:
        report.note(Reason.UNREADABLE_RUN, str(error))
        return
    if record.digest != plan.record.digest:
        report.note(Reason.UNREADABLE_RUN, "the file changed while it was imported: import again")
        return
    task = index.get(record.task)
    if task is None or task.category is None:
        report.note(
            Reason.NO_TASK_FILE,
            f"no task file registers the task name {record.task!r}"
            if task is None
            else f"{task.path.name}: its folder {task.folder!r} is no LearningBench category",
        )
        return
    job = {
        "task_file": str(task.path),
        "task_name": record.task,
        "category": str(task.category),
        "run": data.decode("utf-8-sig"),
        **limits,
    }
    try:
        result = workers.replay(job)
    except WorkerGone as error:
        report.note(Reason.REPLAY_FAILED, str(error) or "the replay worker ended")
        return
    report.task_score = result.get("returned")
    if result.get("reason"):
        report.note(Reason(str(result["reason"])), str(result.get("detail") or ""))
        return
    for note in result.get("notes") or []:
        if note in IMPORTED_WITH_NOTE:
            report.reasons.append(str(note))
    report.detail = result.get("error")
    run_id = run_id_of(plan.listed.relative)
    try:
        model = names.resolve([record.model], keep=False)  # kept once its rows are written
    except NameError_ as error:
        report.reasons = []
        report.note(Reason.MODEL_UNNAMED, str(error))
        return
    try:
        frame = rows_of(run_id, record, task, result, model=model, distinct=plan.distinct)
    except ValueError as error:
        report.reasons = []
        report.note(Reason.INPUTS_NOT_CAPTURED, str(error))
        return
    if (disagreement := model_disagreement(plan.listed.relative, record, labels)) is not None:
        report.note(Reason.MODEL_MISMATCH, disagreement)
    if (beyond := usage_beyond_bounds(frame)) is not None:
        report.note(Reason.USAGE_INVALID, beyond)
    names.resolve([record.model])
    keep_names(out, names)  # before the rows that name it: the next import resolves alike
    before = dump.digest_at(key)
    report.written = write_if_changed(out, key, parquet_bytes(frame, record))
    report.outcome, report.file = Outcome.IMPORTED, key
    if before and before != record.digest:
        report.note(
            Reason.REPLACED,
            f"{key} held the rows of another version of this run (the same file name and "
            "start time): replaced by this one's",
        )
    dump.wrote(key, record)


def _mark_nights(out: Location, report: ImportReport) -> None:
    """Mark every night that received runs complete (``_SUCCESS``), now that its import is;
    warn where a night was complete already and this import changed it (it may have been
    scored: the next ``nightly`` scores it again)."""
    nights: dict[str, int] = defaultdict(int)
    for run in report.runs:
        if run.outcome is Outcome.IMPORTED and run.file is not None:
            nights[run.file.split("/", 1)[0]] += int(run.written)
    for folder, written in sorted(nights.items()):
        marker = f"{folder}/{SUCCESS_MARKER}"
        if put_if_absent(out, marker, b"") is not None:
            report.marked.append(folder.split("=", 1)[1])
        elif written:
            report.warnings.append(
                f"{folder} was complete already ({SUCCESS_MARKER} was there, so it may have "
                f"been scored) and this import wrote {written} file(s) into it: cogscore "
                "nightly will score the night again"
            )
