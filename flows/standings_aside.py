"""What a standing's worker makes aside (issue 48, i48-stand8): the parts of a standing that
need its task rows (and episodes) alone, made on a second thread while the worker makes the
statistics above the tasks (``flows.night.statistics_above``), which they do not read.

A nightly has no next night to hide its standing behind (``flows.standings_beside``): the
run's thread waits for it. Most of a standing is many small polars queries, which release the
GIL; two of them at once take the standing's wall time down, the same rows made by the same
queries (each part's frames are its own; nothing the two threads touch is shared but read).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from schemas.health import CATEGORY_HEALTH_TABLE, SIGNALS_TABLE, STABILITY_TABLE, TASK_HEALTH_TABLE
from schemas.hypotheses import HYPOTHESES_TABLE, Hypothesis
from transforms import health
from transforms.exact import exactly
from transforms.hypotheses import hypotheses

# A standing's health tables, in the order a standing's tables are listed.
HEALTH_TABLES = tuple(
    t.name for t in (STABILITY_TABLE, TASK_HEALTH_TABLE, CATEGORY_HEALTH_TABLE, SIGNALS_TABLE)
)


def of_tasks(
    tasks: pl.DataFrame, planned: Sequence[Hypothesis], level: float
) -> dict[str, pl.DataFrame]:
    """The benchmark's health as its tasks stand (``transforms.health``: stability, each
    task's health, the signals) and the ``planned`` hypotheses tested on them, by table."""
    stable, per_task, tested = exactly(
        health.stability(tasks.lazy()),
        health.task_health(tasks.lazy()),
        hypotheses(tasks.lazy(), planned, level),
    )
    return {
        STABILITY_TABLE.name: stable,
        TASK_HEALTH_TABLE.name: per_task,
        SIGNALS_TABLE.name: health.signals(tasks.lazy()),
        HYPOTHESES_TABLE.name: tested,
    }


def of_categories(categories: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Each category's health as the standing's category rows say, by table."""
    (made,) = exactly(health.category_health(categories.lazy()))
    return {CATEGORY_HEALTH_TABLE.name: made}
