"""benchmarks.history: its summary's rows have as many cells as their header; a history built
night by night."""

import shutil
from pathlib import Path

from benchmarks.history import summary


def _run(seconds: float) -> dict:
    return {"seconds": seconds, "opens": 44, "rchar": 23_400_000}


def test_every_row_of_the_summary_has_its_headers_cells() -> None:
    results = {
        "this | 30 nights | standings on": [_run(1.5), _run(1.6)],
        "this | 150 nights | standings on": [_run(1.7)],
        "this | 30 nights | traced": {"log_files": 184, "data_files": 24, "history_data_files": 0},
        "this | 30 nights | open ms": {"runs": 1.5, "episode_scores": 8.3},
        "this | 150 nights | open ms": {"runs": 1.6, "episode_scores": 20.0},
    }
    tables = "\n".join(summary(results)).split("\n\n")
    assert len(tables) == 3
    for table in tables:
        rows = table.splitlines()
        widths = {row.count("|") for row in rows}
        assert widths == {rows[0].count("|")}, table


def test_a_history_built_night_by_night_is_a_nightly_a_night(tmp_path: Path) -> None:
    """``--built nightly``: a run a night recorded, a commit a night in each table's log,
    and the output the one the measured nightly reads (the same dump: not refused as
    another input root)."""
    from deltalake import DeltaTable

    from benchmarks.history import TOP, _nightly, build_history
    from benchmarks.standings import build

    nights = 3
    new_night = build(tmp_path, nights, 2, 1, 2)
    build_history(TOP, tmp_path, tmp_path / "out-this-checkout", "nightly")
    runs = DeltaTable(str(tmp_path / "out-this-checkout" / "runs")).to_pyarrow_table()
    assert sorted(set(runs.column("night").to_pylist()) - {None}) == sorted(
        p.name.split("=", 1)[1] for p in (tmp_path / "dump").glob("dump_date=*")
    )
    assert len(set(runs.column("run_id").to_pylist())) == nights  # a nightly a night
    log = tmp_path / "out-this-checkout" / "episode_scores" / "_delta_log"
    assert len(list(log.glob("*.json"))) >= nights
    shutil.copytree(new_night, tmp_path / "dump" / new_night.name)
    measured = _nightly(tmp_path, "this checkout", TOP, "on")
    assert measured["opens"] > 0 and "cpu_s" in measured
