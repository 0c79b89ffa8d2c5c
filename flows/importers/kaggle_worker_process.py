"""The replay worker process (``python -m flows.importers.kaggle_worker_process``, started by
``flows.importers.kaggle_worker``), never the importing process: it imports
``kaggle_benchmarks`` once, then forks a child for every run, which replays it
(``flows.importers.kaggle_replay.replay``) and sends back what it captured. A fork is a fresh
copy of the worker: task files share no module state, random generators or harness registry,
a task's prints go to a file, and a task that crashes the interpreter, exits or hangs (killed
after ``timeout`` seconds) fails that run only. Forking costs about 10 ms against 1-2 s for a
new interpreter that imports the harness.

Protocol: one JSON object per line on stdin (a job: ``task_file``, ``task_name``,
``category``, ``run``: the run file's text, ``timeout``), one JSON object per line on stdout
(its result, ``flows.importers.kaggle_replay.replay``), in order.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT, TASK_OUTPUT_LIMIT
from flows.importers.kaggle_replay import _harness, replay
from schemas.kaggle import Reason


def _limit(job: dict[str, Any]) -> None:
    """In the forked child: the task's memory (its address space: the worker's own at the
    fork and ``task_memory`` MiB more), the size of any file it writes (its prints go to
    one), no core dump."""
    memory = int(job.get("task_memory") or DEFAULT_TASK_MEMORY) << 20
    try:
        with open("/proc/self/statm") as statm:
            memory += int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        pass
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (TASK_OUTPUT_LIMIT, TASK_OUTPUT_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _die_with_parent() -> None:
    """Linux: the child is killed when its worker dies (a task that kills its worker does
    not run on alone)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(job: dict[str, Any], write_fd: int, workdir: Path) -> None:
    """In the forked child, the leader of a process group of its own (the worker ends the
    whole group): limits set, replay, the result written to the pipe (its length first, so
    the worker needs no end of file, which a task's own child holding the pipe would keep
    from coming), exit without cleanup. Its prints, the harness's files and any temporary
    file go to ``workdir``, which the worker removes."""
    code = 0
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it: over the limit, stop
        _die_with_parent()
        _limit(job)
        os.environ["TMPDIR"] = str(workdir)
        tempfile.tempdir = str(workdir)
        out = os.open(workdir / "task-output.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.chdir(workdir)
        try:
            result = replay(job, workdir)
        except Exception as error:
            result = {
                "reason": Reason.REPLAY_FAILED,
                "detail": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc(limit=-3),
            }
        if "MemoryError" in str(result.get("detail") or ""):
            result["detail"] = f"{result['detail']} ({_memory_said(job)})"
        payload = json.dumps(result, default=str).encode()
        data = memoryview(len(payload).to_bytes(8, "big") + payload)
        while data:
            data = data[os.write(write_fd, data) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _memory_said(job: dict[str, Any]) -> str:
    memory = int(job.get("task_memory") or DEFAULT_TASK_MEMORY)
    return f"a task may take {memory} MiB of memory beyond the replay worker's, --task-memory"


def _ended(status: int, job: dict[str, Any]) -> str:
    """How a task process ended, in words, with the limit it went over where a signal says."""
    if not os.WIFSIGNALED(status):
        return f"exit status {os.WEXITSTATUS(status)}"
    number = os.WTERMSIG(status)
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = str(number)
    if number == signal.SIGXFSZ:
        return (
            f"killed by {name}: it wrote more than {TASK_OUTPUT_LIMIT >> 20} MiB to one file "
            "(its prints go to one)"
        )
    if number in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
        return f"killed by {name}; {_memory_said(job)}"
    return f"killed by {name}"


def _exited(pid: int) -> bool:
    """Whether the child has ended (left unreaped: its id stays its group's until reaped)."""
    found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return found is not None and found.si_pid == pid


def _take(fd: int, buffer: bytearray) -> bool:
    """Read what the pipe holds (it has something, or its end) into ``buffer``; False at its
    end."""
    chunk = os.read(fd, 1 << 20)
    buffer.extend(chunk)
    return bool(chunk)


def _drain(fd: int, buffer: bytearray) -> None:
    """Read all the pipe holds now into ``buffer``, without waiting for more (a task's own
    child may hold it open, writing nothing)."""
    os.set_blocking(fd, False)
    try:
        while _take(fd, buffer):  # BlockingIOError: nothing more for now
            pass
    except BlockingIOError:
        pass
    finally:
        os.set_blocking(fd, True)


def _whole(buffer: bytearray) -> bytes | None:
    if len(buffer) >= 8 and len(buffer) >= 8 + int.from_bytes(buffer[:8], "big"):
        return bytes(buffer[8 : 8 + int.from_bytes(buffer[:8], "big")])
    return None


def _await(pid: int, read_fd: int, timeout: float) -> tuple[bytes | None, str | None]:
    """The child's result (its bytes), or None and why there is none: it ended without one,
    or went over ``timeout``. Waits on the pipe and on the child's end together (a task's
    own child may hold the pipe open after the task ended)."""
    deadline = time.monotonic() + timeout
    buffer = bytearray()
    try:
        watch: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        watch = None  # polled instead
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, f"timed out after {timeout:g} s"
            waits = [read_fd] if watch is None else [read_fd, watch]
            ready = select.select(waits, [], [], left if watch is not None else min(left, 0.1))[0]
            if read_fd in ready and not _take(read_fd, buffer):
                break  # nobody holds the pipe: the task has ended
            if (payload := _whole(buffer)) is not None:
                return payload, None
            if (watch is not None and watch in ready) or _exited(pid):
                _drain(read_fd, buffer)
                break
        payload = _whole(buffer)
        return payload, None if payload is not None else "ended"
    finally:
        if watch is not None:
            os.close(watch)


def run_forked(job: dict[str, Any], started: Callable[[int], None] | None = None) -> dict[str, Any]:
    """``replay`` in a forked child with a time limit, its process group ended whole when it
    is done (a task's own children with it) and its scratch folder removed; a crash, a limit
    gone over or a hang is that run's failure. ``started``: given the group's id first."""
    timeout = float(job.get("timeout") or DEFAULT_TIMEOUT)
    workdir = Path(tempfile.mkdtemp(prefix="cogscore-replay-"))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(job, write_fd, workdir)
    os.close(write_fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    try:
        if started is not None:
            started(pid)
        payload, why = _await(pid, read_fd, timeout)
    finally:
        os.close(read_fd)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        shutil.rmtree(workdir, ignore_errors=True)
    if payload is None:
        detail = why if why != "ended" else f"the task process ended ({_ended(status, job)})"
        return {"reason": Reason.REPLAY_FAILED, "detail": detail}
    try:
        result: dict[str, Any] = json.loads(payload)
    except ValueError as error:
        return {
            "reason": Reason.REPLAY_FAILED,
            "detail": f"the task's result is unreadable: {error}",
        }
    return result


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    """The worker: import the harness once, say so, then replay each job of stdin in a fork
    (its task group's id sent first, then its result)."""
    _harness()
    # ended by the importer: the task group is ended too (run_forked's clean-up)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    _send({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        result = run_forked(json.loads(line), lambda pid: _send({"task_group": pid}))
        _send(result)


if __name__ == "__main__":
    main()
