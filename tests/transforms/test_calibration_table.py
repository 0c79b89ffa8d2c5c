"""Calibration on the published table's own shape (issue 46), small and seeded: nights drawn
from LearningBench's published leaderboard (its tasks drawn with replacement, the 14 models'
scores on each as one draw: 17% of them exactly 0 and 15% exactly 1), each model's true
score its mean over the 135 tasks. The full figures: ``python -m benchmarks.calibration``
(docs/comparisons.md)."""

from __future__ import annotations

import numpy as np
import polars as pl

from benchmarks.calibration import (
    difference_coverage,
    nights,
    published,
    score_coverage,
)
from transforms.compare import model_comparisons, score_intervals

NIGHTS = 150


def test_the_generator_is_the_published_table() -> None:
    table = published()
    assert table.scores.shape == (14, 135)
    assert 0.16 < (table.scores == 0).mean() < 0.18 and 0.14 < (table.scores == 1).mean() < 0.16
    assert table.truth.max() > 0.85  # (a model at 0.851: most of its scores are 1)


def test_score_intervals_on_few_tasks_cover_and_are_never_points() -> None:
    """Three tasks per model: the t interval covered the models' true scores in 89-92% of
    these nights (and was of zero width where the three scores were the same: 15% of the
    nights of the best model); Korn and Graubard's, given now, covers in 94% or more and is
    always an interval. Ten tasks alike."""
    table = published()
    for k in (3, 10):
        rng = np.random.default_rng([46, k])
        frame = nights(table, rng.integers(0, 135, (NIGHTS, k)), rng)
        figures = score_coverage(table, score_intervals(frame))
        print(k, figures)
        assert figures["null"] == 0.0 and figures["zero_width"] == 0.0, figures
        assert figures["covered"] >= 0.94, figures


def test_difference_intervals_on_enough_tasks_cover_and_on_few_say_they_are_approximate() -> None:
    """Twenty tasks (19 degrees of freedom): the pairs' 95% intervals cover their true
    differences (94.8% over 1,000 nights in the benchmark; on these 150, whose 91 pairs
    move together night by night, within 2.5 points of 95%), and none is said to be
    approximate. Three tasks: every interval given says it is approximate, and the nights
    whose difference is the same on every task are not estimated."""
    table = published()
    rng = np.random.default_rng([46, 20])
    frame = nights(table, rng.integers(0, 135, (NIGHTS, 20)), rng)
    figures = difference_coverage(table, model_comparisons(frame))
    print(20, figures)
    assert figures["covered"] >= 0.925 and figures["approximate"] == 0.0, figures
    rng = np.random.default_rng([46, 3])
    frame = nights(table, rng.integers(0, 135, (NIGHTS // 3, 3)), rng)
    rows = model_comparisons(frame).filter(scope="overall")
    given = rows.filter(pl.col("se").is_not_null())
    assert given["reason"].str.contains("approximate interval").all()
    unestimated = rows.filter(pl.col("se").is_null())
    assert unestimated.height > 0 and unestimated["reason"].str.starts_with("no spread").all()
