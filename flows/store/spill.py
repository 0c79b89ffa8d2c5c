"""Frames set aside on local disk until they are needed again (``flows.staging.Stager``).

What a night's reduction needs of each staged episode (the held columns, about 120 bytes)
grew the driver's memory with the night while its files were scored: set aside in a
temporary Arrow IPC file as each chunk is staged and read back when the night's parts are
assembled, it costs memory only once the files' working sets are gone (issue 39;
docs/performance.md, "Memory flat with the night").

The files are made in a folder of the process's own in ``TMPDIR`` (which should be a disk,
not a tmpfs that holds them in memory) and removed when read back, or when the frame is
dropped unread (a night that ends in an error); the folder goes when the process exits. A
killed process (SIGKILL, out of memory, the machine lost) cannot remove its folder: the
folder's lock (``flock``, released by the kernel with the process) tells the next run that
its owner is gone (``sweep``, as a run's ``flows.staging.Stager`` starts), and that run
removes it.
"""

from __future__ import annotations

import atexit
import fcntl
import glob
import os
import shutil
import socket
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl

from flows.store.errors import StorageError

PREFIX: Final = "cogscore-held-"
# A folder's name says its machine: a TMPDIR shared by several (NFS, where a lock may not be
# seen from another machine) is swept by each of its own folders only.
_THIS_MACHINE: Final = PREFIX + socket.gethostname() + "-"
# Made under another name and renamed once locked: a folder named PREFIX... is always locked
# while its process lives. One still so named after _MAKING_S was left by a process killed
# between making it and locking it (a live one renames it within microseconds).
_MAKING: Final = ".cogscore-making-" + socket.gethostname() + "-"
_MAKING_S: Final = 600.0
# Where the file system takes no lock (some network ones): a name no sweep matches, the folder
# removed at exit only.
_UNLOCKED: Final = "cogscore-unlocked-"
_LOCK: Final = ".owner"


@dataclass(frozen=True)
class _Owned:
    path: Path
    lock: int  # the open lock file: the lock lasts while it is open


_owned: dict[Path, _Owned] = {}  # TMPDIR -> this process's folder there
_owning = threading.Lock()


def own_folder() -> Path:
    """This process's folder of set-aside frames in ``TMPDIR``, made on first use and
    removed at exit."""
    parent = Path(tempfile.gettempdir())
    with _owning:
        owned = _owned.get(parent)
        if owned is not None and owned.path.is_dir():
            return owned.path
        if owned is not None:  # removed under it (TMPDIR cleaned): made again
            os.close(owned.lock)
        making = Path(tempfile.mkdtemp(prefix=_MAKING, dir=parent))
        lock = os.open(making / _LOCK, os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            name = _THIS_MACHINE
        except OSError:  # no lock on this file system: never swept (it could not be told alive)
            name = _UNLOCKED
        path = making.with_name(name + making.name.removeprefix(_MAKING))
        making.rename(path)
        _owned[parent] = _Owned(path, lock)
        if owned is None:
            atexit.register(_remove, parent)
    return path


def sweep(parent: Path | None = None) -> list[tuple[Path, int]]:
    """Removes the folders of set-aside frames in ``parent`` (default ``TMPDIR``) whose
    process on this machine is gone (their lock is free); returns each with the bytes it
    held; and the folders left half made (unlocked, named as made, for over ``_MAKING_S``) by
    processes killed while making them. The folders of live processes, this one's among them,
    and of other machines are left."""
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    gone = []
    folders = [(f, False) for f in _of_this_machine(parent, _THIS_MACHINE)]
    folders += [(f, True) for f in _of_this_machine(parent, _MAKING) if _stale(f)]
    for folder, making in folders:
        if not _owner_gone(folder, making):
            continue
        size = _held_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        gone.append((folder, size))
    return gone


def _of_this_machine(parent: Path, prefix: str) -> list[Path]:
    """The folders named ``prefix`` and mkdtemp's random part (no ``-`` in it): not those of
    a machine whose name starts with this one's and a ``-`` (``worker-1-gpu``, ``worker-1``)."""
    found = parent.glob(glob.escape(prefix) + "*")
    return [f for f in found if "-" not in f.name.removeprefix(prefix)]


def _stale(making: Path) -> bool:
    try:
        return time.time() - making.stat().st_mtime > _MAKING_S
    except OSError:  # renamed or removed meanwhile
        return False


def _owner_gone(folder: Path, making: bool) -> bool:
    """Whether the process of ``folder`` is gone: its lock is free (or, for a folder left
    while it was made, was never made)."""
    try:
        lock = os.open(folder / _LOCK, os.O_RDONLY)
    except FileNotFoundError:  # killed before making its lock file: only a making folder
        return making and folder.is_dir()
    except OSError:  # not a folder of ours, or removed meanwhile
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # its process is alive (BlockingIOError), or no lock can be taken
        return False
    finally:
        os.close(lock)  # (a lock taken goes with it: the folder is removed next)
    return True


def _held_bytes(folder: Path) -> int:
    try:
        return sum(f.stat().st_size for f in folder.iterdir())
    except OSError:  # removed meanwhile (another run's sweep)
        return 0


def _remove(parent: Path) -> None:
    owned = _owned.pop(parent, None)
    if owned is not None:
        shutil.rmtree(owned.path, ignore_errors=True)
        os.close(owned.lock)


class Spilled:
    """``frame`` written to a temporary file, read back once (``take``).

    >>> spilled = Spilled(pl.DataFrame({"a": [1, 2]}))
    >>> spilled.height, spilled.path.exists()
    (2, True)
    >>> spilled.take()["a"].to_list(), spilled.path.exists()
    ([1, 2], False)
    """

    def __init__(self, frame: pl.DataFrame) -> None:
        try:
            handle, name = tempfile.mkstemp(suffix=".arrow", dir=own_folder())
            os.close(handle)
            self.path = Path(name)
            self._remove = weakref.finalize(self, self.path.unlink, missing_ok=True)
            # Compressed: read back into memory of its own (an uncompressed file may be mapped).
            frame.write_ipc(self.path, compression="lz4")
        except OSError as error:
            folder = tempfile.gettempdir()
            raise StorageError(
                f"cannot set a night's scores aside in {folder} (TMPDIR) while its files are "
                f"scored: {error.strerror or error}; point TMPDIR at a folder with room"
            ) from error
        self.height = frame.height

    def take(self) -> pl.DataFrame:
        """The frame, its file removed."""
        frame = pl.read_ipc(self.path)
        self._remove()
        return frame
