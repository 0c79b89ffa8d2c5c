"""The categories of a score table (``cogscore import-scores``), kept as it publishes them.

A table names a category with the contract's name, one of LearningBench's leaderboard slugs
(``assoc-learning`` …) or one of its task folders' names (``concept_learning`` …). A task it
puts in none of the six (``unknown``, as the leaderboard says of three tasks, or no category
at all) is ``uncategorised`` (contract 1.4: it counts in the overall score, in no category),
so that the overall and every category equal the table's own figures at once. The task
files' folders change no category: where one puts a task in another category than the
table does, the import says so (``disagreements``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from schemas.contract import CATEGORY_VALUES, UNCATEGORISED, Category, Col
from schemas.kaggle import UPSTREAM_CATEGORIES
from schemas.published import LEADERBOARD_CATEGORIES, LEADERBOARD_UNKNOWN

# What LearningBench's leaderboard says of three tasks: in none of the six categories.
UNKNOWN: Final = LEADERBOARD_UNKNOWN

# Category names a table may use, and their contract value (as text).
CATEGORY_NAMES: Final[dict[str, str]] = {
    name: str(category)
    for name, category in {
        **{c: c for c in CATEGORY_VALUES},
        **LEADERBOARD_CATEGORIES,
        **UPSTREAM_CATEGORIES,
        UNKNOWN: UNCATEGORISED,
    }.items()
}

# A disagreement's report: the task, the table's category (kept), the task file's.
TABLE_CATEGORY: Final = "table"
FILE_CATEGORY: Final = "task_files"


def none_given(column: str) -> pl.Expr:
    """A category the table leaves empty: in none of the six, as ``unknown`` is."""
    return pl.col(column).fill_null("") == ""


def named(column: str) -> pl.Expr:
    """The contract's category the table's name in ``column`` stands for (null: none it
    knows; ``uncategorised`` where it names none, or gives none)."""
    known = pl.col(column).str.to_lowercase()
    known = known.replace_strict(CATEGORY_NAMES, default=None, return_dtype=pl.String)
    return pl.when(none_given(column)).then(pl.lit(UNCATEGORISED)).otherwise(known)


def disagreements(
    rows: pl.DataFrame, category: str, tasks: Mapping[str, Category] | None
) -> list[dict[str, str]]:
    """Each task of ``rows`` (with the contract's category in ``category``) whose file in
    ``tasks`` (``flows.importers.scores.task_categories``) lies in another category's folder:
    ``task``, ``table`` (the category kept) and ``task_files``."""
    files = {k: v.value for k, v in (tasks or {}).items()}
    from_files = pl.col(Col.TASK).replace_strict(files, default=None, return_dtype=pl.String)
    other = from_files.is_not_null() & (from_files != pl.col(category))
    return (
        rows.filter(other)
        .select(Col.TASK, pl.col(category).alias(TABLE_CATEGORY), from_files.alias(FILE_CATEGORY))
        .unique()
        .sort(Col.TASK, TABLE_CATEGORY)
        .to_dicts()
    )
