"""A dump as files: URI, size and a version token taken when the dump is listed.

Change detection (`nightly`) compares each file's size and version with the ones recorded:
the ETag on an object store (changes with the content), `st_mtime_ns` for a local file. A
local file keeps its sha256 content digest as the proof of change (computed where the file is
read); an object store's ETag is the store's own digest, so nothing is downloaded to compare.
Local folders and `s3://`, `gs://`, `az://` URLs are listed the same way (`objects.list_files`):
names starting with "." or "_" are skipped, and hive `key=value` folders give the partitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from flows.storage import objects
from flows.storage.location import Location
from transforms.ingest import partition_values


@dataclass(frozen=True)
class SourceFile:
    """One input file: where it is, and what identifies this version of it."""

    uri: str  # an absolute path or a URL, as polars and delta-rs open it
    relative: str  # below the dump root, "/"-separated
    size: int
    version: str  # ETag, or st_mtime_ns for a local file
    modified: datetime  # UTC
    partitions: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def night(self) -> str | None:
        """The file's `dump_date` partition, if it lies under one."""
        return self.partitions.get("dump_date")


def list_dump(location: Location, suffix: str = ".parquet") -> list[SourceFile]:
    """Every `suffix` file of the dump at `location`, sorted by relative path.

    A dump that does not exist, or holds no object at all, is a `StorageError` naming it.
    """
    return [
        SourceFile(
            uri=location.child(info.relative).uri,
            relative=info.relative,
            size=info.size,
            version=info.version,
            modified=info.modified,
            partitions=partition_values(info.relative),
        )
        for info in objects.list_files(location, suffix)
    ]
