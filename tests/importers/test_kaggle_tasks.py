"""``import-kaggle`` against task files that misbehave (reliability review): a task that kills
its replay worker, forks a child that outlives it (and then ends normally, fails or hangs),
prints far more than anyone reads, takes too much memory, or hangs. Each fails its own run
only (the run after them imports), leaves no process running (a forked child is ended
however its task's run ended, and when the import itself is interrupted) and no scratch
folder behind.

Each hostile task is the real task of one fast run (one call) with the misbehaviour added
at the top of its module and its name changed; its run is that real run renamed, so a task
that behaves replays it exactly."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flows.importers.kaggle import import_runs
from flows.importers.kaggle_limits import TASK_OUTPUT_LIMIT
from flows.importers.kaggle_report import ImportReport, RunReport
from flows.store.location import Location
from schemas.kaggle import Outcome, Reason
from tests.learningbench import RUNS, TASKS

NAME = "feistel_cipher_round_obs_learning"
MODEL = "deepseek-ai_deepseek-v3.2"
RUN = RUNS / MODEL / f"{NAME}-run_id_Run_1_{MODEL}.run.json"
TASK = TASKS / "observational_learning" / "feistel-cipher-round-obs-learning.py"
TIMEOUT = 8.0  # the hanging task's run costs this much
MEMORY = 256  # MiB a task may take here (--task-memory)


def forks(pid_file: Path) -> str:
    """Module-level code that forks a child that sleeps, its id written to ``pid_file``."""
    return (
        "import os, time\n"
        "_pid = os.fork()\n"
        "if _pid == 0:\n"
        "    time.sleep(300)\n"
        "    os._exit(0)\n"
        f"open({str(pid_file)!r}, 'w').write(str(_pid))\n"
    )


# The hostile tasks that fork a sleeping child, and how their runs end.
FORKING = ("fork", "fork_error", "hang")


def hostile(pid_files: Path) -> dict[str, str]:
    """Module-level code each hostile task runs when loaded, by the name of its task (those
    that fork write their child's id to ``pid_files / <name>``)."""
    return {
        "kill": "import os\nos.kill(os.getppid(), 9)\n",
        "fork": forks(pid_files / "fork"),  # then the task runs and ends normally
        "fork_error": forks(pid_files / "fork_error") + "raise RuntimeError('a task error')\n",
        "print": (
            "import sys\n"
            "for _ in range(256):\n"
            "    sys.stdout.write('x' * (1 << 20))\n"
            "sys.stdout.flush()\n"
            "import time\n"
            "time.sleep(300)\n"
        ),
        "memory": f"_hog = bytearray({2 * MEMORY} << 20)\n",
        "hang": forks(pid_files / "hang")
        + (
            "import tempfile, time\n"
            "tempfile.NamedTemporaryFile(delete=False).write(b'x' * 1000)\n"
            "time.sleep(300)\n"
        ),
    }


@pytest.fixture(scope="module")
def imported(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[ImportReport, Path, Path]:
    root = tmp_path_factory.mktemp("tasks")
    runs, tasks, scratch = root / "runs", root / "tasks" / "observational_learning", root / "tmp"
    tasks.mkdir(parents=True)
    scratch.mkdir()
    pid_files = root / "children"
    pid_files.mkdir()
    source = TASK.read_text()
    for name, code in hostile(pid_files).items():
        (tasks / f"{name}.py").write_text(code + source.replace(f'"{NAME}"', f'"hostile_{name}"'))
        raw = json.loads(RUN.read_bytes())
        raw["taskVersion"]["name"] = f"hostile_{name}"
        (runs / name).mkdir(parents=True)
        (runs / name / f"hostile_{name}.run.json").write_bytes(json.dumps(raw).encode())
    (tasks / "feistel.py").write_text(source)
    (runs / "zz").mkdir()  # last: after every hostile task
    (runs / "zz" / RUN.name).write_bytes(RUN.read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(scratch))  # the replay's scratch folders go here
        report = import_runs(
            Location.parse(str(runs)),
            root / "tasks",
            Location.parse(str(root / "dump")),
            timeout=TIMEOUT,
            task_memory=MEMORY,
        )
    return report, scratch, pid_files


def _runs(report: ImportReport) -> dict[str, RunReport]:
    return {r.run.split("/", 1)[0]: r for r in report.runs}


def _failed(run: RunReport) -> str:
    assert run.outcome is Outcome.REJECTED and run.reasons == [Reason.REPLAY_FAILED], run
    return str(run.detail)


def test_the_run_after_every_hostile_task_imports(imported: tuple[Any, Path, Path]) -> None:
    runs = _runs(imported[0])
    assert runs["zz"].outcome is Outcome.IMPORTED and runs["zz"].written


def test_a_task_that_kills_its_worker_fails_its_run_only(imported: tuple[Any, Path, Path]) -> None:
    assert "replay worker ended (killed by signal 9)" in _failed(_runs(imported[0])["kill"])


@pytest.mark.parametrize("name", FORKING)
def test_a_task_that_forks_has_its_child_ended_however_its_run_ends(
    imported: tuple[Any, Path, Path], name: str
) -> None:
    """A normal end (imported: not a timeout, though the child held the pipe), an error (a
    failed run), a timeout: the task's child is ended with its run."""
    report, _, pid_files = imported
    ended = _runs(report)[name]
    assert (ended.outcome is Outcome.IMPORTED) == (name == "fork"), ended.detail
    assert not _running(int((pid_files / name).read_text())), name


def test_an_interrupted_import_ends_the_group_of_the_task_it_was_replaying(
    tmp_path: Path,
) -> None:
    """The import itself interrupted (Ctrl-C) while a task that forked a child hangs: the
    worker is killed, and the task's child with it (it does not die with its worker)."""
    runs, tasks = tmp_path / "runs", tmp_path / "tasks" / "observational_learning"
    tasks.mkdir(parents=True)
    pid_file = tmp_path / "child"
    code = forks(pid_file) + "import time\ntime.sleep(300)\n"
    (tasks / "hang.py").write_text(code + TASK.read_text().replace(f'"{NAME}"', '"forks"'))
    raw = json.loads(RUN.read_bytes())
    raw["taskVersion"]["name"] = "forks"
    runs.mkdir()
    (runs / "forks.run.json").write_bytes(json.dumps(raw).encode())
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:  # once the task has forked (its child's id written)
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.05)
        signal.pthread_kill(main, signal.SIGINT)

    # Ctrl-C as an interactive run gets it: a suite started in the background (`make test &`)
    # inherits SIGINT ignored, and the interrupt would never come (seen twice, 2026-12-07).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        report = import_runs(
            Location.parse(str(runs)),
            tmp_path / "tasks",
            Location.parse(str(tmp_path / "dump")),
            timeout=120,
        )
    except KeyboardInterrupt:
        pass
    else:  # say how the run ended, and whether the task forked
        told = [(r.outcome, r.reasons, r.detail) for r in report.runs]
        forked = pid_file.exists() and bool(pid_file.read_text())
        pytest.fail(f"the import was not interrupted: {told}; the task forked: {forked}")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not _running(int(pid_file.read_text()))


