"""What ``cogscore import-kaggle`` reads and reports: LearningBench's task folders as cogscore
categories, and the reasons a harness run is imported with a note or not imported.

The folder names are upstream's (``kdcyberdude/LearningBench``: ``downloaded_tasks/<folder>``);
a task file's category is its folder's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from schemas import rules
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
    UNREADABLE_RUN = "unreadable_run"  # the .run.json is not a harness run record (not UTF-8
    # JSON, nested too deeply, a field missing or of the wrong type, an unreadable file)
    BROKEN_LINK = "broken_link"  # a ``*.run.json`` symbolic link that leads nowhere (dangling,
    # or a loop)
    UNREADABLE_FOLDER = "unreadable_folder"  # a folder below RUNS that could not be listed:
    # the runs in it, if any, are missing from the import
    DUPLICATE_RUN = "duplicate_run"  # the same run (its model, task, harness run id and start
    # time) as another run file of the import, or as one already imported into the night,
    # whatever its file's name or bytes: imported once
    REPLAY_FAILED = "replay_failed"  # the task file crashed, hung, could not be loaded, went
    # over its memory or output limit, or killed its replay worker
    INPUTS_NOT_CAPTURED = "inputs_not_captured"  # the formula's inputs did not reproduce the
    # task's own score (a task that grades in a way the importer does not capture)
    MODEL_UNNAMED = "model_unnamed"  # the run's model slug names no one model: the names
    # file, the dump's names and the rule make it two models, or another vendor's
    IMPORT_FAILED = "import_failed"  # an unexpected error while importing this run (a bug in
    # cogscore: the detail names it); the other runs are imported
    # imported, with a note
    ERRORED = "errored"  # the harness recorded the run ERRORED: episode_end status error
    UNREADABLE_REPLY = "unreadable_reply"  # the model's reply did not fit the schema the task
    # asked for and the task had no guard: the model's failure, scored 0
    REPLY_MISSING = "reply_missing"  # a call has no reply in the file: replayed as a failed
    # call (the task counts that turn as a parse failure)
    MODEL_MISMATCH = "model_mismatch"  # the run's folder or file name names another model
    # than its slug: imported as the slug's (the harness wrote it from the model that answered)
    REPLACED = "replaced"  # the night held the rows of another version of this run (the same
    # file name and start time, other content), imported earlier: replaced by this one's
    USAGE_INVALID = rules.USAGE_INVALID  # a request's usage is beyond contract 1.4's bounds:
    # written as it is; the scorer scores the episode and refuses its usage


# The reasons that still write rows.
IMPORTED_WITH_NOTE: Final = frozenset(
    {
        Reason.ERRORED,
        Reason.UNREADABLE_REPLY,
        Reason.REPLY_MISSING,
        Reason.MODEL_MISMATCH,
        Reason.REPLACED,
        Reason.USAGE_INVALID,
    }
)

# The key-value metadata of an imported run's Parquet file that names the run by content: the
# sha256 of its JSON, canonical (sorted keys, no spaces), what tells a copy from another run.
RUN_DIGEST_KEY: Final = "cogscore.kaggle.run_sha256"
# ... and that names the run itself (its model, task, harness run id and start time): what
# tells the same run saved again (another name, a field added) from another run.
RUN_IDENTITY_KEY: Final = "cogscore.kaggle.run_identity"
