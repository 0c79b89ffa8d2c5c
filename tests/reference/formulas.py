"""The seed's scoring formulas, as plain Python close to the seed's text.

Sources: ``../shared/seeds/000_7c951979f34e038e.txt`` (the formulas) with the clarifications of
``../shared/spec/dump-contract.md`` and docs/decisions.md, "Decisions where the contract is silent".

Floating point (README, binding): every float sum is a left-to-right ``acc += x`` loop
(``_seqsum``) in the order the seed writes it, never the builtin ``sum`` (compensated on
Python 3.12+), and ``mean(xs)`` is that sum divided by ``len(xs)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

EPSILON = 1e-9  # the procedural zero guard's epsilon (contract)


def _seqsum(xs: Iterable[float]) -> float:
    acc = 0.0
    for x in xs:
        acc += x
    return acc


def mean(xs: Sequence[float]) -> float:
    return _seqsum(xs) / len(xs)


# --- Concept formation and language learning: seed's _concept_score --------------------------


def concept_efficiency(
    examples_used: int, max_examples: int, initial_examples: int, free_threshold: int = 4
) -> float:
    """The efficiency term of ``_concept_score`` (computed whatever the accuracy)."""
    effective_free = max(initial_examples, free_threshold)
    if examples_used <= effective_free:
        return 1.0
    paid_used = examples_used - effective_free
    paid_budget = max_examples - effective_free
    return max(0.0, 1.0 - paid_used / paid_budget)


def concept_score(
    correct_count: int,
    examples_used: int,
    max_examples: int,
    initial_examples: int,
    num_test_items: int,
    free_threshold: int = 4,
) -> float:
    accuracy = correct_count / num_test_items
    if accuracy == 0:
        return 0.0
    efficiency = concept_efficiency(examples_used, max_examples, initial_examples, free_threshold)
    return accuracy * (0.40 + 0.60 * efficiency)


# --- Runtime RL: seed's _composite_score --------------------------------------------------------


def composite_parts(
    solved: bool,
    step_y: int,
    budget_n: int,
    min_explore: int,
    progress: float,
    *,
    floor: float = 0.10,
) -> tuple[float, float]:
    """(eff, clamped progress) exactly as ``_composite_score`` computes them."""
    progress = max(0.0, min(1.0, float(progress)))
    if solved:
        step_y = max(1, min(step_y, budget_n))
        if step_y <= min_explore:
            eff = 1.0
        else:
            paid_used = step_y - min_explore
            paid_budget = budget_n - min_explore
            eff = max(floor, 1.0 - (1.0 - floor) * (paid_used / paid_budget))
    else:
        eff = 0.0
    return eff, progress


def composite_score(
    solved: bool,
    step_y: int,
    budget_n: int,
    min_explore: int,
    progress: float,
    *,
    floor: float = 0.10,
) -> float:
    eff, progress = composite_parts(solved, step_y, budget_n, min_explore, progress, floor=floor)
    return round(0.55 * float(solved) + 0.25 * eff + 0.20 * progress, 4)


# --- Procedural learning -------------------------------------------------------------------------


def weighted_learning_mean(round_scores: Sequence[float]) -> float:
    """Round i (1-based) weighted by i."""
    n = len(round_scores)
    return _seqsum(i * s for i, s in enumerate(round_scores, 1)) / (n * (n + 1) // 2)


def learning_curve_slope(round_scores: Sequence[float]) -> float:
    """OLS slope over indices 0..n-1, normalised by 1/(n-1), clipped to [-1, 1], mapped to [0,1]."""
    n = len(round_scores)
    if n == 1:
        return 0.5
    x_mean = (n - 1) / 2
    y_mean = mean(round_scores)
    num = _seqsum((float(x) - x_mean) * (y - y_mean) for x, y in enumerate(round_scores))
    den = _seqsum((float(x) - x_mean) ** 2 for x in range(n))
    slope = num / den
    max_slope = 1.0 / (n - 1)
    normalised = max(-1.0, min(1.0, slope / max_slope))
    return (normalised + 1.0) / 2.0


def procedural_parts(round_scores: Sequence[float]) -> tuple[float, float, float]:
    """(asymptote, trajectory, consistency) of the v2 formula."""
    k = max(1, len(round_scores) // 2)
    asymptote = mean(round_scores[-k:])
    trajectory = learning_curve_slope(round_scores)
    consistency = weighted_learning_mean(round_scores)
    return asymptote, trajectory, consistency


def procedural_composite_score(round_scores: Sequence[float], test_score: float) -> float:
    """Version v2 (the seed's new formula) with its zero guard."""
    asymptote, trajectory, consistency = procedural_parts(round_scores)
    if asymptote < EPSILON and test_score < EPSILON:
        return 0.0
    return (
        0.30 * test_score  # transfer
        + 0.25 * asymptote  # peak skill
        + 0.25 * trajectory  # learning improvement
        + 0.20 * consistency  # overall practice quality
    )


def procedural_v1_score(round_scores: Sequence[float], test_score: float) -> float:
    """Version v1 (the seed's previous formula): 0.5 x weighted mean + 0.5 x test score."""
    return 0.5 * weighted_learning_mean(round_scores) + 0.5 * test_score


# --- Procedural learning as the benchmark's task files code it --------------------------------
# (../shared/learningbench/tasks/procedural_learning/: the 7 new-formula tasks round the slope
# and the score to 4 places; the 4 old-formula tasks take a plain mean of the rounds.)


def procedural_v3_score(round_scores: Sequence[float], test_score: float) -> float:
    """Version v3: ``procedural_composite_score`` of the new-formula tasks, verbatim but for
    the sums (``_seqsum``: Python 3.11's ``sum`` of floats, left to right)."""
    n = len(round_scores)
    k = max(1, n // 2)
    asymptote = _seqsum(round_scores[-k:]) / k
    if asymptote < 1e-9 and float(test_score) < 1e-9:
        return 0.0
    consistency = weighted_learning_mean(round_scores)
    trajectory = round(learning_curve_slope(round_scores), 4)
    raw = 0.30 * float(test_score) + 0.25 * asymptote + 0.25 * trajectory + 0.20 * consistency
    return round(raw, 4)


def procedural_v4_score(round_scores: Sequence[float], test_score: float) -> float:
    """Version v4: the old-formula tasks' ``sum(learning_scores) / 5 * 0.5 + test * 0.5``
    (5 being their number of rounds)."""
    return _seqsum(round_scores) / len(round_scores) * 0.5 + test_score * 0.5
