"""``transforms.hypotheses``: planned hypotheses on a standing's task scores. Every expected
number is scipy's own call on the scores picked out here (``scipy.stats.wilcoxon``,
``scipy.stats.mannwhitneyu``, as LearningBench's authors call them) and statsmodels'
Benjamini-Hochberg: never typed in."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl
import pytest
from scipy import stats

from schemas.columns import PROVENANCE
from schemas.hypotheses import HYPOTHESES_TABLE, Alternative, Hypothesis, Procedure, Verdict
from tests.multitest import adjusted
from transforms.hypotheses import hypotheses

CATEGORIES = ("concept_formation", "runtime_rl")


def standing(
    shift: dict[str, float], as_of: str = "2026-01-02", tasks: int = 16, seed: int = 0
) -> pl.DataFrame:
    """A standing's task rows: each model of ``shift`` on ``tasks`` tasks of each category,
    scores rounded to tenths (ties and zero differences happen) plus its shift."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "as_of": as_of,
            "model": model,
            "category": category,
            "task": f"{category}-{t}",
            "score": round(float(rng.integers(0, 11)) / 10 + up, 10),
        }
        for model, up in shift.items()
        for category in CATEGORIES
        for t in range(tasks)
    ]
    return pl.DataFrame(rows)


def wilcoxon(
    hid: str, a: str, b: str, scope: Sequence[str] = ("concept_formation",), **kw: object
) -> Hypothesis:
    return Hypothesis(hid, f"{a} beats {b}", Procedure.WILCOXON, tuple(scope), (a,), (b,), **kw)  # type: ignore[arg-type]


def mann_whitney(hid: str, a: Sequence[str], b: Sequence[str], **kw: object) -> Hypothesis:
    return Hypothesis(hid, "a beats b", Procedure.MANN_WHITNEY, (), tuple(a), tuple(b), **kw)  # type: ignore[arg-type]


def scores(frame: pl.DataFrame, model: str, categories: Sequence[str] = ()) -> dict[str, float]:
    """``model``'s task scores (in ``categories``; none: all), by task."""
    rows = frame.filter(pl.col("model") == model)
    if categories:
        rows = rows.filter(pl.col("category").is_in(list(categories)))
    return dict(zip(rows["task"], rows["score"], strict=True))


def test_each_test_is_scipys_call_as_the_authors_make_it() -> None:
    shift = {"m1": 0.15, "m2": 0.0, "m3": 0.1, "m4": -0.05, "m5": 0.02}
    frame = standing(shift)
    planned = [
        wilcoxon("W", "m1", "m2"),
        wilcoxon(
            "G", "m1", "m2", ("concept_formation", "runtime_rl"), alternative=Alternative.GREATER
        ),
        mann_whitney("U", ["m1", "m3", "m5"], ["m2", "m4"]),
    ]
    rows = {r["id"]: r for r in hypotheses(frame.lazy(), planned).collect().iter_rows(named=True)}

    x, y = scores(frame, "m1", ["concept_formation"]), scores(frame, "m2", ["concept_formation"])
    tasks = sorted(x)
    a, b = np.array([x[t] for t in tasks]), np.array([y[t] for t in tasks])
    expected = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    w = rows["W"]
    assert (w["statistic"], w["p_value"]) == (expected.statistic, expected.pvalue)
    assert (w["n"], w["n_a_better"], w["n_b_better"]) == (16, (a > b).sum(), (a < b).sum())
    assert w["mean_a"] == pytest.approx(a.mean(), abs=1e-15)
    assert w["estimate"] == pytest.approx(a.mean() - b.mean(), abs=1e-15)
    assert (w["scope"], w["a"], w["b"], w["test"]) == (
        "concept_formation",
        ["m1"],
        ["m2"],
        "wilcoxon",
    )

    x, y = scores(frame, "m1"), scores(frame, "m2")
    tasks = sorted(x)
    a, b = np.array([x[t] for t in tasks]), np.array([y[t] for t in tasks])
    expected = stats.wilcoxon(a, b, zero_method="wilcox", alternative="greater")
    g = rows["G"]
    assert (g["statistic"], g["p_value"], g["n"]) == (expected.statistic, expected.pvalue, 32)
    assert (g["scope"], g["alternative"]) == ("concept_formation+runtime_rl", "greater")

    means = {m: np.mean(list(scores(frame, m).values())) for m in shift}
    expected = stats.mannwhitneyu(
        [means[m] for m in ("m1", "m3", "m5")], [means["m2"], means["m4"]]
    )
    u = rows["U"]
    assert (u["statistic"], u["p_value"], u["n"]) == (expected.statistic, expected.pvalue, 5)
    assert u["scope"] == "overall" and u["reason"] is None
    a_better = sum(means[i] > means[j] for i in ("m1", "m3", "m5") for j in ("m2", "m4"))
    assert (u["n_a_better"], u["n_b_better"]) == (a_better, 6 - a_better)


