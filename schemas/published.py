"""LearningBench's leaderboard as its authors publish it (``../shared/learningbench/
leaderboard/``): the three files, their columns in order, how they write a category, a
number and a line; what ``cogscore export --format learningbench`` writes and ``cogscore
import-scores`` reads (``leaderboard_flat.csv``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from schemas.contract import Category


class ExportFormat(StrEnum):
    """The publications ``cogscore export`` writes."""

    LEARNINGBENCH = "learningbench"


# One row per model and task, the models in rank order, each model's tasks in the table's
# order; written by Python's csv module (lines end with CRLF).
FLAT_FILE: Final = "leaderboard_flat.csv"
MODEL_NAME: Final = "model_name"
MODEL_SLUG: Final = "model_slug"
TASK_SLUG: Final = "task_slug"
CATEGORY_SLUG: Final = "category"
SCORE: Final = "score"
EVAL_DATE: Final = "eval_date"
FLAT_COLUMNS: Final = (MODEL_NAME, MODEL_SLUG, TASK_SLUG, CATEGORY_SLUG, SCORE, EVAL_DATE)
FLAT_LINE_END: Final = "\r\n"

# Each model's mean over its task scores (each task weighing the same) and its rank; written
# by pandas (lines end with LF), as is the matrix.
RANKS_FILE: Final = "leaderboard_model_ranks.csv"
MEAN_SCORE: Final = "mean_score"
RANK: Final = "rank"
RANKS_COLUMNS: Final = (MODEL_NAME, MODEL_SLUG, MEAN_SCORE, RANK)
TABLE_LINE_END: Final = "\n"

# One row per task (by category, then task), one column per model (its published name, in
# Python's string order), each score rounded to 6 places.
MATRIX_FILE: Final = "leaderboard_score_matrix.csv"
MATRIX_LEAD: Final = (TASK_SLUG, CATEGORY_SLUG)
MATRIX_DIGITS: Final = 6

# How the leaderboard writes each category (and a task in none of the six: ``unknown``).
LEADERBOARD_CATEGORIES: Final[dict[str, Category]] = {
    "assoc-learning": Category.ASSOCIATIVE_LEARNING,
    "concept-learning": Category.CONCEPT_FORMATION,
    "lang-learning": Category.LANGUAGE_LEARNING,
    "obs-learning": Category.OBSERVATIONAL_LEARNING,
    "rf-learning": Category.RUNTIME_RL,
    "proc-learning": Category.PROCEDURAL_LEARNING,
}
LEADERBOARD_UNKNOWN: Final = "unknown"
