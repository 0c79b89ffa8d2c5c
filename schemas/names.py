"""The names of models and tasks as their sources give them (``transforms.names``): the names
file's columns, the dump's own names file, and the fields of contract 1.5's
``source_names`` the importers write."""

from __future__ import annotations

from typing import Final

# A names file (``--names FILE``, ``COGSCORE_NAMES``): CSV, each row an alias (any name a
# source gives a model: a harness slug, a table's slug, a display name) and the model it is.
NAMES_HEADER: Final = ("alias", "model")

# The dump's own names, in its root (``_``: never read as dump rows): every alias an import
# resolved, and the model it resolved to, so that it resolves the same way on every night
# after (a names file in the same format).
DUMP_NAMES: Final = "_cogscore_names.csv"

# ``source_names`` of a harness run: its model slug, the task name its task file registers,
# and that file (below TASKS).
HARNESS_MODEL: Final = "model"
HARNESS_TASK: Final = "task"
HARNESS_TASK_FILE: Final = "task_file"
# ``source_names`` of a score table's row: its number (as the import reports rows: the first
# row after the header is 1), beside the table's own columns as it wrote them.
TABLE_ROW: Final = "row"
