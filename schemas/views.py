"""What a leaderboard shows (``View``): the benchmark as it stands, or a night's own
episodes; and the tables each view reads (``VIEWS``), for the leaderboard, ``compare``, the
report and the SQL views."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from schemas.columns import Table
from schemas.tables import (
    CATEGORY_SCORES_TABLE,
    CATEGORY_STANDINGS_TABLE,
    MODEL_COMPARISONS_TABLE,
    MODEL_SCORES_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDINGS_TABLE,
    TASK_SCORES_TABLE,
    TASK_STANDINGS_TABLE,
)


class View(StrEnum):
    """What a leaderboard shows: the ``standing`` as of a night (each model's latest result
    on every task: the benchmark as it stands, the default), or the ``night``'s own
    episodes alone."""

    STANDING = "standing"
    NIGHT = "night"


@dataclass(frozen=True)
class ViewTables:
    """The tables a view reads: model rows, category rows, pairwise comparisons, task rows
    (the report's matrix)."""

    models: Table
    categories: Table
    comparisons: Table
    tasks: Table

    @property
    def night(self) -> str:
        """The column naming the night shown (``as_of`` or ``dump_date``)."""
        return self.models.night


VIEWS: Final = {
    View.STANDING: ViewTables(
        STANDINGS_TABLE, CATEGORY_STANDINGS_TABLE, STANDING_COMPARISONS_TABLE, TASK_STANDINGS_TABLE
    ),
    View.NIGHT: ViewTables(
        MODEL_SCORES_TABLE, CATEGORY_SCORES_TABLE, MODEL_COMPARISONS_TABLE, TASK_SCORES_TABLE
    ),
}
