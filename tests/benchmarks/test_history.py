"""benchmarks.history: its summary's rows have as many cells as their header; a history built
night by night."""

import shutil
from pathlib import Path

from benchmarks.history import each_open, summary


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


def test_each_open_of_a_nightly_is_told_with_who_asked_and_its_median() -> None:
    def run(ms: float) -> dict:
        sites = [
            ["runs", "flows/plan.py preflight -> state", ms],
            ["runs", "flows/plan.py preflight -> state", 2 * ms],
        ]
        return {
            **_run(1.0),
            "sites": [*sites, ["episode_scores", "flows/repeats.py repeats -> scan", 3 * ms]],
        }

    results = {
        "this checkout | 30 nights | standings on": [run(1.0), run(3.0), run(2.0)],
        "this checkout | 150 nights | standings on": [run(4.0)],
    }
    assert each_open(results["this checkout | 30 nights | standings on"]) == {
        ("runs", "flows/plan.py preflight -> state", 1): 2.0,
        ("runs", "flows/plan.py preflight -> state", 2): 4.0,
        ("episode_scores", "flows/repeats.py repeats -> scan", 1): 6.0,
    }
    opens = "\n".join(summary(results)).split("\n\n")[-1].splitlines()
    assert opens[0].count("|") == 5 and {row.count("|") for row in opens} == {5}
    assert "| episode_scores | flows/repeats.py repeats -> scan | 6.0 | 12.0 |" in opens
    assert opens[-1] == "| all | | 12 | 24 |"  # 1+2+3 times the median, 2 and 4
