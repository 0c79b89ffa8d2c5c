"""benchmarks/ceiling.py end to end on a small dump: every measurement runs, each process
scores its share of the files, and the figures follow from what was timed."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks import ceiling
from flows.store.dumps import discover
from simulator import simulate


def test_the_ceiling_measures_every_file_in_threads_and_in_processes(tmp_path: Path) -> None:
    simulate(tmp_path / "dump", date="2026-12-01", episodes=300, seed=1, episodes_per_file=100)
    files = discover(tmp_path / "dump")
    assert len(files) == 3
    measured = ceiling.main([str(tmp_path / "dump"), "--repeat", "2"])

    first_rows = pq.ParquetFile(files[0].path).metadata.num_rows
    assert measured["rows_per_file"] == first_rows
    one = measured["one_thread"]
    # Every step was timed (a duration is never asserted: a fast machine rounds a small
    # file's sha256 to 0.0 s).
    steps = ("score_s", "stage_s", "read_s", "digest_s", "plan_s", "order_s", "row_rules_s")
    assert all(isinstance(one[step], float) and one[step] >= 0 for step in steps), one
    # The seconds are printed to 0.1 ms: the rate follows from them within that rounding.
    per_file = one["score_s"] + one["stage_s"]
    rate = measured["one_thread_rows_per_s"]
    assert first_rows / (per_file + 2e-4) <= rate * 1.001
    assert per_file <= 2e-4 or rate <= first_rows / (per_file - 2e-4) * 1.001
    assert measured["threads_rows_per_s"] > 0 and measured["processes_rows_per_s"] > 0
    cores = os.cpu_count() or 1
    assert measured["budget_per_file_s_for_3M"] == round(cores * first_rows / 3e6, 4)


def test_each_process_scores_its_share_of_the_files(tmp_path: Path) -> None:
    simulate(tmp_path / "dump", date="2026-12-01", episodes=300, seed=2, episodes_per_file=100)
    done = ceiling.processes(tmp_path / "dump", repeat=2, count=2)
    assert done["files"] == 3 * 2  # files 0 and 2 in one process, file 1 in the other
    assert done["seconds"] >= 0
