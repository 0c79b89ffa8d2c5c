"""What a comparison cannot say (issue 46): a spread of 0 is not evidence, an MDE past the
scores' range is not shown, an interval on few tasks is approximate, and each row says why
(``reason``); the rank intervals say no more than the comparisons."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats

from schemas.comparisons import (
    APPROXIMATE_BELOW_DF,
    LEVEL_NONE,
    OVERALL,
    OVERALL_BY_CATEGORY,
    REASON_TEXT,
    UNRESOLVED,
    Unestimable,
)
from tests.transforms.test_compare import one_row, rows_frame
from transforms.compare import model_comparisons, rank_intervals, regressions

NULL_WHEN_UNESTIMATED = ("se", "df", "ci_low", "ci_high", "p_value", "p_holm", "mde")


def night(scores: dict[str, list[float]], category: str = "c") -> list[tuple[object, ...]]:
    """One episode per model and task (the published leaderboard's shape): ``scores[m]``
    are model ``m``'s scores on tasks t0, t1, ..."""
    return [
        ("d", model, category, f"t{i}", f"{model}{i}", score, None)
        for model, values in scores.items()
        for i, score in enumerate(values)
    ]


def test_a_difference_the_same_on_every_task_is_not_estimated_and_leaves_the_ranks_open() -> None:
    """The issue's night (2026-04-09, associative learning): Claude Opus 4.6 a quarter
    below Claude Sonnet 4.6 on both tasks they ran. The spread of the difference is 0,
    which is no evidence that it does not vary: ``se``, p, the interval, the MDE null, the
    verdict ``unresolved`` and the reason said; the spread measured (``se_tasks`` 0) stays
    for who wants it. Before: p = 0, an interval of zero width, an MDE of 0, ``b_better``,
    and the rank intervals took the pair as settled (1-1 and 2-2). Three tasks alike, and
    the same of a night against its baseline night: no alert on a spread of 0."""
    frame = rows_frame(night({"opus": [0.5, 0.25], "sonnet": [0.75, 0.5]}))
    table = model_comparisons(frame)
    for scope in ("c", OVERALL, OVERALL_BY_CATEGORY):
        row = one_row(table, scope=scope, model_a="opus")
        assert row["diff"] == -0.25
        assert row["verdict"] == UNRESOLVED and row["design"] == "none", row
        assert [row[c] for c in NULL_WHEN_UNESTIMATED] == [None] * 7, row
        assert row["se_tasks"] == 0.0
        assert row["reason"] == REASON_TEXT[Unestimable.NO_SPREAD]
        assert row["p_wilcoxon"] == 0.5  # (the Wilcoxon test beside it: 0.5, all it can say)
    ranks = rank_intervals(frame)
    assert ranks.select("model", "rank_low", "rank_high", "rank_ub").rows() == [
        ("sonnet", 1, 2, 1),
        ("opus", 1, 2, 1),
    ]
    three = rows_frame(night({"a": [0.75, 0.5, 1.0], "b": [0.5, 0.25, 0.75]}))
    assert one_row(model_comparisons(three), scope=OVERALL, model_a="a")["p_value"] is None
    then = pl.concat(
        [three, three.with_columns(pl.lit("e").alias("dump_date"), pl.col("score") - 0.25)]
    ).with_columns(pl.format("{}{}", "dump_date", "episode_id").alias("episode_id"))
    for row in regressions(then).iter_rows(named=True):
        assert row["change"] == -0.25
        assert (row["se"], row["p_value"], row["design"]) == (None, None, "none")
        assert row["level"] == LEVEL_NONE


def test_a_spread_measured_however_small_is_estimated() -> None:
    """The line is the rounding of equal terms (``NO_SPREAD``), not a small spread: a
    difference of 0.25, 0.25 and 0.2500001 is estimated (and a verdict)."""
    frame = rows_frame(night({"a": [0.75, 0.5, 1.0], "b": [0.5, 0.25, 0.7499999]}))
    row = one_row(model_comparisons(frame), scope=OVERALL, model_a="a")
    assert row["se"] > 0 and row["design"] == "two_level"  # type: ignore[operator]
    assert row["verdict"] == "a_better"


def test_every_comparison_left_null_says_why() -> None:
    """Each way a variance cannot be estimated has its reason, naming where: one shared
    task of one instance (no spread of tasks nor of episodes), a model's single task the
    other did not run (how its tasks vary is unknown), one episode per task with the tasks
    fixed; the reasons of several categories are joined in ``overall_by_category``."""
    rows = [
        ("d", m, c, f"{c}-t", f"{m}{c}", score, None)
        for m, score in (("a", 0.5), ("b", 0.2))
        for c in ("x", "y")
    ]
    rows += [("d", "a", "z", "z1", "az1", 0.5, None), ("d", "a", "z", "z2", "az2", 0.7, None)]
    rows += [("d", "b", "z", "z3", "bz3", 0.3, None)]
    frame = rows_frame(rows).with_columns(
        pl.col("category").replace({"x": "c1", "y": "c2", "z": "c3"})
    )
    table = model_comparisons(frame).filter(model_a="a")
    reason = dict(table.select("scope", "reason").rows())
    one_episode = REASON_TEXT[Unestimable.ONE_EPISODE]
    only_task = REASON_TEXT[Unestimable.ONE_TASK]
    assert reason["c1"] == one_episode.format("c1")
    assert reason["c3"] == only_task.format("c3")
    assert reason[OVERALL_BY_CATEGORY] == "; ".join(
        [one_episode.format("c1, c2"), only_task.format("c3")]
    )
    assert table.filter(design="none")["reason"].null_count() == 0
    fixed = model_comparisons(frame, design="within_tasks").filter(model_a="a", scope="c3")
    assert fixed["reason"].to_list() == [REASON_TEXT[Unestimable.TASKS_FIXED].format("c3")]


def test_the_mde_is_shown_only_within_the_scores_range() -> None:
    """Two tasks (1 degree of freedom): the MDE of the verdict is hundreds of times the
    score's range (270.9 on the issue's night): null, with why; the interval is held to
    [-1, 1], the differences two scores in [0, 1] can have; the p-value stays. With many
    tasks the MDE is shown and no reason given."""
    frame = rows_frame(night({"a": [0.9, 0.3], "b": [0.1, 0.2]}))
    row = one_row(model_comparisons(frame), scope=OVERALL, model_a="a")
    se, df = row["se"], row["df"]
    assert df == 1.0 and se is not None
    mde = (scipy_stats.t.ppf(0.975, df) + scipy_stats.t.ppf(0.8, df)) * se  # type: ignore[operator]
    assert mde > 1.0
    assert row["mde"] is None
    assert row["reason"] is not None and row["reason"].startswith("mde not shown: at 1.0 ")  # type: ignore[attr-defined]
    assert (row["ci_low"], row["ci_high"]) == (-1.0, 1.0)
    assert row["p_value"] == pytest.approx(
        scipy_stats.ttest_rel([0.9, 0.3], [0.1, 0.2]).pvalue, rel=1e-12
    )
    rng = np.random.default_rng(3)
    a = rng.uniform(0.3, 0.9, 40)
    many = rows_frame(night({"a": a.tolist(), "b": (a - rng.uniform(0, 0.2, 40)).tolist()}))
    row = one_row(model_comparisons(many), scope=OVERALL, model_a="a")
    assert 0 < row["mde"] < 1 and row["reason"] is None  # type: ignore[operator]


@pytest.mark.parametrize("tasks", [3, 19, 20, 40])
def test_an_interval_on_few_tasks_is_said_to_be_approximate(tasks: int) -> None:
    """Under ``APPROXIMATE_BELOW_DF`` degrees of freedom (fewer than 20 tasks of a pair on
    the same tasks) the interval of a difference is approximate, and the row says so: on
    the published table's shape some pairs' 95% intervals covered 87-92% there
    (benchmarks/calibration.py, docs/comparisons.md)."""
    rng = np.random.default_rng(tasks)
    a = rng.uniform(0.2, 0.8, tasks)
    frame = rows_frame(night({"a": a.tolist(), "b": (a + rng.normal(0, 0.1, tasks)).tolist()}))
    row = one_row(model_comparisons(frame), scope=OVERALL, model_a="a")
    assert row["df"] == pytest.approx(tasks - 1, rel=1e-12)
    said = row["reason"] is not None and "approximate interval" in row["reason"]  # type: ignore[operator]
    assert said == (tasks - 1 < APPROXIMATE_BELOW_DF), row["reason"]
