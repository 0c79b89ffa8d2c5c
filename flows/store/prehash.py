"""A local dump's files hashed while the command starts up, and the content digest itself.

``cogscore score`` hashes every file of its dump: the content digest is the night's
fingerprint and nightly's proof of change. Its kind is BLAKE3 (``DIGEST``; the ``blake3``
package: 4x sha256's speed on one core here, 0.06 s against 0.27 s for a dump of 328 MB);
runs before issue 48 recorded sha256. A digest names its kind (``digest_kind``):
``blake3:<hex>``, an object's ``etag:<ETag>``, and sha256's bare hex as those runs recorded
it, so that a night they scored keeps its fingerprint: a file is hashed again with the kind
its night recorded (``flows.plan.plan_nightly``, ``cogscore explain``), never compared with a
digest of another kind. Hashed when the run lists the files, they
held its scoring back (0.12 s of a 100,000-episode night of 8 files, on 2 cores), while the
imports before the run (polars, pyarrow, scipy: about 0.4 s) keep one core busy and leave
the other idle. So ``score`` starts hashing the dump on a thread of its own first thing
(``start``): hashlib releases the GIL while it hashes, and the imports go on beside it.
The run then ``take``s each file's digest: only where the file is still the one hashed
(device, inode, size and modification time as then); else, or where its turn has not come,
none, and the run hashes the file itself, as before.

This module imports the standard library and ``blake3`` only (1 ms), so that it can start
before the rest.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Final

import blake3

# The kinds of a file's content digest, and the one a run hashes a file with where no earlier
# record of it asks for another (``digest_kind``).
BLAKE3: Final = "blake3"
SHA256: Final = "sha256"  # every run before issue 48
ETAG: Final = "etag"  # an object's: the store's own content identity (``dumps.content_digest``)
DIGEST: Final = BLAKE3
# Read this much at a time: a hashing thread gives way to the importing one between reads
# (the GIL), so fewer, larger reads keep it going.
READ_BYTES = 8 << 20
# Files smaller than this are left to the run: hashing one costs less than handing its digest
# over (a dump of 10,000 one-episode files took 5% longer with every file hashed early).
EARLY_BYTES = 1 << 20

_Key = tuple[int, int, int, int]  # device, inode, size, modification time (ns)
_hashed: dict[tuple[int, int], Future[tuple[_Key, str] | None]] = {}
_lock = threading.Lock()


def file_digest(path: Path | str, kind: str = DIGEST) -> str:
    """The content digest of a local file's bytes, of ``kind`` (``BLAKE3`` or ``SHA256``), as
    ``digest_kind`` reads it back. Both release the GIL while they hash (not memory-mapped:
    a file cut short while mapped would kill the process).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     _ = f.write(b"abc"); f.flush()
    ...     file_digest(f.name) == "blake3:" + blake3.blake3(b"abc").hexdigest()
    ...     file_digest(f.name, SHA256) == hashlib.sha256(b"abc").hexdigest()
    True
    True
    """
    if kind not in (BLAKE3, SHA256):
        raise ValueError(f"no digest of kind {kind!r} for a local file")
    digest = blake3.blake3() if kind == BLAKE3 else hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        # No larger than the file: a dump of 10,000 small files is not 80 GB of buffers.
        buffer = bytearray(max(1, min(READ_BYTES, os.fstat(handle.fileno()).st_size)))
        view = memoryview(buffer)
        while read := handle.readinto(buffer):
            digest.update(view[:read])
    return f"{BLAKE3}:{digest.hexdigest()}" if kind == BLAKE3 else digest.hexdigest()


def digest_kind(digest: str) -> str:
    """The kind of a content digest as a run records it: its prefix, or ``SHA256`` for the
    bare hex that runs before issue 48 recorded.

    >>> digest_kind("blake3:ab12"), digest_kind("etag:0x1f"), digest_kind("ab12")
    ('blake3', 'etag', 'sha256')
    """
    kind, colon, _ = digest.partition(":")
    return kind if colon else SHA256


def parquet_below(root: Path) -> list[Path]:
    """Every ``*.parquet`` below ``root`` (``_parquet_entries``), sorted by relative path."""
    found = [Path(entry.path) for entry in _parquet_entries(root)]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _large_below(root: Path, least: int) -> list[tuple[str, _Key]]:
    """The files ``parquet_below`` lists of at least ``least`` bytes, each with its key, by
    path: a ``stat`` a file, and no path made or sorted for the small ones (listing a dump
    of 10,000 small files as ``parquet_below`` does, and stating them, took 0.13 s of the
    GIL from the command's start-up; 0.04 s this way)."""
    found: list[tuple[str, _Key]] = []
    for entry in _parquet_entries(root):
        try:
            file = entry.stat()
        except OSError:
            continue  # a broken link: the run says so
        if file.st_size >= least:
            found.append((entry.path, (file.st_dev, file.st_ino, file.st_size, file.st_mtime_ns)))
    return sorted(found)


def _parquet_entries(root: Path) -> Iterator[os.DirEntry[str]]:
    """The ``*.parquet`` entries below ``root``, hidden and ``_`` names aside, following
    symbolic links to files and to folders alike (a night's folder may be a link to where
    the harness wrote it); a folder reached twice (a link loop) is walked once, one that
    cannot be read is passed over (as ``os.walk`` does). One ``scandir`` a folder."""
    seen: set[tuple[int, int]] = set()
    folders = [str(root)]
    while folders:
        folder = folders.pop()
        stat = os.stat(folder)
        if (stat.st_dev, stat.st_ino) in seen:
            continue
        seen.add((stat.st_dev, stat.st_ino))
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith((".", "_")):
                continue
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False
            if is_folder:
                folders.append(entry.path)
            elif entry.name.endswith(".parquet"):
                yield entry


def _key(path: Path | str) -> _Key:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def start(root: str | Path) -> threading.Thread | None:
    """Hash the ``*.parquet`` files of at least ``EARLY_BYTES`` of the local dump ``root``
    (a folder or one file), in the order a run lists them, on a daemon thread (the process
    does not wait for it); the thread. An object-store URL starts nothing. What an earlier
    ``start`` of this process left untaken is dropped."""
    text = str(root)
    if "://" in text:
        return None
    thread = threading.Thread(target=_hash_below, args=(Path(text),), name="prehash", daemon=True)
    thread.start()
    return thread


def _hash_below(root: Path) -> None:
    try:
        if root.is_file():
            keyed = [(str(root), key)] if (key := _key(root))[2] >= EARLY_BYTES else []
        else:
            keyed = _large_below(root, EARLY_BYTES) if root.is_dir() else []
    except OSError:
        return  # the run lists the dump, and says what is wrong with it
    jobs = []
    with _lock:
        for earlier in _hashed.values():
            earlier.cancel()
        _hashed.clear()
        for path, key in keyed:
            future: Future[tuple[_Key, str] | None] = Future()
            _hashed[key[:2]] = future
            jobs.append((path, key, future))
    for path, key, future in jobs:
        if not future.set_running_or_notify_cancel():
            continue  # the run hashed it itself
        try:
            digest = file_digest(path)
            future.set_result((key, digest) if _key(path) == key else None)
        except OSError:
            future.set_result(None)  # the run reads it, and says what is wrong with it


def take(path: Path | str, kind: str = DIGEST) -> str | None:
    """The digest hashed early of the file at ``path`` (waiting for it while it is being
    hashed), if the file is as it was then; None where it was not hashed, or has not been
    yet (it is not hashed early any more), or has changed since, or ``kind`` is not the
    kind hashed early (``DIGEST``; the digest is left for a later ``take``)."""
    if not _hashed or kind != DIGEST:
        return None  # nothing hashed early (a small file, a dump of objects): no stat
    try:
        now = _key(path)
    except OSError:
        return None
    with _lock:
        future = _hashed.pop(now[:2], None)
    if future is None or future.cancel():
        return None
    result = future.result()
    if result is None:
        return None
    key, digest = result
    return digest if key == now else None
