"""``flows.present.report.shape``: the report's own intervals (round scores, components, accuracy,
solve rates) are the textbook ones at the level they are given, held to scipy and
statsmodels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from flows.present.report.shape import mean_interval, solve_rates
from schemas.contract import Category, Col

LEVELS = (0.80, 0.90, 0.95, 0.99)


@pytest.mark.parametrize("level", LEVELS)
def test_a_solve_rate_interval_is_wilsons_at_the_level(level: float) -> None:
    rng = np.random.default_rng(7)
    solved = {("m1", "t1"): 3, ("m1", "t2"): 0, ("m2", "t1"): 9, ("m2", "t2"): 5}
    rows = [
        {Col.CATEGORY: Category.RUNTIME_RL.value, Col.MODEL: m, Col.TASK: t, "success": s}
        for (m, t), k in solved.items()
        for s in rng.permutation([True] * k + [False] * (9 - k)).tolist()
    ]
    rates = solve_rates(pl.DataFrame(rows), level)
    assert rates.height == len(solved)
    for row in rates.iter_rows(named=True):
        low, high = proportion_confint(
            solved[(row[Col.MODEL], row[Col.TASK])], row["n"], alpha=1 - level, method="wilson"
        )
        assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_a_mean_interval_is_the_normal_one_at_the_level(level: float) -> None:
    values = np.random.default_rng(3).uniform(size=(2, 25))
    frame = pl.DataFrame({"group": np.repeat([0, 1], 25), "value": values.ravel()})
    got = frame.group_by("group").agg(mean_interval("value", level)).sort("group")
    for row, sample in zip(got.iter_rows(named=True), values, strict=True):
        low, high = stats.norm.interval(level, loc=sample.mean(), scale=stats.sem(sample))
        assert row["n"] == len(sample) and row["mean"] == pytest.approx(sample.mean())
        assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-12)
