"""A batch of nights of one table staged at once (``Writer.stage_nights`` through
``flows.store.delta.staged.write_nights_files``, issue 48): each night's file, statistics and
schema are what staging the night alone writes, and a night more in a batch is one query
more, its file's encoding (a rescore's standings: 11 tables x 16 nights a batch, each night
a handful of rows)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.lazyframe import engine
from polars.testing import assert_frame_equal

from flows import runs
from flows.store import objects
from flows.store.delta.staged import StagedFiles, write_data_files, write_nights_files
from flows.store.location import Location
from flows.store.output import Output
from flows.store.writer import Writer
from schemas.columns import AS_OF
from tests.store.test_staged_stats import FRAME

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
NIGHTS = ["2026-12-01", "2026-12-02", "2026-12-03"]


def _file(location: Location, table: str, staged: StagedFiles) -> list[tuple[Any, ...]]:
    """Each data file of ``staged``: its partition, statistics, the schema and its rows."""
    found = []
    for add in staged.adds:
        rows = pl.read_parquet(objects.get_bytes(location.child(table), add.path))
        found.append((add.partition_values, json.loads(add.stats), staged.schema, rows))
    return found


def test_each_nights_file_is_what_staging_the_night_alone_writes(tmp_path: Path) -> None:
    """FRAME's columns (nulls, NaN, infinities, long strings, dates, lists) over two nights
    and a third night without rows (no file), the rows of a night not together."""
    location = Location.parse(str(tmp_path))
    first, second = FRAME.with_columns(night=pl.lit(NIGHTS[0])), FRAME.head(2)
    frame = pl.concat([first.head(1), second.with_columns(night=pl.lit(NIGHTS[2])), first[1:]])
    batch = write_nights_files(location, "t", frame, NIGHTS, "night")
    assert [staged.night for staged in batch] == NIGHTS
    for night, staged in zip(NIGHTS, batch, strict=True):
        rows = frame.filter(pl.col("night") == night)
        alone = write_data_files(location, "t", rows, night, ("night",))
        got, want = _file(location, "t", staged), _file(location, "t", alone)
        assert len(got) == len(want) == (0 if rows.is_empty() else 1)
        for (*described, data), (*described_, data_) in zip(got, want, strict=True):
            assert described == described_  # partition, statistics, schema
            assert_frame_equal(data, data_, check_exact=True)


def test_rows_of_a_night_not_in_the_batch_are_refused(tmp_path: Path) -> None:
    location = Location.parse(str(tmp_path))
    frame = FRAME.with_columns(night=pl.Series([NIGHTS[0], NIGHTS[1], None]))
    with pytest.raises(ValueError, match="rows of other nights"):
        write_nights_files(location, "t", frame, NIGHTS[:2], "night")
    with pytest.raises(ValueError, match="dated nights"):
        write_nights_files(location, "t", frame, [NIGHTS[0], None], "night")  # type: ignore[list-item]
    assert not (tmp_path / "t").exists()  # refused before a file is written


def _standings_of(out: Path, nights: int) -> pl.DataFrame:
    """The example's last standings table, as if it stood on ``nights`` nights (its rows,
    each night's in reverse order: the batch puts them in the table's order)."""
    rows = Output(Location.parse(str(out))).scan("standings").collect()
    one = rows.filter(pl.col(AS_OF) == rows[AS_OF].max()).reverse()
    start = date(2027, 1, 1)
    days = [str(start + timedelta(days=i)) for i in range(nights)]
    return pl.concat(one.with_columns(pl.lit(day).alias(AS_OF)) for day in days)


def _queries(frame: pl.DataFrame, out: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The polars queries ``stage_nights`` takes to stage ``frame``'s nights."""
    counted = [0]
    collect, collect_all = engine._LocalEngine.collect, engine._LocalEngine.collect_all

    def one(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return collect(self, *args, **kwargs)

    def each(self: Any, frames: Any, *args: Any, **kwargs: Any) -> Any:
        counted[0] += len(frames)
        return collect_all(self, frames, *args, **kwargs)

    writer = Writer(Output(Location.parse(str(out))), None, "r")  # type: ignore[arg-type]
    nights = frame[AS_OF].unique(maintain_order=True).to_list()
    with monkeypatch.context() as patched:
        patched.setattr(engine._LocalEngine, "collect", one)
        patched.setattr(engine._LocalEngine, "collect_all", each)
        writer.stage_nights("standings", frame, nights)
    assert list(writer.staged["standings"]) == nights
    return counted[0]


def test_a_night_more_in_a_batch_is_its_files_encoding_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    runs.score(EXAMPLE_DUMP, out)
    two, sixteen = _standings_of(out, 2), _standings_of(out, 16)
    # A night more is one query more: its file's Parquet encoding (no statistics, check,
    # conversion or order of its own).
    assert _queries(sixteen, out, monkeypatch) - _queries(two, out, monkeypatch) == 16 - 2


def test_a_batch_stages_each_night_in_the_tables_order(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runs.score(EXAMPLE_DUMP, out)
    frame = _standings_of(out, 3)
    writer = Writer(Output(Location.parse(str(out))), None, "r")  # type: ignore[arg-type]
    writer.stage_nights("standings", frame, frame[AS_OF].unique(maintain_order=True).to_list())
    location = Location.parse(str(out))
    for night, [staged] in writer.staged["standings"].items():
        [(_, _, _, rows)] = _file(location, "standings", staged)
        want = frame.filter(pl.col(AS_OF) == night).drop(AS_OF)
        order = ["ranked_among", "rank", "model"]
        assert_frame_equal(rows, want.sort(order, nulls_last=True), check_dtypes=False)
