"""The 13 real runs of ``../shared/learningbench/kaggle_runs`` through ``import_runs`` and
the real harness: 12 import and their rows score exactly what Kaggle recorded; the run with
no task file is reported with its reason; a second import writes nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from flows.importers.kaggle import import_runs
from flows.importers.kaggle_files import parse_run
from flows.importers.kaggle_report import ImportReport
from flows.storage.location import Location
from schemas.kaggle import Outcome, Reason
from tests.importers.kaggle_reference import reference_score

BENCH = Path(__file__).parents[2] / ".." / "shared" / "learningbench"
RUNS, TASKS = BENCH / "kaggle_runs", BENCH / "tasks"


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.parquet"))
    }


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[ImportReport, Path]:
    out = tmp_path_factory.mktemp("dump")
    report = import_runs(Location.parse(str(RUNS)), TASKS, Location.parse(str(out)))
    return report, out


def test_twelve_runs_import_and_the_one_without_a_task_file_is_reported(
    imported: tuple[ImportReport, Path],
) -> None:
    report, _ = imported
    assert len(report.runs) == len(list(RUNS.rglob("*.run.json"))) == 13
    rejected = [r for r in report.runs if r.outcome is Outcome.REJECTED]
    assert [(r.task, r.reasons) for r in rejected] == [
        ("deceptive_stack_machine_obs_learning", [Reason.NO_TASK_FILE])
    ]
    assert report.imported == 12


def test_every_imported_run_scores_what_kaggle_recorded(
    imported: tuple[ImportReport, Path],
) -> None:
    report, out = imported
    for run in report.runs:
        if run.outcome is not Outcome.IMPORTED:
            continue
        assert run.file is not None
        rows = pl.read_parquet(out / run.file)
        recorded = parse_run((RUNS / run.run).read_bytes()).reported_score
        assert recorded is not None
        assert run.task_score == recorded, run.run  # the replay returned the recorded score
        reported = rows.filter(pl.col("kind") == "episode_end")["reported_score"].to_list()
        assert reported == [recorded]
        assert reference_score(rows) == recorded, run.run


def test_a_call_with_no_reply_is_replayed_as_a_failed_call_and_reported(
    imported: tuple[ImportReport, Path],
) -> None:
    report, out = imported
    noted = {r.task: r.reasons for r in report.runs if r.outcome is Outcome.IMPORTED and r.reasons}
    assert noted == {"disjunctive_noise_concept_learning": [Reason.REPLY_MISSING]}
    run = next(r for r in report.runs if r.task == "disjunctive_noise_concept_learning")
    assert run.file is not None
    rows = pl.read_parquet(out / run.file)
    failed = rows.filter((pl.col("role") == "assistant") & pl.col("content").is_null())
    # a call that failed left no reply: its prompt joined the next request's, so a request
    # with k prompts from the task holds k - 1 failed calls, each a row with no content
    record = parse_run((RUNS / run.run).read_bytes())
    calls = [sum(1 for role, _ in r.sent if role == "user") for r in record.requests]
    assert failed.height == sum(k - 1 for k in calls) > 0


def test_importing_the_same_runs_again_writes_nothing(imported: tuple[ImportReport, Path]) -> None:
    _, out = imported
    before = _digests(out)
    again = import_runs(Location.parse(str(RUNS)), TASKS, Location.parse(str(out)))
    assert again.imported == 12
    assert not any(r.written for r in again.runs)
    assert _digests(out) == before
