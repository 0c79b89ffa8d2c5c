"""One measurement in this (fresh) process; prints one JSON line (``benchmarks.run`` runs it
under ``/usr/bin/time`` for the peak resident memory).

python -m benchmarks.measure read|score|reference|hash DUMP
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()  # before the heavy imports: start-up counts in ``total_s``


def _files(dump: Path) -> list[Path]:
    return sorted(p for p in dump.rglob("*.parquet") if "_" not in p.name[:1])


def main(what: str, dump: Path) -> dict[str, float]:
    import polars as pl

    if what == "read":  # the baseline: one full polars read of every file
        t = time.perf_counter()
        frame = pl.scan_parquet(_files(dump)).collect()
        return {"seconds": time.perf_counter() - t, "rows": frame.height}
    if what == "hash":  # sha256 of every input file, as the manifest needs
        from flows.warehouse import file_digest

        t = time.perf_counter()
        for path in _files(dump):
            file_digest(path)
        return {"seconds": time.perf_counter() - t}
    if what == "score":  # the scorer end to end: read, judge, score, aggregate, write
        from flows.runs import local_mapper, score

        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            outcome = score(dump, Path(out) / "out", (), local_mapper)
            seconds = time.perf_counter() - t
        assert outcome.result is not None
        return {"seconds": seconds, **outcome.result.timings}
    if what == "reference":  # the row-wise reference of the tests (rows as Python dicts)
        from flows.io import discover
        from schemas.contract import DUMP_DATE, FILE
        from tests.reference import reference_score

        rows = []
        for f in discover(dump):
            frame = (
                pl.read_parquet(f.path)
                .drop("ts")
                .with_columns(
                    pl.lit(f.relative).alias(FILE),
                    pl.lit(f.partitions.get(DUMP_DATE), pl.String).alias(DUMP_DATE),
                )
            )
            rows += frame.to_dicts()
        t = time.perf_counter()
        reference_score(rows)
        return {"seconds": time.perf_counter() - t}
    raise SystemExit(f"unknown measurement {what}")


if __name__ == "__main__":
    result = main(sys.argv[1], Path(sys.argv[2]))
    result["total_s"] = time.perf_counter() - T0
    print(json.dumps(result))
