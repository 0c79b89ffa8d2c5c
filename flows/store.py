"""The output folder as a versioned store with one atomic commit point.

Layout of ``OUT``::

    OUT/_versions/<id>/<table>/dump_date=…/…/part-0.parquet   one complete snapshot per run
    OUT/_versions/<id>/manifest.json
    OUT/current -> _versions/<id>                               the commit point (a symlink)
    OUT/<table> -> current/<table>, OUT/manifest.json -> current/manifest.json

A run writes a new snapshot beside the old ones, then replaces the ``current`` symlink with
one ``rename`` (atomic on POSIX). Until then readers see the previous snapshot complete; a
run killed at any moment leaves at worst an unreferenced snapshot, removed by the next run.
Partitions a run does not replace are hard-linked from the previous snapshot: they are
neither rewritten nor copied. Only one run writes to ``OUT`` at a time (``OUT/.lock``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

VERSIONS = "_versions"
CURRENT = "current"
MANIFEST = "manifest.json"
LOCK = ".lock"


PAUSE_AT = "COGSCORE_PAUSE_AT"  # fault injection for tests: a point name, and
PAUSE_FLAG = "COGSCORE_PAUSE_FLAG"  # a file to create when the run reaches it


def fault_point(name: str) -> None:
    """Where tests kill a run (kill -9): with ``COGSCORE_PAUSE_AT=name`` the run writes the
    flag file and waits there. Does nothing otherwise."""
    if os.environ.get(PAUSE_AT) == name:
        Path(os.environ[PAUSE_FLAG]).write_text(name)
        time.sleep(300)


class OutputBusy(Exception):
    """Another run holds ``OUT/.lock``."""


@contextmanager
def locked(out: Path, wait: bool = False) -> Iterator[None]:
    """Hold ``OUT/.lock`` for the run; raise ``OutputBusy`` (or wait) when another run has it."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise OutputBusy(
                f"another cogscore run ({holder}) is writing to {out}; wait for it to finish"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {datetime.now(UTC).isoformat(timespec='seconds')}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def current_snapshot(out: Path) -> Path | None:
    link = out / CURRENT
    return link.resolve() if link.is_symlink() and link.resolve().is_dir() else None


def new_snapshot(out: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    snapshot = out / VERSIONS / f"{stamp}-{uuid.uuid4().hex[:8]}"
    snapshot.mkdir(parents=True)
    return snapshot


def carry_over(
    previous: Path | None, snapshot: Path, keep: Callable[[Path], bool], pattern: str = "*.parquet"
) -> None:
    """Hard-link into ``snapshot`` every file of ``previous`` matching ``pattern`` for which
    ``keep`` holds (its path relative to the snapshot); a filesystem without hard links gets
    copies."""
    if previous is None:
        return
    for source in previous.rglob(pattern):
        relative = source.relative_to(previous)
        if not source.is_file() or not keep(relative):
            continue
        target = snapshot / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)


def foreign_entries(out: Path, names: Iterable[str]) -> list[str]:
    """The ``names`` (tables, the manifest) that exist in ``out`` as something other than
    this store's links: cogscore did not write them, and must not replace them."""
    return [name for name in names if (out / name).exists() and not (out / name).is_symlink()]


def carry_over_foreign(previous: Path | None, snapshot: Path, ours: Callable[[Path], bool]) -> None:
    """Hard-link into ``snapshot`` every file of ``previous`` that this store did not write
    (a note dropped into ``OUT/rejects/``): cogscore never deletes a file it did not write."""
    if previous is not None:
        carry_over(previous, snapshot, lambda rel: not ours(rel), pattern="*")


def commit(
    out: Path,
    snapshot: Path,
    tables: Iterable[str],
    previous: Path | None,
    known_links: Iterable[str] = (),
) -> None:
    """Make ``snapshot`` the current one (one atomic rename), then remove every other
    snapshot but ``previous`` (readers may still be on it). ``out`` and ``previous`` are
    resolved paths (a relative ``out`` once made the previous snapshot look stale)."""
    tmp = out / f".{CURRENT}-{uuid.uuid4().hex}"
    tmp.symlink_to(snapshot.relative_to(out))
    fault_point("before-commit")
    os.replace(tmp, out / CURRENT)
    fault_point("after-commit")
    tables = list(tables)
    for name in (*tables, MANIFEST):
        link = out / name
        if not link.is_symlink():  # refused before the run if something else is there
            link.symlink_to(Path(CURRENT) / name)
    for name in known_links:  # a table this snapshot does not have (rescore_diff)
        link = out / name
        if name not in tables and link.is_symlink() and not link.exists():
            link.unlink()
    for stale in (out / VERSIONS).iterdir():
        if stale not in (snapshot, previous):
            shutil.rmtree(stale, ignore_errors=True)
    for leftover in out.glob(f".{CURRENT}-*"):
        leftover.unlink(missing_ok=True)


def discard(snapshot: Path) -> None:
    shutil.rmtree(snapshot, ignore_errors=True)
