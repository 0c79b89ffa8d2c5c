"""The replay worker as the importer sees it: the process started, a job sent, its result
awaited with a time limit; a worker that a task killed, or that hung, fails only the run it
was replaying (its task group ended), and the next run gets a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Final

# How long the worker may take to import the harness, and to answer beyond a run's timeout.
_WORKER_START: Final = 300.0
_WORKER_SLACK: Final = 60.0


class WorkerGone(Exception):
    """The replay worker ended, or stopped answering, during a job."""


class HarnessMissing(RuntimeError):
    """The replay worker could not start: the import cannot replay any run."""


class _Lines:
    """Lines from a pipe, each awaited for at most a given time (a worker that hangs or
    dies is noticed, not waited for)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer = fd, b""

    def read(self, seconds: float) -> bytes | None:
        """The next line; None at the end of the pipe; ``TimeoutError`` after ``seconds``."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class Worker:
    """The replay worker process (``python -m flows.importers.kaggle_worker_process``):
    imports the harness once, says it is ready, then replays one run per job in a forked child
    of its own process group, whose id it sends before the result (so a worker that a task
    killed leaves no task running: its group is ended here)."""

    def __init__(self) -> None:
        # Everything the worker and its tasks put in temporary files goes here, removed when
        # the worker ends, however it ends (a killed worker cleans nothing up itself).
        self.scratch = tempfile.mkdtemp(prefix="cogscore-worker-")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": self.scratch}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flows.importers.kaggle_worker_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdout is not None
        self.lines = _Lines(self.process.stdout.fileno())
        self.ready = False
        # The process group of the task being replayed (its id comes before its result):
        # ended with the worker, however the worker or this process ends.
        self.group: int | None = None

    def _message(self, seconds: float) -> dict[str, Any] | None:
        line = self.lines.read(seconds)
        return None if line is None else dict(json.loads(line))

    def replay(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job's result; ``WorkerGone`` when the worker ended or hung during it (its task
        group ended); ``RuntimeError`` when it could not start (the harness missing)."""
        assert self.process.stdin is not None
        if not self.ready:
            try:
                hello = self._message(_WORKER_START)
            except TimeoutError:
                hello = None
            if not hello or not hello.get("ready"):
                self.kill()
                raise HarnessMissing(
                    "the replay worker did not start (is the harness installed? "
                    "`uv sync --extra kaggle`)"
                )
            self.ready = True
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
            self.process.stdin.flush()
            message = self._message(_WORKER_SLACK)
            if message is not None and "task_group" in message:
                self.group = int(message["task_group"])
                message = self._message(float(job["timeout"]) + _WORKER_SLACK)
        except (BrokenPipeError, TimeoutError) as error:
            self.kill()
            raise WorkerGone(
                "the replay worker did not answer" if isinstance(error, TimeoutError) else ""
            ) from None
        if message is None:
            self.kill()
            code = self.process.wait()
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise WorkerGone(f"the replay worker ended ({how}) while this run's task ran")
        self.group = None  # the worker ended it, as it ends every run's group
        return message

    def kill(self) -> None:
        """End the worker, and the group of the task it was replaying, if any (a task's
        processes may outlive its worker: only the task's first process dies with it)."""
        if self.group is not None:
            _end_group(self.group)
            self.group = None
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def close(self) -> None:
        if self.process.stdin:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)


class _Workers:
    """The one replay worker of an import, started when first needed and again after a task
    killed it (or it hung): a dead worker fails only the run it was replaying."""

    def __init__(self) -> None:
        self.worker: Worker | None = None

    def replay(self, job: dict[str, Any]) -> dict[str, Any]:
        if self.worker is None:
            self.worker = Worker()
        try:
            return self.worker.replay(job)
        except WorkerGone:
            self.worker = None
            raise
        except BaseException:  # its state unknown: the next run gets a new one
            self.worker.kill()
            self.worker = None
            raise

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def _end_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
