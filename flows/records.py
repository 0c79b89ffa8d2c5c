"""A run's identity and what it tells: who runs it and how (``RunContext``: its id,
command, engine, options, progress), how far it is while it runs (``Progress``: the
terminal's bar, or nobody), and when it ends its record, as ``--json`` prints it last on
stdout (its schema is ``RECORD_KEYS``, documented in README "Run records" and tested), and
its exit code."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from flows.options import RunOptions
from flows.store.state import RecordedFile
from schemas.columns import AS_OF, SCORE
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE_SCORE,
    BEYOND_NOISE,
    CHANGE,
    CHANGE_KIND,
    CI_HIGH,
    CI_LOW,
    MOVED_BY,
    NEW_NIGHT,
    NEW_RANK,
    NEW_RANK_HIGH,
    NEW_RANK_LOW,
    NEW_SCORE,
    OLD_NIGHT,
    OLD_RANK,
    OLD_RANK_HIGH,
    OLD_RANK_LOW,
    OLD_SCORE,
    PREVIOUS_AS_OF,
    Q_BH,
    REASON,
    SCOPE,
)
from schemas.contract import DUMP_DATE, Col
from schemas.exits import ExitCode
from schemas.version import COGSCORE_VERSION

if TYPE_CHECKING:  # the scoring code: not loaded by ``cogscore --help``
    from flows.reading import FileReport


def exit_code_of(error: BaseException) -> ExitCode:
    """The exit code of an error a command reports (README "Exit codes"): the one it
    carries (``code``), 130 for Ctrl-C, else 1 (a bug)."""
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    code = getattr(error, "code", None)
    return code if isinstance(code, ExitCode) else ExitCode.INTERNAL


class RunFailed(Exception):
    """A run that failed after its tables were written (its verdict, decided before it
    committed: a night failed, a model had episodes but none scored, a strict run did not
    score some input, or a regression alert fired on a run that fails on one): carries its
    outcome and its exit code. Raised so that a Prefect flow run ends Failed."""

    def __init__(self, outcome: Any, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.code = code


def ended(outcome: Any) -> Any:
    """``outcome`` (a ``flows.outcome.Outcome``), or ``RunFailed`` where its verdict is not
    success."""
    if outcome.verdict.code is ExitCode.SUCCESS:
        return outcome
    raise RunFailed(outcome, outcome.verdict.code, outcome.verdict.error or "failed")


def error_line(error: BaseException) -> str:
    """The one line that says why a command stopped on ``error``.

    >>> error_line(KeyboardInterrupt()), error_line(ValueError("bad\\nmore")), error_line(OSError())
    ('interrupted', 'bad', 'OSError')
    """
    if isinstance(error, KeyboardInterrupt):
        return str(error) or "interrupted"
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


@dataclass(frozen=True)
class Verdict:
    """How a run ends, decided before it commits (so that the runs table records it): its
    exit code, and why where that is not 0 (one line)."""

    code: ExitCode = ExitCode.SUCCESS
    error: str | None = None


def unscored_line(counts: Mapping[str, int]) -> str | None:
    """The "completed with rejected input" line, where a file or an episode was not scored.

    >>> unscored_line({"files_rejected": 0, "rows_rejected": 0})
    >>> unscored_line({"files_rejected": 1, "episodes_rejected": 2,
    ...     "episodes_harness_error": 3, "rows_rejected": 40})  # doctest: +NORMALIZE_WHITESPACE
    'completed with rejected input: 1 file(s), 2 rejected episode(s), 3 harness error(s),
    40 row(s) not scored (see rejects/)'
    """
    if not (counts.get("files_rejected") or counts.get("rows_rejected")):
        return None
    return (
        f"completed with rejected input: {counts['files_rejected']} file(s), "
        f"{counts['episodes_rejected']} rejected episode(s), "
        f"{counts['episodes_harness_error']} harness error(s), "
        f"{counts['rows_rejected']} row(s) not scored (see rejects/)"
    )


def verdict(
    *,
    nights_failed: Mapping[str, str],
    models_unscored: Mapping[str, Mapping[str, str]],
    counts: Mapping[str, int],
    alerts: Sequence[str],
    strict: bool,
    fail_on_regression: bool,
) -> Verdict:
    """The exit code of a run that scored (README "Exit codes"): 3 when a night failed or a
    model had episodes on a night but none scored (whatever ``strict`` says: a night or a
    model must never vanish silently), or, with ``strict``, when any input was not scored;
    6 when ``fail_on_regression`` and a regression alert fired (``alerts``: each named).

    >>> verdict(nights_failed={}, models_unscored={"2026-12-01": {"m": "no episode scored"}},
    ...     counts={}, alerts=[], strict=False, fail_on_regression=False).error
    '1 model(s) with episodes but none scored: m on 2026-12-01 (no episode scored)'
    """
    if nights_failed:
        why = "; ".join(f"{night}: {reason}" for night, reason in nights_failed.items())
        return Verdict(ExitCode.UNSCORED, f"{len(nights_failed)} night(s) failed: {why}")
    unscored = [
        f"{model} on {night} ({reason})"
        for night, models in models_unscored.items()
        for model, reason in models.items()
    ]
    if unscored:
        return Verdict(
            ExitCode.UNSCORED,
            f"{len(unscored)} model(s) with episodes but none scored: {'; '.join(unscored)}",
        )
    if strict and (line := unscored_line(counts)) is not None:
        return Verdict(ExitCode.UNSCORED, f"strict run failed: {line}")
    if fail_on_regression and alerts:
        return Verdict(
            ExitCode.REGRESSION, f"{len(alerts)} regression alert(s): {', '.join(alerts)}"
        )
    return Verdict()


def run_status(code: ExitCode, scored: bool) -> str:
    """A run's status, as the runs table, ``history``, ``status`` and the record say it."""
    if code in (ExitCode.USAGE, ExitCode.BUSY) and not scored:
        return "refused"
    if code is not ExitCode.SUCCESS:
        return "failed"
    return "succeeded" if scored else "nothing_to_do"


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
    "nights_input_gone",  # nights the output holds whose input is no longer in the dump
    "nights_failed",
    "models_unscored",  # {night: {model: why}}: models with episodes but none scored
    "models_absent",  # {night: [model]}: models of its baseline night that ran nothing on it
    "counts",
    "rejected_files",  # [{file, problems}]
    "formula_set",
    "nights_off_set",
    "cogscore_version",
    "table_versions",
    "regressions",  # [{dump_date, model, scope, level, change, ci_low, ci_high, q_bh}]
    # The standings' changes the run reports: alerts and watches, and each model's overall
    # change, whatever moved it: [{as_of, previous_as_of, model, scope, kind, level,
    # beyond_noise, baseline_score, score, change, ci_low, ci_high, q_bh, old_rank,
    # new_rank, old_rank_low, old_rank_high, new_rank_low, new_rank_high, moved_by, reason}]
    "standing_changes",
    # Every result re-run in the standings the run made: [{as_of, previous_as_of, model,
    # category, task, old_night, new_night, old_score, new_score, change}]
    "reruns",
    # A nightly with --runs: the import's counts, each run not imported and each model new
    # to the dump: {runs, imported, rejected, not_imported: [{run, reasons, detail}],
    # new_models: {model: [the names it came from]}} (null: no import)
    "imports",
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
    """The record of a command run; ``outcome`` (a ``flows.outcome.Outcome``) where it ran."""
    status = run_status(exit_code, outcome is not None and outcome.result is not None)
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
        "cogscore_version": COGSCORE_VERSION,
        "nights_scored": [],
        "nights_unchanged": [],
        "nights_waiting": [],
        "nights_input_gone": [],
        "nights_failed": {},
        "models_unscored": {},
        "models_absent": {},
        "counts": {},
        "rejected_files": [],
        "formula_set": {},
        "nights_off_set": {},
        "table_versions": {},
        "regressions": [],
        "standing_changes": [],
        "reruns": [],
        "imports": None,
        "score_mismatches": [],
    }
    if outcome is None:
        return record
    runs = outcome.out.runs()
    mine = runs.filter(runs["run_id"] == outcome.run_id) if not runs.is_empty() else runs
    files = [
        RecordedFile.of(f) for text in mine["files"].to_list() for f in json.loads(text or "[]")
    ]
    record |= {
        "run_id": outcome.run_id,
        "output": outcome.out.display,
        "nights_scored": outcome.nights_scored,
        "nights_unchanged": outcome.nights_unchanged,
        "nights_waiting": outcome.nights_waiting,
        "nights_input_gone": outcome.nights_input_gone,
        "nights_failed": outcome.nights_failed,
        "models_unscored": outcome.models_unscored,
        "models_absent": outcome.models_absent,
        "counts": dict(outcome.result.counts) if outcome.result else {},
        "rejected_files": [
            {"file": f.file, "problems": list(f.problems)} for f in files if f.status == "rejected"
        ],
        "formula_set": outcome.formula_set,
        "nights_off_set": outcome.nights_off_set,
        "table_versions": json.loads(mine["table_versions"][-1]) if not mine.is_empty() else {},
        "regressions": _flagged(outcome.regressions),
        "standing_changes": _moved(outcome.standing_changes),
        "reruns": _reruns(outcome.reruns),
        "imports": _imports(outcome.imports),
        "score_mismatches": list(outcome.result.mismatched) if outcome.result else [],
    }
    return record


