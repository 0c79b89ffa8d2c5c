"""Faults: kill -9 anywhere, two runs at once, transient and permanent read errors."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import flows.score
from flows import runs
from flows.cli import app
from flows.io import DumpFile
from flows.output import PAUSE_AT, PAUSE_FLAG, Output
from flows.storage.lease import Lease
from tests.dumps import example_dump_counts
from tests.tables import last_run, read_table, read_tables

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"


def pinned(out: Path) -> dict[str, object]:
    """What readers see: every table at the versions of the latest finished run."""
    return {name: frame.to_dicts() for name, frame in read_tables(out).items()}


@pytest.mark.parametrize(
    "point",
    [
        "scored",
        "wrote-episode_scores",
        "wrote-rejects",
        "wrote-model_scores",
        "before-commit",
        "after-commit",
    ],
)
def test_kill_9_during_nightly_then_the_next_run_completes(point: str, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-11-30", dump / "dump_date=2026-11-30")
    out = tmp_path / "out"
    runs.nightly(dump, out)
    before = pinned(out)
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", dump / "dump_date=2026-12-01")
    flag = tmp_path / "flag"
    script = (
        "from pathlib import Path; from flows.runs import nightly; "
        f"nightly(Path({str(dump)!r}), Path({str(out)!r}))"
    )
    victim = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, PAUSE_AT: point, PAUSE_FLAG: str(flag)},
    )
    deadline = time.monotonic() + 120
    while not flag.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists()
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    if point == "after-commit":  # the run was recorded: its output is complete
        assert pinned(out) != before
    else:
        assert pinned(out) == before, "the previous output, complete"
    again = runs.nightly(dump, out)
    expected_new = [] if point == "after-commit" else ["2026-12-01"]
    assert again.nights_scored == expected_new
    scores = read_table(out, "episode_scores")
    assert scores.height == example_dump_counts()["episodes_scored"]  # both nights


def test_a_second_run_against_the_same_out_stops_with_a_message(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with Lease(Output.at(out).location, "the-first-run", "cogscore nightly"):
        result = CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)])
    assert result.exit_code == 5  # README "Exit codes": another run holds the output
    assert "is busy: run the-first-run" in result.output, result.output
    assert Output.at(out).runs().is_empty()


def _flaky_footer(monkeypatch: pytest.MonkeyPatch, failures: int) -> dict[str, int]:
    """Reading one file's footer (its schema: read first, whether the file is scored alone
    or in a batch of small files) fails ``failures`` times (transiently), then reads."""
    real = flows.score.read_schema
    target = EXAMPLE_DUMP / "dump_date=2026-12-01" / "part-0.parquet"
    state = {"left": failures, "calls": 0}

    def flaky(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> dict[str, object]:
        if dump_file.path == target:
            state["calls"] += 1
            if state["left"]:
                state["left"] -= 1
                raise OSError("Resource temporarily unavailable")
        return real(dump_file, scanned)  # type: ignore[return-value]

    monkeypatch.setattr(flows.score, "read_schema", flaky)
    return state


def test_a_transient_read_error_is_retried_up_to_read_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three failures: more than the default READ_ATTEMPTS (3) survives, so the file is read
    # only if the patched value reaches `retrying` (it is read when called).
    state = _flaky_footer(monkeypatch, failures=3)
    monkeypatch.setattr(flows.score, "READ_ATTEMPTS", 4)
    outcome = runs.score(EXAMPLE_DUMP, tmp_path / "out")
    assert outcome.result is not None and outcome.result.counts["files_rejected"] == 0
    assert state == {"left": 0, "calls": 4}


def test_read_attempts_one_does_not_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One failure, which the default READ_ATTEMPTS would retry away.
    state = _flaky_footer(monkeypatch, failures=1)
    monkeypatch.setattr(flows.score, "READ_ATTEMPTS", 1)
    outcome = runs.score(EXAMPLE_DUMP, tmp_path / "out")
    assert outcome.result is not None and outcome.result.counts["files_rejected"] == 1
    assert state == {"left": 0, "calls": 1}
    manifest = last_run(tmp_path / "out")
    (rejected,) = [f for f in manifest["files"] if f["status"] == "rejected"]
    assert rejected["file"] == "dump_date=2026-12-01/part-0.parquet"
    assert "Resource temporarily unavailable" in " ".join(rejected["problems"])


def test_a_permanent_read_error_rejects_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = flows.score.read_schema

    def broken(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> dict[str, object]:
        if dump_file.relative.endswith("/part-1.parquet"):
            raise OSError("Input/output error")
        return real(dump_file, scanned)  # type: ignore[return-value]

    def scan_broken(files: list[DumpFile], column: str) -> pl.LazyFrame:
        """Small files are read together (``flows.score.batches``): part-1 in them too."""
        if any(f.relative.endswith("/part-1.parquet") for f in files):
            raise OSError("Input/output error")
        return real_scan(files, column)

    real_scan = flows.score.scan_together
    monkeypatch.setattr(flows.score, "read_schema", broken)
    monkeypatch.setattr(flows.score, "scan_together", scan_broken)
    monkeypatch.setattr(flows.score, "retrying", lambda read, **_: read())  # no waiting
    outcome = runs.score(EXAMPLE_DUMP, tmp_path / "out")
    assert outcome.result is not None
    counts = outcome.result.counts
    assert counts["files_rejected"] == 2  # part-1 of each night
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]
