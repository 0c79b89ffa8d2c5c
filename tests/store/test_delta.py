"""Delta tables: one night per commit, time travel, vacuum, staged files; local and on moto."""

from __future__ import annotations

import math
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import deltalake
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.store import objects
from flows.store.delta.layout import check_layout, uncommitted_files
from flows.store.delta.staged import _stats, commit_files, write_data_files
from flows.store.delta.tables import (
    _options,
    add_actions,
    history,
    open_table,
    partitions_within,
    read_table,
    restore,
    table_version,
    table_versions,
    vacuum,
    write_night,
)
from flows.store.errors import LegacyLayout, StorageError
from flows.store.location import Location
from tests.s3server import free_port
from tests.store.frames import night_frame
from tests.tables import strict_json


def files_by_night(out: Location, table: str, version: int | None = None) -> dict:
    table_ = deltalake.DeltaTable(
        out.child(table).uri, storage_options=_options(out), version=version
    )
    actions = pa.table(table_.get_add_actions(flatten=True)).to_pylist()
    found: dict = {}
    for action in actions:
        found.setdefault(action["partition.dump_date"], set()).add(action["path"])
    return found


def test_one_night_replaced_other_nights_files_untouched(out):
    assert write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01") == 0
    v1 = write_night(out, "scores", night_frame("2026-12-02", offset=100), "2026-12-02")
    before = files_by_night(out, "scores")
    v2 = write_night(
        out,
        "scores",
        night_frame("2026-12-01", n=3, offset=50),
        "2026-12-01",
        commit_metadata={"run_id": "run-7"},
    )
    assert (v1, v2) == (1, 2)
    after = files_by_night(out, "scores")
    assert after["2026-12-02"] == before["2026-12-02"]  # the same files, not rewritten
    assert after["2026-12-01"].isdisjoint(before["2026-12-01"])
    rows = read_table(out, "scores").collect().sort("episode_id")
    assert rows.filter(pl.col("dump_date") == "2026-12-01")["episode_id"].to_list() == [
        "e50",
        "e51",
        "e52",
    ]
    assert rows.filter(pl.col("dump_date") == "2026-12-02").height == 5
    latest = history(out, "scores")[0]
    assert latest["operationParameters"]["predicate"] == "dump_date = '2026-12-01'"
    assert (latest["run_id"], latest["night"]) == ("run-7", "2026-12-01")
    assert table_version(out, "scores") == 2
    assert table_version(out, "absent") is None
    assert table_versions(out, ["scores", "absent"]) == {"scores": 2}


def test_time_travel_by_version(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame("2026-12-01", n=2, offset=9), "2026-12-01")
    assert read_table(out, "scores", version=0).collect().height == 5
    assert read_table(out, "scores", version=1).collect().height == 2
    assert read_table(out, "scores").collect().schema["dump_date"] == pl.String


def test_undated_night_is_the_null_partition(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame(None, n=4), None)
    write_night(out, "scores", night_frame(None, n=2, offset=20), None)
    rows = read_table(out, "scores").collect()
    assert rows.filter(pl.col("dump_date").is_null())["episode_id"].sort().to_list() == [
        "e20",
        "e21",
    ]
    assert rows.filter(pl.col("dump_date") == "2026-12-01").height == 5
    assert history(out, "scores")[0]["operationParameters"]["predicate"] == ("dump_date IS NULL")


def test_empty_frame_deletes_the_night(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame("2026-12-02"), "2026-12-02")
    write_night(out, "scores", night_frame("2026-12-01", n=0), "2026-12-01")
    assert read_table(out, "scores").collect()["dump_date"].unique().to_list() == ["2026-12-02"]


