"""Frames set aside on disk while a night's files are scored (``flows.store.spill``)."""

from __future__ import annotations

import errno
import fcntl
import gc
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from flows import runs
from flows import score as score_module
from flows import staging as staging_module
from flows.logs import LOGGER
from flows.store import spill as spill_module
from flows.store.errors import StorageError
from flows.store.output import Output
from flows.store.spill import PREFIX, Spilled, own_folder, sweep
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


_SET_ASIDE_AND_WAIT = """
import sys, time
import polars as pl
from flows.store.spill import Spilled
spilled = Spilled(pl.DataFrame({"a": [1, 2, 3]}))
print(spilled.path.parent, flush=True)
time.sleep(600)
"""


def _process_setting_aside(tmpdir: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that has set a frame aside in ``tmpdir`` and waits; and its folder."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SET_ASIDE_AND_WAIT],
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    folder = Path(child.stdout.readline().strip())
    assert folder.parent == tmpdir and any(folder.glob("*.arrow")), folder
    return child, folder


def test_a_run_removes_what_killed_runs_set_aside_and_leaves_live_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nightly killed (out of memory, SIGKILL) cannot remove its set-aside files: the next
    run does, as it starts staging; a run still going keeps its own."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    killed, killed_folder = _process_setting_aside(tmpdir)
    alive, alive_folder = _process_setting_aside(tmpdir)
    # Another machine's (a shared TMPDIR), its lock free here: whether its run lives is
    # not this machine's to tell.
    elsewhere = tmpdir / f"{PREFIX}another-machine.example-x1y2"
    # ... and one of a machine whose name starts with this one's (worker-1-gpu, worker-1)
    longer_name = tmpdir / f"{PREFIX}{socket.gethostname()}-gpu-x1y2"
    for folder in (elsewhere, longer_name):
        folder.mkdir()
        (folder / ".owner").touch()
    try:
        killed.kill()
        killed.wait()
        assert killed_folder.exists()  # nothing could remove it
        dump = tmp_path / "dump"
        simulate(dump, date="2026-12-01", episodes=200, seed=5, episodes_per_file=50)
        monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
        logger, messages = logging.getLogger(LOGGER), _Messages()
        level = logger.level
        logger.setLevel(logging.WARNING)  # the default --log-level: an operator sees it
        logger.addHandler(messages)
        try:
            runs.score(dump, tmp_path / "out")
        finally:
            logger.removeHandler(messages)
            logger.setLevel(level)
        assert not killed_folder.exists()
        assert alive_folder.exists() and any(alive_folder.glob("*.arrow"))
        assert any("killed" in m and str(killed_folder) in m for m in messages.seen), messages.seen
    finally:
        alive.kill()
        alive.wait()
    held = sum(f.stat().st_size for f in alive_folder.iterdir() if f.is_file())
    assert sweep(tmpdir) == [(alive_folder, held)]  # gone now: the next sweep takes it
    # this process's, removed as it exits, and the other machine's
    assert sorted(tmpdir.iterdir()) == sorted([own_folder(), elsewhere, longer_name])


def test_a_folder_left_half_made_by_a_killed_process_is_swept_once_old(tmp_path: Path) -> None:
    """A process killed between making its folder and locking it leaves the folder under its
    making name, unlocked: swept once older than any live process keeps that name (one
    without its lock file and one with it free), and only then, and only this machine's."""
    host = socket.gethostname()
    old = [tmp_path / f".cogscore-making-{host}-{n}" for n in ("nolock", "freelock")]
    fresh = tmp_path / f".cogscore-making-{host}-fresh"
    elsewhere = [
        tmp_path / ".cogscore-making-another-machine.example-x1",
        tmp_path / f".cogscore-making-{host}-gpu-x1",  # a machine named as this one, and more
    ]
    for folder in (*old, fresh, *elsewhere):
        folder.mkdir()
    (old[1] / ".owner").touch()
    long_ago = time.time() - 2 * spill_module._MAKING_S
    for folder in (*old, *elsewhere):
        os.utime(folder, (long_ago, long_ago))
    assert sorted(sweep(tmp_path)) == sorted((folder, 0) for folder in old)
    assert sorted(tmp_path.iterdir()) == sorted([fresh, *elsewhere])


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


def test_a_process_that_ends_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """Frames set aside and never read back (a run that failed), then the process exits."""
    code = "import polars as pl\nfrom flows.store.spill import Spilled\n"
    code += "kept = Spilled(pl.DataFrame({'a': [1]}))\nprint(kept.path)"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent.parent == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_a_tmpdir_without_locks_still_sets_aside_and_is_never_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some network file systems take no lock: the run sets its scores aside as before, in a
    folder no sweep matches (a live run's folder could not be told from a killed one's)."""

    def no_lock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    # spill's own file locks only (the output's lease takes them as before)
    unlocked = SimpleNamespace(flock=no_lock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB)
    monkeypatch.setattr(spill_module, "fcntl", unlocked)
    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=200, seed=5, episodes_per_file=25)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # a chunk a file: set aside
    spilled = []
    monkeypatch.setattr(
        staging_module, "Spilled", lambda frame: spilled.append(Spilled(frame)) or spilled[-1]
    )
    outcome = runs.score(dump, tmp_path / "out")
    assert outcome.result is not None and outcome.result.counts["episodes_scored"] > 0
    assert spilled and own_folder().name.startswith("cogscore-unlocked-")
    # and a folder of this machine whose lock cannot be asked about is left, not removed
    asked = tmpdir / f"{PREFIX}{socket.gethostname()}-made-when-locks-worked"
    asked.mkdir()
    (asked / ".owner").touch()
    assert sweep(tmpdir) == [] and own_folder().is_dir() and asked.is_dir()
