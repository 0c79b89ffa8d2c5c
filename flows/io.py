"""Reading a dump and writing tables: the only module that touches files."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
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
        parts.append(f"{key}={encoded[:200]}")
    return "/".join(parts)


def write_partitioned(frame: pl.DataFrame, table_dir: Path, by: Sequence[str]) -> None:
    """Write ``frame`` as hive partitions ``by``, one ``part-0.parquet`` per partition.

    Partition columns live in the folder names only (as hive readers expect); a table with
    no rows is one file at its root that keeps every column.
    """
    table_dir.mkdir(parents=True, exist_ok=True)
    if frame.is_empty() or not by:
        frame.write_parquet(table_dir / "part-0.parquet")
        return
    for values, part in frame.group_by(list(by), maintain_order=True):
        folder = table_dir / partition_dir(dict(zip(by, values, strict=True)))
        folder.mkdir(parents=True, exist_ok=True)
        part.drop(by).write_parquet(folder / "part-0.parquet")


def check_writable(out: Path) -> None:
    """Raise ``InputError`` unless ``out`` is (or can be made) a writable folder."""
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"output {out} is not a writable folder")


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """A staging folder inside ``out``; on success its entries replace those of ``out``
    (each by one rename), on failure it is removed and ``out`` is left as it was."""
    check_writable(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".staging-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    trash = out / f".trash-{uuid.uuid4().hex}"
    trash.mkdir()
    # The manifest goes last: a reader that finds it finds the tables it describes.
    entries = sorted(staging.iterdir(), key=lambda p: p.name == "manifest.json")
    for entry in entries:
        target = out / entry.name
        if target.exists():
            target.rename(trash / entry.name)
        entry.rename(target)
    shutil.rmtree(trash, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