def _imports(report: Any) -> dict[str, Any] | None:
    """A nightly's import (``flows.importers.kaggle_report.ImportReport``), for the record."""
    if report is None:
        return None
    missed = [r for r in report.runs if str(r.outcome) != "imported"]
    return {
        "runs": len(report.runs),
        "imported": report.imported,
        "rejected": report.rejected,
        "not_imported": [{"run": r.run, "reasons": r.reasons, "detail": r.detail} for r in missed],
        "new_models": dict(report.new_models),
    }


def _moved(changes: Any) -> list[dict[str, Any]]:
    """The standing changes a run reports (``flows.outcome.noticed``), for the record."""
    if changes is None or changes.is_empty():
        return []

    keys = [AS_OF, PREVIOUS_AS_OF, Col.MODEL, SCOPE, CHANGE_KIND, ALERT_LEVEL, BEYOND_NOISE]
    scores = [BASELINE_SCORE, SCORE, CHANGE, CI_LOW, CI_HIGH, Q_BH]
    ranks = [OLD_RANK, NEW_RANK, OLD_RANK_LOW, OLD_RANK_HIGH, NEW_RANK_LOW, NEW_RANK_HIGH]
    return list(changes.select(*keys, *scores, *ranks, MOVED_BY, REASON).to_dicts())


