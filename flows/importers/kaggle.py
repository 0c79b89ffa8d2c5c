"""``cogscore import-kaggle``: LearningBench harness runs in, contract rows out.

For every ``.run.json`` below RUNS (a folder or an object-store URL), the task it ran is
found in TASKS (a local folder of task files) by its registered name, the run is replayed
through that task file under the real harness (``flows.importers.kaggle_replay``, in a worker
process) and its rows (``transforms.kaggle_rows``) are written as Parquet below DUMP_ROOT:
``dump_date=<the run's start date, or --date>/<run>-<digest>.parquet``, one file per run.

Idempotent: a file's name and bytes depend only on the run (and the date it goes to), so a
second import of the same runs writes nothing (a file already there with the same bytes is
left as it is: not even its modification time changes); a new run adds its own file and
never touches another's. A run whose file changed (the same name and start time, other
content) replaces its own file.

Every run ends in the report: imported (rows written or already there) or rejected with its
reason (``schemas.kaggle.Reason``), never dropped.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from flows.importers.kaggle_files import (
    RUN_SUFFIX,
    RunFileError,
    RunRecord,
    TaskFile,
    index_tasks,
    parse_run,
)
from flows.storage.location import Location
from flows.storage.objects import get_object, list_files, put_if_absent, put_if_match
from schemas.contract import DUMP_DATE, Status
from schemas.kaggle import IMPORTED_WITH_NOTE, Outcome, Reason
from transforms.kaggle_rows import episode_rows


@dataclass
class RunReport:
    """One run's line in the import's report."""

    run: str  # the run file, relative to RUNS
    outcome: Outcome
    task: str | None = None
    model: str | None = None
    reasons: list[str] = field(default_factory=list)
    detail: str | None = None
    file: str | None = None  # the rows' file, relative to DUMP_ROOT
    written: bool = False  # False: the same bytes were already there
    reported_score: float | None = None
    task_score: float | None = None  # what the task returned on replay


@dataclass
class ImportReport:
    runs: list[RunReport]
    seconds: float

    @property
    def imported(self) -> int:
        return sum(1 for r in self.runs if r.outcome is Outcome.IMPORTED)

    @property
    def rejected(self) -> int:
        return len(self.runs) - self.imported

    def as_json(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for run in self.runs:
            for reason in run.reasons:
                reasons[reason] = reasons.get(reason, 0) + 1
        return {
            "runs": len(self.runs),
            "imported": self.imported,
            "rejected": self.rejected,
            "files_written": sum(1 for r in self.runs if r.written),
            "reasons": dict(sorted(reasons.items())),
            "seconds": round(self.seconds, 3),
            "details": [
                {k: (str(v) if isinstance(v, Outcome) else v) for k, v in asdict(r).items()}
                for r in self.runs
            ],
        }


class Worker:
    """The replay worker process (``python -m flows.importers.kaggle_replay``): imports the
    harness once, replays one run per job in a forked child."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flows.importers.kaggle_replay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

    def replay(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                "the replay worker ended (is the harness installed? `uv sync --extra kaggle`)"
            )
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def run_id_of(relative: str) -> str:
    """A run's id: its file's name without ``.run.json`` (task, harness run id, model).

    >>> run_id_of("m/t-run_id_Run_1_m.run.json")
    't-run_id_Run_1_m'
    """
    return relative.rsplit("/", 1)[-1].removesuffix(RUN_SUFFIX)


def episode_id_of(run_id: str, record: RunRecord) -> str:
    """An episode's id: its run's id and start time (a run file name repeats per night)."""
    return f"{run_id}@{record.start_time}"


def night_of(record: RunRecord, date: str | None) -> str:
    return date or record.start_time[:10]


def dump_key(run_id: str, record: RunRecord, date: str | None) -> str:
    """Where a run's rows go below DUMP_ROOT: its night's folder, a name from its id and a
    digest of its episode id (a run file's name repeats on other nights and re-runs)."""
    digest = hashlib.sha256(episode_id_of(run_id, record).encode()).hexdigest()[:12]
    return f"{DUMP_DATE}={night_of(record, date)}/{run_id}-{digest}.parquet"


