"""Where the real benchmark's files are: ``../shared/learningbench`` beside the checkout (CI
checks the repository out with ``../shared`` beside it; see its ``NOTICE.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

LEARNINGBENCH: Final = Path(__file__).resolve().parents[1] / ".." / "shared" / "learningbench"
LEADERBOARD: Final = LEARNINGBENCH / "leaderboard"
TASKS: Final = LEARNINGBENCH / "tasks"
RUNS: Final = LEARNINGBENCH / "kaggle_runs"


def scored_real_runs(root: Path) -> Path:
    """The 13 real runs imported into ``root/dump`` (12 episodes: one run has no task file)
    and scored by the nightly into ``root/out``; ``root``."""
    from flows import runs
    from flows.importers.kaggle import import_runs
    from flows.store.location import Location

    import_runs(Location.parse(str(RUNS)), TASKS, Location.parse(str(root / "dump")))
    runs.nightly(root / "dump", root / "out")
    return root
