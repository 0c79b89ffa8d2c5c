"""What scoring a night gives (``ScoreResult``), and its compared episodes, held or read
back when needed (``Episodes``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import polars as pl

from flows.mismatches import Mismatches
from flows.reading import FileReport
from flows.store.delta.staged import StagedFiles
from schemas.columns import FEEDBACK_OUT_OF_RANGE, N_ROWS, ROWS, STATUS, EpisodeStatus
from schemas.contract import Col
from schemas.tables import REPLACED_EPISODES_TABLE
from transforms.compare.night import compared

# Staged files, or the files of a chunk still being written (``flows.staging.Stager``).
Staged = StagedFiles | Future[StagedFiles | None]

# A night's compared episodes (``COMPARED_COLUMNS``, ids as text): held, or read back when
# called (a coded night's, from its staged files: ``flows.coded``).
Episodes = pl.DataFrame | Callable[[], pl.DataFrame]


def resolved(episodes: Episodes) -> pl.DataFrame:
    """The frame of ``episodes``, read back if it is not held."""
    return episodes if isinstance(episodes, pl.DataFrame) else episodes()


@dataclass
class ScoreResult:
    """Scored episodes and rejects of some files (a night's, in a run)."""

    scores: pl.DataFrame  # every column, or the held ones (``HELD``) where the rows are staged
    rejects: pl.DataFrame
    files: list[FileReport]
    formulas: dict[str, str]
    sums: pl.DataFrame | None = None  # per file and task: component sums
    # The night's staged episode_scores files (``settled`` waits for those being written).
    staged: list[Staged] | None = None
    mismatches: Mismatches = field(default_factory=Mismatches)
    # Contract 1.4: the episodes a later single run of their model and task replaced (whole
    # rows, ``replaced_by``): scored, not among ``scores``, never averaged.
    replaced: pl.DataFrame = field(default_factory=REPLACED_EPISODES_TABLE.empty)
    # A night coded (``flows.coded``): ``scores`` holds its ids coded and no row counts, which
    # were summed as its rows were read back (``N_ROWS``, ``FEEDBACK_OUT_OF_RANGE``); ``text``
    # reads its compared columns back with their text.
    tally: dict[str, int] | None = None
    text: Callable[[], pl.DataFrame] | None = None

    def episodes(self) -> Episodes:
        """The compared columns of the scored episodes, ids as text: a frame, or where the
        night is coded, what reads them back from its staged files when called (``resolved``;
        it holds none of this result's frames)."""
        return compared(self.scores) if self.text is None else self.text

    def summed(self, column: str) -> int:
        """A row count of the scored episodes (``N_ROWS``, ``FEEDBACK_OUT_OF_RANGE``), summed
        as Int64 (the held counts are Int32, ``HELD_DTYPES``; a night's sums need not be)."""
        if self.tally is not None:
            return self.tally[column]
        return int(self.scores[column].cast(pl.Int64).sum())

    @property
    def counts(self) -> dict[str, int]:
        rejected = self.rejects.filter(pl.col(Col.EPISODE_ID).is_not_null())
        harness = rejected.filter(pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR)
        rows_read = sum(f.rows for f in self.files)
        # The replaced episodes' rows too: they were scored.
        rows_scored = self.summed(N_ROWS) + int(self.replaced[N_ROWS].sum())
        return {
            "files_read": len(self.files),
            "files_rejected": sum(f.status == "rejected" for f in self.files),
            "rows_read": rows_read,
            "rows_scored": rows_scored,
            "rows_rejected": int(self.rejects[ROWS].sum()),
            "episodes_scored": self.scores.height,
            "episodes_rejected": rejected.height - harness.height,
            "episodes_harness_error": harness.height,
            "warnings_feedback_out_of_range": self.summed(FEEDBACK_OUT_OF_RANGE),
            # Contract 1.2: episodes whose score differs from the harness's reported one,
            # and whose declarative verdicts differ from the harness's recorded ones.
            "episodes_score_mismatch": self.mismatches.scores,
            "episodes_verdict_mismatch": self.mismatches.verdicts,
            # Contract 1.4: episodes scored whose usage was refused (``usage_invalid``).
            "episodes_usage_refused": self.mismatches.usage_refused,
            "episodes_replaced": self.replaced.height,  # contract 1.4
        }