def test_p_adjusted_is_benjamini_hochberg_over_each_standings_estimable_hypotheses() -> None:
    """One family per standing (its ``as_of``), as the authors' over their file; a
    hypothesis that cannot be tested is no test and does not count."""
    shift = {"m1": 0.3, "m2": 0.0, "m3": 0.05, "m4": 0.1}
    frame = pl.concat(
        [standing(shift, "2026-01-01", seed=1), standing(shift, "2026-01-02", seed=2)]
    )
    planned = [
        wilcoxon("A", "m1", "m2"),
        wilcoxon("B", "m3", "m2"),
        wilcoxon("C", "m4", "m3", ("runtime_rl",)),
        wilcoxon("D", "m1", "gone"),  # not estimable: no test
        mann_whitney("E", ["m1", "m4"], ["m2", "m3"]),
    ]
    found = hypotheses(frame.lazy(), planned).collect()
    assert found.height == 10 and found["as_of"].n_unique() == 2
    for (_,), one in found.group_by("as_of"):
        tested = one.filter(pl.col("p_value").is_not_null())
        assert tested["id"].to_list() == ["A", "B", "C", "E"]
        reference = adjusted(tested["p_value"].to_numpy(), "fdr_bh")
        assert tested["p_adjusted"].to_list() == reference.tolist()
        assert one.filter(id="D")["p_adjusted"].to_list() == [None]


def test_the_verdict_is_honest() -> None:
    """Significant after BH and a above b: supported; b above a (two-sided): contradicted;
    one-sided the other way: only not supported; nothing to test: not estimable, with why."""
    frame = standing({"best": 0.6, "mid": 0.0, "few": 0.5}, tasks=12)
    same = frame.filter(model="mid").with_columns(model=pl.lit("same"))  # mid's every score
    frame = pl.concat([frame, same]).filter(  # "few" ran 2 of concept formation's tasks
        (pl.col("model") != "few")
        | (pl.col("category") != "concept_formation")
        | pl.col("task").is_in(["concept_formation-0", "concept_formation-1"])
    )
    planned = [
        wilcoxon("up", "best", "mid"),
        wilcoxon("down", "mid", "best"),
        wilcoxon("down-greater", "mid", "best", alternative=Alternative.GREATER),
        wilcoxon("equal", "same", "mid"),
        wilcoxon("missing", "best", "nobody"),
        wilcoxon("too-few", "few", "mid"),
    ]
    rows = {r["id"]: r for r in hypotheses(frame.lazy(), planned).collect().iter_rows(named=True)}
    assert rows["up"]["verdict"] == Verdict.SUPPORTED and rows["up"]["reason"] is None
    assert rows["down"]["verdict"] == Verdict.CONTRADICTED
    assert "the other way" in rows["down"]["reason"]
    assert rows["down-greater"]["verdict"] == Verdict.NOT_SUPPORTED
    assert rows["down-greater"]["p_value"] > 0.5
    for hid, why in (
        ("equal", "every one of the 12 paired differences is 0"),
        ("missing", "no result of 'nobody' in concept_formation"),
        ("too-few", "2 task(s) of concept_formation with a result of both: the test needs 3"),
    ):
        row = rows[hid]
        assert row["verdict"] == Verdict.NOT_ESTIMABLE and why in row["reason"], row
        assert row["p_value"] is None and row["statistic"] is None
    assert (rows["equal"]["n"], rows["too-few"]["n"], rows["missing"]["n"]) == (12, 2, 0)


