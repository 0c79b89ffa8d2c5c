"""``cogscore import-kaggle``: LearningBench harness runs in, contract rows out.

For every ``.run.json`` below RUNS (a folder or an object-store URL), the task it ran is
found in TASKS (a local folder of task files) by its registered name, the run is replayed
through that task file under the real harness (``flows.importers.kaggle_replay``, in a worker
process) and its rows (``transforms.kaggle_rows``) are written as Parquet below DUMP_ROOT:
``dump_date=<the run's start date, or --date>/<run>-<digest>.parquet``, one file per run.

A run is named by its content (``kaggle_files.run_digest``, kept in its file's metadata):
the same run under two names or in two folders is imported once (the other copies reported
``duplicate_run``), and two different runs never share a file, even under one file name and
start time (the second gets an episode id and a file of its own). Idempotent: a file's name
and bytes depend only on the run (and the date it goes to), so a second import of the same
runs writes nothing (a file already there with the same bytes is left as it is: not even its
modification time changes). A run file changed since it was imported (the same name and start
time, other content) replaces its own rows, and the report says so (``replaced``).

Every run ends in the report: imported (rows written or already there) or rejected with its
reason (``schemas.kaggle.Reason``), never dropped; one run's failure, whatever it is, is that
run's reason, and the others are imported. A night that received runs is marked complete
(``_SUCCESS``) once the import is done.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from flows.importers.kaggle_files import (
    RUN_SUFFIX,
    ListedRun,
    RunFileError,
    RunRecord,
    TaskFile,
    index_tasks,
    parse_run,
    runs_below,
)
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.io import SUCCESS_MARKER
from flows.storage.errors import StorageError
from flows.storage.location import Location
from flows.storage.objects import get_object, list_files, put_if_absent, put_if_match
from schemas.contract import DUMP_DATE, Status
from schemas.kaggle import IMPORTED_WITH_NOTE, RUN_DIGEST_KEY, Outcome, Reason
from transforms.kaggle_rows import episode_rows

# How long the worker may take to import the harness, and to answer beyond a run's timeout.
_WORKER_START: Final = 300.0
_WORKER_SLACK: Final = 60.0
# A dump file's name: the run id where it is made of these (the harness's own names are),
# else with every other character as "_" (the digest after it keeps distinct runs apart).
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")
_LABEL_LENGTH: Final = 150  # with the digest, ".parquet" and a writer's temporary suffix: < 255


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
    digest: str | None = None  # the run's content digest (``RunRecord.digest``)

    def note(self, reason: Reason, detail: str) -> None:
        self.reasons.append(str(reason))
        self.detail = f"{self.detail}; {detail}" if self.detail else detail


@dataclass
class ImportReport:
    runs: list[RunReport]
    seconds: float
    warnings: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)  # nights given their _SUCCESS

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
            "nights_marked": self.marked,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "details": [
                {k: (str(v) if isinstance(v, Outcome) else v) for k, v in asdict(r).items()}
                for r in self.runs
            ],
        }


class WorkerGone(Exception):
    """The replay worker ended, or stopped answering, during a job."""


class HarnessMissing(RuntimeError):
    """The replay worker could not start: the import cannot replay any run."""


class _Lines:
    """Lines from a pipe, each awaited for at most a given time (a worker that hangs or
    dies is noticed, not waited for)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer = fd, b""

    def read(self, seconds: float) -> bytes | None:
        """The next line; None at the end of the pipe; ``TimeoutError`` after ``seconds``."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class Worker:
    """The replay worker process (``python -m flows.importers.kaggle_replay``): imports the
    harness once, says it is ready, then replays one run per job in a forked child of its own
    process group, whose id it sends before the result (so a worker that a task killed leaves
    no task running: its group is ended here)."""

    def __init__(self) -> None:
        # Everything the worker and its tasks put in temporary files goes here, removed when
        # the worker ends, however it ends (a killed worker cleans nothing up itself).
        self.scratch = tempfile.mkdtemp(prefix="cogscore-worker-")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": self.scratch}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flows.importers.kaggle_replay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdout is not None
        self.lines = _Lines(self.process.stdout.fileno())
        self.ready = False

    def _message(self, seconds: float) -> dict[str, Any] | None:
        line = self.lines.read(seconds)
        return None if line is None else dict(json.loads(line))

    def replay(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job's result; ``WorkerGone`` when the worker ended or hung during it (its task
        group ended); ``RuntimeError`` when it could not start (the harness missing)."""
        assert self.process.stdin is not None
        if not self.ready:
            try:
                hello = self._message(_WORKER_START)
            except TimeoutError:
                hello = None
            if not hello or not hello.get("ready"):
                self.kill()
                raise HarnessMissing(
                    "the replay worker did not start (is the harness installed? "
                    "`uv sync --extra kaggle`)"
                )
            self.ready = True
        group = None
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
            self.process.stdin.flush()
            message = self._message(_WORKER_SLACK)
            if message is not None and "task_group" in message:
                group = int(message["task_group"])
                message = self._message(float(job["timeout"]) + _WORKER_SLACK)
        except (BrokenPipeError, TimeoutError) as error:
            self.kill(group)
            raise WorkerGone(
                "the replay worker did not answer" if isinstance(error, TimeoutError) else ""
            ) from None
        if message is None:
            self.kill(group)
            code = self.process.wait()
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise WorkerGone(f"the replay worker ended ({how}) while this run's task ran")
        return message

    def kill(self, group: int | None = None) -> None:
        """End the worker, and the task group it ran (a task may outlive its worker)."""
        if group is not None:
            _end_group(group)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def close(self) -> None:
        if self.process.stdin:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)


