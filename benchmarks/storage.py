"""Storage measurements behind docs/storage-measurements.md (not part of `make bench`).

python -m benchmarks.storage [--rows 100000] [--repeat 5] [--objects 200]

Starts a moto S3 server in its own process (tests/s3server.py) and measures, as medians of
`--repeat` runs (one warm-up first):

- listing `--objects` objects: `flows.store.objects.list_files` (obstore) against boto3's
  `list_objects_v2` paginator (s3fs is not installed here and is not added);
- writing one night of `--rows` episode-score rows (the columns and dtypes of
  `schemas.columns.EPISODE_SCORES_DTYPES` plus provenance: 25 columns) as plain Parquet (one file
  under `dump_date=…/`) and as a Delta table (`delta.write_night`, creating the table),
  locally and on S3;
- replacing that night in a Delta table that holds four nights (`write_night`: one
  predicate overwrite), and the same through staged files (`write_data_files` +
  `commit_files`);
- reading the night back (`delta.read_table` with a filter on `dump_date`).

Prints one JSON object; numbers are seconds.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from flows.store import objects
from flows.store.delta.staged import commit_files, write_data_files
from flows.store.delta.tables import read_table, write_night
from flows.store.location import Location, polars_options, storage_options
from schemas.columns import EPISODE_SCORES_DTYPES, PROVENANCE
from tests.s3server import start_s3_server

NIGHTS = ("2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04")


def episode_scores(rows: int, night: str, seed: int = 0) -> pl.DataFrame:
    """A synthetic night of the episode_scores table: its columns and dtypes."""
    rng = np.random.default_rng(seed)
    dtypes = {**EPISODE_SCORES_DTYPES, **PROVENANCE}
    columns: dict[str, Any] = {}
    for name, dtype in dtypes.items():
        if name == "dump_date":
            columns[name] = [night] * rows
        elif dtype == pl.String:
            cardinality = {"episode_id": rows, "run_id": 50, "model": 8, "task": 60}.get(name, 6)
            columns[name] = [f"{name}-{i}" for i in rng.integers(0, cardinality, rows)]
        elif dtype == pl.Int64:
            columns[name] = rng.integers(0, 40, rows)
        elif dtype == pl.Boolean:
            columns[name] = rng.random(rows) < 0.5
        else:
            values = rng.random(rows)
            values[rng.random(rows) < 0.3] = np.nan  # components null where not the category's
            columns[name] = values
    frame = pl.DataFrame(columns).with_columns(pl.col(pl.Float64).fill_nan(None))
    return frame.cast(dtypes)  # type: ignore[arg-type]


def median(
    repeat: int, run: Callable[[], object], setup: Callable[[], object] | None = None
) -> float:
    times = []
    for i in range(repeat + 1):  # the first is a warm-up
        if setup is not None:
            setup()
        started = time.perf_counter()
        run()
        if i:
            times.append(time.perf_counter() - started)
    return round(statistics.median(times), 4)


def plain_parquet(location: Location, frame: pl.DataFrame, night: str) -> None:
    """What the snapshot store writes per night: one Parquet file under the night's folder."""
    buffer = io.BytesIO()
    frame.drop("dump_date").write_parquet(buffer)
    objects.put_if_absent(
        location, f"dump_date={night}/part-{uuid.uuid4().hex}.parquet", buffer.getvalue()
    )


def measure_writes(out: Location, frame: pl.DataFrame, repeat: int) -> dict[str, float]:
    night = NIGHTS[0]
    fresh = lambda: out.child(f"t{uuid.uuid4().hex[:8]}")  # noqa: E731
    results = {
        "parquet_one_night": median(repeat, lambda: plain_parquet(fresh(), frame, night)),
        "delta_one_night_new_table": median(
            repeat, lambda: write_night(fresh(), "episode_scores", frame, night)
        ),
    }
    table = out.child("four_nights")
    for i, other in enumerate(NIGHTS):
        write_night(table, "episode_scores", episode_scores(frame.height, other, i), other)
    results["delta_replace_one_of_four_nights"] = median(
        repeat, lambda: write_night(table, "episode_scores", frame, night)
    )

    def staged() -> None:
        files = write_data_files(table, "episode_scores", frame, night)
        commit_files(table, "episode_scores", night, [files])

    results["delta_staged_replace_one_of_four_nights"] = median(repeat, staged)
    results["delta_read_one_night"] = median(
        repeat,
        lambda: read_table(table, "episode_scores").filter(pl.col("dump_date") == night).collect(),
    )
    return results


def measure_listing(location: Location, server: Any, count: int, repeat: int) -> dict[str, float]:
    for i in range(count):
        objects.put_if_absent(
            location, f"dump_date=2026-12-{i % 28 + 1:02d}/part-{i}.parquet", b"x"
        )
    bucket, prefix = location.uri[len("s3://") :].split("/", 1)
    client = server.client()

    def boto3_list() -> int:
        found = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found += len(page.get("Contents", []))
        return found

    assert len(objects.list_files(location)) == count == boto3_list()
    return {
        "obstore_list_files": median(repeat, lambda: objects.list_files(location)),
        "boto3_list_objects_v2": median(repeat, boto3_list),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--objects", type=int, default=200)
    args = parser.parse_args()
    frame = episode_scores(args.rows, NIGHTS[0], seed=42)
    server = start_s3_server()
    try:
        s3 = Location.parse(f"s3://{server.create_bucket()}/out", server.options)
        with tempfile.TemporaryDirectory() as folder:
            local = Location.parse(folder)
            report = {
                "machine": f"{platform.machine()}, python {platform.python_version()}",
                "rows": frame.height,
                "columns": frame.width,
                "frame_mb": round(frame.estimated_size() / 1e6, 1),
                "listing_s3": measure_listing(
                    s3.child("listing"), server, args.objects, args.repeat
                ),
                "local": measure_writes(local, frame, args.repeat),
                "s3": measure_writes(s3, frame, args.repeat),
            }
        bytes_delta = sum(
            f.size
            for f in objects.list_files(s3.child("four_nights/episode_scores"))
            if f.relative.startswith("dump_date=2026-12-02")
        )
        report["delta_file_mb_one_night"] = round(bytes_delta / 1e6, 2)
        assert polars_options(storage_options(s3)) is not None
    finally:
        server.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
