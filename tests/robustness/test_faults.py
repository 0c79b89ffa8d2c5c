"""Faults: kill -9 anywhere, two runs at once, transient and permanent read errors."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import flows.reading
from flows import runs
from flows.cli import app
from flows.store.catalog import PAUSE_AT, PAUSE_FLAG
from flows.store.dumps import DumpFile
from flows.store.lease import Lease
from flows.store.output import Output
from tests.dumps import example_dump_counts
from tests.s3server import S3Server
from tests.tables import (
    assert_same_tables,
    data_files,
    last_run,
    read_table,
    read_tables,
    referenced,
)

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"


def _nightly_script(dump: Path | str, out: Path | str) -> str:
    return (
        "from pathlib import Path; from flows.runs import nightly; "
        f"nightly({str(dump)!r}, {str(out)!r})"
    )


def _paused_at(
    point: str,
    script: str,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    until: Callable[[], object] | None = None,
) -> subprocess.Popen[bytes]:
    """A process running ``script`` (Python), paused at fault point ``point`` and, where
    ``until`` is given, once it is true (at ``scored`` the night's episode scores are still
    being written, on the run's stager thread, which the pause does not stop)."""
    flag = tmp_path / f"paused-at-{point}"
    flag.unlink(missing_ok=True)
    victim = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, **(env or {}), PAUSE_AT: point, PAUSE_FLAG: str(flag)},
    )
    deadline = time.monotonic() + 120
    while not flag.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists(), f"the run never reached {point}"
    # Seen once, kept: the stager thread may start another file just after (a second call
    # could see its temporary file and fail a run that was paused as needed).
    reached = until is None or bool(until())
    while not reached and time.monotonic() < deadline:
        time.sleep(0.05)
        reached = bool(until())  # type: ignore[misc]
    assert reached, f"paused at {point}, but not as the test needs"
    return victim


def _killed_at(
    point: str,
    script: str,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    until: Callable[[], object] | None = None,
) -> None:
    """``script`` run and killed with -9 at fault point ``point`` (``_paused_at``)."""
    victim = _paused_at(point, script, tmp_path, env, until)
    victim.send_signal(signal.SIGKILL)
    victim.wait()


def _staged(out: Path) -> bool:
    """Whether a data file no table version refers to is in ``out``, none half-written."""
    return bool(data_files(out) - referenced(out)) and not _half_written(out)


