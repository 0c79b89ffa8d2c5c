"""The record of one command run, as ``--json`` prints it last on stdout (its schema is
``RECORD_KEYS``, documented in README "Run records" and tested), and the exit codes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any, Final

from flows.score import SCORER_VERSION


class ExitCode(IntEnum):
    """What a command's exit status means (README "Exit codes")."""

    SUCCESS = 0  # done (input that was not scored is reported; --strict makes it UNSCORED)
    INTERNAL = 1  # a bug: an unexpected error (traceback with --log-level debug)
    USAGE = 2  # a bad option, or input or output refused before any work
    UNSCORED = 3  # --strict with input that was not scored, or a night that failed
    STORAGE = 4  # the store: unreachable, credentials refused, permission, missing bucket
    BUSY = 5  # another run holds the output's lease
    REGRESSION = 6  # --fail-on-regression and a regression alert fired


def exit_code_of(error: BaseException) -> ExitCode:
    """The exit code of an error a command reports (README "Exit codes")."""
    from flows.io import InputError
    from flows.report import ReportError
    from flows.storage.errors import (
        BadLocation,
        LegacyLayout,
        OutputBusy,
        StorageError,
        UnsafeStore,
    )

    if isinstance(error, OutputBusy):
        return ExitCode.BUSY
    if isinstance(error, InputError | ReportError | BadLocation | LegacyLayout | UnsafeStore):
        return ExitCode.USAGE
    if isinstance(error, StorageError):
        return ExitCode.STORAGE
    return ExitCode.INTERNAL


RECORD_KEYS: Final = (
    "run_id",
    "command",
    "engine",
    "started",
    "finished",
    "status",  # succeeded | nothing_to_do | failed | refused
    "exit_code",
    "error",
    "output",
    "nights_scored",
    "nights_unchanged",
    "nights_waiting",
    "nights_failed",
    "counts",
    "rejected_files",  # [{file, problems}]
    "formula_set",
    "nights_off_set",
    "cogscore_version",
    "table_versions",
    "regressions",  # [{dump_date, model, scope, level, change, ci_low, ci_high, q_bh}]
    # Contract 1.2: the first 20 episodes whose score differs from the reported one
    # (all are counted in counts.episodes_score_mismatch): [{dump_date, episode_id, model,
    # task, score, reported_score}]
    "score_mismatches",
)


def run_record(
    outcome: Any | None,
    *,
    command: str,
    engine: str,
    started: datetime,
    exit_code: ExitCode,
    error: str | None = None,
    output: str | None = None,
) -> dict[str, Any]:
    """The record of a command run; ``outcome`` (a ``flows.runs.Outcome``) where it ran."""
    status = (
        "refused"
        if outcome is None and exit_code in (ExitCode.USAGE, ExitCode.BUSY)
        else "failed"
        if exit_code is not ExitCode.SUCCESS
        else "nothing_to_do"
        if outcome is not None and outcome.result is None
        else "succeeded"
    )
    record: dict[str, Any] = dict.fromkeys(RECORD_KEYS)
    record |= {
        "command": command,
        "engine": engine,
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "status": status,
        "exit_code": int(exit_code),
        "error": error,
        "output": output,
        "cogscore_version": SCORER_VERSION,
        "nights_scored": [],
        "nights_unchanged": [],
        "nights_waiting": [],
        "nights_failed": {},
        "counts": {},
        "rejected_files": [],
        "formula_set": {},
        "nights_off_set": {},
        "table_versions": {},
        "regressions": [],
        "score_mismatches": [],
    }
    if outcome is None:
        return record
    runs = outcome.out.runs()
    mine = runs.filter(runs["run_id"] == outcome.run_id) if not runs.is_empty() else runs
    files = [f for text in mine["files"].to_list() for f in json.loads(text or "[]")]
    record |= {
        "run_id": outcome.run_id,
        "output": outcome.out.display,
        "nights_scored": outcome.nights_scored,
        "nights_unchanged": outcome.nights_unchanged,
        "nights_waiting": outcome.nights_waiting,
        "nights_failed": outcome.nights_failed,
        "counts": dict(outcome.result.counts) if outcome.result else {},
        "rejected_files": [
            {"file": f["file"], "problems": f["problems"]}
            for f in files
            if f.get("status") == "rejected"
        ],
        "formula_set": outcome.formula_set,
        "nights_off_set": outcome.nights_off_set,
        "table_versions": json.loads(mine["table_versions"][-1]) if not mine.is_empty() else {},
        "regressions": _flagged(outcome.regressions),
        "score_mismatches": list(outcome.result.mismatched) if outcome.result else [],
    }
    return record


def _flagged(regressions: Any) -> list[dict[str, Any]]:
    """The alert and watch rows of the nights a run scored, for the record."""
    if regressions is None or regressions.is_empty():
        return []
    keys = ["dump_date", "model", "scope", "level", "change", "ci_low", "ci_high", "q_bh"]
    return list(regressions.select(keys).to_dicts())  # a handful of rows
