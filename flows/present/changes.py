"""How a change of the standing is told, in words, wherever it is shown (the run's summary,
the report, ``compare --against``): whether the statistics call it beyond noise, and the
rank move it came with ("rank 2 → 1 (within noise)"); and a re-run result ("t1: 0.000
(2026-04-01) → 0.875 (2026-04-02)"). "Within noise" labels a change: it never hides one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flows.present.terminal import printable
from schemas.columns import SCORE
from schemas.comparisons import (
    BASELINE_SCORE,
    BEYOND_NOISE,
    CHANGE_KIND,
    NEW_NIGHT,
    NEW_RANK,
    NEW_RANK_HIGH,
    NEW_RANK_LOW,
    NEW_SCORE,
    OLD_NIGHT,
    OLD_RANK,
    OLD_RANK_HIGH,
    OLD_RANK_LOW,
    OLD_SCORE,
    ChangeKind,
)
from schemas.contract import Col

Row = Mapping[str, Any]

BEYOND = "beyond noise"
WITHIN = "within noise"
NOT_ESTIMABLE = "noise not estimable"  # a re-run tested, its variance not estimable
NOT_COMPARABLE = "not comparable"  # tasks covered, results rescored, a model new or gone
UNCHANGED = "its results unchanged"  # reranked: other models' changes moved its rank


def noise(row: Row) -> str:
    """What the statistics say of a ``standing_changes`` row's change.

    >>> noise({"kind": "rerun", "beyond_noise": False})
    'within noise'
    >>> noise({"kind": "rerun", "beyond_noise": None})
    'noise not estimable'
    >>> noise({"kind": "coverage", "beyond_noise": None})
    'not comparable'
    """
    kind = row[CHANGE_KIND]
    if kind == ChangeKind.RERANKED:
        return UNCHANGED
    if row.get(BEYOND_NOISE) is not None:
        return BEYOND if row[BEYOND_NOISE] else WITHIN
    return NOT_ESTIMABLE if kind == ChangeKind.RERUN else NOT_COMPARABLE


def interval(low: int | None, high: int | None) -> str:
    """A rank interval as text ("1-3"; "-": none)."""
    return "-" if low is None or high is None else f"{low}-{high}"


def rank_move(row: Row) -> tuple[str, str] | None:
    """A ``standing_changes`` row's rank before and now, and its rank intervals (None where
    neither standing ranks the model in the row's scope).

    >>> rank_move({"old_rank": 2, "new_rank": 1, "old_rank_low": 1, "old_rank_high": 3,
    ...     "new_rank_low": 1, "new_rank_high": 2})
    ('rank 2 → 1', 'rank intervals 1-3 → 1-2')
    >>> rank_move({"old_rank": 2, "new_rank": 2, "old_rank_low": 1, "old_rank_high": 3,
    ...     "new_rank_low": 1, "new_rank_high": 3})
    ('rank 2, unmoved', 'rank interval 1-3')
    """
    old, new = row.get(OLD_RANK), row.get(NEW_RANK)
    if old is None and new is None:
        return None
    before = interval(row.get(OLD_RANK_LOW), row.get(OLD_RANK_HIGH))
    after = interval(row.get(NEW_RANK_LOW), row.get(NEW_RANK_HIGH))
    ranks = f"rank interval {after}" if before == after else f"rank intervals {before} → {after}"
    if old == new:
        return f"rank {new}, unmoved", ranks
    return f"rank {old or '-'} → {new or '-'}", ranks


def told(row: Row) -> str:
    """A ``standing_changes`` row's rank move and what the statistics say of its change, in
    words (only the latter where neither standing ranks the model in the row's scope).

    >>> told({"kind": "rerun", "beyond_noise": False, "old_rank": 2, "new_rank": 1,
    ...     "old_rank_low": 1, "old_rank_high": 3, "new_rank_low": 1, "new_rank_high": 2})
    'rank 2 → 1 (within noise; rank intervals 1-3 → 1-2)'
    >>> told({"kind": "reranked", "old_rank": 1, "new_rank": 2, "old_rank_low": 1,
    ...     "old_rank_high": 3, "new_rank_low": 1, "new_rank_high": 3})
    'rank 1 → 2 (its results unchanged; rank interval 1-3)'
    >>> told({"kind": "coverage", "beyond_noise": None})
    'not comparable'
    """
    said, moved = noise(row), rank_move(row)
    if moved is None:
        return said
    move, ranks = moved
    return f"{move} ({said}; {ranks})"


def scores(row: Row) -> str:
    """A row's score before and now ("0.000 → 0.875"; "-" where there is none)."""
    return f"{fmt(row.get(BASELINE_SCORE))} → {fmt(row.get(SCORE))}"


def result_moved(row: Row) -> str:
    """A ``task_changes`` row in words: its model and task, the score before and now, each
    with the night it comes from.

    >>> result_moved({"model": "m", "task": "t", "old_score": 0.0, "old_night": "04-01",
    ...     "new_score": 0.875, "new_night": "04-02"})
    'm t: 0.000 (04-01) → 0.875 (04-02)'
    """
    return (
        f"{printable(row[Col.MODEL])} {printable(row[Col.TASK])}: "
        f"{fmt(row[OLD_SCORE])} ({printable(row[OLD_NIGHT] or '-')}) → "
        f"{fmt(row[NEW_SCORE])} ({printable(row[NEW_NIGHT] or '-')})"
    )


def fmt(value: float | None, spec: str = ".3f") -> str:
    """A number for a line or a cell; "-" where there is none."""
    return "-" if value is None else format(value, spec)
