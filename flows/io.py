"""Reading a dump and writing tables: the only module that touches files."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq

from transforms.ingest import partition_values


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


def discover(root: Path) -> list[DumpFile]:
    """Every ``*.parquet`` below ``root``, sorted, with its hive partition values."""
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
    return out


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
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"output {out} is not a writable folder")