def test_rows_of_another_night_or_a_bad_night_are_refused_before_writing(tmp_path):
    out = Location.parse(str(tmp_path))
    mixed = pl.concat([night_frame("2026-12-01"), night_frame("2026-12-02")])
    with pytest.raises(ValueError, match="other nights"):
        write_night(out, "scores", mixed, "2026-12-01")
    with pytest.raises(ValueError, match="other nights"):
        write_night(out, "scores", night_frame("2026-12-01"), None)
    for bad in ("2026-12-01' OR '1'='1", "2026-02-30", "20261201", "2026-12-01 "):
        with pytest.raises(ValueError):
            write_night(out, "scores", night_frame(bad), bad)
    with pytest.raises(ValueError, match="table name"):
        write_night(out, "../x", night_frame("2026-12-01"), "2026-12-01")
    assert not (tmp_path / "scores").exists()


def test_dtypes_are_made_delta_ready(tmp_path):
    out = Location.parse(str(tmp_path))
    frame = pl.DataFrame(
        {
            "model": pl.Series(["a", "b"], dtype=pl.Categorical),
            "empty": pl.Series([None, None], dtype=pl.Null),
            "at": [datetime(2026, 12, 1, 2, 0), datetime(2026, 12, 1, 3, 0)],
            "dump_date": pl.Series(["2026-12-01"] * 2).str.to_date(),
        }
    )
    write_night(out, "t", frame, "2026-12-01")
    back = read_table(out, "t").collect()
    assert back.schema == pl.Schema(
        {
            "model": pl.String,
            "empty": pl.String,
            "at": pl.Datetime("us", "UTC"),
            "dump_date": pl.String,
        }
    )
    assert back["at"].to_list()[0] == datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def test_readers_we_did_not_write_see_the_same_rows(tmp_path, monkeypatch):
    out = Location.parse(str(tmp_path / "out"))
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame(None, n=2, offset=7), None)
    uri = out.child("scores").uri
    arrow = deltalake.DeltaTable(uri).to_pyarrow_table()
    assert sorted(arrow.column("episode_id").to_pylist()) == sorted(
        [f"e{i}" for i in range(5)] + ["e7", "e8"]
    )
    duckdb = pytest.importorskip("duckdb")
    extension = pytest.importorskip("duckdb_extension_delta")
    monkeypatch.setenv("HOME", tempfile.mkdtemp())  # DuckDB keeps its state under HOME
    path = next(Path(extension.__path__[0]).rglob("delta.duckdb_extension"))
    con = duckdb.connect()
    con.execute(f"LOAD '{path}'")  # the wheel's file: no download
    rows = con.execute(
        f"select dump_date, count(*) from delta_scan('{uri}') group by 1 order by 1"
    ).fetchall()
    assert rows == [("2026-12-01", 5), (None, 2)]


def _leave_uncommitted_files(out: Location, table: str) -> list[str]:
    """What a run killed between writing its files and committing leaves in the folder."""
    keys = []
    for night in ("2026-12-01", "2026-12-03"):
        buffer = __import__("io").BytesIO()
        night_frame(night).drop("dump_date").write_parquet(buffer)
        key = f"dump_date={night}/part-00000-killed-{night}.snappy.parquet"
        assert objects.put_if_absent(out.child(table), key, buffer.getvalue())
        keys.append(key)
    return keys


def test_vacuum_removes_uncommitted_leftovers_and_keeps_committed_files(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame("2026-12-02"), "2026-12-02")
    leftovers = _leave_uncommitted_files(out, "scores")
    committed = files_by_night(out, "scores")
    assert vacuum(out, ["scores"], retain=timedelta(hours=1)) == []  # too young
    planned = vacuum(out, ["scores"], retain=timedelta(0), dry_run=True)
    assert sorted(planned) == sorted(f"scores/{key}" for key in leftovers)
    assert vacuum(out, ["scores", "absent"], retain=timedelta(0)) == planned
    remaining = {f.relative for f in objects.list_files(out.child("scores"))}
    assert remaining == {path for paths in committed.values() for path in paths}
    assert read_table(out, "scores").collect().height == 10


def test_vacuum_keeps_the_versions_asked_for(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame("2026-12-01", offset=10), "2026-12-01")
    kept = vacuum(out, ["scores"], retain=timedelta(0), dry_run=True, keep={"scores": [0]})
    assert kept == []
    removed = vacuum(out, ["scores"], retain=timedelta(0))
    assert len(removed) == 1  # version 0's file: time travel to it is gone
    assert read_table(out, "scores").collect().height == 5


