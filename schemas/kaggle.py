"""What ``cogscore import-kaggle`` reads and reports: LearningBench's task folders as cogscore
categories, and the reasons a harness run is imported with a note or not imported.

The folder names are upstream's (``kdcyberdude/LearningBench``: ``downloaded_tasks/<folder>``);
a task file's category is its folder's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from schemas.contract import Category

UPSTREAM_CATEGORIES: Final[dict[str, Category]] = {
    "associative_learning": Category.ASSOCIATIVE_LEARNING,
    "concept_learning": Category.CONCEPT_FORMATION,
    "language_learning": Category.LANGUAGE_LEARNING,
    "observational_learning": Category.OBSERVATIONAL_LEARNING,
    "reinforcement_learning": Category.RUNTIME_RL,
    "procedural_learning": Category.PROCEDURAL_LEARNING,
}


class Outcome(StrEnum):
    """What the import did with one run (one line of its report)."""

    IMPORTED = "imported"  # rows written (or already there, byte for byte)
    REJECTED = "rejected"  # no rows: the reason says why


class Reason(StrEnum):
    """Why a run was rejected, or what an imported run's note says. Stable codes."""

    # rejected: no rows written
    NO_TASK_FILE = "no_task_file"  # no task file in TASKS registers the run's task name
    PROMPT_MISMATCH = "prompt_mismatch"  # the task sends other prompts than the run recorded
    UNREADABLE_RUN = "unreadable_run"  # the .run.json is not a harness run record
    REPLAY_FAILED = "replay_failed"  # the task file crashed, hung or could not be loaded
    INPUTS_NOT_CAPTURED = "inputs_not_captured"  # the formula's inputs did not reproduce the
    # task's own score (a task that grades in a way the importer does not capture)
    # imported, with a note
    ERRORED = "errored"  # the harness recorded the run ERRORED: episode_end status error
    UNREADABLE_REPLY = "unreadable_reply"  # the model's reply did not fit the schema the task
    # asked for and the task had no guard: the model's failure, scored 0
    REPLY_MISSING = "reply_missing"  # a call has no reply in the file: replayed as a failed
    # call (the task counts that turn as a parse failure)


# The reasons that still write rows.
IMPORTED_WITH_NOTE: Final = frozenset(
    {Reason.ERRORED, Reason.UNREADABLE_REPLY, Reason.REPLY_MISSING}
)
