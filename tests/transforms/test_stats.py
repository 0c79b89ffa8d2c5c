"""``transforms.stats`` against trusted libraries: p-values and quantiles equal scipy's to
1e-12, the Wilcoxon signed-rank test equals ``scipy.stats.wilcoxon`` to 1e-12 whatever
method scipy picks, Holm and Benjamini–Hochberg equal statsmodels' ``multipletests`` bit for
bit, the clustered standard error equals statsmodels' cluster-robust OLS/WLS to 1e-10."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from tests.multitest import adjusted
from transforms.stats import (
    adjust_over,
    benjamini_hochberg,
    cluster_robust_variance,
    clustered_se_difference,
    mde_factor,
    minimum_detectable_effect,
    normal_p_two_sided,
    normal_p_values,
    wilcoxon_signed_rank,
    z_quantile,
)

Z_VALUES = np.concatenate(
    [
        np.linspace(-12.0, 12.0, 4801),
        np.random.default_rng(1).normal(0.0, 3.0, 2000),
        [0.0, -0.0, 1e-300, 5e-324, 1.959963984540054, 37.5, 38.5, 1e3],
    ]
)


def test_p_values_equal_scipy_to_1e_12() -> None:
    expected = 2.0 * scipy_stats.norm.sf(np.abs(Z_VALUES))
    got = np.array([normal_p_two_sided(float(z)) for z in Z_VALUES])
    assert np.max(np.abs(got - expected)) <= 1e-12
    # in the tail, relative agreement too (the p-values the verdicts hinge on are small)
    small = expected > 1e-300
    assert np.max(np.abs(got[small] / expected[small] - 1.0)) <= 1e-12
    np.testing.assert_array_equal(normal_p_values(Z_VALUES), got)
    assert math.isnan(normal_p_two_sided(math.nan))
    assert normal_p_two_sided(math.inf) == 0.0


def test_quantiles_equal_scipy_to_1e_12() -> None:
    qs = np.concatenate([np.linspace(1e-9, 1 - 1e-9, 2001), [0.5, 0.8, 0.9, 0.95, 0.975, 0.995]])
    got = np.array([z_quantile(float(q)) for q in qs])
    np.testing.assert_allclose(got, scipy_stats.norm.ppf(qs), rtol=1e-12, atol=1e-12)


def test_mde_is_the_difference_detected_with_the_power_asked() -> None:
    for alpha, power in [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)]:
        factor = scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power)
        assert mde_factor(alpha, power) == pytest.approx(factor, abs=1e-12)
        se = 0.0123
        mde = minimum_detectable_effect(se, alpha, power)
        crit = scipy_stats.norm.ppf(1 - alpha / 2)
        # power of the two-sided test when the true difference is the MDE: the near tail
        # is the power asked, the far tail adds next to nothing
        near = scipy_stats.norm.sf(crit - mde / se)
        assert near == pytest.approx(power, abs=1e-12)
        assert scipy_stats.norm.cdf(-crit - mde / se) < 1e-3


P_LISTS = st.lists(
    st.one_of(
        st.floats(0.0, 1.0),
        st.sampled_from([0.0, 1.0, 0.05, 0.01, 1e-12, 0.5]),  # ties and edges
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(P_LISTS)
def test_holm_and_bh_equal_multipletests_exactly(ps: list[float]) -> None:
    p = np.array(ps)
    np.testing.assert_array_equal(holm_np(p), adjusted(p, "holm"))
    np.testing.assert_array_equal(benjamini_hochberg(p), adjusted(p, "fdr_bh"))


def test_holm_and_bh_edge_cases_equal_multipletests_exactly() -> None:
    cases = [
        [0.0],
        [1.0],
        [0.04, 0.04, 0.04],
        [0.01, 0.02, 0.03, 0.04, 0.05],
        [0.9, 0.5, 0.3, 0.01, 0.0],
        [0.3, 0.1, 0.1, 0.7, 0.6, 0.1],
        list(np.random.default_rng(0).uniform(0, 0.2, 100)),
    ]
    for case in cases:
        p = np.array(case)
        np.testing.assert_array_equal(holm_np(p), adjusted(p, "holm"))
        np.testing.assert_array_equal(benjamini_hochberg(p), adjusted(p, "fdr_bh"))
    # Holm's cap at 1, just above it (2 x 0.5025 = 1.005), in the polars adjustment too.
    p = np.array([0.5025, 0.9])
    frame = pl.DataFrame({"g": [1, 1], "p": p})
    expected = adjusted(p, "holm")
    assert expected.max() == 1.0
    np.testing.assert_array_equal(adjust_over(frame, "p", ["g"], "holm", "q")["q"], expected)


def holm_np(p: np.ndarray) -> np.ndarray:
    from transforms.stats import holm

    return holm(p)


def test_nan_p_values_are_not_tests() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan])
    present = ~np.isnan(p)
    for ours, method in [(holm_np, "holm"), (benjamini_hochberg, "fdr_bh")]:
        got = ours(p)
        assert np.isnan(got[~present]).all()
        np.testing.assert_array_equal(got[present], adjusted(p[present], method))
    assert np.isnan(holm_np(np.array([np.nan]))).all()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.floats(0, 1))), max_size=50))
def test_polars_adjustment_equals_multipletests_per_group(
    rows: list[tuple[int, float | None]],
) -> None:
    frame = pl.DataFrame(rows, schema={"g": pl.Int64, "p": pl.Float64}, orient="row")
    for method, sm_method in [("holm", "holm"), ("bh", "fdr_bh")]:
        out = adjust_over(frame, "p", ["g"], method, "q")
        assert out.select("g", "p").equals(frame)  # rows keep their order
        for g in set(frame["g"].to_list()):
            part = out.filter(pl.col("g") == g)
            present = part.filter(pl.col("p").is_not_null())
            assert part.filter(pl.col("p").is_null())["q"].null_count() == part["p"].null_count()
            if len(present):
                expected = adjusted(present["p"].to_numpy(), sm_method)
                np.testing.assert_array_equal(present["q"].to_numpy(), expected)


def _design(rng: np.random.Generator, n_clusters: int, weights: bool) -> tuple[np.ndarray, ...]:
    """Observations of two groups in clusters: some clusters hold both groups (paired),
    some one group only, with 1-3 observations per group and cluster."""
    y, in_a, cluster, w = [], [], [], []
    for c in range(n_clusters):
        kind = rng.integers(0, 3)  # 0: both groups, 1: a only, 2: b only
        for group in (True, False):
            if (kind == 1 and not group) or (kind == 2 and group):
                continue
            for _ in range(rng.integers(1, 4)):
                y.append(rng.normal(0.5 + 0.1 * group, 0.2) + 0.1 * math.sin(c))
                in_a.append(group)
                cluster.append(c)
                w.append(rng.uniform(0.2, 2.0) if weights else 1.0)
    return np.array(y), np.array(in_a), np.array(cluster), np.array(w)


@pytest.mark.parametrize("seed", range(6))
def test_clustered_se_equals_statsmodels_cluster_ols(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, in_a, cluster, w = _design(rng, 25, weights=seed % 2 == 1)
    exog = sm.add_constant(in_a.astype(float))
    fit = sm.WLS(y, exog, weights=w).fit(
        cov_type="cluster", cov_kwds={"groups": cluster, "use_correction": False}
    )
    ours = clustered_se_difference(y, in_a, cluster, weights=w)
    assert ours == pytest.approx(fit.bse[1], rel=1e-10, abs=1e-12)
    # statsmodels' default correction is G/(G-1) x (N-1)/(N-K) on the CR0 variance
    default = sm.WLS(y, exog, weights=w).fit(cov_type="cluster", cov_kwds={"groups": cluster})
    g, n = len(np.unique(cluster)), len(y)
    corrected = ours**2 * g / (g - 1) * (n - 1) / (n - 2)
    assert corrected == pytest.approx(default.bse[1] ** 2, rel=1e-10)


def test_corrected_se_is_the_paired_and_the_welch_standard_error() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(0.6, 0.2, 40)
    b = a - 0.05 + rng.normal(0, 0.1, 40)
    y = np.concatenate([a, b])
    in_a = np.repeat([True, False], 40)
    paired = clustered_se_difference(y, in_a, np.tile(np.arange(40), 2), correction=True)
    t = scipy_stats.ttest_rel(a, b)
    assert paired == pytest.approx((a - b).mean() / t.statistic, rel=1e-12)
    c = rng.normal(0.5, 0.3, 25)
    y = np.concatenate([a, c])
    in_a = np.repeat([True, False], [40, 25])
    welch = clustered_se_difference(y, in_a, np.arange(65), correction=True)
    t = scipy_stats.ttest_ind(a, c, equal_var=False)
    assert welch == pytest.approx((a.mean() - c.mean()) / t.statistic, rel=1e-12)
    # One pair: no corrected standard error (NaN, G < 2).
    sides, pair = np.array([True, False]), np.array([0, 0])
    assert math.isnan(clustered_se_difference(y[[0, 40]], sides, pair, correction=True))
    # Two pairs: the fewest a corrected standard error takes.
    y = np.concatenate([a[:2], b[:2]])
    two = clustered_se_difference(
        y, np.repeat([True, False], 2), np.tile([0, 1], 2), correction=True
    )
    t = scipy_stats.ttest_rel(a[:2], b[:2])
    assert two == pytest.approx((a[:2] - b[:2]).mean() / t.statistic, rel=1e-12)


def test_cluster_robust_variance_is_miller_clustered_variance_of_a_mean() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    clusters = rng.integers(0, 6, 30)
    fit = sm.OLS(x, np.ones(30)).fit(
        cov_type="cluster", cov_kwds={"groups": clusters, "use_correction": False}
    )
    ours = cluster_robust_variance((x - x.mean()) / 30, clusters)
    assert math.sqrt(ours) == pytest.approx(fit.bse[0], rel=1e-10)
    g = len(np.unique(clusters))
    with_correction = cluster_robust_variance((x - x.mean()) / 30, clusters, correction=True)
    assert with_correction == pytest.approx(ours * g / (g - 1), rel=1e-14)
    assert math.isnan(cluster_robust_variance(np.array([0.1, -0.1]), np.array([1, 1]), True))
    two = np.array([0, 0, 1, 1])  # the fewest clusters a correction takes: G / (G - 1) = 2
    plain = cluster_robust_variance(x[:4] - x[:4].mean(), two)
    assert cluster_robust_variance(x[:4] - x[:4].mean(), two, correction=True) == pytest.approx(
        plain * 2, rel=1e-14
    )


# Each kind of differences takes one of scipy's methods: continuous ones the exact null
# distribution (n <= 50) or the normal (n > 50); ties or zeros the sign flips (n <= 13) or
# the normal with the tie correction. A first row of zeros only: NaN, or 1 where flipped.
WILCOXON_SIZES = [2, 3, 5, 8, 11, 12, 13, 14, 18, 30, 50, 51, 80, 135]


def _differences(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "continuous":
        d = rng.normal(0.1, 1.0, (12, n))
    elif kind == "fractions":  # task scores are fractions of a few items: many ties
        d = (rng.binomial(4, 0.55, (12, n)) - rng.binomial(4, 0.5, (12, n))) / 4
    else:  # "rounded": ties and zeros
        d = np.round(rng.normal(0.2, 0.5, (12, n)), 1)
    d[0] = 0.0
    return d


@pytest.mark.parametrize("kind", ["continuous", "fractions", "rounded"])
@pytest.mark.parametrize("n", WILCOXON_SIZES)
def test_wilcoxon_signed_rank_equals_scipy_row_by_row(kind: str, n: int) -> None:
    d = _differences(kind, n, np.random.default_rng(n))
    with warnings.catch_warnings():  # scipy warns on the row of zeros (a zero spread)
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.array([scipy_stats.wilcoxon(row).pvalue for row in d])
    got = wilcoxon_signed_rank(d)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)
    assert np.isnan(got).sum() <= 1  # at most the row of zeros


def test_wilcoxon_signed_rank_reproduces_the_benchmarks_own_test() -> None:
    """LearningBench's H4 (``hypothesis_tests.md``): concept formation, Qwen 3 Next 80B
    Thinking against Instruct, 18 tasks: W = 6, p = 0.002157762679075225."""
    from tests.learningbench import LEADERBOARD

    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv")
    concept = flat.filter(pl.col("category") == "concept-learning").sort("task_slug")
    thinking, instruct = (
        concept.filter(model_name=f"Qwen 3 Next 80B {kind}")["score"].to_numpy()
        for kind in ("Thinking", "Instruct")
    )
    (p,) = wilcoxon_signed_rank((thinking - instruct)[None, :])
    assert p == pytest.approx(0.002157762679075225, rel=1e-12)


def test_wilcoxon_of_no_differences_is_nan_as_scipys() -> None:
    """Rows without a single difference: scipy's p-value is NaN, for each row; rows of one
    (non-zero) difference: scipy's, 1."""
    one = np.array([[0.5], [-0.3]])
    with warnings.catch_warnings():  # scipy: a zero spread of one difference
        warnings.simplefilter("ignore", RuntimeWarning)
        expected_one = [scipy_stats.wilcoxon(row).pvalue for row in one]
    np.testing.assert_array_equal(wilcoxon_signed_rank(one), expected_one)
    with warnings.catch_warnings(), pytest.raises(ValueError):  # scipy refuses a single zero
        warnings.simplefilter("ignore", RuntimeWarning)
        scipy_stats.wilcoxon(np.array([0.0]))
    assert np.isnan(wilcoxon_signed_rank(np.array([[0.0]]))).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = scipy_stats.wilcoxon(np.array([])).pvalue
    assert np.isnan(expected)
    got = wilcoxon_signed_rank(np.empty((3, 0)))
    assert got.shape == (3,) and np.isnan(got).all()
    assert wilcoxon_signed_rank(np.empty((0, 4))).shape == (0,)
