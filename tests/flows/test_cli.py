"""The command line end to end: local and Prefect engines, Dask through prefect-dask."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.score import FilePart
from tests.dumps import example_dump_counts
from tests.tables import assert_same_tables, last_run, read_table
from transforms.registry import DEFAULTS as _DEFAULTS

# A new output pins the registry's default (the task files' rounding, v3, since issue 28).
DEFAULT_PROCEDURAL = _DEFAULTS["procedural_learning"]  # type: ignore[index]  # a str key

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def cogscore(*args: str | Path) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def failing(*args: str | Path) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_score_writes_the_tables_and_prints_the_leaderboard(tmp_path: Path) -> None:
    output = cogscore("score", EXAMPLE_DUMP, "--out", tmp_path, "--engine", "local")
    assert "standing as of 2026-12-01" in output and "oracle-large" in output
    built = example_dump_counts()  # what the example dump's builder wrote and spoiled
    assert (
        f"{built['rows_read']} rows read = {built['rows_scored']} scored"
        f" + {built['rows_rejected']} rejected" in output
    )
    scores = read_table(tmp_path, "episode_scores")
    assert set(scores["dump_date"].cast(pl.String)) == {"2026-11-30", "2026-12-01"}


def test_usage_errors_are_messages(tmp_path: Path) -> None:
    assert "runtime_rl has no formula 'v7'" in failing(
        "score", EXAMPLE_DUMP, "--out", tmp_path, "--formula", "runtime_rl=v7"
    )
    assert "does not exist" in failing("score", tmp_path / "nope", "--out", tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert "not a writable folder" in failing("score", EXAMPLE_DUMP, "--out", blocker / "out")
    assert "CATEGORY=VERSION" in failing("rescore", EXAMPLE_DUMP, "--out", tmp_path)
    assert "not a date" in failing(
        "rescore",
        EXAMPLE_DUMP,
        "--out",
        tmp_path,
        "--formula",
        "procedural_learning=v1",
        "--since",
        "yesterday",
    )


def test_prefect_flows_give_the_local_tables(prefect_home: Path, tmp_path: Path) -> None:
    cogscore("score", EXAMPLE_DUMP, "--out", tmp_path / "local", "--engine", "local")
    output = cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "flow", "--engine", "prefect")
    assert "nightly: 2 night(s) scored" in output
    assert_same_tables(tmp_path / "flow", tmp_path / "local")
    again = cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "flow", "--engine", "prefect")
    assert "nothing new" in again
    moved = cogscore(
        "rescore",
        EXAMPLE_DUMP,
        "--out",
        tmp_path / "flow",
        "--engine",
        "prefect",
        "--formula",
        "procedural_learning=v1",
        "--since",
        "2026-12-01",
    )
    assert "what the rescore moved" in moved
    assert_rescore_diff(tmp_path / "flow", tmp_path / "local", "2026-12-01")


def test_the_prefect_flows_score_as_many_files_at_once_as_the_local_engine(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect's default task runner starts every submitted task at once: every file of a
    night in memory together (a night of 1.5 M episodes peaked at 19 GiB). The flows score
    ``FILES_AT_ONCE`` files at a time, as the local engine does."""
    import threading
    import time

    from flows import mappers, prefect_flows
    from flows import score as score_module

    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file, as many as files
    real, lock, running, most = prefect_flows.score_batch, threading.Lock(), [0], [0]

    def counted(*args: object, **kwargs: object) -> object:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.3)  # long enough for every file's task to have started, if allowed
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(prefect_flows, "score_batch", counted)
    cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "flow", "--engine", "prefect")
    assert most[0] == mappers.FILES_AT_ONCE


def test_the_prefect_flows_stage_each_file_before_scoring_more(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scored file's rows wait for their staging in memory: no more of them at a time
    than files scored at once. Mapped as a scoring task then a staging task, every file of
    a night was scored before the first was staged."""
    import threading

    from flows import mappers, prefect_flows
    from flows import score as score_module

    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file, as many as files
    score, stage = prefect_flows.score_batch, prefect_flows.stage
    lock, waiting, most = threading.Lock(), [0], [0]

    def scored(*args: object, **kwargs: object) -> object:
        part = score(*args, **kwargs)  # type: ignore[arg-type]
        with lock:
            waiting[0] += 1
            most[0] = max(most[0], waiting[0])
        return part

    def staged(*args: object, **kwargs: object) -> object:
        with lock:
            waiting[0] -= 1
        return stage(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prefect_flows, "score_batch", scored)
    monkeypatch.setattr(prefect_flows, "stage", staged)
    cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "flow", "--engine", "prefect")
    assert waiting[0] == 0 and 1 <= most[0] <= mappers.FILES_AT_ONCE


def test_the_prefect_flows_hold_no_scored_file_once_it_is_staged(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect keeps a persisted task result in memory for the flow run unless told not
    to: every file's scored rows (the cached scoring) stayed to the end of the night
    (1.3 GiB at 1.5 M episodes against 0.87). When a night's parts are assembled, no
    file's full scores are alive any more."""
    import gc
    import weakref

    from flows import job, prefect_flows
    from flows import score as score_module

    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file
    score, assemble = prefect_flows.score_batch, job.assemble
    scored: list[weakref.ref[object]] = []
    alive: list[int] = []

    def tracked(*args: object, **kwargs: object) -> object:
        part = score(*args, **kwargs)  # type: ignore[arg-type]
        scored.append(weakref.ref(part.scores))
        return part

    def assembling(*args: object, **kwargs: object) -> object:
        gc.collect()
        alive.append(sum(ref() is not None for ref in scored))
        return assemble(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prefect_flows, "score_batch", tracked)
    monkeypatch.setattr(job, "assemble", assembling)
    cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "flow", "--engine", "prefect")
    nights = {p.parent.name for p in EXAMPLE_DUMP.rglob("*.parquet")}
    assert len(scored) == len(list(EXAMPLE_DUMP.rglob("*.parquet")))
    assert alive == [0] * len(nights)