class _Workers:
    """The one replay worker of an import, started when first needed and again after a task
    killed it (or it hung): a dead worker fails only the run it was replaying."""

    def __init__(self) -> None:
        self.worker: Worker | None = None

    def replay(self, job: dict[str, Any]) -> dict[str, Any]:
        if self.worker is None:
            self.worker = Worker()
        try:
            return self.worker.replay(job)
        except WorkerGone:
            self.worker = None
            raise
        except BaseException:  # its state unknown: the next run gets a new one
            self.worker.kill()
            self.worker = None
            raise

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def _end_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def run_id_of(relative: str) -> str:
    """A run's id: its file's name without ``.run.json`` (task, harness run id, model).

    >>> run_id_of("m/t-run_id_Run_1_m.run.json")
    't-run_id_Run_1_m'
    """
    return relative.rsplit("/", 1)[-1].removesuffix(RUN_SUFFIX)


def episode_id_of(run_id: str, record: RunRecord, distinct: bool = False) -> str:
    """An episode's id: its run's id and start time (a run file name repeats per night);
    ``distinct``: with its content's digest too, for a run that shares its file name and
    start time with another run (``import_runs`` says which)."""
    base = f"{run_id}@{record.start_time}"
    return f"{base}#{record.digest[:12]}" if distinct else base


def night_of(record: RunRecord, date: str | None) -> str:
    return date or record.night


def file_label(run_id: str) -> str:
    """The start of a run's dump file name: its id where that is made of letters, digits,
    ``.``, ``_`` and ``-`` (as the harness names runs), else with every other character as
    ``_``, cut at 150 (a name that no reader takes for a pattern, hidden file or path; the
    digest after it tells runs apart, and the rows keep the id as it is).

    >>> file_label("t-run_id_Run_1_m"), file_label("run[1]"), file_label("_x y")
    ('t-run_id_Run_1_m', 'run_1_', 'run_x_y')
    """
    label = _UNSAFE.sub("_", run_id)[:_LABEL_LENGTH]
    return f"run{label}" if not label or label.startswith((".", "_")) else label


def dump_key(run_id: str, record: RunRecord, date: str | None, distinct: bool = False) -> str:
    """Where a run's rows go below DUMP_ROOT: its night's folder, a name from its id and a
    digest of its episode id (a run file's name repeats on other nights and re-runs)."""
    episode = episode_id_of(run_id, record, distinct)
    digest = hashlib.sha256(episode.encode()).hexdigest()[:12]
    return f"{DUMP_DATE}={night_of(record, date)}/{file_label(run_id)}-{digest}.parquet"