def _reruns(cells: Any) -> list[dict[str, Any]]:
    """Every result re-run in the standings a run made (``task_changes``), for the record."""
    if cells is None or cells.is_empty():
        return []

    keys = [AS_OF, PREVIOUS_AS_OF, Col.MODEL, Col.CATEGORY, Col.TASK, OLD_NIGHT, NEW_NIGHT]
    return list(cells.select(*keys, OLD_SCORE, NEW_SCORE, CHANGE).to_dicts())


def _flagged(regressions: Any) -> list[dict[str, Any]]:
    """The alert and watch rows of the nights a run scored, for the record."""
    if regressions is None or regressions.is_empty():
        return []

    keys = [DUMP_DATE, Col.MODEL, SCOPE, ALERT_LEVEL, CHANGE, CI_LOW, CI_HIGH, Q_BH]
    return list(regressions.select(keys).to_dicts())  # a handful of rows


class Progress(Protocol):
    """Where a run says how far it is (the terminal's progress bar; nothing by default)."""

    def begin(self, nights: int, files: int) -> None: ...
    def file_done(self, report: FileReport) -> None: ...
    def step(self, what: str) -> None: ...
    def night_done(self, night: str | None) -> None: ...


class NoProgress:
    """Progress told to nobody (not a terminal, ``--quiet``, the Prefect engine's logs)."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def begin(self, nights: int, files: int) -> None:
        pass

    def file_done(self, report: FileReport) -> None:
        pass

    def step(self, what: str) -> None:
        pass

    def night_done(self, night: str | None) -> None:
        pass


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class RunContext:
    """Who runs and how, decided once (the command line, the environment or a flow's
    parameters) and passed down whole: its id, command and engine, its progress display,
    the regression options, and what ends it failed."""

    run_id: str = field(default_factory=new_run_id)
    command: str = ""
    engine: str = "local"
    progress: Progress = field(default_factory=NoProgress)
    options: RunOptions = field(default_factory=RunOptions)