def expected_rescore(local: Path, night: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, category or "overall") -> (old, new) score of a rescore of ``night`` to
    procedural v1, computed from a v2 run's episode scores with the README's definitions:
    v1 = 0.5 x consistency (the weighted mean) + 0.5 x transfer (the test score); a task
    is the mean of its episodes, a category the mean of its tasks, a model's overall score
    the mean of its tasks (each task weighs the same)."""
    episodes = read_table(local, "episode_scores").filter(pl.col("dump_date") == night)
    v1 = 0.5 * pl.col("consistency") + 0.5 * pl.col("transfer")
    episodes = episodes.with_columns(
        pl.col("score").alias("old"),
        pl.when(pl.col("category") == "procedural_learning")
        .then(v1)
        .otherwise(pl.col("score"))
        .alias("new"),
    )
    tasks = episodes.group_by("model", "category", "task").agg(pl.col("old", "new").mean())
    categories = tasks.group_by("model", "category").agg(pl.col("old", "new").mean())
    models = tasks.group_by("model").agg(pl.col("old", "new").mean())
    out = {(r["model"], r["category"]): (r["old"], r["new"]) for r in categories.to_dicts()}
    out |= {(r["model"], "overall"): (r["old"], r["new"]) for r in models.to_dicts()}
    return out


def assert_rescore_diff(out: Path, local: Path, night: str) -> None:
    """The rescore_diff table holds what the rescore moved, computed independently."""
    diff = read_table(out, "rescore_diff")
    assert set(diff["dump_date"].cast(pl.String)) == {night}  # --since: that night only
    rows = {(r["model"], r["category"]): r for r in diff.to_dicts()}
    want = expected_rescore(local, night)
    assert set(rows) == set(want)
    for key, (old, new) in want.items():
        row = rows[key]
        assert row["old_score"] == pytest.approx(old, rel=1e-12), key
        assert row["new_score"] == pytest.approx(new, rel=1e-12), key
        assert row["delta"] == pytest.approx(new - old, abs=1e-12), key
    procedural = [r for (_, c), r in rows.items() if c == "procedural_learning"]
    assert procedural and all(r["delta"] != 0 for r in procedural)  # v1 moved every model
    assert {(r["old_formula"], r["new_formula"]) for r in procedural} == {
        (DEFAULT_PROCEDURAL, "v1")
    }
    others = [r for (_, c), r in rows.items() if c not in ("procedural_learning", "overall")]
    assert others and all(r["delta"] == 0 for r in others)
    overall = {m: r for (m, c), r in rows.items() if c == "overall"}
    for model, row in overall.items():  # ranks: 1 + the models with a better score
        for side in ("old", "new"):
            better = sum(o[f"{side}_score"] > row[f"{side}_score"] for o in overall.values())
            assert row[f"{side}_rank"] == 1 + better, (model, side)
        assert "procedural_learning=v1" in row["new_formula"]
        assert f"procedural_learning={DEFAULT_PROCEDURAL}" in row["old_formula"]


def test_prefect_dask_task_runner_gives_the_local_tables(
    prefect_api: str, prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through prefect-dask's runner as with plain Dask (issue 48): a file task hands the
    flow no row of the episodes it scored (they are in the files its worker staged), and
    the tables are the local engine's."""
    from distributed import LocalCluster

    from flows import prefect_flows

    handed: list[FilePart] = []

    def mapper(*args: Any) -> list[FilePart]:
        parts = original(*args)
        handed.extend(parts)
        return parts

    original = prefect_flows.prefect_mapper
    monkeypatch.setattr(prefect_flows, "prefect_mapper", mapper)
    cogscore("score", EXAMPLE_DUMP, "--out", tmp_path / "local", "--engine", "local")
    # Workers report to the same Prefect API (else each would start a server of its own).
    saved = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = prefect_api
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            cogscore(
                "score",
                EXAMPLE_DUMP,
                "--out",
                tmp_path / "dask",
                "--engine",
                "prefect",
                "--dask-address",
                cluster.scheduler_address,
            )
    finally:
        if saved is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = saved
    assert handed and all(part.in_files and part.scores.is_empty() for part in handed)
    assert_same_tables(tmp_path / "dask", tmp_path / "local")


def test_a_cached_file_result_records_this_files_own_mtime(
    prefect_home: Path, tmp_path: Path
) -> None:
    import shutil

    cogscore("nightly", EXAMPLE_DUMP, "--out", tmp_path / "first", "--engine", "prefect")
    copy = tmp_path / "copy"
    shutil.copytree(EXAMPLE_DUMP, copy)  # same bytes: the task cache answers
    for path in copy.rglob("*.parquet"):
        os.utime(path, ns=(1_000_000_000_000, 1_000_000_000_000))
    cogscore("nightly", copy, "--out", tmp_path / "second", "--engine", "prefect")
    manifest = last_run(tmp_path / "second")
    assert {f["mtime_ns"] for f in manifest["files"]} == {1_000_000_000_000}
