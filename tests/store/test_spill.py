"""Frames set aside on disk while a night's files are scored (``flows.store.spill``)."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from flows import runs
from flows import score as score_module
from flows import staging as staging_module
from flows.store.errors import StorageError
from flows.store.output import Output
from flows.store.spill import Spilled
from simulator import simulate


def test_a_frame_set_aside_reads_back_whole_and_its_file_goes(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"id": [f"episode-{i:09}" for i in range(1000)], "score": [i / 7 for i in range(1000)]}
    ).with_columns(task=pl.col("id").str.slice(0, 9).cast(pl.Categorical()))
    spilled = Spilled(frame)
    assert spilled.path.exists() and spilled.height == 1000
    assert_frame_equal(spilled.take(), frame, check_exact=True)
    assert not spilled.path.exists()


def test_a_frame_dropped_unread_leaves_no_file() -> None:
    """A night that ends in an error never reads its parts back: their files go with them."""
    spilled = Spilled(pl.DataFrame({"a": [1, 2, 3]}))
    path = spilled.path
    del spilled
    gc.collect()
    assert not path.exists()


def test_no_room_to_set_a_night_aside_is_one_line_naming_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TMPDIR that cannot take the files fails the run as a storage error (one line, its
    exit code), before any table is committed."""
    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=200, seed=5, episodes_per_file=25)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # a chunk a file: set aside
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    with pytest.raises(StorageError, match="TMPDIR") as raised:
        runs.score(dump, tmp_path / "out")
    assert "\n" not in str(raised.value) and str(tmp_path / "no-such-folder") in str(raised.value)
    assert Output.at(tmp_path / "out").versions() == {}
