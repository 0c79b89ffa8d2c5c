"""What staging one chunk costs in memory, step by step (issue 39, docs/performance.md,
"Memory flat with the night"): the files of a chunk scored and put in order as the local
engine's stager has them, then each step of ``flows.score.staging`` and of its write alone,
the process's peak resident memory (the kernel's high-water mark) above what it held before.

python -m benchmarks.chunk_memory [DUMP] [--files 8]

DUMP: a night of ``benchmarks.night_memory`` (default its 500,000 episodes, 25,000 a file:
8 files are a chunk of ``STAGE_BYTES``). Prints one line a step.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks.night_memory import NIGHT, night_dump
from benchmarks.scale import peak_mib, reset_peak, rss_mib


def above(name: str, step: Callable[[], Any]) -> Any:
    """Runs ``step``; prints its peak resident memory above what the process held before it
    (the kernel's high-water mark, reset before the step)."""
    gc.collect()
    time.sleep(0.3)  # freed pages returned (``flows.ALLOCATOR``'s decay) before the base
    base = rss_mib()
    if not reset_peak():
        raise SystemExit("cannot reset the peak resident memory (/proc/self/clear_refs)")
    out = step()
    print(f"{name:<28} +{peak_mib() - base:5.0f} MiB", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", nargs="?")
    parser.add_argument("--files", type=int, default=8)
    options = parser.parse_args()
    from flows.mismatches import Mismatches
    from flows.provenance import with_provenance
    from flows.score import HELD, merged, score_file
    from flows.store import delta
    from flows.store.delta.staged import StageTarget
    from flows.store.dumps import discover
    from flows.store.location import Location
    from flows.store.spill import Spilled
    from schemas.contract import FILE, Col
    from schemas.tables import EPISODE_SCORES_TABLE
    from schemas.validation import validate
    from schemas.version import COGSCORE_VERSION
    from transforms.aggregate import component_sums
    from transforms.compact import compact
    from transforms.registry import resolve

    root = options.dump or night_dump(500_000)
    formulas, parts = resolve(()), []
    for dump_file in discover(root)[: options.files]:
        part = score_file(dump_file, formulas)
        part.scores = part.scores.sort(FILE, Col.EPISODE_ID)
        parts.append(part)
    chunk = merged(parts, in_order=True)
    del parts
    scores = chunk.scores
    print(f"a chunk of {scores.height:,} episodes, {scores.estimated_size() / 2**20:.0f} MiB")
    above("component sums", lambda: compact(component_sums(scores.lazy()).collect()))
    above("mismatches", lambda: Mismatches.of(scores))
    above("held columns set aside", lambda: Spilled(scores.select(HELD)))
    table = above(
        "provenance", lambda: with_provenance(scores, COGSCORE_VERSION, {NIGHT: "sha256:x"})
    )
    above("validation", lambda: validate(EPISODE_SCORES_TABLE, table))
    with tempfile.TemporaryDirectory() as out:
        target = StageTarget(Location.parse(out), NIGHT, "sha256:x")
        above(
            "data files written",
            lambda: delta.write_data_files(
                target.location,
                EPISODE_SCORES_TABLE.name,
                table,
                NIGHT,
                partition_by=EPISODE_SCORES_TABLE.partition_by,
            ),
        )


if __name__ == "__main__":
    main()