def _half_written(out: Path) -> set[str]:
    """The temporary files of data files being written when a run was killed (a local
    write goes to one, then is linked into place)."""
    return {p.resolve().as_posix() for p in out.rglob("part-*.parquet.*.tmp")}


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
    _killed_at(point, _nightly_script(dump, out), tmp_path)
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
    real = flows.reading.read_schema
    target = EXAMPLE_DUMP / "dump_date=2026-12-01" / "part-0.parquet"
    state = {"left": failures, "calls": 0}

    def flaky(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> dict[str, object]:
        if dump_file.path == target:
            state["calls"] += 1
            if state["left"]:
                state["left"] -= 1
                raise OSError("Resource temporarily unavailable")
        return real(dump_file, scanned)  # type: ignore[return-value]

    monkeypatch.setattr(flows.reading, "read_schema", flaky)
    return state


def test_a_transient_read_error_is_retried_up_to_read_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three failures: more than the default READ_ATTEMPTS (3) survives, so the file is read
    # only if the patched value reaches `retrying` (it is read when called).
    state = _flaky_footer(monkeypatch, failures=3)
    monkeypatch.setattr(flows.reading, "READ_ATTEMPTS", 4)
    outcome = runs.score(EXAMPLE_DUMP, tmp_path / "out")
    assert outcome.result is not None and outcome.result.counts["files_rejected"] == 0
    assert state == {"left": 0, "calls": 4}


def test_read_attempts_one_does_not_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One failure, which the default READ_ATTEMPTS would retry away.
    state = _flaky_footer(monkeypatch, failures=1)
    monkeypatch.setattr(flows.reading, "READ_ATTEMPTS", 1)
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
    real = flows.reading.read_schema

    def broken(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> dict[str, object]:
        if dump_file.relative.endswith("/part-1.parquet"):
            raise OSError("Input/output error")
        return real(dump_file, scanned)  # type: ignore[return-value]

    def scan_broken(files: list[DumpFile], column: str) -> pl.LazyFrame:
        """Small files are read together (``flows.score.batches``): part-1 in them too."""
        if any(f.relative.endswith("/part-1.parquet") for f in files):
            raise OSError("Input/output error")
        return real_scan(files, column)

    real_scan = flows.reading.scan_together
    monkeypatch.setattr(flows.reading, "read_schema", broken)
    monkeypatch.setattr(flows.reading, "scan_together", scan_broken)
    monkeypatch.setattr(flows.reading, "retrying", lambda read, **_: read())  # no waiting
    outcome = runs.score(EXAMPLE_DUMP, tmp_path / "out")
    assert outcome.result is not None
    counts = outcome.result.counts
    assert counts["files_rejected"] == 2  # part-1 of each night
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]


def cli(*args: str | Path, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


FIRST_RUN_POINTS = ["scored", "wrote-episode_scores", "wrote-model_scores", "before-commit"]


@pytest.mark.parametrize("point", FIRST_RUN_POINTS)
def test_kill_9_during_the_first_run_then_the_next_run_repairs_and_completes(
    point: str, tmp_path: Path
) -> None:
    """The first run into a new OUT killed once its data files are written (staged, or
    some tables committed and no run recorded): ``status`` says what OUT holds, the next
    run repairs it and writes what a run into a new OUT writes, and ``vacuum`` at its
    default deletes what the killed run left."""
    out, clean = tmp_path / "out", tmp_path / "clean"
    runs.nightly(EXAMPLE_DUMP, clean)
    # Past ``scored`` the night is staged (its tables are committed from there on).
    written = (lambda: _staged(out)) if point == "scored" else None
    _killed_at(point, _nightly_script(EXAMPLE_DUMP, out), tmp_path, until=written)
    left = data_files(out)
    assert left, "the killed run wrote data files"
    said = cli("status", out)
    assert "no run finished" in said and "never committed" in said
    assert "no run recorded" in cli("history", out)
    assert "no run finished" in cli("sql", out, "SELECT 1", code=2)
    again = runs.nightly(EXAMPLE_DUMP, out)
    assert again.nights_scored == ["2026-11-30", "2026-12-01"]
    assert_same_tables(out, clean)
    uncommitted = data_files(out) - referenced(out)
    if point == "scored":  # staged only: every file it wrote, never committed
        assert uncommitted == left
    deleted = cli("vacuum", out)  # the default retention
    assert f"deleted {len(uncommitted | _half_written(out))} data file(s)" in deleted
    assert data_files(out) == referenced(out) and not _half_written(out)
    assert_same_tables(out, clean)


def test_a_folder_holding_others_files_beside_a_killed_run_s_is_still_refused(
    tmp_path: Path,
) -> None:
    """What a killed first run leaves is recognised by the names and folders cogscore's
    writers give files: a table folder without a Delta log holding anything else is
    someone else's, refused by a run and by vacuum (exit 2), and nothing in it deleted."""
    out = tmp_path / "out"
    _killed_at("scored", _nightly_script(EXAMPLE_DUMP, out), tmp_path, until=lambda: _staged(out))
    left = data_files(out)
    theirs = out / "episode_scores" / "dump_date=2026-11-30" / "part-0.parquet"
    theirs.write_bytes(b"someone else's")
    for command in (["nightly", EXAMPLE_DUMP, "--out", out], ["vacuum", out]):
        said = cli(*command, code=2)
        assert "holds files but no Delta log (dump_date=2026-11-30/part-0.parquet" in said
    assert data_files(out) == left | {theirs.resolve().as_posix()}


def test_vacuum_at_its_default_deletes_killed_runs_files_never_a_running_run_s(
    tmp_path: Path,
) -> None:
    """README: ``vacuum`` deletes the files of killed runs, at its default retention (they
    are never committed: no version needs them), and never the files a run in progress
    staged (it holds the lease: vacuum is refused, exit 5)."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-11-30", dump / "dump_date=2026-11-30")
    runs.nightly(dump, out)
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", dump / "dump_date=2026-12-01")
    running = _paused_at("scored", _nightly_script(dump, out), tmp_path, until=lambda: _staged(out))
    try:
        staged = data_files(out) - referenced(out)
        assert staged, "the running run staged its night's episode scores"
        assert "is busy" in cli("vacuum", out, code=5)
        assert data_files(out) - referenced(out) == staged  # every staged file kept
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait()
    assert f"deleted {len(staged | _half_written(out))} data file(s)" in cli("vacuum", out)
    assert data_files(out) == referenced(out) and not _half_written(out)
    assert runs.nightly(dump, out).nights_scored == ["2026-12-01"]
    assert read_table(out, "episode_scores").height == example_dump_counts()["episodes_scored"]


def test_a_first_run_that_fills_the_disk_leaves_an_output_the_next_run_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up while the first run into OUT stages its files, and is still full
    when it would record its failure: exit 4, and the next run (space freed) repairs OUT
    and completes; no half-written file is left."""
    import errno

    from flows.store import objects, runs_table

    out, clean = tmp_path / "out", tmp_path / "clean"
    runs.nightly(EXAMPLE_DUMP, clean)
    real_fsync, synced = objects.os.fsync, {"data files": 0}

    def full_after_two(fd: int) -> None:
        if "/episode_scores/" in os.readlink(f"/proc/self/fd/{fd}"):
            synced["data files"] += 1
            if synced["data files"] > 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(objects.os, "fsync", full_after_two)
        patched.setattr(runs_table, "record_run", disk_full)
        said = cli("nightly", EXAMPLE_DUMP, "--out", out, "--engine", "local", code=4)
    assert "No space left on device" in said
    assert data_files(out) and not referenced(out)  # staged, never committed
    assert not list(out.rglob("*.tmp"))
    assert "no run finished" in cli("status", out)
    runs.nightly(EXAMPLE_DUMP, out)
    assert_same_tables(out, clean)
    cli("vacuum", out)
    assert data_files(out) == referenced(out)


def test_kill_9_during_the_first_run_into_a_bucket_then_the_next_run_completes(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on disk: the first run into an S3 output killed once its files are staged; the
    next run repairs the output and completes, vacuum at its default deletes the files."""
    from polars.testing import assert_frame_equal

    from flows.store import objects
    from flows.store.catalog import CORE_TABLES
    from flows.store.errors import NothingThere

    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    url = f"s3://{s3_server.create_bucket()}/out"
    where = Output.at(url).location.child("episode_scores")

    def staged() -> list[objects.ObjectInfo]:
        with contextlib.suppress(NothingThere):
            return objects.list_files(where)
        return []

    _killed_at("scored", _nightly_script(EXAMPLE_DUMP, url), tmp_path, until=staged)
    left = staged()
    assert left and "no run finished" in cli("status", url)
    runs.nightly(EXAMPLE_DUMP, url)
    runs.nightly(EXAMPLE_DUMP, tmp_path / "clean")
    for table in CORE_TABLES:
        assert_frame_equal(
            Output.at(url).read(table),
            Output.at(tmp_path / "clean").read(table),
            check_row_order=False,
        )
    assert f"deleted {len(left)} data file(s)" in cli("vacuum", url)
    kept = {f.relative for f in objects.list_files(where)}
    assert kept and not kept & {f.relative for f in left}