def test_restore_makes_an_old_version_the_latest(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame("2026-12-02"), "2026-12-02")
    assert restore(out, "scores", 0) == 2
    assert read_table(out, "scores").collect()["dump_date"].unique().to_list() == ["2026-12-01"]


def test_staged_files_commit_once_replacing_one_night(out):
    first = write_data_files(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    assert table_version(out, "scores") is None  # staged: not a table yet
    assert commit_files(out, "scores", "2026-12-01", [first]) == 0
    commit_files(
        out,
        "scores",
        "2026-12-02",
        [write_data_files(out, "scores", night_frame("2026-12-02"), "2026-12-02")],
    )
    before = files_by_night(out, "scores")
    # two workers stage the new 2026-12-01; nobody sees their files before the commit
    workers = [
        write_data_files(out, "scores", night_frame("2026-12-01", 2, 40 + 10 * w), "2026-12-01")
        for w in range(2)
    ]
    assert read_table(out, "scores").collect().height == 10
    version = commit_files(out, "scores", "2026-12-01", workers, {"run_id": "r9"})
    assert version == 2 and table_version(out, "scores") == 2
    after = files_by_night(out, "scores")
    assert after["2026-12-02"] == before["2026-12-02"]
    assert len(after["2026-12-01"]) == 2 and after["2026-12-01"].isdisjoint(before["2026-12-01"])
    rows = read_table(out, "scores").collect()
    assert sorted(rows.filter(pl.col("dump_date") == "2026-12-01")["episode_id"].to_list()) == [
        "e40",
        "e41",
        "e50",
        "e51",
    ]
    assert history(out, "scores")[0]["run_id"] == "r9"
    # the row count comes from the stats we wrote (numRecords)
    table = deltalake.DeltaTable(out.child("scores").uri, storage_options=_options(out))
    assert table.count() == 9


def test_the_nights_whose_files_may_hold_a_range_are_told_by_the_log(out):
    """``partitions_within`` rules a night out only where every file of it has bounds (from
    delta-rs' writer or ours) that lie outside the range; a file without them (a string
    longer than ours record) may hold anything, and a night's bounds are its files' own."""
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")  # e0..e4
    write_night(out, "scores", night_frame("2026-12-02", offset=100), "2026-12-02")  # e100..
    long = night_frame("2026-12-03", n=2).with_columns(pl.lit("e9" + "x" * 70).alias("episode_id"))
    short = night_frame("2026-12-04", n=1, offset=7)  # e7, a file beside e50..e54
    commit_files(out, "scores", "2026-12-03", [write_data_files(out, "scores", long, "2026-12-03")])
    staged = [write_data_files(out, "scores", frame, "2026-12-04")
              for frame in (short, night_frame("2026-12-04", offset=50))]  # fmt: skip
    commit_files(out, "scores", "2026-12-04", staged)
    actions = add_actions(open_table(out, "scores"))

    def within(low: str, high: str) -> list[str | None]:
        return partitions_within(actions, "dump_date", "episode_id", low, high)

    every = ["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]
    assert within("a", "z") == every
    assert within("e2", "e2") == ["2026-12-01", "2026-12-03"]  # within e0..e4
    assert within("e101", "e102") == ["2026-12-01", "2026-12-02", "2026-12-03"]  # "e101" < "e4"
    assert within("e6", "e8") == ["2026-12-03", "2026-12-04"]  # e7's file (e50..e54 below)
    assert within("f", "z") == ["2026-12-03"]  # no bounds: it may hold anything
    assert within("a", "d") == ["2026-12-03"]
    assert partitions_within(actions, "dump_date", "no_such_column", "a", "b") == every


def test_staged_undated_night(out):
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    write_night(out, "scores", night_frame(None, n=3), None)
    staged = write_data_files(out, "scores", night_frame(None, n=1, offset=70), None)
    commit_files(out, "scores", None, [staged])
    rows = read_table(out, "scores").collect()
    assert rows.filter(pl.col("dump_date").is_null())["episode_id"].to_list() == ["e70"]
    assert rows.filter(pl.col("dump_date") == "2026-12-01").height == 5


def test_staged_files_of_other_columns_are_refused_or_merged(tmp_path):
    """A staged column the table lacks is added (as write_night merges a newer cogscore's
    columns); a staged file without one of the table's columns, or with another type, is
    refused."""
    out = Location.parse(str(tmp_path))
    write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    lacking = night_frame("2026-12-02").drop("model")
    staged = write_data_files(out, "scores", lacking, "2026-12-02")
    with pytest.raises(StorageError, match="staged columns differ"):
        commit_files(out, "scores", "2026-12-02", [staged])
    retyped = night_frame("2026-12-02").with_columns(pl.col("score").cast(pl.Int64))
    staged = write_data_files(out, "scores", retyped, "2026-12-02")
    with pytest.raises(StorageError, match="staged columns differ"):
        commit_files(out, "scores", "2026-12-02", [staged])
    extra = night_frame("2026-12-02").with_columns(pl.lit(1).alias("extra"))
    staged = write_data_files(out, "scores", extra, "2026-12-02")
    with pytest.raises(ValueError, match="another night"):
        commit_files(out, "scores", "2026-12-03", [staged])
    commit_files(out, "scores", "2026-12-02", [staged])
    both = read_table(out, "scores").collect()
    by_night = dict(both.group_by("dump_date").agg(pl.col("extra").max()).iter_rows())
    assert by_night == {"2026-12-01": None, "2026-12-02": 1}


def test_unreachable_endpoint_fails_fast_naming_the_table():
    out = Location.parse(
        "s3://bucket/out",
        {
            "aws_endpoint_url": f"http://127.0.0.1:{free_port()}",
            "aws_region": "us-east-1",
            "aws_access_key_id": "k",
            "aws_secret_access_key": "s",
        },
    )
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        write_night(out, "scores", night_frame("2026-12-01"), "2026-12-01")
    assert time.monotonic() - started < 10
    assert (
        str(caught.value) == "cannot open table s3://bucket/out/scores: the endpoint is unreachable"
    )


def test_missing_bucket_and_wrong_credentials(s3_server, bucket):
    missing = Location.parse("s3://no-such-bucket-here/out", s3_server.options)
    with pytest.raises(StorageError, match="no-such-bucket-here/out/scores: the bucket does not"):
        write_night(missing, "scores", night_frame("2026-12-01"), "2026-12-01")
    wrong = Location.parse(
        f"s3://{bucket}/out", {**s3_server.options, "aws_secret_access_key": "wrong"}
    )
    with s3_server.authentication(), pytest.raises(StorageError, match="credentials were refused"):
        table_version(wrong, "scores")


def test_legacy_layout_is_refused(tmp_path):
    out = Location.parse(str(tmp_path))
    layout = {"scores": ("dump_date",)}
    check_layout(out, layout)  # empty: fine
    night = tmp_path / "scores" / "dump_date=2026-12-01"
    night.mkdir(parents=True)
    # What a first run killed before its commit leaves: no obstacle (vacuum deletes it).
    staged = night / "part-5fea540b-2ba2-4466-b179-825890065b1d.parquet"
    staged.write_bytes(b"x")
    check_layout(out, layout)
    assert [f.relative for f in uncommitted_files(out, "scores", ("dump_date",))] == [
        "dump_date=2026-12-01/" + staged.name
    ]
    (night / "part-0.parquet").write_bytes(b"x")  # no cogscore run names a file so
    with pytest.raises(LegacyLayout, match="no Delta log"):
        check_layout(out, layout)
    os.symlink(tmp_path / "_versions", tmp_path / "current")
    with pytest.raises(LegacyLayout, match="snapshot layout"):
        check_layout(out, {})


def test_a_newer_cogscore_adds_columns_old_nights_read_them_as_null(out):
    """An output written before a column existed (contract 1.1's instance_id) takes it
    from the first night written with it; a frame without one of the table's columns is
    still refused (never a silent null)."""
    old = night_frame("2026-12-01")
    assert write_night(out, "scores", old, "2026-12-01") == 0
    new = night_frame("2026-12-02", offset=100).with_columns(pl.lit("i7").alias("instance_id"))
    assert write_night(out, "scores", new, "2026-12-02") == 1
    both = read_table(out, "scores").collect()
    by_night = dict(
        both.group_by("dump_date").agg(pl.col("instance_id").drop_nulls().unique()).iter_rows()
    )
    assert by_night == {"2026-12-01": [], "2026-12-02": ["i7"]}
    assert "instance_id" not in read_table(out, "scores", version=0).collect_schema()
    with pytest.raises(Exception, match=r"(?i)schema"):
        write_night(out, "scores", night_frame("2026-12-03", offset=200), "2026-12-03")


def test_reads_conform_to_the_table_model_whatever_version():
    from flows.store.catalog import conform, empty_table

    model = empty_table("model_scores")
    old = model.drop("rank_low", "rank_high", "tier", "ranked_among", "n_ranked")
    shuffled = old.select(reversed(old.columns)).with_columns(pl.lit(1).alias("extra"))
    read = conform("model_scores", shuffled.lazy()).collect()
    assert read.columns == [*model.columns, "extra"]
    assert read.schema == {**model.schema, "extra": pl.Int32}


def reference_stats(frame: pl.DataFrame) -> dict[str, object]:
    """A data file's Delta statistics as this project writes them, value by value: null
    counts of flat columns; minimum and maximum of integers, of floats without NaN (each
    where it is finite), of dates (as text) and of strings of at most 64 characters."""
    minimum: dict[str, object] = {}
    maximum: dict[str, object] = {}
    nulls: dict[str, int] = {}
    for name, dtype in frame.schema.items():
        if dtype.is_nested():
            continue
        values = frame.get_column(name).to_list()
        present = [v for v in values if v is not None]
        nulls[name] = len(values) - len(present)
        if not present:
            continue
        short = dtype == pl.String and max(len(v) for v in present) <= 64
        if dtype.is_integer() or short:
            minimum[name], maximum[name] = min(present), max(present)
        elif dtype.is_float() and not any(math.isnan(v) for v in present):
            # an infinite bound is left out: JSON has no Infinity (issue 46)
            minimum |= {name: min(present)} if math.isfinite(min(present)) else {}
            maximum |= {name: max(present)} if math.isfinite(max(present)) else {}
        elif dtype == pl.Date:
            minimum[name], maximum[name] = str(min(present)), str(max(present))
    return {
        "numRecords": frame.height,
        "minValues": minimum,
        "maxValues": maximum,
        "nullCount": nulls,
    }


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.none() | st.integers(-(2**63), 2**63 - 1),
            st.none() | st.sampled_from([math.nan, -0.0, 0.0, math.inf]) | st.floats(),
            st.none() | st.text(max_size=3) | st.text(min_size=63, max_size=66),
            st.none() | st.dates(),
            st.none() | st.booleans(),
            st.none() | st.lists(st.text(max_size=3), max_size=2),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_data_files_statistics_are_its_values(rows: list[tuple[object, ...]]) -> None:
    """Readers skip files by these statistics: one wrong bound hides rows from a query."""
    schema = {
        "n": pl.Int64,
        "x": pl.Float64,
        "s": pl.String,
        "d": pl.Date,
        "b": pl.Boolean,
        "l": pl.List(pl.String),
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    assert strict_json(_stats(frame)) == reference_stats(frame)


def test_an_infinite_value_leaves_its_bound_out_of_the_statistics() -> None:
    """Issue 46: a data file holding an infinite cost gave its add action a stats of
    ``"maxValues": {"cost_usd": Infinity}``, and every later read of the table failed."""
    frame = pl.DataFrame({"cost": [1.5, math.inf], "low": [-math.inf, 2.0], "n": [1, 2]})
    stats = strict_json(_stats(frame))
    assert stats == {
        "numRecords": 2,
        "minValues": {"cost": 1.5, "n": 1},
        "maxValues": {"low": 2.0, "n": 2},
        "nullCount": {"cost": 0, "low": 0, "n": 0},
    }
