"""Reading a dump: listing it (a local folder or an object store) and reading its files."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pyarrow.parquet as pq

from flows.store import prehash
from flows.store.errors import BadLocation, NothingThere
from flows.store.location import Location, polars_options, storage_options
from flows.store.objects import get_object, list_files
from flows.store.prehash import DIGEST, ETAG, file_digest, parquet_below
from schemas.contract import DUMP_DATE
from schemas.exits import ExitCode
from transforms.ingest import partition_values

# Where a harness says a night is complete (as Spark and Hadoop write it): a night folder
# (or an undated dump's root) holding this file may be scored when runs require markers.
SUCCESS_MARKER = "_SUCCESS"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


@dataclass(frozen=True)
class DumpFile:
    """One file of a dump: a local file (``path`` a Path) or an object (its URL), with what
    the listing said of it (size; version: the modification time in ns locally, the ETag on
    an object store)."""

    path: Path | str
    relative: str  # posix path below the dump root: the `file` column
    partitions: dict[str, str] = field(default_factory=dict)
    listed_size: int | None = None
    version: str = ""
    # Where a file reached through a symbolic link (itself, or a folder on its way) really
    # is: recorded with the run (provenance); None where no link was followed.
    target: str | None = None

    @property
    def is_local(self) -> bool:
        return isinstance(self.path, Path)

    @property
    def size(self) -> int:
        if self.listed_size is not None:
            return self.listed_size
        return Path(self.path).stat().st_size


class InputError(Exception):
    """The input as a whole cannot be scored (missing, empty): a message for the user."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


def local_path(text: str | Path, what: str) -> Path:
    """``text`` as an absolute local path (provenance must not depend on the working
    folder); a URL (``s3://…``) is refused with a message, not taken for a folder name.

    >>> local_path("s3://bucket/out", "output")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    flows.store.dumps.InputError: output s3://bucket/out: URLs (s3://, …) are not supported yet; ...
    """
    if _URL.match(str(text)):
        raise InputError(
            f"{what} {text}: URLs (s3://, …) are not supported yet; give a local folder"
        )
    return Path(text).expanduser().resolve()


def is_night(value: str) -> bool:
    """A ``dump_date`` partition value is a calendar date written ``YYYY-MM-DD``.

    >>> is_night("2026-12-01"), is_night("latest"), is_night("2026-02-30")
    (True, False, False)
    """
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def dump_root(text: str | Path) -> Path | str:
    """The dump root as given: an absolute local path, or an object-store URL (checked)."""
    if _URL.match(str(text)):
        try:
            return Location.parse(str(text)).uri
        except BadLocation as error:
            raise InputError(f"input {error}") from None
    return local_path(text, "input")


def discover(root: str | Path) -> list[DumpFile]:
    """Every ``*.parquet`` below ``root`` (a folder, a file or an object-store URL), sorted,
    with its hive partition values, size and version as listed.

    Refused before any work (``InputError``): a missing or empty input, and a
    ``dump_date`` folder whose value is not a date."""
    root = dump_root(root)
    out = _listed_objects(root) if isinstance(root, str) else _listed_files(root)
    bad = sorted(
        {
            f.partitions[DUMP_DATE]
            for f in out
            if not is_night(f.partitions.get(DUMP_DATE, "0001-01-01"))
        }
    )
    if bad:
        raise InputError(
            f"input {root}: dump_date={bad[0]!r} is not a date YYYY-MM-DD"
            + (f" (nor {len(bad) - 1} other value(s))" if len(bad) > 1 else "")
            + "; rename or move that folder"
        )
    return out


def _listed_files(root: Path) -> list[DumpFile]:
    if not root.exists():
        raise InputError(f"input {root} does not exist")
    if root.is_file():
        stat = root.stat()
        return [DumpFile(root, root.name, {}, stat.st_size, str(stat.st_mtime_ns))]
    real_root = Path(os.path.realpath(root))
    real_folders: dict[Path, Path] = {}  # each folder's real place, found once (not per file)
    out = []
    for path in parquet_below(root):
        relative = path.relative_to(root).as_posix()
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise InputError(
                f"input {root}: {relative} is a broken symbolic link (to "
                f"{os.readlink(path)}); remove it or restore its target"
            ) from None
        if path.is_symlink():
            real = Path(os.path.realpath(path))
        else:
            folder = path.parent
            if folder not in real_folders:
                real_folders[folder] = Path(os.path.realpath(folder))
            real = real_folders[folder] / path.name
        target = None if real == real_root / relative else str(real)
        partitions = partition_values(relative)
        out.append(
            DumpFile(path, relative, partitions, stat.st_size, str(stat.st_mtime_ns), target)
        )
    if not out:
        raise InputError(f"input {root} holds no .parquet files")
    return out


def _listed_objects(root: str) -> list[DumpFile]:
    """An object-store dump: one listing (obstore) gives every object's size and ETag. A
    prefix holding nothing is refused as input (exit 2); a store that does not answer,
    refuses the credentials or has no such bucket stays a ``StorageError`` (exit 4)."""

    try:
        listed = list_objects(Location.parse(root))
    except NothingThere as error:
        raise InputError(f"input {error}") from None
    if not listed:
        raise InputError(f"input {root} holds no .parquet files")
    return listed


