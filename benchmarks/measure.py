"""One measurement in this (fresh) process; prints one JSON line (``benchmarks.run`` runs it
as a child and reads its peak resident memory from ``wait4``, as ``/usr/bin/time`` does).

python -m benchmarks.measure WHAT DUMP [REPEAT]

WHAT is one of:

- ``read``: the baseline, one full polars read of every file (``pl.scan_parquet(files).collect()``).
- ``needed``: what any scorer must read: every column but ``content`` (``ts`` included: an
  episode's wall time, issue 47), and the content of ``answer`` rows (one pass, as
  ``transforms.pipeline.score_rows`` reads it).
- ``score``: the scorer end to end (``flows.runs.score``, local, every table written).
- ``warm``: the same, after scoring the tiny dump ``DUMP/../e100`` in the same process: what
  the dump costs beyond start-up (imports, first calls).
- ``reference``: the row-wise reference of the tests on the rows as Python dicts.
- ``hash``: the sha256 of every file, as the manifest needs.
- ``scorer``: the scorer's own work (``flows.score``: every file, as many at a time as the
  local engine scores (``FILES_AT_ONCE``), assembled and aggregated; no output store), after
  the tiny dump's in the same process.
- ``unscored``: what the scorer's run costs with its scoring left out: every file read as
  the scorer reads it (``flows.reading.read_file``) and its sha256, in threads as ``scorer``.
- ``floor``: ``read``, ``needed``, ``unscored`` and ``scorer``, all in this one process after
  the tiny dump's run and one read of each kind (warm: no start-up, imports or first calls in
  any), interleaved ``REPEAT`` times (default 5); medians, and every run; each measure's
  ``cpu_s`` beside its ``seconds`` (the CPU time of every thread: what a shared machine
  does not inflate as much as the wall clock).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

T0 = time.perf_counter()  # before the heavy imports: start-up counts in ``total_s``


def files(dump: Path) -> list[Path]:
    return sorted(p for p in dump.rglob("*.parquet") if "_" not in p.name[:1])


def full_read(dump: Path) -> dict[str, float]:
    """The baseline: one full polars read of every file."""
    import polars as pl

    t = time.perf_counter()
    frame = pl.scan_parquet(files(dump)).collect()
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "rows": frame.height, "frame_bytes": frame.estimated_size()}


def needed(scan: pl.LazyFrame) -> pl.LazyFrame:
    """The columns the scorer reads of ``scan``: every one (``ts`` too, for an episode's
    wall time) but ``content``, which only ``answer`` rows keep."""
    import polars as pl

    answers = pl.when(pl.col("kind") == "answer").then(pl.col("content"))
    return scan.select(pl.exclude("content"), answers)


def needed_read(dump: Path) -> dict[str, float]:
    """What any scorer must read (``needed``): every column but content, the answers'."""
    import polars as pl

    t = time.perf_counter()
    frame = needed(pl.scan_parquet(files(dump))).collect()
    return {"seconds": time.perf_counter() - t, "rows": frame.height}


def scored(dump: Path, out: Path) -> dict[str, float]:
    """The scorer's run (``flows.runs.score``, local, tables written) into ``out``."""
    from flows.mappers import local_mapper
    from flows.runs import score

    t = time.perf_counter()
    outcome = score(dump, out, (), local_mapper)
    seconds = time.perf_counter() - t
    assert outcome.result is not None
    return {"seconds": seconds, **outcome.result.timings}


def scorer(dump: Path) -> dict[str, float]:
    """The scorer's own work on a night's dump, as the local engine runs it but without the
    output store: ``flows.score.score_file`` on every file, as many at a time in threads as
    the local engine (``FILES_AT_ONCE``), ``assemble`` and ``night_tables`` (the aggregates,
    with the bootstrap)."""
    from concurrent.futures import ThreadPoolExecutor

    from flows.mappers import FILES_AT_ONCE
    from flows.night import night_tables
    from flows.score import assemble, score_file
    from flows.store.dumps import discover
    from transforms.aggregate import Bootstrap
    from transforms.registry import resolve

    formulas = resolve(())
    t0 = time.perf_counter()
    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        parts = list(pool.map(lambda f: score_file(f, formulas), discover(dump)))
    t1 = time.perf_counter()
    result = assemble(parts, formulas)
    t2 = time.perf_counter()
    night_tables(result, Bootstrap())
    t3 = time.perf_counter()
    return {"seconds": t3 - t0, "files_s": t1 - t0, "assemble_s": t2 - t1, "aggregate_s": t3 - t2}


