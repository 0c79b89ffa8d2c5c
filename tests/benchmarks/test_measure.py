"""benchmarks/measure.py's in-process floor on a small dump: every measurement it interleaves
runs and is timed, the scorer's run with its scoring left out among them."""

from __future__ import annotations

from pathlib import Path

from benchmarks import measure
from simulator import simulate
from tests.processes import fresh_python


def test_the_floor_times_the_reads_the_run_without_scoring_and_the_scorer(
    tmp_path: Path,
) -> None:
    simulate(tmp_path / "e100", date="2026-12-01", episodes=20, seed=1)  # the warm-up dump
    simulate(tmp_path / "dump", date="2026-12-01", episodes=200, seed=2, episodes_per_file=100)
    measured = measure.floor(tmp_path / "dump", repeat=2)

    assert set(measured["runs"]) == {"read", "needed", "unscored", "net"}
    assert all(len(runs) == 2 for runs in measured["runs"].values())
    # Each run was timed; no duration is asserted (a fast machine rounds a small one to 0).
    assert all(seconds >= 0 for runs in measured["runs"].values() for seconds in runs)
    assert all(measured["net"][step] >= 0 for step in ("files_s", "assemble_s", "aggregate_s"))
    # Each measure's CPU time beside its wall time (a shared machine's wall clock counts
    # the other work too).
    assert all(measured[what]["cpu_s"] >= 0 for what in ("read", "needed", "unscored", "net"))
    # Split into the user's and the kernel's (``os.times``), with the pages faulted in.
    for what in ("read", "needed", "unscored", "net"):
        assert measured[what]["user_s"] >= 0 and measured[what]["system_s"] >= 0
        assert measured[what]["minor_faults"] >= 0


def test_the_needed_read_reads_what_the_scorer_reads(tmp_path: Path) -> None:
    """The floor reads every column the scorer reads (``ts`` too: an episode's wall time,
    issue 47), and the content of answer rows alone."""
    import polars as pl

    from schemas.contract import Col, Kind

    simulate(tmp_path / "dump", date="2026-12-01", episodes=20, seed=3)
    scan = pl.scan_parquet(measure.files(tmp_path / "dump"))
    read = measure.needed(scan).collect()

    assert set(read.columns) == set(scan.collect_schema())
    assert Col.TS in read.columns
    kept = read.filter(pl.col(Col.CONTENT).is_not_null())[Col.KIND].unique().to_list()
    assert kept == [Kind.ANSWER]


def test_the_benchmarks_run_with_the_allocator_the_command_line_sets() -> None:
    """A benchmark's process loads polars with ``flows.ALLOCATOR`` in its environment, as
    ``cogscore`` does (the 3x figure measured jemalloc's defaults before)."""
    from flows import ALLOCATOR

    shown = fresh_python("import benchmarks.run, os; print(os.environ['_RJEM_MALLOC_CONF'])")
    assert shown.stdout.strip() == ALLOCATOR, shown.stderr[-2000:]
