"""What a task replayed by ``cogscore import-kaggle`` (or ``nightly --runs``) may take,
declared once (a module of its own, light, so the command line reads the defaults without
importing the importer): the defaults, the bounds the command line checks, what each means."""

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

# The least the command line takes (``flows.cli.options.replay_timeout``, ``TaskMemoryOpt``).
MIN_TIMEOUT: Final = 1.0
MIN_TASK_MEMORY: Final = 64
TIMEOUT_HELP: Final = "Seconds a harness run's replay may take; a replay over it fails its run."
TASK_MEMORY_HELP: Final = (
    "Memory (MiB of address space) a task may take beyond the replay worker's own; a task over "
    f"it fails its run. A task's prints are capped at {TASK_OUTPUT_LIMIT >> 20} MiB."
)
