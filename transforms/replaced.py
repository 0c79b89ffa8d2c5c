"""Runs that replace one another (contract 1.4, ``docs/contract.md``): a night's episodes
that each are the whole result of one run of a model on a task (``single_run_started`` on
their ``episode_start``). Of one model's such episodes of one task on one night, the one
started latest stands; each other one is replaced by it: scored, kept
(``replaced_episodes``), never averaged with it. Equal starts are one run recorded twice
(contract 1.5: a published table's row and the harness's run file of it): the reported
score alone stands (the table's, formula version ``reported``), the run with its transcript
is kept beside it; else the greatest ``episode_id``.

Like ``transforms.duplicates``, a rule of the whole night: each file is scored on its own,
and the night's single runs (a few columns of a few episodes) are judged together after.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import FORMULA_VERSION, REPLACED_BY
from schemas.contract import DUMP_DATE, FILE, SINGLE_RUN_STARTED, Col
from schemas.formulas import REPORTED
from transforms.episodes import KEY

# What the night's judgement reads of a single run (``single_runs``).
RUN_COLUMNS: Final = (
    FILE, DUMP_DATE, Col.EPISODE_ID, Col.MODEL, Col.TASK, FORMULA_VERSION, SINGLE_RUN_STARTED
)  # fmt: skip
_CELL: Final = (DUMP_DATE, Col.MODEL, Col.TASK)


def single_runs(scores: pl.LazyFrame) -> pl.LazyFrame:
    """The single runs among scored episodes: their key, model, task and start (as text,
    whatever the scores' keys are)."""
    started = pl.col(SINGLE_RUN_STARTED)
    return scores.filter(started.is_not_null()).select(
        *(pl.col(c).cast(pl.String) for c in RUN_COLUMNS if c != SINGLE_RUN_STARTED), started
    )


def replaced_runs(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Of single runs (``single_runs``), those replaced: their key (file, episode id) and
    ``replaced_by``, the episode id of the run that stands in their cell (the latest
    started of the model's runs of the task on the night; equal starts: a reported score
    alone, then the greatest id).

    >>> from datetime import datetime, UTC
    >>> runs = pl.DataFrame({
    ...     "file": ["a", "b", "c", "d"], "dump_date": ["2026-04-12"] * 4,
    ...     "episode_id": ["r1", "r2", "r3", "2026-04-12/n/t"], "model": ["m", "m", "n", "n"],
    ...     "task": ["t"] * 4, "formula_version": ["v1", "v1", "v1", "reported"],
    ...     "single_run_started": [datetime(2026, 4, 12, h, tzinfo=UTC) for h in (9, 1, 5, 5)]})
    >>> replaced_runs(runs.lazy()).collect().rows()
    [('b', 'r2', 'r1'), ('c', 'r3', '2026-04-12/n/t')]
    """
    reported = pl.col(FORMULA_VERSION) == REPORTED
    order = [pl.col(SINGLE_RUN_STARTED), reported, pl.col(Col.EPISODE_ID)]
    standing = (
        runs.sort(order, descending=True, nulls_last=True)
        .group_by(_CELL, maintain_order=True)
        .agg(pl.col(Col.EPISODE_ID).first().alias(REPLACED_BY))
    )
    return (
        runs.join(standing, on=_CELL, nulls_equal=True)
        .filter(pl.col(Col.EPISODE_ID) != pl.col(REPLACED_BY))
        .select(*KEY, REPLACED_BY)
        .sort(KEY, nulls_last=True)
    )
