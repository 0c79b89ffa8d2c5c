"""Where a night's files are scored: a ``Mapper`` takes files and returns one part per file
(or batch of small files). ``local_mapper`` scores in this process, two files at a time, and
stages what is done while the others score; ``dask_mapper`` sends each batch to a Dask
cluster; ``flows.prefect_flows`` makes each a Prefect task. A run tells its ``Progress``
(the terminal's bar, or nobody) of each file done.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from itertools import islice
from typing import Any

from flows.records import NoProgress, Progress
from flows.score import (
    FilePart,
    StageTarget,
    batches,
    score_and_stage,
    score_batch,
)
from flows.staging import Slots, Stager
from flows.store.dumps import DumpFile
from flows.store.errors import BadLocation
from flows.store.lease import LEASE_KEY
from flows.store.location import Location

# (files, formulas, known digests) -> one part (scores, unscored rows, report) per file
# (files, formulas, digests, where to stage the episode scores or None) -> parts
Mapper = Callable[
    [Sequence[DumpFile], dict[str, str], Mapping[str, str], "StageTarget | None"],
    list[FilePart],
]


FILES_AT_ONCE = 2


# Batches submitted and not yet taken by the driver: one more than the threads, so that a
# thread never waits for the driver to hand it the next.
IN_FLIGHT = FILES_AT_ONCE + 1


def local_mapper(
    files: Sequence[DumpFile],
    formulas: dict[str, str],
    digests: Mapping[str, str],
    target: StageTarget | None = None,
    progress: Progress | None = None,
) -> list[FilePart]:
    """Every file in this process, two at a time (small files in batches: ``batches``):
    polars runs much of a file's plan on one core, and releases the GIL while it does (1.6 s
    -> 1.4 s for ten files on 2 cores). With a ``target``, this thread stages the files
    done in chunks (``Stager``) while the others score, each chunk's rows written on the
    stager's thread (the last chunk's while the night's tables are made: its parts' files
    are ``settled`` before they are committed); a chunk takes the slot of a file while it
    is staged and written. Memory holds two files' working sets (or one and a chunk's), the
    parts done that the driver has not taken yet, and the last chunk's held columns (the
    files done waiting for their chunk, and the held columns of the chunks before, wait on
    disk: ``flows.store.spill``). Each file done is told to ``progress``."""
    slots = Slots(FILES_AT_ONCE)  # a file scored, or a chunk staged (``Stager``), in each
    stager = Stager(target, slots) if target is not None else None
    parts: list[FilePart] = []
    queued = iter(batches(files))
    try:
        with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
            # A batch is submitted as one is taken: a file scored waits (its rows in memory)
            # only while the one before is staged. Submitted all at once, the threads scored
            # ahead of the stager and every file's rows of a night could pile up in the done
            # futures (memory grew with the night: 700-1,300 bytes an episode).
            running = {
                pool.submit(_in_slot, slots, batch, formulas, digests)
                for batch in islice(queued, IN_FLIGHT)
            }
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for batch in islice(queued, len(done)):
                    running.add(pool.submit(_in_slot, slots, batch, formulas, digests))
                while done:  # each future let go of as its part is taken
                    part = done.pop().result()
                    for report in part.reports:
                        (progress or NoProgress()).file_done(report)
                    parts.extend([part] if stager is None else stager.add(part))
                    del part
        return parts if stager is None else [*parts, *stager.flush()]
    finally:
        if stager is not None:
            stager.close()


def _in_slot(
    slots: Slots,
    batch: Sequence[DumpFile],
    formulas: dict[str, str],
    digests: Mapping[str, str],
) -> FilePart:
    with slots:
        return score_batch(batch, formulas, digests)


def local_mapper_with(progress: Progress) -> Mapper:
    """The local mapper, telling ``progress`` of each file as it is done."""

    def mapper(
        files: Sequence[DumpFile],
        formulas: dict[str, str],
        digests: Mapping[str, str],
        target: StageTarget | None = None,
    ) -> list[FilePart]:
        return local_mapper(files, formulas, digests, target, progress)

    return mapper


def dask_mapper(address: str) -> Mapper:
    """Every file as a task of the Dask cluster at ``address`` (plain Dask: no Prefect)."""

    def mapper(
        files: Sequence[DumpFile],
        formulas: dict[str, str],
        digests: Mapping[str, str],
        target: StageTarget | None = None,
    ) -> list[FilePart]:
        from distributed import Client, as_completed

        with Client(address, timeout="30s") as client:
            if target is not None:
                check_workers_reach(client, target.location)
            # A worker stages the rows it scored: no row of a scored episode comes back, only
            # its files' paths and statistics, sums, reject rows and counts (``stage``); each
            # taken as it is done and its future let go (the cluster forgets it).
            futures = {
                client.submit(
                    score_and_stage, batch, formulas, _of(batch, digests), target, pure=False
                ): i
                for i, batch in enumerate(batches(files))
            }
            parts: list[FilePart | None] = [None] * len(futures)
            for future in as_completed(list(futures)):
                parts[futures.pop(future)] = future.result()
                future.release()
            return [part for part in parts if part is not None]

    return mapper


def check_workers_reach(client: Any, out: Location) -> None:
    """Refuse (``BadLocation``) a local ``OUT`` that a worker of ``client``'s cluster does not
    see as this process does: the workers write the rows they score into ``OUT``, where this
    process reads them back. The proof asked of each worker is the lease file this run holds
    in ``OUT``; an object store is reached alike by every process given its options."""
    if not out.is_local:
        return
    lease = os.path.join(out.uri, LEASE_KEY)
    blind = sorted(worker for worker, seen in client.run(os.path.exists, lease).items() if not seen)
    if blind:
        raise BadLocation(
            f"{out.display} is not reached by the Dask worker(s) {', '.join(blind)} as by this "
            "process (they do not see its lease file): on a cluster each worker writes the rows "
            "it scores into OUT, so OUT must be an object store or one path on a disk that "
            "every worker and this process share"
        )


def _of(batch: Sequence[DumpFile], digests: Mapping[str, str]) -> dict[str, str]:
    """The digests of ``batch``'s files (what a task is sent, not the night's)."""
    return {f.relative: digests[f.relative] for f in batch if f.relative in digests}
