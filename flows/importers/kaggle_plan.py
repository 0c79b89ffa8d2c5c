"""The runs of an import read and judged before any replay: listed, parsed, given their
file's key, and placed against each other and the dump (a copy of another run is
``duplicate_run``; runs that share a file name and start time get files of their own).
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from flows.importers.kaggle_dump import _Dump, dump_key, harness_named, run_id_of
from flows.importers.kaggle_files import (
    RUN_SUFFIX,
    ListedRun,
    RunFileError,
    RunRecord,
    parse_run,
    runs_below,
)
from flows.importers.kaggle_report import RunReport
from flows.store.errors import StorageError
from flows.store.location import Location
from flows.store.objects import get_object, list_files
from schemas.kaggle import Outcome, Reason


@dataclass
class _Planned:
    """A run read and judged before any replay: where it goes, or why it does not."""

    listed: ListedRun
    report: RunReport
    record: RunRecord | None = None
    key: str | None = None
    distinct: bool = False  # shares its file name and start time with another run


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
    """Judge the runs against each other and the dump. The same run (its identity: model,
    task, harness run id and start time, whatever its file's name or bytes) twice into one
    night is ``duplicate_run``, imported once: the one kept is the one the dump holds
    already (byte for byte, else a version of it under its own key), else the first by
    path. Runs that share a file name and start time but are other runs get files of their
    own (``distinct``), the one the dump holds (else the first) keeping the plain name."""
    readable = [p for p in plans if p.record is not None and p.key is not None]
    same: dict[tuple[str, str], list[_Planned]] = defaultdict(list)
    for plan in readable:
        assert plan.record is not None and plan.key is not None
        same[(plan.key.split("/", 1)[0], plan.record.identity)].append(plan)
    kept: list[_Planned] = []
    for group in same.values():
        first = _kept_of(group, dump)
        kept.append(first)
        for other in group:
            if other is not first:
                other.key = None
                other.report.note(Reason.DUPLICATE_RUN, _same_run(other, first))
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
        if dump.digest_at(plan.key) == plan.record.digest:
            continue
        elsewhere = dump.night(plan.key.split("/", 1)[0].split("=", 1)[1]).holding(plan.record)
        if elsewhere is not None and elsewhere != plan.key:
            plan.report.note(
                Reason.DUPLICATE_RUN,
                _same_run(plan, None) + f" was imported already, as {elsewhere}",
            )
            plan.key = None


def _kept_of(group: list[_Planned], dump: _Dump) -> _Planned:
    """Of the files of one run (in path order), the one imported: the one the dump holds
    byte for byte, else one whose own key holds a version of the run, else the first named
    as the harness names runs (``<task>-run_id_<id>_<model>``: a copy saved under another
    name is not the run's own file), else the first."""
    for held in (
        lambda p: dump.digest_at(str(p.key)) == p.record.digest,
        lambda p: dump.identity_at(str(p.key)) == p.record.identity,
        lambda p: harness_named(p.listed.relative),
    ):
        found = next((p for p in group if p.record is not None and held(p)), None)
        if found is not None:
            return found
    return group[0]


def _same_run(plan: _Planned, kept: _Planned | None) -> str:
    """Why a run is a duplicate, in words: the run it is the same as (``kept``: the file of
    the import kept, its content the same or not; None: one the dump holds, said after)."""
    assert plan.record is not None
    what = f"the same run ({plan.record.named()})"
    if kept is None:
        return what
    assert kept.record is not None
    differs = "" if kept.record.digest == plan.record.digest else ", its content differing"
    return f"{what} as {kept.listed.relative}{differs}: imported once"
