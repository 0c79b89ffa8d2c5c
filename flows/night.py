"""The tables of one night, made in one place.

From a night's scored result (``flows.score.assemble``): its rejects (and its episode rows,
where the workers did not stage them), the task, category and model aggregates with their
intervals, the rank intervals, tiers and pairwise comparisons, the regressions against its
baseline nights (``flows.comparisons.NightWatch`` holds the history they need), and what a
run adds for the night (a rescore's diff). No provenance yet: the writer adds it.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from flows.comparisons import NightWatch
from flows.score import ScoreResult, night_tables
from flows.store.output import REGRESSIONS
from transforms.aggregate import Bootstrap

# Per night: (night, its result, its tables) -> more tables of that night.
NightHook = Callable[[str | None, ScoreResult, dict[str, pl.DataFrame]], dict[str, pl.DataFrame]]


def tables_of_night(
    night: str | None,
    result: ScoreResult,
    bootstrap: Bootstrap,
    watch: NightWatch,
    more: NightHook | None = None,
) -> dict[str, pl.DataFrame]:
    """Every table of night ``night``, by table name."""
    tables = night_tables(result, bootstrap)
    tables[REGRESSIONS] = watch.regressions(night, result.scores, result.rejects)
    if more is not None:
        tables |= more(night, result, tables)
    return tables
