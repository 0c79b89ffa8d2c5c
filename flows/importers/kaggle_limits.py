"""What a task replayed by ``cogscore import-kaggle`` may take, declared once (a module of its
own, light, so the command line reads the defaults without importing the importer)."""

from __future__ import annotations

from typing import Final

# Seconds a run's replay may take (``--timeout``).
DEFAULT_TIMEOUT: Final = 300.0
# The memory a task may take beyond its replay worker's own, in MiB (``--task-memory``): the
# address space (RLIMIT_AS) of the task's process is the worker's at the fork plus this.
DEFAULT_TASK_MEMORY: Final = 2048
# What a task may write to one file, in bytes (its prints go to one, RLIMIT_FSIZE): a task
# that writes more is stopped (SIGXFSZ) and its run fails.
TASK_OUTPUT_LIMIT: Final = 64 << 20
