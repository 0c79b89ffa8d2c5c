"""What ``cogscore import-kaggle`` reports: a line per run (imported, or rejected with its
reasons) and the import's totals, as the terminal and ``--json`` show them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from schemas.kaggle import Outcome, Reason


@dataclass
class RunReport:
    """One run's line in the import's report."""

    run: str  # the run file, relative to RUNS
    outcome: Outcome
    task: str | None = None
    model: str | None = None
    reasons: list[str] = field(default_factory=list)
    detail: str | None = None
    file: str | None = None  # the rows' file, relative to DUMP_ROOT
    written: bool = False  # False: the same bytes were already there
    reported_score: float | None = None
    task_score: float | None = None  # what the task returned on replay
    digest: str | None = None  # the run's content digest (``RunRecord.digest``)

    def note(self, reason: Reason, detail: str) -> None:
        self.reasons.append(str(reason))
        self.detail = f"{self.detail}; {detail}" if self.detail else detail


@dataclass
class ImportReport:
    runs: list[RunReport]
    seconds: float
    warnings: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)  # nights given their _SUCCESS
    # The models new to the dump (no name of a known one): model -> the names it came from.
    new_models: dict[str, list[str]] = field(default_factory=dict)

    @property
    def imported(self) -> int:
        return sum(1 for r in self.runs if r.outcome is Outcome.IMPORTED)

    @property
    def rejected(self) -> int:
        return len(self.runs) - self.imported

    def as_json(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for run in self.runs:
            for reason in run.reasons:
                reasons[reason] = reasons.get(reason, 0) + 1
        return {
            "runs": len(self.runs),
            "imported": self.imported,
            "rejected": self.rejected,
            "files_written": sum(1 for r in self.runs if r.written),
            "reasons": dict(sorted(reasons.items())),
            "nights_marked": self.marked,
            "new_models": self.new_models,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "details": [
                {k: (str(v) if isinstance(v, Outcome) else v) for k, v in asdict(r).items()}
                for r in self.runs
            ],
        }
