"""Recording LearningBench runs as contract rows while the harness runs them (no replay).

A benchmark author's nightly harness job wraps its runs::

    import kaggle_benchmarks as kbench
    from flows.importers.kaggle_live import record_rows

    with record_rows("s3://bucket/dumps") as recorded:      # or a local folder
        my_task.run(llm=kbench.llm)                           # any number of runs
    print(recorded)                                           # one RunReport per run

Inside the block every ``Task.run`` captures its task's score inputs (the same wrappers the
importer sets: ``kaggle_capture``) and, when the run ends, writes its rows to
``DUMP_ROOT/dump_date=<night>/`` under the name and with the bytes ``cogscore import-kaggle``
gives the same run's ``.run.json`` (the run record is taken from the harness's own
serialisation of the run, the one it writes to that file). A task's category is its file's
folder (LearningBench's folder names) unless ``category`` says it. Only a run that failed
from an unreadable reply replays (its task, with that reply blank, to learn its items).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flows.importers.kaggle_dump import (
    dump_key,
    parquet_bytes,
    rows_of,
    usage_beyond_bounds,
    write_if_changed,
)
from flows.importers.kaggle_files import (
    RUN_SUFFIX,
    TaskFile,
    parse_run,
    registered_names,
    shown_task,
)
from flows.importers.kaggle_replay import _harness, conclude, run_captured
from flows.importers.kaggle_report import RunReport
from flows.importers.names import keep_names, names_for
from flows.store.location import Location
from schemas.contract import Category
from schemas.kaggle import IMPORTED_WITH_NOTE, UPSTREAM_CATEGORIES, Outcome, Reason
from transforms.names import NameError_


def _run_record(kbench: Any, run: Any) -> tuple[str, bytes]:
    """The run's file name and the bytes the harness writes for it (its ``.run.json``)."""
    from google.protobuf import json_format
    from kaggle_benchmarks.kaggle import serialization

    name = serialization.generate_run_filename(run.task.name, run.cache_id)
    data = json.dumps(json_format.MessageToDict(serialization.dump_run(run))).encode()
    return name, data


@contextlib.contextmanager
def record_rows(
    out: str | Location,
    *,
    category: Category | None = None,
    date: str | None = None,
    names: Path | None = None,
) -> Iterator[list[RunReport]]:
    """Write every harness run made inside the block as contract rows below ``out``, each
    run's model named as ``import-kaggle`` names it (``names``: a names file)."""
    kbench = _harness()
    target = out if isinstance(out, Location) else Location.parse(out)
    named = names_for(target, names)
    reports: list[RunReport] = []
    original = kbench.tasks.Task.run
    busy: list[bool] = []  # a run being recorded: the replays it may need are not recorded

    def recorded_run(task: Any, *args: Any, **kwargs: Any) -> Any:
        path = Path(task.func.__code__.co_filename)
        folder = path.parent.name
        chosen = category or UPSTREAM_CATEGORIES.get(folder)
        if chosen is None or busy:
            return original(task, *args, **kwargs)
        busy.append(True)
        try:
            return _record(task, path, folder, chosen, args, kwargs)
        finally:
            busy.pop()

    def _record(
        task: Any,
        path: Path,
        folder: str,
        chosen: Category,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        run, capture = run_captured(
            task, task.func.__globals__, lambda: original(task, *args, **kwargs)
        )
        name, data = _run_record(kbench, run)
        record = parse_run(data)
        registered = registered_names(path.read_text(encoding="utf-8"))
        task_file = TaskFile(path, chosen, folder, shown_task(path, registered, task.name))
        job = {"task_file": str(path), "task_name": task.name, "category": str(chosen)}
        result = conclude(kbench, job, record, run, capture)
        report = RunReport(
            name,
            Outcome.REJECTED,
            task=record.task,
            model=record.model,
            reported_score=record.reported_score,
            task_score=result.get("returned"),
        )
        model = record.model
        if not result.get("reason"):
            try:
                model = named.resolve([record.model])
                keep_names(target, named)
            except NameError_ as error:
                result = {"reason": Reason.MODEL_UNNAMED, "detail": str(error)}
        if result.get("reason"):
            report.reasons, report.detail = [str(result["reason"])], result.get("detail")
        else:
            run_id = name.removesuffix(RUN_SUFFIX)
            frame = rows_of(run_id, record, task_file, result, model=model)
            key = dump_key(run_id, record, date)
            report.written = write_if_changed(target, key, parquet_bytes(frame, record))
            report.outcome, report.file = Outcome.IMPORTED, key
            report.reasons = [str(n) for n in result["notes"] if n in IMPORTED_WITH_NOTE]
            if (beyond := usage_beyond_bounds(frame)) is not None:
                report.note(Reason.USAGE_INVALID, beyond)
        reports.append(report)
        if run.status == kbench.utils.Status.FAILED and not kbench.config.continue_with_exceptions:
            # recorded; now fail as the harness would have outside the recorder
            raise RuntimeError(f"task {task.name!r} failed: {run.error_message}")
        return run

    kbench.tasks.Task.run = recorded_run
    try:
        yield reports
    finally:
        kbench.tasks.Task.run = original