def list_objects(location: Location, suffix: str = ".parquet") -> list[DumpFile]:
    """Every ``suffix`` object of the dump at ``location`` (one listing: size and ETag),
    sorted by relative path; a dump that does not exist, or holds no object at all, is a
    ``StorageError`` naming it."""
    listed = [
        DumpFile(
            location.child(info.relative).uri,
            info.relative,
            partition_values(info.relative),
            info.size,
            info.version,
        )
        for info in list_files(location, suffix)
    ]
    return sorted(listed, key=lambda f: f.relative)


def storage_options_of(dump_file: DumpFile) -> dict[str, Any] | None:
    """What polars needs to read an object (None for a local file)."""
    if dump_file.is_local:
        return None

    return polars_options(storage_options(Location.parse(str(dump_file.path))))


def scan(dump_file: DumpFile) -> pl.LazyFrame:
    """The file's rows, lazily (an object is read by range requests: the columns needed).
    Its name is taken literally (``glob=False``), as everywhere a dump file is read: a dump
    may hold ``a*.parquet`` or ``b[1].parquet``, which polars would read as patterns
    matching other files."""
    return pl.scan_parquet(
        dump_file.path, glob=False, storage_options=storage_options_of(dump_file)
    )


def scan_together(files: Sequence[DumpFile], path_column: str) -> pl.LazyFrame:
    """The rows of ``files`` (of one store and one schema) in one scan, each row's file
    path (as ``str(DumpFile.path)``) in ``path_column``."""
    return pl.scan_parquet(
        [str(f.path) for f in files],
        include_file_paths=path_column,
        hive_partitioning=False,
        glob=False,  # names taken literally (``scan``)
        storage_options=storage_options_of(files[0]),
    )


def read_schema(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> dict[str, pl.DataType]:
    """The file's schema, from its footer. ``scanned``: the file's ``scan``, to be read
    again: polars keeps the footer it fetched with the scan, so an object's footer is
    fetched once for its schema, its rows' count and its rows."""
    # Not ``pl.read_parquet_schema``: it reads a name as a pattern (``scan``).
    return dict((scan(dump_file) if scanned is None else scanned).collect_schema())


def row_count(dump_file: DumpFile, scanned: pl.LazyFrame | None = None) -> int:
    """The file's rows, from its footer (``scanned``: as for ``read_schema``)."""
    if dump_file.is_local:
        return int(pq.ParquetFile(dump_file.path).metadata.num_rows)
    lazy = scan(dump_file) if scanned is None else scanned
    return int(lazy.select(pl.len()).collect().item())


def content_digest(dump_file: DumpFile, kind: str = DIGEST) -> str:
    """What identifies the file's content: the digest of ``kind`` of a local file's bytes
    (hashed while the command started, ``flows.store.prehash``, where it was, of that kind,
    and the file is unchanged); an object's ETag as the store gave it at listing
    (``etag:…``: the store's own content identity, read without downloading the object),
    whatever ``kind`` (an object recorded with an ETag is compared by its ETag)."""
    if dump_file.is_local:
        if kind == ETAG:  # a file once listed as an object, now local: its bytes
            kind = DIGEST
        return prehash.take(dump_file.path, kind) or file_digest(Path(dump_file.path), kind)
    return f"{ETAG}:{dump_file.version}"


def modified_ns(dump_file: DumpFile) -> int:
    """A local file's modification time now (ns); 0 for an object (its ETag is its version)."""
    return Path(dump_file.path).stat().st_mtime_ns if dump_file.is_local else 0


def one_layout(root: Path | str, files: list[DumpFile]) -> list[DumpFile]:
    """``files``, unless they mix files inside ``dump_date`` folders with files outside
    them: such a dump is refused before any work, as its undated files belong to no night
    (a run would have to replace every night of the output with one undated table)."""
    undated = [f.relative for f in files if DUMP_DATE not in f.partitions]
    if undated and len(undated) < len(files):
        raise InputError(
            f"input {root} mixes files in dump_date=YYYY-MM-DD folders with files outside "
            f"them ({', '.join(undated[:3])}{', …' if len(undated) > 3 else ''}): an undated "
            "file belongs to no night; move it into a night's folder or out of the dump"
        )
    return files


def marked_complete(root: Path | str, night: str | None) -> bool:
    """Whether the harness marked ``night`` (None: an undated dump) complete with
    ``_SUCCESS`` in its folder."""
    root = dump_root(root)
    key = SUCCESS_MARKER if night is None else f"{DUMP_DATE}={night}/{SUCCESS_MARKER}"
    if isinstance(root, Path):
        return (root / key).is_file()

    return get_object(Location.parse(root), key) is not None


def check_writable(out: Path) -> None:
    """Raise ``InputError`` unless ``out`` is (or can be made) a writable folder."""
    out = local_path(out, "output")
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"output {out} is not a writable folder")
