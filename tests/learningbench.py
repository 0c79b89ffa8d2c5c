"""Where the real benchmark's files are: ``../shared/learningbench`` beside the checkout (CI
checks the repository out with ``../shared`` beside it; see its ``NOTICE.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

LEARNINGBENCH: Final = Path(__file__).resolve().parents[1] / ".." / "shared" / "learningbench"
LEADERBOARD: Final = LEARNINGBENCH / "leaderboard"
TASKS: Final = LEARNINGBENCH / "tasks"
