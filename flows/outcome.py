"""What a run hands back: ``Outcome`` (its verdict, nights scored, waiting or failed,
regressions, standing changes, imports) and ``RunSummary`` (counts and timings summed over
its nights), kept small (the tables are on disk). The faces (``flows.present``) print them;
the run records (``flows.records``) store them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from flows.importers.kaggle_report import ImportReport
from flows.mismatches import MISMATCHES_LISTED
from flows.records import Verdict, new_run_id
from flows.score import ScoreResult
from flows.store.output import Output
from schemas.columns import AS_OF, RULES
from schemas.comparisons import (
    ALERT_LEVEL,
    CHANGE_KIND,
    DEFAULT_LEVEL,
    LEVEL_ALERT,
    LEVEL_WATCH,
    OVERALL,
    SCOPE,
    ChangeKind,
)
from schemas.contract import DUMP_DATE, Col
from transforms.compare.night import nothing_scored


@dataclass
class RunSummary:
    """What a run scored, kept small (the tables are on disk): counts, episodes scored and
    not per category, reasons, formula versions and timings, summed over its nights."""

    formulas: dict[str, str]
    counts: Counter[str] = field(default_factory=Counter)
    scored: Counter[str] = field(default_factory=Counter)  # by category
    unscored: Counter[str] = field(default_factory=Counter)  # by category ("(unknown)")
    reasons: Counter[str] = field(default_factory=Counter)  # by rule
    timings: dict[str, float] = field(default_factory=dict)  # seconds by step
    rejected_files: list[tuple[str, list[str]]] = field(default_factory=list)
    # The first episodes (MISMATCHES_LISTED) whose score differs from the reported one.
    mismatched: list[dict[str, Any]] = field(default_factory=list)

    def add(self, result: ScoreResult) -> None:
        self.counts.update(result.counts)
        room = MISMATCHES_LISTED - len(self.mismatched)
        self.mismatched += result.mismatches.listed[:room]
        self.rejected_files += [
            (f.file, f.problems) for f in result.files if f.status == "rejected"
        ]
        # Lazily: polars' eager group_by of a night's episodes by one compact key took
        # 280 MB at 4 M episodes.
        scored = result.scores.lazy().group_by(Col.CATEGORY).len().collect()
        self.scored.update(dict(scored.iter_rows()))
        unscored = result.rejects.group_by(pl.col(Col.CATEGORY).fill_null("(unknown)")).len()
        self.unscored.update(dict(unscored.iter_rows()))
        rules = result.rejects.select(pl.col(RULES).explode().drop_nulls()).to_series()
        self.reasons.update(dict(rules.value_counts().iter_rows()))


@dataclass
class Outcome:
    """What a run did, for the terminal, the run log and the Prefect artifact."""

    kind: str
    out: Output
    result: RunSummary | None = None
    nights_scored: list[str] = field(default_factory=list)
    nights_unchanged: list[str] = field(default_factory=list)
    nights_waiting: list[str] = field(default_factory=list)  # no _SUCCESS marker yet
    nights_input_gone: list[str] = field(default_factory=list)  # in OUT, input deleted
    nights_failed: dict[str, str] = field(default_factory=dict)  # night -> why
    # night -> model -> why: models with episodes on a night but none scored
    models_unscored: dict[str, dict[str, str]] = field(default_factory=dict)
    # night -> the models of its baseline night that ran nothing on it
    models_absent: dict[str, list[str]] = field(default_factory=dict)
    verdict: Verdict = field(default_factory=Verdict)
    # Nights not scored whose regressions were made again (their baseline was rescored).
    regressions_refreshed: list[str] = field(default_factory=list)
    # The output's formula set, and its nights scored with other versions (what differs).
    formula_set: dict[str, str] = field(default_factory=dict)
    nights_off_set: dict[str, str] = field(default_factory=dict)
    diff: pl.DataFrame | None = None
    not_rescored: int = 0  # a rescore's reported scores alone (no formula input): kept as they are
    # The regressions rows of the nights scored whose level is alert or watch.
    regressions: pl.DataFrame | None = None
    # The standing_changes rows the run made that it reports (``noticed``).
    standing_changes: pl.DataFrame | None = None
    # The task_changes rows of the results re-run (``rerun``), every one: each is told.
    reruns: pl.DataFrame | None = None
    # The harness runs a nightly imported first (``--runs``), each run's outcome.
    imports: ImportReport | None = None
    level: float = DEFAULT_LEVEL  # the level of the intervals this run made (``--level``)
    # Each night's interval level in the output after the run (the run that scored it).
    levels: dict[str | None, float] = field(default_factory=dict)
    dry_run: bool = False
    seconds: float = 0.0
    run_id: str = field(default_factory=new_run_id)


FLAGGED = (LEVEL_ALERT, LEVEL_WATCH)  # the regressions a run reports


def noticed() -> pl.Expr:
    """The standing changes a run reports: every flagged one, and each model's overall row,
    whatever moved it (a re-run within noise, a rank moved by others, a model new, gone,
    covering other tasks or scored anew): every change is told, its noise a label."""
    return pl.col(ALERT_LEVEL).is_in(FLAGGED) | (pl.col(SCOPE) == OVERALL)


def reran() -> pl.Expr:
    """The ``task_changes`` rows a run reports: every result re-run (a newer night's)."""
    return pl.col(CHANGE_KIND) == ChangeKind.RERUN


def alerts(regressions: pl.DataFrame, night: str = DUMP_DATE) -> list[str]:
    """Each regression alert (of ``regressions`` or ``standing_changes``: ``night`` its
    night column), named: model (scope, night)."""
    fired = regressions.filter(pl.col(ALERT_LEVEL) == LEVEL_ALERT)
    where = " standing as of " if night == AS_OF else " "
    return [f"{m} ({s},{where}{n})" for n, m, s in fired.select(night, Col.MODEL, SCOPE).rows()]


def unscored_night(counts: Mapping[str, int]) -> str | None:
    """Why a night with no episode scored fails (None where some episode was scored).

    >>> unscored_night({"episodes_scored": 0, "episodes_harness_error": 3,
    ...     "episodes_rejected": 1, "rows_read": 40})
    'no episode scored: 4 episode(s), 3 harness error(s), 1 rejected'
    """
    if counts.get("episodes_scored", 0):
        return None
    errors, rejected = counts.get("episodes_harness_error", 0), counts.get("episodes_rejected", 0)
    if not (errors or rejected):
        return f"no episode scored: no episode in {counts.get('rows_read', 0)} row(s)"
    return nothing_scored(errors, rejected)
