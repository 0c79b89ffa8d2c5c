"""``flows.plan``: which nights a nightly run scores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl

from flows import runs
from flows.plan import plan_nightly

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def test_a_file_whose_size_changed_is_hashed_again_though_its_time_did_not(
    tmp_path: Path,
) -> None:
    """A recorded digest is trusted only while both the size and the modification time are
    those recorded: a file rewritten within the clock's resolution, or with its time put
    back (a copy that keeps times), keeps its time but not its size."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP, dump)
    runs.nightly(dump, out)
    target = sorted((dump / "dump_date=2026-12-01").glob("*.parquet"))[0]
    stat = target.stat()
    pl.read_parquet(target).head(-1).write_parquet(target)  # another size
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same time
    assert target.stat().st_size != stat.st_size
    assert target.stat().st_mtime_ns == stat.st_mtime_ns
    plan = plan_nightly(dump, out)
    assert plan.changed == ["2026-12-01"] and plan.unchanged == ["2026-11-30"]
