"""``flows.plan``: which nights a nightly run scores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

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


def test_the_nights_off_the_set_compare_each_set_of_versions_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A history's nights mostly share one set of formula versions: the comparison with the
    output's set is made once a set, not once a night (its cost was growing with the
    history), and every night of a set that differs is still named."""
    from dataclasses import replace

    from flows import plan
    from flows.store.state import NightState, OutputState

    pinned = plan.resolve()
    other = {**pinned, "procedural_learning": "v1"}
    assert other != pinned

    def state(nights: int) -> OutputState:
        night = NightState("r", "f", None, pinned, {}, (), {}, 0.95)
        held = {f"2026-01-{d:02}": night for d in range(1, nights + 1)}
        held["2026-01-02"] = replace(night, formula_versions=other)
        return OutputState(run_id="r", formula_set=dict(pinned), nights=held)

    calls = []
    real = plan._version_in

    def counted(versions: dict[str, str], key: str) -> str | None:
        calls.append(key)
        return real(versions, key)

    monkeypatch.setattr(plan, "_version_in", counted)
    few = plan.nights_off_set(state(3))
    made_for_few = len(calls)
    calls.clear()
    many = plan.nights_off_set(state(28))
    assert few == many == {"2026-01-02": plan.describe({"procedural_learning": "v1"})}
    assert len(calls) == made_for_few