def test_a_task_that_prints_too_much_is_stopped(imported: tuple[Any, Path, Path]) -> None:
    detail = _failed(_runs(imported[0])["print"])
    assert f"more than {TASK_OUTPUT_LIMIT >> 20} MiB" in detail


def test_a_task_over_its_memory_fails_its_run(imported: tuple[Any, Path, Path]) -> None:
    detail = _failed(_runs(imported[0])["memory"])
    assert "MemoryError" in detail and "--task-memory" in detail


def test_a_task_that_hangs_times_out(imported: tuple[Any, Path, Path]) -> None:
    assert _failed(_runs(imported[0])["hang"]) == f"timed out after {TIMEOUT:g} s"


def test_no_scratch_folder_is_left(imported: tuple[Any, Path, Path]) -> None:
    assert list(imported[1].iterdir()) == []


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, which a container's init may never reap,
    is not)."""
    for _ in range(50):  # SIGKILL is delivered at once, but give the kernel a moment
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return False
        if "\nState:\tZ" in status:
            return False
        time.sleep(0.02)
    return True


def test_a_task_that_ends_mid_result_while_its_child_holds_the_pipe_ends_at_once() -> None:
    """The worker's wait (no harness): a child that wrote part of its result and ended, its own
    child holding the pipe open, is seen to have ended, not waited for until the timeout."""
    from flows.importers.kaggle_worker_process import _await

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the task: half a result, a child that keeps the pipe, the end
        os.setpgid(0, 0)
        os.write(write_fd, (1000).to_bytes(8, "big") + b"{")
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    os.close(write_fd)
    started = time.monotonic()
    try:
        assert _await(pid, read_fd, 30.0) == (None, "ended")
        assert time.monotonic() - started < 5
    finally:
        os.close(read_fd)
        os.killpg(pid, 9)
        os.waitpid(pid, 0)