def rows_of(run_id: str, record: RunRecord, task: TaskFile, result: dict[str, Any]) -> pl.DataFrame:
    """The rows of one replayed run (``result``: what the replay worker sent back)."""
    assert task.category is not None
    errored = Reason.ERRORED in (result.get("notes") or [])
    return episode_rows(
        run_id=run_id,
        episode_id=episode_id_of(run_id, record),
        model=record.model,
        task=record.task,
        category=task.category,
        start_time=record.start_time,
        end_time=record.end_time,
        requests=record.requests,
        inputs=result.get("inputs") or {},
        status=Status.ERROR if errored else Status.COMPLETED,
        reported_score=record.reported_score,
    )


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    """A frame as Parquet bytes: the same frame gives the same bytes (one row group)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="zstd", statistics=True, row_group_size=1 << 20)
    return buffer.getvalue()


def write_if_changed(out: Location, key: str, data: bytes) -> bool:
    """Write ``data`` at ``key`` unless those bytes are there already (True: written)."""
    current = get_object(out, key)
    if current is None:
        if put_if_absent(out, key, data) is None:  # another writer made it first
            return write_if_changed(out, key, data)
        return True
    if current.data == data:
        return False
    return put_if_match(out, key, data, current.etag) is not None


def import_runs(
    runs: Location,
    tasks: Path,
    out: Location,
    *,
    date: str | None = None,
    timeout: float = 300.0,
    on_run: Callable[[RunReport], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import every run below ``runs`` (see the module's docstring)."""
    started = time.monotonic()
    listed = list_files(runs, suffix=RUN_SUFFIX)
    if on_start:
        on_start(len(listed))
    index = index_tasks(tasks)
    reports: list[RunReport] = []
    worker: Worker | None = None
    try:
        for info in listed:
            report, worker = _import_one(runs, info.relative, index, out, date, timeout, worker)
            reports.append(report)
            if on_run:
                on_run(report)
    finally:
        if worker is not None:
            worker.close()
    return ImportReport(reports, time.monotonic() - started)


def _import_one(
    runs: Location,
    relative: str,
    index: dict[str, TaskFile],
    out: Location,
    date: str | None,
    timeout: float,
    worker: Worker | None,
) -> tuple[RunReport, Worker | None]:
    data = (get_object(runs, relative) or _missing(runs, relative)).data
    try:
        record = parse_run(data)
    except RunFileError as error:
        return RunReport(
            relative, Outcome.REJECTED, reasons=[Reason.UNREADABLE_RUN], detail=str(error)
        ), worker
    report = RunReport(
        relative,
        Outcome.REJECTED,
        task=record.task,
        model=record.model,
        reported_score=record.reported_score,
    )
    task = index.get(record.task)
    if task is None or task.category is None:
        report.reasons = [Reason.NO_TASK_FILE]
        report.detail = (
            f"no task file registers the task name {record.task!r}"
            if task is None
            else f"{task.path.name}: its folder {task.folder!r} is no LearningBench category"
        )
        return report, worker
    if worker is None:
        worker = Worker()
    result = worker.replay(
        {
            "task_file": str(task.path),
            "task_name": record.task,
            "category": str(task.category),
            "run": data.decode("utf-8"),
            "timeout": timeout,
        }
    )
    report.task_score = result.get("returned")
    if result.get("reason"):
        report.reasons = [str(result["reason"])]
        report.detail = result.get("detail")
        return report, worker
    report.reasons = [str(n) for n in result.get("notes") or [] if n in IMPORTED_WITH_NOTE]
    report.detail = result.get("error")
    run_id = run_id_of(relative)
    try:
        frame = rows_of(run_id, record, task, result)
    except ValueError as error:
        report.reasons = [Reason.INPUTS_NOT_CAPTURED]
        report.detail = str(error)
        return report, worker
    key = dump_key(run_id, record, date)
    report.written = write_if_changed(out, key, parquet_bytes(frame))
    report.outcome, report.file = Outcome.IMPORTED, key
    return report, worker


def _missing(runs: Location, relative: str) -> Any:
    raise RunFileError(f"{runs.child(relative).display} disappeared while importing")