def test_the_verdicts_level_is_one_minus_the_runs_level() -> None:
    frame = standing({"a": 0.3, "b": 0.0}, seed=3)
    planned = [wilcoxon("H", "a", "b")]
    default = hypotheses(frame.lazy(), planned).collect().row(0, named=True)
    p = default["p_value"]
    assert default["alpha"] == 0.05 and (default["verdict"] == Verdict.SUPPORTED) == (p < 0.05)
    lenient = hypotheses(frame.lazy(), planned, level=1 - 2 * p).collect().row(0, named=True)
    strict = hypotheses(frame.lazy(), planned, level=1 - p / 2).collect().row(0, named=True)
    assert lenient["alpha"] == pytest.approx(2 * p, abs=1e-12)
    assert (lenient["verdict"], strict["verdict"]) == (Verdict.SUPPORTED, Verdict.NOT_SUPPORTED)


def test_a_group_whose_models_ran_different_tasks_says_so() -> None:
    frame = standing({"a1": 0.2, "a2": 0.2, "b1": 0.0, "b2": 0.0}, tasks=5)
    frame = frame.filter((pl.col("model") != "a1") | (pl.col("task") != "runtime_rl-0"))
    row = hypotheses(frame.lazy(), [mann_whitney("M", ["a1", "a2"], ["b1", "b2"])]).collect()
    assert row["reason"].item() == (
        "the models' means cover 9 to 10 of the scope's 10 tasks: they ran different tasks"
    )
    assert row["verdict"].item() != Verdict.NOT_ESTIMABLE


def test_no_hypothesis_declared_is_an_empty_table() -> None:
    found = hypotheses(standing({"a": 0.0}).lazy(), []).collect()
    assert found.is_empty()
    assert found.schema == {n: t for n, t in HYPOTHESES_TABLE.dtypes.items() if n not in PROVENANCE}


def test_a_mann_whitney_tie_is_a_tie_in_any_row_order() -> None:
    """Two models whose task scores add up to the same sum tie, however the standing's rows
    come (a float sum in the rows' order would break the tie one way or the other, and
    scipy's exact p-value would replace the tie-corrected normal one)."""
    tenths = {
        "m2": [0, 0, 1, 1, 2, 2, 4, 4, 4, 4, 5, 6, 7, 7, 7, 7],
        "m4": [1, 1, 1, 2, 2, 2, 3, 3, 5, 5, 5, 5, 6, 6, 6, 8],
        "m1": [2, 2, 3, 3, 4, 4, 4, 4, 5, 5, 8, 9, 9, 9, 10, 10],
        "m3": [2, 2, 2, 3, 4, 4, 5, 5, 6, 7, 8, 9, 9, 9, 9, 10],
    }
    rows = pl.DataFrame(
        [
            {"as_of": "2026-01-02", "model": m, "category": "runtime_rl", "task": f"t{i:02}"}
            | {"score": v / 10}
            for m, values in tenths.items()
            for i, v in enumerate(values)
        ]
    )
    means = {m: math.fsum(v / 10 for v in values) / len(values) for m, values in tenths.items()}
    assert means["m2"] == means["m4"]  # the tie this test is about
    expected = stats.mannwhitneyu([means["m1"], means["m3"]], [means["m2"], means["m4"]])
    planned = [mann_whitney("U", ["m1", "m3"], ["m2", "m4"])]
    rng = np.random.default_rng(7)
    for order in [np.arange(rows.height), *(rng.permutation(rows.height) for _ in range(20))]:
        u = hypotheses(rows[order].lazy(), planned).collect().row(0, named=True)
        assert (u["statistic"], u["p_value"]) == (expected.statistic, expected.pvalue)
        assert (u["mean_b"], u["estimate"]) == (
            means["m2"],
            np.mean([means["m1"], means["m3"]]) - means["m2"],
        )
