"""The runs table: written last, it pins every table's version; local and on moto."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from flows.reading import FileReport
from flows.store.delta.tables import (
    read_table,
    table_version,
    table_versions,
    vacuum,
    write_night,
)
from flows.store.errors import StorageError
from flows.store.runs_table import (
    RunRow,
    latest_finished,
    night_fingerprints,
    read_pinned,
    read_runs,
    record_run,
    repair,
    versions_as_of,
)
from flows.store.state import RecordedFile
from schemas.columns import RunStatus
from tests.store.frames import night_frame

TABLES = ("episode_scores", "model_scores")
T0 = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)


def write_run(out, run_id: str, nights: dict, *, record: RunStatus | None, start: int) -> None:
    """A run replacing `nights` ({night: first episode number}) in both tables.

    `record=None` is a run killed before it could append its rows.
    """
    for night, offset in nights.items():
        for table in TABLES:
            write_night(
                out,
                table,
                night_frame(night, n=3, offset=offset),
                night,
                commit_metadata={"run_id": run_id},
            )
    if record is None:
        return
    versions = table_versions(out, TABLES)
    started = T0 + timedelta(hours=start)
    record_run(
        out,
        [
            RunRow(
                run_id,
                "nightly",
                record,
                started,
                started + timedelta(minutes=5),
                night,
                versions,
                counts={"rows_read": 3, "episodes_scored": 3},
                formula_versions={"procedural_learning": "v2"},
                scorer_version="0.1.0",
                input_fingerprint=f"fp-{night}-{offset}",
            )
            for night, offset in nights.items()
        ],
    )


def episodes(frame: pl.LazyFrame, night: str | None = "2026-12-01") -> list[str]:
    rows = frame.collect()
    rows = rows.filter(
        pl.col("dump_date").is_null() if night is None else pl.col("dump_date") == night
    )
    return sorted(rows["episode_id"].to_list())


def test_readers_of_pinned_versions_never_see_half_a_run(out):
    write_run(
        out, "run-1", {"2026-12-01": 0, "2026-12-02": 10}, record=RunStatus.SUCCEEDED, start=0
    )
    # run-2 replaces 2026-12-01 in both tables, then dies before its runs row
    write_run(out, "run-2", {"2026-12-01": 50}, record=None, start=1)
    for table in TABLES:
        assert episodes(read_pinned(out, table)) == ["e0", "e1", "e2"]
        assert episodes(read_table(out, table)) == ["e50", "e51", "e52"]  # latest: moved
    # and mid-run: one table written, the other not yet
    write_night(out, "episode_scores", night_frame("2026-12-02", 3, 90), "2026-12-02")
    assert episodes(read_pinned(out, "episode_scores"), "2026-12-02") == ["e10", "e11", "e12"]
    latest = latest_finished(out)
    assert latest is not None and latest.run_id == "run-1"


def test_time_travel_by_run_id(out):
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    write_run(out, "run-2", {"2026-12-01": 20}, record=RunStatus.SUCCEEDED, start=1)
    write_run(out, "run-3", {"2026-12-01": 40}, record=RunStatus.FAILED, start=2)
    assert episodes(read_pinned(out, "model_scores")) == ["e20", "e21", "e22"]
    assert episodes(read_pinned(out, "model_scores", "run-1")) == ["e0", "e1", "e2"]
    assert versions_as_of(out, "run-1") == {"episode_scores": 0, "model_scores": 0}
    assert versions_as_of(out) == {"episode_scores": 1, "model_scores": 1}
    with pytest.raises(StorageError, match="run run-3 failed"):
        versions_as_of(out, "run-3")
    with pytest.raises(StorageError, match="no run run-9"):
        read_pinned(out, "model_scores", "run-9")
    with pytest.raises(StorageError, match="recorded no version"):
        read_pinned(out, "task_scores")


def test_latest_finished_row_round_trips(out):
    write_run(out, "run-1", {"2026-12-01": 0, None: 5}, record=RunStatus.SUCCEEDED, start=0)
    latest = latest_finished(out)
    assert latest is not None
    assert latest.status is RunStatus.SUCCEEDED and latest.kind == "nightly"
    assert latest.counts == {"rows_read": 3, "episodes_scored": 3}
    assert latest.formula_versions == {"procedural_learning": "v2"}
    assert latest.finished == T0 + timedelta(minutes=5)
    assert read_runs(out).height == 2
    assert night_fingerprints(out) == {"2026-12-01": "fp-2026-12-01-0", None: "fp-None-5"}


def test_no_succeeded_run_pins_nothing(out):
    assert latest_finished(out) is None
    assert read_runs(out).is_empty()
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.FAILED, start=0)
    assert latest_finished(out) is None
    with pytest.raises(StorageError, match="no succeeded run"):
        read_pinned(out, "episode_scores")


def test_repair_brings_latest_back_to_the_pins(out):
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    write_run(out, "run-2", {"2026-12-01": 50, "2026-12-02": 60}, record=None, start=1)
    write_night(out, "task_scores", night_frame("2026-12-02"), "2026-12-02")  # unpinned
    moved = repair(out, (*TABLES, "task_scores", "absent"))
    assert set(moved) == {"episode_scores", "model_scores", "task_scores"}
    for table in TABLES:
        latest = read_table(out, table).collect()
        assert latest.equals(read_pinned(out, table).collect())
    assert read_table(out, "task_scores").collect().is_empty()
    assert repair(out, TABLES) == {}  # latest is pinned content, but one version on
    # the dead run's nights are not recorded: nightly scores them again
    assert night_fingerprints(out) == {"2026-12-01": "fp-2026-12-01-0"}


def test_a_run_that_scored_nothing_still_pins(out):
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    versions = table_versions(out, TABLES)
    later = T0 + timedelta(days=1)
    record_run(out, [RunRow("run-2", "nightly", RunStatus.SUCCEEDED, later, later, None, versions)])
    assert latest_finished(out).run_id == "run-2"  # type: ignore[union-attr]
    assert versions_as_of(out) == versions
    assert night_fingerprints(out) == {"2026-12-01": "fp-2026-12-01-0"}


def test_rows_of_one_run_must_agree(tmp_path):
    from flows.store.location import Location

    out = Location.parse(str(tmp_path))
    row = RunRow("r", "score", RunStatus.SUCCEEDED, T0, T0, "2026-12-01", {"t": 1})
    other = RunRow("r2", "score", RunStatus.SUCCEEDED, T0, T0, "2026-12-02", {"t": 1})
    with pytest.raises(ValueError, match="share run id"):
        record_run(out, [row, other])
    with pytest.raises(ValueError, match="unknown count"):
        record_run(
            out, [RunRow("r", "score", RunStatus.SUCCEEDED, T0, T0, None, {}, counts={"rows": 1})]
        )
    with pytest.raises(ValueError, match="at least one"):
        record_run(out, [])


def test_repair_leaves_a_vacuumed_table_alone(out):
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    write_run(out, "run-2", {"2026-12-01": 30}, record=RunStatus.SUCCEEDED, start=1)
    assert vacuum(out, TABLES, retain=timedelta(0))  # run-1's files: two commits each
    assert table_version(out, "episode_scores") == 3
    assert repair(out, TABLES) == {}
    assert episodes(read_pinned(out, "episode_scores")) == ["e30", "e31", "e32"]


def test_a_runs_table_of_an_earlier_cogscore_takes_the_new_count_columns(out) -> None:
    """An output whose runs table predates the contract 1.2 counts: a new run appends its
    row with them (the table gains the columns), the earlier rows read them as null."""
    write_run(out, "old", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    older = read_runs(out).drop("episodes_score_mismatch", "episodes_verdict_mismatch")
    where = out.child("runs")
    from deltalake import write_deltalake

    from flows.store.location import storage_options

    write_deltalake(
        where.uri,
        older.to_arrow(compat_level=pl.CompatLevel.oldest()),
        mode="overwrite",
        schema_mode="overwrite",
        storage_options=storage_options(where) or None,
    )
    assert (
        "episodes_score_mismatch"
        not in pl.from_arrow(read_table(out, "runs").collect().to_arrow()).columns
    )
    write_run(out, "new", {"2026-12-02": 3}, record=RunStatus.SUCCEEDED, start=1)
    runs = read_runs(out)
    assert runs["run_id"].to_list() == ["old", "new"]
    assert runs["episodes_score_mismatch"].to_list() == [None, None]  # write_run gives none
    assert latest_finished(out) is not None


def test_the_rows_written_meet_the_runs_tables_declaration(tmp_path) -> None:
    """``schemas.tables.RUNS_TABLE`` is what ``record_run`` writes: its columns, in order,
    of their dtypes, nulls only where declared, a status of the declared values."""
    from flows.store.location import Location
    from schemas.tables import RUNS_TABLE

    out = Location.parse(str(tmp_path))
    full = RunRow(
        "r", "nightly", RunStatus.SUCCEEDED, T0, T0, "2026-12-01", {"episode_scores": 1},
        counts={"rows_read": 3}, formula_versions={"concept": "v1"}, scorer_version="0.1",
        input_fingerprint="sha256:x", formula_set={"concept": "v1"}, input="/dump",
        partitioned=True, files=[{"file": "a"}], details={"engine": "local"},
    )  # fmt: skip
    bare = RunRow("r", "nightly", RunStatus.FAILED, T0, T0, None, {"episode_scores": 1})
    record_run(out, [full, bare])
    rows = read_runs(out)
    assert rows.schema == pl.Schema(RUNS_TABLE.dtypes)
    for name, column in RUNS_TABLE.columns.items():
        if not column.nullable:
            assert rows[name].null_count() == 0, name
        if column.isin is not None:
            assert set(rows[name].to_list()) <= set(column.isin), name


def test_an_outputs_runs_read_again_is_the_tables_latest_version(out):
    """``Output.runs`` keeps the rows it read by the table's version: asked again, it gives
    the rows of every run recorded since, never the ones it read before them."""
    from flows.store.output import Output

    output = Output(out)
    assert output.runs().is_empty()
    write_run(out, "run-1", {"2026-12-01": 0}, record=RunStatus.SUCCEEDED, start=0)
    assert output.runs()["run_id"].to_list() == ["run-1"]
    first = output.runs()
    write_run(out, "run-2", {"2026-12-02": 3}, record=RunStatus.SUCCEEDED, start=10)
    assert output.runs()["run_id"].to_list() == ["run-1", "run-2"]
    assert first["run_id"].to_list() == ["run-1"]
    assert output.runs().equals(read_runs(out))


def test_the_state_reads_every_field_a_run_records_of_its_files() -> None:
    """``RecordedFile`` (the store's reading) and ``FileReport.record`` (the run's writing)
    name the same fields; a record of an older run reads with what it lacks as None."""
    report = FileReport(
        "dump_date=2026-12-01/f.parquet",
        3,
        10,
        "2026-12-01",
        digest="blake3:ab",
        mtime_ns=5,
        status="rejected",
        problems=["unreadable"],
        link_target="/elsewhere/f.parquet",
    )
    recorded = RecordedFile.of(json.loads(json.dumps(report.record())))
    assert asdict(recorded) == {**report.record(), "problems": ("unreadable",)}
    older = RecordedFile.of({"file": "f.parquet", "bytes": 10, "sha256": "ab"})
    assert (older.mtime_ns, older.status, older.link_target, older.problems) == (None,) * 3 + ((),)
    assert older.digest == "ab"  # runs before issue 48 recorded a sha256 as ``sha256``
