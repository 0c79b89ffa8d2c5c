"""The night's tables (flows/night.py): a small night's comparisons made beside its task
scores, a large night's after them, and the same tables either way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import flows.night as night
import transforms.compare.night as compare_night
from flows.score import score_dump
from transforms.aggregate import Bootstrap

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


@pytest.fixture(scope="module")
def scores() -> pl.DataFrame:
    return score_dump(EXAMPLE_DUMP).scores


def _spied(monkeypatch: pytest.MonkeyPatch, patience: float) -> list[bool]:
    """While each task-score plan is built: whether the episodes' comparisons had begun
    (waited for up to ``patience`` seconds; none began on the old code, which compared
    after the task scores)."""
    began, seen = threading.Event(), []
    comparisons: Callable[..., Any] = compare_night.comparisons_and_rank_intervals
    task_scores: Callable[..., Any] = night.task_scores

    def comparing(*args: Any, **kwargs: Any) -> Any:
        began.set()
        return comparisons(*args, **kwargs)

    def scoring_tasks(*args: Any, **kwargs: Any) -> Any:
        seen.append(began.wait(patience))
        return task_scores(*args, **kwargs)

    monkeypatch.setattr(compare_night, "comparisons_and_rank_intervals", comparing)
    monkeypatch.setattr(night, "task_scores", scoring_tasks)
    return seen


def test_a_small_nights_comparisons_are_made_beside_its_task_scores(
    scores: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = night.aggregate(scores, Bootstrap())
    seen = _spied(monkeypatch, patience=60)
    got = night.aggregate(scores, Bootstrap())
    assert seen == [True]
    assert got.keys() == expected.keys()
    for name, frame in expected.items():  # (some tables' row order is polars')
        key = [c for c, dtype in frame.schema.items() if not dtype.is_nested()]
        assert_frame_equal(
            got[name].sort(key, nulls_last=True), frame.sort(key, nulls_last=True), check_exact=True
        )


def test_a_large_nights_comparisons_wait_for_its_task_scores(
    scores: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A night over ``ATOMS_AT_ONCE`` episodes holds one working set at a time."""
    monkeypatch.setattr(night, "ATOMS_AT_ONCE", scores.height - 1)
    seen = _spied(monkeypatch, patience=0.2)
    night.aggregate(scores, Bootstrap())
    categories = scores["category"].n_unique()
    assert seen == [False] * categories and categories > 1
