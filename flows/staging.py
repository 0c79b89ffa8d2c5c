"""Staging on this machine: the local engine's scored parts written as uncommitted data
files of ``episode_scores`` in chunks (``Stager``), and what a night's reduction needs of
them (the held columns) set aside on disk until the night's parts are assembled
(``flows.store.spill``).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from threading import Condition

from flows.logs import log
from flows.score import FilePart, merged, staging
from flows.store.delta.staged import StagedFiles, StageTarget
from flows.store.spill import Spilled, sweep
from schemas.contract import FILE, Col

# The local engine's threads hand their scored parts to the driver, which stages them in
# chunks (``Stager``) of about STAGE_BYTES of rows (as ``estimated_size`` counts them; they
# wait on disk till their chunk is staged): one validation, one Parquet write per partition
# and one explanation of the unscored rows a chunk rather than a file. Staged file by file, a
# 100,000-episode night of 8 files spent 0.3-0.4 s more CPU (a rejects plan and a write
# each: 78 ms a file) and left 48 data files in episode_scores instead of 6. Read when
# called (tests set it to 0: a chunk per part).
STAGE_BYTES = 64 << 20


class Slots:
    """The slots of the work that holds a file's worth of memory: each file scored, and each
    chunk staged and written (``flows.mappers.local_mapper``). A chunk waiting for a slot
    takes the next one free before another file starts: waiting, it holds a chunk's rows
    while files done pile up behind it (semaphores wake waiters in no order: the stager
    waited 0.6 s while the threads took the slots freed)."""

    def __init__(self, count: int) -> None:
        self.free, self.chunks_waiting = count, 0
        self.changed = Condition()

    def acquire(self, chunk: bool = False) -> None:
        with self.changed:
            self.chunks_waiting += chunk
            try:
                while not self.free or (self.chunks_waiting and not chunk):
                    self.changed.wait()
            finally:  # interrupted (Ctrl-C) too: else the files would wait for it forever
                self.chunks_waiting -= chunk
                self.changed.notify_all()
            self.free -= 1

    def release(self) -> None:
        with self.changed:
            self.free += 1
            self.changed.notify_all()

    def __enter__(self) -> Slots:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class Stager:
    """Parts scored on this machine, staged in chunks as they come: ``add`` each part (in
    any order), ``flush`` at the end, then ``close``; each returns the parts of the chunks
    it staged. A chunk's rows are written on a thread of the stager's own, a chunk at a time
    (the next is read back once the one before is written: memory holds one chunk's rows):
    the last one while the night's tables are made, its part's ``staged`` a future until
    ``settled`` (the chunk written last, 0.2 s of a 100,000-episode night, was the critical
    path's). The held columns of every chunk but the last wait on disk
    (``FilePart.unspilled`` reads them back)."""

    def __init__(self, target: StageTarget, slots: Slots | None = None) -> None:
        _sweep_left_behind()
        self.target = target
        # Shared with the files being scored (``flows.mappers.local_mapper``): a chunk is
        # staged and written in a slot of its own, so that it never meets two files' working
        # sets (+125-176 MiB a chunk of 148,000 episodes, the night's peak from its second
        # chunk on).
        self.slots = slots or Slots(1)
        self.pending: list[FilePart] = []
        self.held = 0
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="cogscore-stage")
        self.writing: Future[StagedFiles | None] | None = None

    def add(self, part: FilePart) -> list[FilePart]:
        # Sorted as it comes: a chunk is put in order by file, not sorted whole (a copy).
        part.scores = part.scores.sort(FILE, Col.EPISODE_ID)
        self.held += int(part.scores.estimated_size() + part.unscored.estimated_size())
        # Its rows wait on disk for the chunk's slot: in memory, a chunk's worth of files done
        # waited beside the two files being scored (the peak of a night of several chunks:
        # +60-90 MiB over a night of one; 16 ms a file of 25,000 episodes to set aside and
        # read back).
        part.spilled, part.scores = Spilled(part.scores), part.scores.clear()
        self.pending.append(part)
        return self._staged(spill=True) if self.held >= STAGE_BYTES else []

    def flush(self) -> list[FilePart]:
        """The last chunk, staged (its held columns kept: the night's parts are assembled
        next)."""
        return self._staged(spill=False)

    def _staged(self, spill: bool) -> list[FilePart]:
        if not self.pending:
            return []
        parts, self.pending, self.held = self.pending, [], 0
        if self.writing is not None:
            self.writing.result()  # the chunk before is written (its error raised here)
        self.slots.acquire(chunk=True)  # released once the chunk is written
        try:
            chunk = merged([p.unspilled() for p in parts], in_order=True)
            del parts
            # Set aside on disk while the night's other files are scored, but the last.
            held, write = staging(chunk, self.target, ordered=True, spill=spill)
            del chunk
            held.staged = self.writing = self.writer.submit(write)
        except BaseException:
            self.slots.release()
            raise
        self.writing.add_done_callback(lambda _: self.slots.release())
        return [held]

    def close(self) -> None:
        """No more chunks: the last write goes on, for ``settled`` to wait for."""
        self.writer.shutdown(wait=False)


def _sweep_left_behind() -> None:
    """Removes what killed runs set aside in TMPDIR (``flows.store.spill.sweep``): else a
    nightly killed night after night (out of memory) would fill it."""
    gone = sweep()
    if gone:  # a warning: a run was killed, which its operator should know
        log().warning(
            "removed %d folder(s) of scores set aside by cogscore runs that were killed "
            "(%.1f MiB): %s",
            len(gone),
            sum(size for _, size in gone) / 2**20,
            ", ".join(str(path) for path, _ in gone),
        )
