"""What native libraries write straight to the process's stderr, kept off the terminal.

delta-rs and polars are Rust: a panic in one of their background threads (object_store's
"Already shut down" on a full disk, for one) prints its message and a backtrace note to file
descriptor 2 before the error reaches Python, which then reports it in one line. A command
run by ``flows.cli.run`` passes descriptor 2 through a filter for its whole life: Rust panic
blocks are dropped (``COGSCORE_DEBUG=1`` keeps them), everything else is passed on, and
Python's own ``sys.stderr`` writes to the terminal directly (so it is still a terminal for
the progress display).
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from typing import Final

# "thread 'tokio-rt-worker' (4693) panicked at …/buffered.rs:369:41:" starts a block; the
# message, "stack backtrace:" and the frames follow; the "note: …" line ends it.
PANIC: Final = re.compile(rb"^thread '[^']*'( \(\d+\))? panicked at ")
END: Final = re.compile(rb"^note: ")


def drop_panics(lines: list[bytes]) -> list[bytes]:
    """``lines`` without the Rust panic blocks in them (and the blank line before each).

    >>> drop_panics([b"a\\n", b"\\n", b"thread 'w' (1) panicked at x.rs:1:2:\\n",
    ...     b"Already shut down\\n", b"note: run with RUST_BACKTRACE=1\\n", b"b\\n"])
    [b'a\\n', b'b\\n']
    """
    kept: list[bytes] = []
    skipping = False
    for line in lines:
        if PANIC.match(line):
            skipping = True
            if kept and not kept[-1].strip():
                kept.pop()
        elif skipping and END.match(line):
            skipping = False
            continue
        if not skipping:
            kept.append(line)
    return kept


def _write(real: int, lines: list[bytes]) -> None:
    """``lines`` to descriptor ``real``; dropped where its reader went away (``2>&1 | head``):
    the filter goes on reading, so that no native writer blocks on a full pipe."""
    for line in lines:
        try:
            os.write(real, line)
        except BrokenPipeError:
            return


class NativeStderr:
    """Descriptor 2 through the filter while entered (``with NativeStderr():``)."""

    def __init__(self) -> None:
        self._real: int | None = None
        self._thread: threading.Thread | None = None
        self._saved: object = None

    def __enter__(self) -> NativeStderr:
        if os.environ.get("COGSCORE_DEBUG"):
            return self
        try:
            sys.stderr.flush()
            self._real = os.dup(2)
            read, write = os.pipe()
            os.dup2(write, 2)
            os.close(write)
        except OSError:  # no descriptor 2 to filter
            self._real = None
            return self
        self._saved = sys.stderr
        sys.stderr = io.TextIOWrapper(
            os.fdopen(os.dup(self._real), "wb", buffering=0),
            encoding=getattr(self._saved, "encoding", None) or "utf-8",
            errors="backslashreplace",
            write_through=True,
        )
        self._thread = threading.Thread(target=self._pass_on, args=(read, self._real), daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _pass_on(read: int, real: int) -> None:
        pending: list[bytes] = []
        with os.fdopen(read, "rb") as source:
            for line in source:
                pending.append(line)
                if not line.strip():
                    continue  # a blank line: it may open a panic block
                if any(PANIC.match(p) for p in pending) and not END.match(line):
                    continue  # a panic block: wait for its end
                _write(real, drop_panics(pending))
                pending = []
        _write(real, drop_panics(pending))

    def __exit__(self, *exc: object) -> None:
        if self._real is None:
            return
        sys.stderr.flush()
        os.dup2(self._real, 2)  # the pipe's last writer closes: the filter reads its end
        if self._thread is not None:
            self._thread.join(timeout=5)
        sys.stderr = self._saved  # type: ignore[assignment]
        os.close(self._real)
        self._real = None
