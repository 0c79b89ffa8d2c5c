"""The 13 real runs of ``../shared/learningbench/kaggle_runs`` through ``import_runs`` and
the real harness: 12 import and their rows score exactly what Kaggle recorded and carry the
usage the run files record; the run with no task file is reported with its reason; a second
import writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from flows import runs
from flows.importers.kaggle import import_runs
from flows.importers.kaggle_files import ASSISTANT, parse_run
from flows.importers.kaggle_report import ImportReport
from flows.store.location import Location
from schemas.kaggle import Outcome, Reason
from tests.importers.kaggle_reference import reference_score
from tests.learningbench import RUNS, TASKS
from tests.tables import read_table


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


def _usage_in_the_file(run_file: Path) -> dict[str, Any]:
    """What a run file records of its calls (``conversations[].requests[].metrics``), summed
    in the file's order: tokens (proto3 JSON drops a 0: absent counts 0 where a request
    records metrics), the cost in US dollars (each request's input and output nanodollars
    over 1e9, added left to right), the latency; and the replies whose request records none.
    Read from the JSON here, apart from the importer's parser."""
    raw = json.loads(run_file.read_text(encoding="utf-8"))
    requests = [r for c in raw["conversations"] for r in c.get("requests", [])]
    recorded = [r["metrics"] for r in requests if r.get("metrics")]
    cost = latency = None
    for metrics in recorded:
        nanos = [metrics.get(f"{side}TokensCostNanodollars") for side in ("input", "output")]
        if any(n is not None for n in nanos):
            call = sum(int(n) for n in nanos if n is not None) / 1e9
            cost = call if cost is None else cost + call
        if metrics.get("totalBackendLatencyMs") is not None:
            ms = float(int(metrics["totalBackendLatencyMs"]))
            latency = ms if latency is None else latency + ms
    replied = [
        r for r in requests if r.get("contents") and r["contents"][-1].get("role") == ASSISTANT
    ]
    return {
        "input_tokens": sum(int(m.get("inputTokens", 0)) for m in recorded) if recorded else None,
        "output_tokens": sum(int(m.get("outputTokens", 0)) for m in recorded) if recorded else None,
        "cost_usd": cost,
        "latency_ms": latency,
        "replies_without_usage": sum(1 for r in replied if not r.get("metrics")),
        "conversations": [c.get("metrics") or {} for c in raw["conversations"]],
    }


def test_every_imported_run_carries_the_usage_its_file_records(
    imported: tuple[ImportReport, Path], tmp_path: Path
) -> None:
    """Each imported run's episode, scored, has the sums of its run file's request metrics
    (exactly: tokens as integers, costs added in the file's order), as do its task and
    model rows (one run per model); the token sums are the harness's own conversation
    totals; one request of one run records no metrics and is counted, not taken for 0."""
    report, dump = imported
    runs.score(dump, tmp_path / "out")
    episodes = {r["task"]: r for r in read_table(tmp_path / "out", "episode_scores").to_dicts()}
    models = {r["model"]: r for r in read_table(tmp_path / "out", "model_scores").to_dicts()}
    columns = ("input_tokens", "output_tokens", "cost_usd", "latency_ms")
    missing = {}
    for run in report.runs:
        if run.outcome is not Outcome.IMPORTED:
            continue
        assert run.task is not None and run.model is not None
        want = _usage_in_the_file(RUNS / run.run)
        episode = episodes[run.task]
        assert json.loads(episode["source_names"])["model"] == run.model  # the run's own name
        model = models[episode["model"]]
        for column in columns:
            assert want[column] is not None, (run.run, column)  # every run records usage
            assert episode[column] == want[column], (run.run, column)
            assert model[column] == want[column], (run.run, column)
        assert episode["replies_without_usage"] == want["replies_without_usage"], run.run
        assert (model["usage_episodes"], model["usage_incomplete"]) == (
            1,
            int(want["replies_without_usage"] > 0),
        )
        harness = want["conversations"]
        assert episode["input_tokens"] == sum(int(c.get("inputTokens", 0)) for c in harness)
        assert episode["output_tokens"] == sum(int(c.get("outputTokens", 0)) for c in harness)
        nanos = sum(
            int(c.get(f"{side}TokensCostNanodollars", 0))
            for c in harness
            for side in ("input", "output")
        )
        assert abs(episode["cost_usd"] - nanos / 1e9) <= 1e-15 * max(1.0, nanos / 1e9)
        missing[run.task] = episode["replies_without_usage"]
    assert {task: n for task, n in missing.items() if n} == {"affine_cipher_word_rf_learning": 1}
    # The harness's wall time: the manifest's ``total_wall_sec`` (rounded to 0.1 s there),
    # from the run's start and end times, on the episode and its model's row.
    manifest = json.loads((RUNS / "manifest.json").read_text(encoding="utf-8"))
    walls = {m["metrics"]["task_name"]: m["metrics"]["total_wall_sec"] for m in manifest.values()}
    for task in missing:
        episode = episodes[task]
        assert episode["wall_ms"] is not None, task
        assert abs(episode["wall_ms"] / 1000 - walls[task]) <= 0.05 + 1e-9, task
        assert models[episode["model"]]["wall_ms"] == episode["wall_ms"], task
