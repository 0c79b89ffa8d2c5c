"""Runtime RL (``transforms.runtime_rl``): the facts read from the interaction and the
efficiency's boundaries, each episode scored by the pipeline and by the reference
(``tests.reference``), which must agree on every column."""

from __future__ import annotations

import json
from typing import Any

from schemas.contract import Category
from tests.reference.test_reference import ACTION, episode, feedback
from tests.transforms.test_pipeline import assert_agree, vectorised


def scored(*body: dict[str, Any], **params: Any) -> dict[str, Any]:
    """The pipeline's scores of one runtime RL episode, checked against the reference."""
    rows = episode(Category.RUNTIME_RL, *body, params=json.dumps(params))
    got = vectorised(rows, {})
    assert_agree(rows, {}, got)
    assert got.scores.height == 1
    return got.scores.row(0, named=True)


def test_steps_count_the_actions_before_the_first_solving_feedback() -> None:
    """A run that solves again later: step_y is counted up to the first solving feedback."""
    first, again = 2, 5
    body: list[dict[str, Any]] = []
    for step in range(1, 7):
        body += [ACTION, feedback(0.5, step in (first, again))]
    got = scored(*body, budget=20, min_explore=1)
    assert got["success"] is True
    assert got["steps"] == first


def test_feedback_values_outside_zero_to_one_are_counted_bounds_excluded() -> None:
    """0 and 1 are in range, a null value is no value; the largest value is clamped to 1."""
    values = [-0.5, 0.0, 0.5, 1.0, 1.005, 1.7, None]
    body: list[dict[str, Any]] = []
    for value in values:
        body += [ACTION, feedback(value, False)]
    got = scored(*body, budget=20)
    outside = [v for v in values if v is not None and not 0.0 <= v <= 1.0]
    assert got["feedback_out_of_range"] == len(outside)
    assert got["progress"] == 1.0


def test_no_feedback_at_all_is_unsolved() -> None:
    got = scored(ACTION, ACTION, budget=20)
    assert got["success"] is False
    assert got["steps"] is None
    assert got["score"] == 0.0


def test_the_first_step_is_free_from_min_explore_one() -> None:
    """step_y 1 <= min_explore 1: full efficiency (step_y is clamped to at least 1)."""
    got = scored(ACTION, feedback(None, True), budget=20, min_explore=1)
    assert (got["steps"], got["efficiency"]) == (1, 1.0)


def test_solved_before_any_action_counts_as_one_step() -> None:
    """step_y 0 is clamped to 1, which a min_explore below 1 pays for: (1 - (-1)) of
    (budget - (-1)) paid steps."""
    budget, min_explore, floor = 20, -1, 0.1
    got = scored(feedback(None, True), ACTION, budget=budget, min_explore=min_explore)
    paid = (1 - min_explore) / (budget - min_explore)
    assert got["steps"] == 0
    assert got["efficiency"] == 1.0 - (1.0 - floor) * paid


def test_solving_on_min_explore_is_free_when_the_budget_is_min_explore() -> None:
    """step_y = min_explore = budget: free (the decay's 0/0 is never reached)."""
    got = scored(*[ACTION] * 6, ACTION, feedback(None, True), budget=7)
    assert (got["steps"], got["efficiency"]) == (7, 1.0)
