"""Dump listings (``flows.store.dumps.list_objects``), local and on moto: partitions, versions,
and what changes them."""

from __future__ import annotations

import io
import time

import polars as pl
import pytest

from flows.store import objects
from flows.store.dumps import list_objects
from flows.store.errors import StorageError


def _parquet(rows: int) -> bytes:
    buffer = io.BytesIO()
    pl.DataFrame({"episode_id": [f"e{i}" for i in range(rows)]}).write_parquet(buffer)
    return buffer.getvalue()


def test_list_objects_with_partitions_and_versions(out):
    dump = out.child("dump")
    for key in (
        "dump_date=2026-12-01/part-0.parquet",
        "dump_date=2026-12-02/part-0.parquet",
        "dump_date=2026-12-02/_tmp/part-9.parquet",
        "undated.parquet",
    ):
        objects.put_if_absent(dump, key, _parquet(3))
    files = list_objects(dump)
    assert [f.relative for f in files] == [
        "dump_date=2026-12-01/part-0.parquet",
        "dump_date=2026-12-02/part-0.parquet",
        "undated.parquet",
    ]
    assert [f.partitions.get("dump_date") for f in files] == ["2026-12-01", "2026-12-02", None]
    assert files[0].path == dump.child("dump_date=2026-12-01/part-0.parquet").uri
    # polars reads what was listed, with the location's options
    from flows.store.location import polars_options, storage_options

    frame = pl.read_parquet(files[0].path, storage_options=polars_options(storage_options(dump)))
    assert frame.height == 3
    # rewriting one file changes its version (and only its version)
    time.sleep(0.01)
    objects.delete(dump, "dump_date=2026-12-02/part-0.parquet")
    objects.put_if_absent(dump, "dump_date=2026-12-02/part-0.parquet", _parquet(4))
    again = {f.relative: f for f in list_objects(dump)}
    assert again[files[0].relative].version == files[0].version
    assert again[files[1].relative].version != files[1].version


def test_missing_dump_is_an_error_naming_it(out):
    with pytest.raises(StorageError, match=r"cannot list .*/no-dump"):
        list_objects(out.child("no-dump"))
