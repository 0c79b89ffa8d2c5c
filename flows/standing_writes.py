"""A run's standings staged several nights at a time (issue 48).

A standing's 11 tables are small (a row per model and task at most) and a run that makes many
(a ``score`` or rescore of history: one a night) staged each as its own night: one
validation query per table per night, 11 a standing, about a tenth of what a standing cost
(docs/performance.md, "Standings, round three"). ``StandingWrites`` holds the staged-to-be
tables of up to ``STANDINGS_AT_ONCE`` standings and hands each table's rows of all of them
to the writer at once (``TableWriter.stage_nights``: one validation, then each night's
files as ``stage`` writes them, the same rows). Nothing is committed before the run's one
commit either way, so a run killed with standings held here leaves what a run killed
before staging them leaves: uncommitted files at most, no table changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from flows.store.writer import TableWriter

# Standings whose tables are staged at once (a few MB of rows at LearningBench's shape:
# memory holds that many standings' tables, never their episodes). Read when called (tests
# set it).
STANDINGS_AT_ONCE = 16


@dataclass
class StandingWrites:
    """The tables of the standings made and not yet staged, by table, and their nights in
    order; staged through ``writer`` every ``STANDINGS_AT_ONCE`` standings and at ``flush``
    (before the run commits), each table's rows of them all with their provenance
    (``provenance``: the table's name and rows -> the rows with it,
    ``flows.provenance.with_provenance``) added at once."""

    writer: TableWriter
    provenance: Callable[[str, pl.DataFrame], pl.DataFrame]
    tables: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    nights: list[str | None] = field(default_factory=list)

    def add(self, night: str | None, tables: dict[str, pl.DataFrame]) -> None:
        """The standing as of ``night``: its tables by name, staged with the next ones."""
        for name, frame in tables.items():
            self.tables.setdefault(name, []).append(frame)
        self.nights.append(night)
        if len(self.nights) >= STANDINGS_AT_ONCE:
            self.flush()

    def flush(self) -> None:
        """Every standing held, staged: each table's rows of all of them in one call."""
        for name, frames in self.tables.items():
            rows = self.provenance(name, pl.concat(frames, how="vertical"))
            self.writer.stage_nights(name, rows, self.nights)
        self.tables, self.nights = {}, []
