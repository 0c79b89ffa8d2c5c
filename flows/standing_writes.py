"""A run's standings staged several nights at a time (issue 48), on a worker thread.

A standing's 11 tables are small (a row per model and task at most) and a run that makes many
(a ``score`` or rescore of history: one a night) staged each as its own night: one
validation query per table per night, 11 a standing, about a tenth of what a standing cost
(docs/performance.md, "Standings, round three"). ``StandingWrites`` holds the staged-to-be
tables of up to ``STANDINGS_AT_ONCE`` standings and hands each table's rows of all of them
to the writer at once (``TableWriter.stage_nights``: one validation, then each night's
files as ``stage`` writes them, the same rows).

The writes of a batch (a validation and a data file a table a night: Parquet encoding and
file writes, which release the GIL) run on a worker thread, its tables several at a time
(``STAGED_AT_ONCE``), while the run makes the next standings (docs/performance.md,
"Standings' staging overlapped"). At most one batch is in
flight (the next waits for it: memory holds two batches' tables at most), batches are staged
in order, and a batch's error is raised in the run at the next ``add``, ``flush`` or hand-off.
Nothing is committed before the run's one commit, which comes after ``flush`` (every batch
staged), so a run killed with standings held or being written here leaves what a run killed
before staging them leaves: uncommitted files at most, no table changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from flows.store.writer import TableWriter, each_table

# Standings whose tables are staged at once (a few MB of rows at LearningBench's shape:
# memory holds that many standings' tables, never their episodes). Read when called (tests
# set it).
STANDINGS_AT_ONCE = 16
# A batch's tables staged at once (``_stage``; 1: one after the other). Read when called.
STAGED_AT_ONCE = 4


@dataclass
class StandingWrites:
    """The tables of the standings made and not yet staged, by table, and their nights in
    order; handed to a worker every ``STANDINGS_AT_ONCE`` standings and at ``flush``
    (before the run commits), each table's rows of them all with their provenance
    (``provenance``: the table's name and rows -> the rows with it,
    ``flows.provenance.with_provenance``, stamped here on the run's thread) added at once, and
    staged there through ``writer``. ``close`` ends the worker (a run that failed: its batch
    in flight waited for, its error left for the run's own)."""

    writer: TableWriter
    provenance: Callable[[str, pl.DataFrame], pl.DataFrame]
    tables: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    nights: list[str | None] = field(default_factory=list)
    _worker: ThreadPoolExecutor | None = field(default=None, repr=False)
    _pending: Future[None] | None = field(default=None, repr=False)

    def add(self, night: str | None, tables: dict[str, pl.DataFrame]) -> None:
        """The standing as of ``night``: its tables by name, staged with the next ones."""
        if self._pending is not None and self._pending.done():
            self._wait()  # the batch before failed: the run stops here
        for name, frame in tables.items():
            self.tables.setdefault(name, []).append(frame)
        self.nights.append(night)
        if len(self.nights) >= STANDINGS_AT_ONCE:
            self._hand_off()

    def flush(self) -> None:
        """Every standing held, staged: each table's rows of all of them in one call, and
        every batch handed off before it done (its error raised here)."""
        self._hand_off()
        self._wait()
        self.close()

    def close(self) -> None:
        """The worker ended, its batch in flight waited for (its error not raised: the run
        that closes without ``flush`` is failing with its own)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.exception()  # waits; the error is the run's to tell, or not
        if self._worker is not None:
            self._worker.shutdown()
            self._worker = None

    def _hand_off(self) -> None:
        """The standings held, stamped and handed to the worker once the batch before is
        staged (one batch in flight)."""
        if not self.nights:
            return
        batch = [
            (name, self.provenance(name, pl.concat(frames, how="vertical")))
            for name, frames in self.tables.items()
        ]
        nights = self.nights
        self.tables, self.nights = {}, []
        self._wait()
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="cogscore-standings")
        self._pending = self._worker.submit(_stage, self.writer, batch, nights)

    def _wait(self) -> None:
        """The batch in flight staged; its error raised here."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()


def _stage(
    writer: TableWriter, batch: Sequence[tuple[str, pl.DataFrame]], nights: list[str | None]
) -> None:
    """A batch's tables staged (on the worker), ``STAGED_AT_ONCE`` tables at a time: each
    table's validation query and data files (polars and Parquet, the GIL released) are its
    own, its nights staged in order; every table's done (or failed) before the first failure,
    in the batch's order, is raised."""
    tables = dict(batch)
    each_table(
        lambda name: writer.stage_nights(name, tables[name], nights),
        list(tables),
        STAGED_AT_ONCE,
        "cogscore-standings",
    )