def rows_of(
    run_id: str,
    record: RunRecord,
    task: TaskFile,
    result: dict[str, Any],
    distinct: bool = False,
) -> pl.DataFrame:
    """The rows of one replayed run (``result``: what the replay worker sent back)."""
    assert task.category is not None
    errored = Reason.ERRORED in (result.get("notes") or [])
    return episode_rows(
        run_id=run_id,
        episode_id=episode_id_of(run_id, record, distinct),
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


def parquet_bytes(frame: pl.DataFrame, digest: str) -> bytes:
    """A frame as Parquet bytes, the run's content digest in the file's metadata: the same
    frame and run give the same bytes (one row group)."""
    buffer = io.BytesIO()
    frame.write_parquet(
        buffer,
        compression="zstd",
        statistics=True,
        row_group_size=1 << 20,
        metadata={RUN_DIGEST_KEY: digest},
    )
    return buffer.getvalue()


def stored_digest(data: bytes) -> str | None:
    """The run digest an imported file carries (None: a file written before they did, or
    none of the importer's)."""
    try:
        metadata = pq.read_metadata(pa.BufferReader(data)).metadata or {}
    except (pa.ArrowException, OSError, ValueError):
        return None
    value = metadata.get(RUN_DIGEST_KEY.encode())
    return value.decode() if value else None


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
    if re.search(r"-run_(?:param_)?id_", run_id) and not run_id.endswith(f"_{label}"):
        said.append(f"its file name {run_id!r} does not end with it")
    folder = relative.rsplit("/", 2)[-2] if "/" in relative else None
    if folder is not None and folder != label and folder in models:
        said.append(f"its folder is {folder!r}")
    if not said:
        return None
    return f"the run's model slug is {record.model!r} ({label}), but " + " and ".join(said)


@dataclass
class _Planned:
    """A run read and judged before any replay: where it goes, or why it does not."""

    listed: ListedRun
    report: RunReport
    record: RunRecord | None = None
    key: str | None = None
    distinct: bool = False  # shares its file name and start time with another run


@dataclass
class _Dump:
    """What the dump holds, read as needed: the run digest of a file, the digests of a
    night's files."""

    out: Location
    digests: dict[str, str | None] = field(default_factory=dict)
    nights: dict[str, dict[str, str]] = field(default_factory=dict)

    def digest_at(self, key: str) -> str | None:
        if key not in self.digests:
            current = get_object(self.out, key)
            self.digests[key] = None if current is None else (stored_digest(current.data) or "")
        return self.digests[key]

    def night(self, night: str) -> dict[str, str]:
        """digest -> file of every run imported into ``night`` (read once, when asked)."""
        if night not in self.nights:
            folder = f"{DUMP_DATE}={night}"
            found: dict[str, str] = {}
            for info in _listed_or_none(self.out.child(folder)):
                key = f"{folder}/{info.relative}"
                digest = self.digest_at(key)
                if digest:
                    found.setdefault(digest, key)
            self.nights[night] = found
        return self.nights[night]


def _listed_or_none(location: Location) -> list[Any]:
    """``list_files`` of a folder that may not exist yet (then nothing)."""
    if location.is_local:
        return list_files(location) if os.path.isdir(location.uri) else []
    try:
        return list_files(location)
    except StorageError as error:
        if "no objects there" in str(error):
            return []
        raise


def _list_runs(runs: Location) -> list[ListedRun]:
    if runs.is_local:
        return runs_below(Path(runs.uri))
    return [ListedRun(info.relative, info.relative) for info in list_files(runs, suffix=RUN_SUFFIX)]


def _read(runs: Location, listed: ListedRun) -> bytes:
    """A run file's bytes (``RunFileError`` when it cannot be read: never a FIFO, which
    would block the import)."""
    if not runs.is_local:
        stored = get_object(runs, listed.path)
        if stored is None:
            raise RunFileError("the file disappeared while importing")
        return stored.data
    try:
        with open(listed.path, "rb", opener=_nonblocking) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise RunFileError("not a regular file")
            return handle.read()
    except OSError as error:
        raise RunFileError(f"cannot read the file: {error.strerror}") from None


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def _plan(runs: Location, listed: ListedRun, date: str | None) -> _Planned:
    planned = _Planned(listed, RunReport(listed.relative, Outcome.REJECTED))
    try:
        return _judge(runs, planned, date)
    except StorageError:
        raise
    except Exception as error:  # one run's failure never stops the others
        planned.key = None
        planned.report.note(Reason.IMPORT_FAILED, f"{type(error).__name__}: {error}")
        return planned


def _judge(runs: Location, planned: _Planned, date: str | None) -> _Planned:
    listed, report = planned.listed, planned.report
    if listed.problem is not None:
        reason, detail = listed.problem
        report.note(reason, detail)
        return planned
    try:
        record = parse_run(_read(runs, listed))
    except RunFileError as error:
        report.note(Reason.UNREADABLE_RUN, str(error))
        return planned
    report.task, report.model = record.task, record.model
    report.reported_score, report.digest = record.reported_score, record.digest
    # what placing needs; the calls and the JSON are read again when the run is imported
    # (all of a large import's at once would not fit in memory)
    planned.record = replace(record, requests=(), raw={})
    planned.key = dump_key(run_id_of(listed.relative), record, date)
    return planned


def _place(plans: list[_Planned], dump: _Dump, date: str | None) -> None:
    """Judge the runs against each other and the dump: a copy of another run (the same
    content, into the same night) is ``duplicate_run``, the one kept being the one the dump
    already holds, else the first by path; runs that share a file name and start time but
    differ get files of their own (``distinct``), the one the dump holds (else the first)
    keeping the plain name."""
    readable = [p for p in plans if p.record is not None and p.key is not None]
    copies: dict[tuple[str, str], list[_Planned]] = defaultdict(list)
    for plan in readable:
        assert plan.record is not None and plan.key is not None
        copies[(plan.key.split("/", 1)[0], plan.record.digest)].append(plan)
    kept: list[_Planned] = []
    for (_, digest), group in copies.items():
        first = next((p for p in group if dump.digest_at(str(p.key)) == digest), group[0])
        kept.append(first)
        for other in group:
            if other is not first:
                other.key = None
                other.report.note(
                    Reason.DUPLICATE_RUN,
                    f"the same run (the same content) as {first.listed.relative}: imported once",
                )
    sharing: dict[str, list[_Planned]] = defaultdict(list)
    for plan in kept:
        sharing[str(plan.key)].append(plan)
    for key, group in sharing.items():
        if len(group) == 1:
            continue
        group.sort(key=lambda p: p.listed.relative)
        there = dump.digest_at(key)
        owner = next((p for p in group if p.record and p.record.digest == there), group[0])
        for plan in group:
            if plan is not owner:
                assert plan.record is not None
                plan.distinct = True
                plan.key = dump_key(run_id_of(plan.listed.relative), plan.record, date, True)
    for plan in kept:
        assert plan.record is not None and plan.key is not None
        digest = plan.record.digest
        if dump.digest_at(plan.key) == digest:
            continue
        elsewhere = dump.night(plan.key.split("/", 1)[0].split("=", 1)[1]).get(digest)
        if elsewhere is not None and elsewhere != plan.key:
            plan.report.note(
                Reason.DUPLICATE_RUN,
                f"the same run (the same content) was imported already, as {elsewhere}",
            )
            plan.key = None


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
) -> ImportReport:
    """Import every run below ``runs`` (see the module's docstring)."""
    started = time.monotonic()
    listed = _list_runs(runs)
    if on_start:
        on_start(len(listed))
    index = index_tasks(tasks)
    plans = [_plan(runs, item, date) for item in listed]
    dump = _Dump(out)
    _place(plans, dump, date)
    models = {model_label(p.record.model) for p in plans if p.record and p.record.model}
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
                        models=models,
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
    report = ImportReport(reports, 0.0)
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
    models: set[str],
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
        frame = rows_of(run_id, record, task, result, plan.distinct)
    except ValueError as error:
        report.reasons = []
        report.note(Reason.INPUTS_NOT_CAPTURED, str(error))
        return
    if (disagreement := model_disagreement(plan.listed.relative, record, models)) is not None:
        report.note(Reason.MODEL_MISMATCH, disagreement)
    before = dump.digest_at(key)
    report.written = write_if_changed(out, key, parquet_bytes(frame, record.digest))
    report.outcome, report.file = Outcome.IMPORTED, key
    if before and before != record.digest:
        report.note(
            Reason.REPLACED,
            f"{key} held the rows of another version of this run (the same file name and "
            "start time): replaced by this one's",
        )
    dump.digests[key] = record.digest


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
