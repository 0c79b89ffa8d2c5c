"""Reading a dump and writing tables: the only module that touches files."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq

from schemas.contract import DUMP_DATE
from transforms.ingest import partition_values

# Where a harness says a night is complete (as Spark and Hadoop write it): a night folder
# (or an undated dump's root) holding this file may be scored when runs require markers.
SUCCESS_MARKER = "_SUCCESS"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


@dataclass(frozen=True)
class DumpFile:
    path: Path
    relative: str  # posix path below the dump root: the `file` column
    partitions: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.path.stat().st_size


class InputError(Exception):
    """The input as a whole cannot be scored (missing, empty): a message for the user."""


def local_path(text: str | Path, what: str) -> Path:
    """``text`` as an absolute local path (provenance must not depend on the working
    folder); a URL (``s3://…``) is refused with a message, not taken for a folder name.

    >>> local_path("s3://bucket/out", "output")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    flows.io.InputError: output s3://bucket/out: URLs (s3://, …) are not supported yet; ...
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


def discover(root: Path) -> list[DumpFile]:
    """Every ``*.parquet`` below ``root``, sorted, with its hive partition values.

    Refused before any work (``InputError``): a missing or empty input, and a
    ``dump_date`` folder whose value is not a date."""
    root = local_path(root, "input")
    if not root.exists():
        raise InputError(f"input {root} does not exist")
    if root.is_file():
        return [DumpFile(root, root.name)]
    files = sorted(p for p in root.rglob("*.parquet") if p.is_file() and not _hidden(p, root))
    if not files:
        raise InputError(f"input {root} holds no .parquet files")
    out = []
    for path in files:
        relative = path.relative_to(root).as_posix()
        out.append(DumpFile(path, relative, partition_values(relative)))
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


def one_layout(root: Path, files: list[DumpFile]) -> list[DumpFile]:
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


def marked_complete(root: Path, night: str | None) -> bool:
    """Whether the harness marked ``night`` (None: an undated dump) complete with
    ``_SUCCESS`` in its folder."""
    root = local_path(root, "input")
    folder = root if night is None else root / f"{DUMP_DATE}={night}"
    return (folder / SUCCESS_MARKER).is_file()


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith((".", "_")) for part in path.relative_to(root).parts)


def row_count(path: Path) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


_MAX_VALUE = 200


def partition_dir(values: Mapping[str, str | None]) -> str:
    """A hive folder path for partition values; each value is percent-encoded so that no
    value (``..``, ``a/b``, control characters) can name a path outside the table.

    >>> partition_dir({"dump_date": "2026-12-01", "category": "runtime_rl"})
    'dump_date=2026-12-01/category=runtime_rl'
    >>> partition_dir({"dump_date": "../x"})
    'dump_date=..%2Fx'
    """
    parts = []
    for key, value in values.items():
        if value is None:
            continue
        encoded = quote(value, safe="-_.:")
        if encoded in ("", ".", ".."):
            encoded = encoded.replace(".", "%2E") or "%00"
        if len(encoded) > _MAX_VALUE:  # a folder name must stay short, and distinct
            digest = hashlib.sha256(value.encode()).hexdigest()[:16]
            encoded = f"{encoded[: _MAX_VALUE - 17]}~{digest}"
        parts.append(f"{key}={encoded}")
    return "/".join(parts)


def check_writable(out: Path) -> None:
    """Raise ``InputError`` unless ``out`` is (or can be made) a writable folder."""
    out = local_path(out, "output")
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"output {out} is not a writable folder")