def unscored(dump: Path) -> dict[str, float]:
    """Every file read as the scorer reads it, and its sha256, in threads as ``scorer`` runs
    them: its run with the scoring left out."""
    from concurrent.futures import ThreadPoolExecutor

    from flows.mappers import FILES_AT_ONCE
    from flows.reading import read_file
    from flows.store.dumps import content_digest, discover

    def read(dump_file: Any) -> None:
        rows = read_file(dump_file)[0]
        assert rows is not None, f"{dump_file.relative} cannot be read"
        rows.collect()
        content_digest(dump_file)

    t = time.perf_counter()
    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        list(pool.map(read, discover(dump)))
    return {"seconds": time.perf_counter() - t}


def with_cpu(measured: Callable[[Path], dict[str, float]], dump: Path) -> dict[str, float]:
    """``measured(dump)`` and ``cpu_s``, the CPU time it took (every thread of this
    process): on a shared machine the wall clock measures the other work too. Beside it,
    its two parts (``os.times``): ``user_s`` and ``system_s``, the kernel's (mostly pages
    faulted in: ``flows.ALLOCATOR``), and ``minor_faults``, the pages faulted in."""
    cpu, times = time.process_time(), os.times()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result = measured(dump)
    after = os.times()
    return {
        **result,
        "cpu_s": time.process_time() - cpu,
        "user_s": after.user - times.user,
        "system_s": after.system - times.system,
        "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
    }


def floor(dump: Path, repeat: int) -> dict[str, Any]:
    """Full read, needed read, the scorer's run without its scoring and its net, warm,
    interleaved in this process; each with its CPU time (``with_cpu``)."""
    import statistics

    runs: dict[str, list[dict[str, float]]] = {"read": [], "needed": [], "unscored": [], "net": []}
    scorer(dump.parent / "e100")
    full_read(dump), needed_read(dump)  # first calls, and the files in the page cache
    for _ in range(repeat):
        runs["read"].append(with_cpu(full_read, dump))
        runs["needed"].append(with_cpu(needed_read, dump))
        runs["unscored"].append(with_cpu(unscored, dump))
        runs["net"].append(with_cpu(scorer, dump))
    medians = {
        what: {k: statistics.median(r[k] for r in results) for k in results[0]}
        for what, results in runs.items()
    }
    return {**medians, "runs": {k: [r["seconds"] for r in v] for k, v in runs.items()}}


def main(what: str, dump: Path, repeat: int = 5) -> dict[str, Any]:
    import flows  # noqa: F401, I001  (first: its allocator setting applies as polars loads)
    import polars as pl

    if what == "read":
        return full_read(dump)
    if what == "needed":
        return needed_read(dump)
    if what == "floor":
        return floor(dump, repeat)
    if what == "unscored":
        return unscored(dump)
    if what == "hash":
        from flows.store.dumps import file_digest

        t = time.perf_counter()
        for path in files(dump):
            file_digest(path)
        return {"seconds": time.perf_counter() - t}
    if what == "scorer":  # warm: after the tiny dump, in this process
        scorer(dump.parent / "e100")
        return scorer(dump)
    if what in ("score", "warm"):
        with tempfile.TemporaryDirectory() as out:
            if what == "warm":
                scored(dump.parent / "e100", Path(out) / "tiny")
            return scored(dump, Path(out) / "out")
    if what == "reference":
        from flows.store.dumps import discover
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
    result = main(sys.argv[1], Path(sys.argv[2]), *(int(a) for a in sys.argv[3:]))
    result["total_s"] = time.perf_counter() - T0
    print(json.dumps(result))
