"""Golden scores: episodes whose every component was worked out by hand from the seed's
formulas and the contract's defaults, pinned as numbers.

Each case has an id and the reason it exists (the rule, default or boundary that it pins).
The vectorised pipeline and the reference must both give the pinned values: the property
tests compare the two with each other, and these cases tie both to the seed. Defaults
(``free_threshold`` 4, ``min_explore`` 7, ``floor`` 0.10, ``progress`` max,
``practice_rounds`` 5, ``num_test_items`` = the items) are left out of ``params`` where a
case pins them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pytest

from tests.reference import reference_score
from tests.reference.test_reference import (
    ACTION,
    EXAMPLE,
    FILE,
    answer,
    episode,
    feedback,
    item,
    round_end,
)
from tests.run import run_pipeline


@dataclass
class Case:
    id: str
    why: str
    category: str
    body: list[dict[str, Any]]
    want: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    formulas: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        return episode(
            self.category, *self.body, params=json.dumps(self.params), episode_id=self.id
        )


def items(*pairs: tuple[str, str | None]) -> list[dict[str, Any]]:
    """Items q0.. with these (expected, answer) pairs; a None answer: none given."""
    out = [item(f"q{i}", e) for i, (e, _) in enumerate(pairs)]
    out += [answer(f"q{i}", a) for i, (_, a) in enumerate(pairs) if a is not None]
    return out


def solved_at(step: int, *, values: list[float | None] | None = None) -> list[dict[str, Any]]:
    """``step`` actions, each followed by a feedback; the last one solves."""
    values = values or [None] * step
    body: list[dict[str, Any]] = []
    for i in range(step):
        body += [ACTION, feedback(values[i], i == step - 1)]
    return body


def rounds(*values: float, order: list[int] | None = None) -> list[dict[str, Any]]:
    numbers = order or list(range(1, len(values) + 1))
    return [round_end(n, values[n - 1]) for n in numbers]


CONCEPT = {"initial_examples": 3, "max_examples": 16}
LEARNER = (0.1, 0.3, 0.5, 0.8, 0.9)
ALL_RIGHT = items(("a", "a"), ("b", "b"), ("c", "c"), ("d", "d"))

CASES = [
    # ---- associative learning: score = correct / total_questions
    Case(
        "assoc-unanswered-is-wrong",
        "score = correct / items; an item with no answer is wrong",
        "associative_learning",
        items(("yes", "Yes, it is."), ("UNKNOWN", "Plex is unknown"), ("no", None)),
        {"score": 2 / 3, "correct_count": 2, "n_items": 3, "accuracy": 2 / 3},
    ),
    Case(
        "assoc-latest-answer-counts",
        "the answer with the highest turn counts, whether it is right or wrong",
        "associative_learning",
        [
            item("q0", "yes"),
            item("q1", "no"),
            answer("q0", "nah"),
            answer("q1", "no"),
            answer("q0", "yes"),
            answer("q1", "maybe"),
        ],
        {"score": 0.5, "correct_count": 1, "n_items": 2},
    ),
    # ---- observational learning: fraction of fully correct sequences; positional diagnostic
    Case(
        "obs-sequence-default-and-positional",
        "match defaults to sequence; positional = mean of per-item shares (2/3, 1, 0)",
        "observational_learning",
        items(("1 0 1", "1 1 1"), ("x y", "x\u00a0 y"), ("p q", None)),
        {"score": 1 / 3, "correct_count": 1, "n_items": 3, "positional": 5 / 9},
    ),
    Case(
        "obs-no-substring-credit",
        "sequence, not contains: an extra token makes the answer wrong",
        "observational_learning",
        items(("a b", "a b c")),
        {"score": 0.0, "positional": 1.0},
    ),
    # ---- concept formation / language learning: accuracy x (0.40 + 0.60 x efficiency)
    Case(
        "concept-default-free-threshold",
        "free_threshold defaults to 4: 5 examples with initial 3 pay 1 of 12: eff 11/12",
        "concept_formation",
        [*[EXAMPLE] * 5, *ALL_RIGHT],
        {"score": 0.95, "efficiency": 11 / 12, "accuracy": 1.0, "examples_used": 5},
        CONCEPT,
    ),
    Case(
        "concept-initial-above-threshold",
        "effective_free = max(initial 6, 4) = 6: 8 examples pay 2 of 10: 0.75 x 0.88",
        "concept_formation",
        [*[EXAMPLE] * 8, *items(("a", "a"), ("b", "b"), ("c", "c"), ("d", "x"))],
        {"score": 0.66, "efficiency": 0.8, "accuracy": 0.75, "correct_count": 3},
        {"initial_examples": 6, "max_examples": 16},
    ),
    Case(
        "concept-all-examples-used",
        "the seed's table: 4/4 with all 16 examples scores 0.40 (efficiency 0)",
        "concept_formation",
        [*[EXAMPLE] * 16, *ALL_RIGHT],
        {"score": 0.4, "efficiency": 0.0},
        CONCEPT,
    ),
    Case(
        "concept-zero-accuracy-guard",
        "accuracy 0 scores 0.0 whatever the efficiency (which is still reported)",
        "concept_formation",
        [*[EXAMPLE] * 5, *items(("a", "x"), ("b", None))],
        {"score": 0.0, "efficiency": 11 / 12, "accuracy": 0.0},
        CONCEPT,
    ),
    Case(
        "concept-num-test-items",
        "accuracy divides by num_test_items (8), not by the 4 items listed",
        "concept_formation",
        [*[EXAMPLE] * 3, *ALL_RIGHT],
        {"score": 0.5, "accuracy": 0.5, "efficiency": 1.0, "n_items": 4},
        {**CONCEPT, "num_test_items": 8},
    ),
    Case(
        "language-nfc-default",
        "language learning defaults to nfc: composed = decomposed, case-sensitive",
        "language_learning",
        [*[EXAMPLE] * 2, *items(("e\u0301ka", "\u00e9ka"), ("Eka", "eka"))],
        {"score": 0.5, "accuracy": 0.5, "efficiency": 1.0, "examples_used": 2},
        CONCEPT,
    ),
    # ---- runtime RL: round(0.55 x solved + 0.25 x eff + 0.20 x progress, 4)
    Case(
        "rl-default-min-explore",
        "min_explore defaults to 7: solved at step 8 pays 1 of 13: eff 1 - 0.9/13",
        "runtime_rl",
        solved_at(8, values=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0]),
        {"score": 0.9827, "steps": 8, "efficiency": 1 - 0.9 / 13, "progress": 1.0},
        {"budget": 20},
    ),
    Case(
        "rl-at-min-explore-is-free",
        "step_y <= min_explore (7 = 7): full efficiency",
        "runtime_rl",
        solved_at(7),
        {"score": 0.8, "steps": 7, "efficiency": 1.0, "progress": 0.0, "success": True},
        {"budget": 20},
    ),
    Case(
        "rl-default-floor",
        "floor defaults to 0.10: solving on the budget's last step keeps eff 0.10",
        "runtime_rl",
        solved_at(20),
        {"score": 0.575, "steps": 20, "efficiency": 0.1},
        {"budget": 20, "min_explore": 2},
    ),
    Case(
        "rl-step-clamped-to-budget",
        "step_y is clamped to budget for eff (floor), reported unclamped",
        "runtime_rl",
        solved_at(9, values=[0.4] * 9),
        {"score": 0.655, "steps": 9, "efficiency": 0.1, "progress": 0.4},
        {"budget": 5, "min_explore": 2},
    ),
    Case(
        "rl-linear-decay",
        "solved at 3 of budget 12, min_explore 2: eff 1 - 0.9 x 1/10 = 0.91",
        "runtime_rl",
        [ACTION, feedback(0.2), ACTION, ACTION, feedback(0.9, True)],
        {"score": 0.9575, "steps": 3, "efficiency": 0.91, "progress": 0.9},
        {"budget": 12, "min_explore": 2},
    ),
    Case(
        "rl-solved-before-any-action",
        "step_y 0 clamps to 1 (free); progress 0.6",
        "runtime_rl",
        [feedback(0.6, True), ACTION],
        {"score": 0.92, "steps": 0, "efficiency": 1.0},
        {"budget": 20},
    ),
    Case(
        "rl-default-progress-max",
        "progress defaults to max: the best value 0.8, not the last 0.5; unsolved: eff 0",
        "runtime_rl",
        [ACTION, feedback(0.3), ACTION, feedback(0.8), ACTION, feedback(0.5)],
        {"score": 0.16, "success": False, "steps": None, "efficiency": 0.0, "progress": 0.8},
        {"budget": 20},
    ),
    Case(
        "rl-progress-last",
        "progress last: the last non-null value (0.5; a null value does not count)",
        "runtime_rl",
        [ACTION, feedback(0.3), ACTION, feedback(0.8), ACTION, feedback(0.5), feedback(None)],
        {"score": 0.1, "progress": 0.5},
        {"budget": 20, "progress": "last"},
    ),
    Case(
        "rl-progress-clamped",
        "progress is clamped to [0, 1]; values outside are counted as warnings",
        "runtime_rl",
        [ACTION, feedback(1.7), ACTION, feedback(-0.5)],
        {"score": 0.2, "progress": 1.0, "feedback_out_of_range": 2},
        {"budget": 20},
    ),
    Case(
        "rl-progress-last-clamped-low",
        "the last value -0.5 clamps to 0",
        "runtime_rl",
        [ACTION, feedback(1.7), ACTION, feedback(-0.5)],
        {"score": 0.0, "progress": 0.0},
        {"budget": 20, "progress": "last"},
    ),
    Case(
        "rl-no-feedback-value",
        "no non-null feedback value: progress 0",
        "runtime_rl",
        [ACTION, feedback(None, False)],
        {"score": 0.0, "progress": 0.0, "success": False},
        {"budget": 3},
    ),
    # ---- procedural learning v2: 0.30 transfer + 0.25 asymptote + 0.25 trajectory + 0.20 cons.
    Case(
        "proc-learner-default-rounds",
        "the seed's Learner (prints 0.72), practice_rounds defaulting to 5, rounds by number",
        "procedural_learning",
        [*rounds(*LEARNER, order=[5, 3, 1, 4, 2]), *items(("x", "x"), ("y", None))],
        {
            "score": 0.7245,
            "transfer": 0.5,
            "asymptote": 0.85,
            "trajectory": 0.92,
            "consistency": 0.66,
            "formula_version": "v2",
        },
        formulas={"procedural_learning": "v2"},  # the seed's text, unrounded
    ),
    Case(
        "proc-learner-v1",
        "the previous formula: 0.5 x weighted mean 0.66 + 0.5 x 0.5 (the seed prints 0.58)",
        "procedural_learning",
        [*rounds(*LEARNER), *items(("x", "x"), ("y", None))],
        {"score": 0.58, "formula_version": "v1"},
        formulas={"procedural_learning": "v1"},
    ),
    Case(
        "proc-static-erratum",
        "the seed's Static row: its formula gives 0.49617 (the seed prints 0.37)",
        "procedural_learning",
        [*rounds(0.8, 0.7, 0.6, 0.6, 0.5), *items(("x", "x"), ("y", None))],
        {"score": 0.15 + 0.1375 + 0.09 + 0.2 * 8.9 / 15, "trajectory": 0.36},
        formulas={"procedural_learning": "v2"},  # the seed's text, unrounded
    ),
    Case(
        "proc-zero-guard",
        "no practice success and no transfer: 0.0, not the flat trajectory's 0.125",
        "procedural_learning",
        [*rounds(0.0, 0.0, 0.0, 0.0, 0.0), *items(("x", None))],
        {"score": 0.0, "trajectory": 0.5, "asymptote": 0.0},
    ),
    Case(
        "proc-zero-guard-needs-both",
        "transfer alone lifts the guard: 0.30 + 0.25 x 0.5",
        "procedural_learning",
        [*rounds(0.0, 0.0, 0.0, 0.0, 0.0), *items(("x", "x"))],
        {"score": 0.425},
    ),
    Case(
        "proc-single-round",
        "one round: trajectory 0.5, asymptote = the round (k = max(1, 0))",
        "procedural_learning",
        [*rounds(0.4), *items(("x", None))],
        {"score": 0.305, "asymptote": 0.4, "trajectory": 0.5, "consistency": 0.4},
        {"practice_rounds": 1},
    ),
    Case(
        "proc-slope-clipped-high",
        "[0, 0, 1, 1]: OLS slope 0.4 > 1/3 clips to 1; asymptote of the last 2",
        "procedural_learning",
        [*rounds(0.0, 0.0, 1.0, 1.0), *items(("x", "x"), ("y", None))],
        {"score": 0.79, "trajectory": 1.0, "asymptote": 1.0, "consistency": 0.7},
        {"practice_rounds": 4},
    ),
    Case(
        "proc-slope-clipped-low",
        "[1, 1, 0, 0]: slope -0.4 clips to -1: trajectory 0",
        "procedural_learning",
        [*rounds(1.0, 1.0, 0.0, 0.0), *items(("x", "x"), ("y", None))],
        {"score": 0.21, "trajectory": 0.0, "asymptote": 0.0, "consistency": 0.3},
        {"practice_rounds": 4},
    ),
    Case(
        "proc-odd-rounds",
        "3 rounds: k = 1 (the last), slope 0.35 / 0.5, weights 1, 2, 3",
        "procedural_learning",
        [*rounds(0.2, 0.4, 0.9), *items(("x", "y"))],
        {
            "score": 0.225 + 0.2125 + 0.2 * 3.7 / 6,
            "asymptote": 0.9,
            "trajectory": 0.85,
            "consistency": 3.7 / 6,
        },
        {"practice_rounds": 3},
        formulas={"procedural_learning": "v2"},  # the seed's text, unrounded
    ),
]


def _agrees(got: Any, want: Any) -> bool:
    if isinstance(want, float) and not isinstance(want, bool):
        return isinstance(got, float) and got == pytest.approx(want, rel=0, abs=1e-12)
    return type(got) is type(want) and got == want


def test_cases_are_well_formed() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(c.why for c in CASES)
    categories = {c.category for c in CASES}
    assert len(categories) == 6


@pytest.fixture(scope="module")
def vectorised() -> dict[str, dict[str, Any]]:
    """Every case through the pipeline, one run per formula selection."""
    out: dict[str, dict[str, Any]] = {}
    selections = {json.dumps(c.formulas, sort_keys=True) for c in CASES}
    for selection in sorted(selections):
        chosen = [c for c in CASES if json.dumps(c.formulas, sort_keys=True) == selection]
        scores, rejects = run_pipeline([r for c in chosen for r in c.rows()], json.loads(selection))
        assert rejects.is_empty(), rejects.select("episode_id", "rules").to_dicts()
        for r in scores.filter(pl.col("file") == FILE).to_dicts():
            out[r["episode_id"]] = r
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vectorised_score(case: Case, vectorised: dict[str, dict[str, Any]]) -> None:
    got = vectorised[case.id]
    wrong = {k: (got[k], v) for k, v in case.want.items() if not _agrees(got[k], v)}
    assert not wrong, f"{case.why}: (got, pinned) {wrong}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reference_score(case: Case) -> None:
    result = reference_score(case.rows(), case.formulas)
    assert not result.rejected, result.rejected
    (got,) = result.scored.values()
    wrong = {k: (got[k], v) for k, v in case.want.items() if not _agrees(got[k], v)}
    assert not wrong, f"{case.why}: (got, pinned) {wrong}"
