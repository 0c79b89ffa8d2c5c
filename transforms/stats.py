"""Small exact building blocks of the comparison statistics (``transforms.compare``).

The normal distribution comes from ``math.erfc`` and ``statistics.NormalDist``, the
multiple-testing adjustments repeat statsmodels' arithmetic operation for operation, the
Wilcoxon signed-rank test repeats scipy's method by method (vectorised over many tests), so
that the tests can hold them to scipy (1e-12) and to
``statsmodels.stats.multitest.multipletests`` (bit for bit).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

import numpy as np
import polars as pl
from scipy import special

from transforms.exact import exactly

_STANDARD_NORMAL: Final = NormalDist()
_SQRT2: Final = math.sqrt(2.0)


def normal_p_two_sided(z: float) -> float:
    """Two-sided p-value of a standard normal statistic: ``P(|Z| >= |z|)``.

    ``erfc(|z|/√2)``, which is ``2 * scipy.stats.norm.sf(|z|)``. NaN stays NaN.

    >>> round(normal_p_two_sided(1.959963984540054), 15)
    0.05
    >>> normal_p_two_sided(0.0), normal_p_two_sided(math.inf)
    (1.0, 0.0)
    """
    return math.erfc(abs(z) / _SQRT2)


def normal_p_values(z: np.ndarray) -> np.ndarray:
    """``normal_p_two_sided`` element-wise (NaN where ``z`` is NaN).

    >>> normal_p_values(np.array([0.0, 1.0, np.nan]))
    array([1.        , 0.31731051,        nan])
    """
    flat = np.asarray(z, dtype=np.float64).ravel()
    out = np.array([math.erfc(abs(x) / _SQRT2) for x in flat.tolist()], dtype=np.float64)
    return out.reshape(np.shape(z))


def z_quantile(q: float) -> float:
    """The standard normal quantile ``Φ⁻¹(q)`` (``scipy.stats.norm.ppf``).

    >>> round(z_quantile(0.975), 12), round(z_quantile(0.8), 12)
    (1.95996398454, 0.841621233573)
    """
    return _STANDARD_NORMAL.inv_cdf(q)


def mde_factor(alpha: float = 0.05, power: float = 0.8) -> float:
    """``z_{1-α/2} + z_{power}``: the minimum detectable effect of a two-sided level-α
    normal test is this many standard errors (2.8016 at α = 0.05, power 0.8).

    >>> round(mde_factor(), 4)
    2.8016
    """
    return z_quantile(1.0 - alpha / 2.0) + z_quantile(power)


def minimum_detectable_effect(se: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided level-``alpha`` z-test with standard error
    ``se`` detects with probability ``power``: ``(z_{1-α/2} + z_{power}) × se``.

    (Ignores the far tail's tiny contribution, as is usual: at the MDE the power is
    ``power`` plus ``Φ(-z_{1-α/2} - z_{power} - z_{1-α/2})``, about 1e-5.)

    >>> round(minimum_detectable_effect(0.01), 6)
    0.028016
    """
    return mde_factor(alpha, power) * se


def bounded_mean_interval(
    estimate: np.ndarray, variance: np.ndarray, df: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """A ``level`` interval of a mean of values in [0, 1] from its estimate, variance and
    degrees of freedom (NaN: the normal): Korn and Graubard's (Survey Methodology 24, 1998;
    R survey's ``svyciprop(method="beta")``) Clopper-Pearson interval of the effective
    sample ``n = p(1 - p) / variance``, shrunk by ``(z / t_df)²`` for the degrees of
    freedom: ``statsmodels``' ``proportion_confint(p · n, n, method="beta")`` (tested). A
    variance of 0 (below 1e-24: every value the same) has the effective sample of its
    ``df + 1`` values, so an estimate of 0 or 1 still gets an interval of width (the rule
    of three's), never a point; the normal with no variance gives NaN. Unlike the t
    interval it leans away from the bound a skewed sample sits at, where most of the
    t interval's misses are (docs/comparisons.md: the published table's shape).

    >>> low, high = bounded_mean_interval(np.array([0.0, 0.5]), np.array([0.0, 0.01]),
    ...     np.array([2.0, 29.0]), 0.95)
    >>> np.round(low, 4).tolist(), np.round(high, 4).tolist()
    ([0.0, 0.2867], [0.9973, 0.7133])
    """
    p = np.clip(np.asarray(estimate, dtype=np.float64), 0.0, 1.0)
    v = np.asarray(variance, dtype=np.float64)
    dof = np.asarray(df, dtype=np.float64)
    normal = np.isnan(dof)
    tail = 0.5 + level / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(normal, special.ndtri(tail), special.stdtrit(np.where(normal, 1.0, dof), tail))
        spread = v > 1e-24
        n = np.where(spread, p * (1.0 - p) / np.where(spread, v, 1.0), dof + 1.0)
        n = n * (special.ndtri(tail) / t) ** 2
        x = p * n
        low = np.where(x > 0, special.betaincinv(x, n - x + 1.0, 1.0 - tail), 0.0)
        high = np.where(x < n, special.betaincinv(x + 1.0, n - x, tail), 1.0)
    unknown = np.isnan(v) | np.isnan(n) | (n <= 0)
    return np.where(unknown, np.nan, low), np.where(unknown, np.nan, high)


def _adjust_input(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values = np.asarray(p, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("p-values must be one-dimensional")
    present = np.flatnonzero(~np.isnan(values))
    order = present[np.argsort(values[present], kind="stable")]
    return values, order, values[order]


def holm(p: np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values, as ``multipletests(p, method="holm")[1]``.

    Sorted ascending, ``p_(i) × (m - i + 1)``, made monotone with a running maximum,
    capped at 1. NaN p-values are not tests: they stay NaN and do not count in ``m``.

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan]))
    array([0.03, 0.06, 0.06,  nan])
    """
    values, order, ranked = _adjust_input(p)
    out = np.full(values.shape, np.nan)
    if len(order) == 0:
        return out
    adjusted = np.maximum.accumulate(ranked * np.arange(len(ranked), 0, -1))
    adjusted[adjusted > 1] = 1
    out[order] = adjusted
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values), as
    ``multipletests(p, method="fdr_bh")[1]``.

    Sorted ascending, ``p_(i) / (i / m)``, made monotone with a running minimum from the
    largest down, capped at 1. NaN p-values stay NaN and do not count in ``m``.

    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.5]))
    array([0.04      , 0.05333333, 0.05333333, 0.5       ])
    """
    values, order, ranked = _adjust_input(p)
    out = np.full(values.shape, np.nan)
    m = len(order)
    if m == 0:
        return out
    raw = ranked / (np.arange(1, m + 1) / float(m))
    adjusted = np.minimum.accumulate(raw[::-1])[::-1]
    adjusted[adjusted > 1] = 1
    out[order] = adjusted
    return out


def adjust_over(
    frame: pl.DataFrame, p: str, by: list[str], method: str, alias: str
) -> pl.DataFrame:
    """``frame`` with column ``alias``: the ``holm`` or ``benjamini_hochberg`` adjustment of
    column ``p`` within each group of ``by`` (null p-values are not tests and stay null).

    Vectorised in polars with the same floating-point operations as the numpy functions
    (so the same bits as statsmodels); rows keep their order.

    >>> df = pl.DataFrame({"g": [1, 1, 1, 2], "p": [0.01, 0.04, 0.03, 0.2]})
    >>> adjust_over(df, "p", ["g"], "holm", "q")["q"].to_list()
    [0.03, 0.06, 0.06, 0.2]
    """
    row = "__row"
    rank = "__rank"
    m = "__m"
    raw = "__raw"
    # (One query, run as ``transforms.exact`` says: the running extremes read the order
    # the sort gives, which polars' optimiser would otherwise not keep.)
    ordered = (
        frame.lazy()
        .with_row_index(row)
        .sort([*by, p], nulls_last=True, maintain_order=True)
        .with_columns(
            pl.col(p).cum_count().over(by).alias(rank),
            pl.col(p).count().over(by).alias(m),
        )
    )
    if method == "holm":
        factor = (pl.col(m) - pl.col(rank) + 1).cast(pl.Float64)
        adjusted = (
            ordered.with_columns((pl.col(p) * factor).alias(raw))
            .with_columns(pl.col(raw).cum_max().over(by).alias(alias))
            # (a null p is no test: its adjusted value is null, whatever the running maximum)
            .with_columns(
                pl.when(pl.col(p).is_null()).then(None).otherwise(pl.col(alias)).alias(alias)
            )
        )
    elif method == "bh":
        ecdf = pl.col(rank).cast(pl.Float64) / pl.col(m).cast(pl.Float64)
        adjusted = ordered.with_columns((pl.col(p) / ecdf).alias(raw)).with_columns(
            pl.col(raw).cum_min(reverse=True).over(by).alias(alias)
        )
    else:
        raise ValueError(f"unknown adjustment {method!r}: 'holm' or 'bh'")
    capped = pl.when(pl.col(alias) > 1.0).then(1.0).otherwise(pl.col(alias)).alias(alias)
    (made,) = exactly(
        adjusted.with_columns(capped)
        .sort(row)
        .drop(row, rank, m, raw)
        .select(*frame.columns, alias)
    )
    return made


def holm_levels(
    frame: pl.DataFrame, p: str, adjusted: str, by: list[str], alpha: float, alias: str
) -> pl.DataFrame:
    """``frame`` with column ``alias``: the level at which Holm's step-down procedure tests
    each row's ``p`` within its group of ``by``, given the group's Holm-adjusted p-values
    ``adjusted`` (``adjust_over``): ``alpha / (m - k)``, ``k`` the hypotheses rejected
    before its step (a rejected row: those before it in p order; a row not rejected: every
    rejected one, the step it would be tested at). Null where ``p`` is null. A verdict of
    ``adjusted < alpha`` is the test of ``p`` at this level.

    >>> df = pl.DataFrame({"g": [1, 1, 1, 1], "p": [0.001, 0.5, 0.02, 0.01]})
    >>> q = adjust_over(df, "p", ["g"], "holm", "q")
    >>> holm_levels(q, "p", "q", ["g"], 0.05, "level")["level"].to_list()
    [0.0125, 0.05, 0.025, 0.016666666666666666]
    """
    row, rank, m, rejected = "__row", "__rank", "__m", "__rejected"
    before = pl.min_horizontal(pl.col(rank) - 1, pl.col(rejected))
    (made,) = exactly(
        frame.lazy()
        .with_row_index(row)
        .sort([*by, p], nulls_last=True, maintain_order=True)
        .with_columns(
            pl.col(p).cum_count().over(by).alias(rank),
            pl.col(p).count().over(by).alias(m),
            (pl.col(adjusted) < alpha).sum().over(by).alias(rejected),
        )
        .with_columns(
            pl.when(pl.col(p).is_not_null())
            .then(alpha / (pl.col(m) - before).cast(pl.Float64))
            .alias(alias)
        )
        .sort(row)
        .select(*frame.columns, alias)
    )
    return made


def cluster_robust_variance(
    contributions: np.ndarray, clusters: np.ndarray, correction: bool = False
) -> float:
    """The cluster-robust (sandwich) variance of an estimator that is a sum of
    per-observation contributions (its influence values, centred): ``Σ_c (Σ_{i∈c} ψ_i)²``,
    times ``G / (G - 1)`` with ``correction`` (``G`` clusters; NaN when ``G < 2``).

    Miller (arXiv:2411.00640, eq. 4): for the mean of ``n`` scores, ``ψ_i = (s_i - s̄)/n``.

    >>> round(cluster_robust_variance(np.array([0.1, -0.1, 0.2, -0.2]), np.array([0, 0, 1, 1])), 12)
    0.0
    >>> round(cluster_robust_variance(np.array([0.1, 0.1, -0.2, 0.0]), np.array([0, 0, 1, 1])), 12)
    0.08
    """
    labels, index = np.unique(np.asarray(clusters), return_inverse=True)
    totals = np.bincount(index.ravel(), weights=np.asarray(contributions, dtype=np.float64))
    groups = len(labels)
    variance = float(np.sum(totals**2))
    if correction:
        return variance * groups / (groups - 1) if groups > 1 else math.nan
    return variance


def clustered_se_difference(
    y: np.ndarray,
    in_a: np.ndarray,
    clusters: np.ndarray,
    weights: np.ndarray | None = None,
    correction: bool = False,
) -> float:
    """Clustered standard error of ``mean_a - mean_b``, the (weighted) means of ``y`` over
    the observations in group a (``in_a``) and in group b (the rest); a cluster may hold
    observations of both groups (a paired design).

    Without ``correction`` this is the CR0 sandwich: it equals the standard error of the
    ``in_a`` coefficient of the (weighted) least-squares fit ``y ~ 1 + in_a`` with
    cluster-robust covariance, i.e. statsmodels' ``OLS``/``WLS(...).fit(cov_type="cluster",
    cov_kwds={"groups": clusters, "use_correction": False})``. The influence of observation
    ``i`` is ``v_i (y_i - mean_g) / V_g`` (``+`` for a, ``-`` for b; ``v`` the weights, ``V_g``
    their sum in the group).

    With ``correction`` each group's influence values are scaled by ``√(G_g / (G_g - 1))``,
    ``G_g`` the clusters holding observations of that group: the variance then reduces to
    the textbook ``s_d² / n`` of a paired design (one observation per group and cluster) and
    to Welch's ``s_a²/n_a + s_b²/n_b`` of an unpaired one (every cluster one observation);
    see docs/comparisons.md. NaN when a group has fewer than two clusters.

    >>> y = np.array([0.9, 0.6, 0.8, 0.5, 0.4, 0.6])
    >>> a = np.array([True, True, True, False, False, False])
    >>> pairs = np.array([1, 2, 3, 1, 2, 3])
    >>> round(clustered_se_difference(y, a, pairs, correction=True), 12)  # s_d / √3
    0.066666666667
    """
    values = np.asarray(y, dtype=np.float64)
    group_a = np.asarray(in_a, dtype=bool)
    v = np.ones_like(values) if weights is None else np.asarray(weights, dtype=np.float64)
    cluster_ids = np.asarray(clusters)
    psi = np.zeros_like(values)
    for mask, sign in ((group_a, 1.0), (~group_a, -1.0)):
        total = v[mask].sum()
        mean = (v[mask] * values[mask]).sum() / total
        scale = 1.0
        if correction:
            groups = len(np.unique(cluster_ids[mask]))
            scale = math.sqrt(groups / (groups - 1)) if groups > 1 else math.nan
        psi[mask] = sign * scale * v[mask] * (values[mask] - mean) / total
    return math.sqrt(cluster_robust_variance(psi, cluster_ids))


# ---------------------------------------------------------------------------------------
# Wilcoxon signed-rank test, as scipy.stats.wilcoxon(d) with its defaults, for many rows


_PERMUTATION_AT_MOST: Final = 13  # scipy: 2**13 sign patterns, fewer than its 9,999 resamples
_EXACT_AT_MOST: Final = 50  # scipy: the exact null distribution up to 50 differences
_ROWS_AT_ONCE: Final = 64  # permutation rows enumerated at once (rows x 8,192 x 13 values)


def wilcoxon_signed_rank(d: np.ndarray) -> np.ndarray:
    """Two-sided p-values of the Wilcoxon signed-rank test of each row of ``d`` (rows x n
    differences), each equal to ``scipy.stats.wilcoxon(row).pvalue`` with scipy's defaults
    (zeros dropped, no continuity correction) and its choice of method per call:

    - more than 50 differences: the normal approximation with the tie correction;
    - no zero and no tie: the exact null distribution of the rank sum;
    - at most 13 differences (with zeros or ties): every one of the ``2**n`` sign flips;
    - else the normal approximation.

    (``scipy.stats.wilcoxon`` on a matrix chooses one method for the whole matrix, and its
    sign-flip test loops in Python: a quarter of a second a row.) NaN where scipy gives NaN
    (no difference left that is not zero, beyond 13) or refuses (a single zero).

    >>> row = np.array([0.4, 0.2, 0.5, 0.1, 0.3, -0.05])
    >>> float(wilcoxon_signed_rank(row[None, :])[0])
    0.0625
    """
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError("the differences must be a matrix: rows x n")
    rows, n = d.shape
    if rows == 0 or n == 0:
        return np.full(rows, np.nan)
    kept = np.where(d == 0.0, np.nan, d)  # zeros dropped (scipy's "wilcox")
    magnitude = np.abs(kept)
    # Average ranks among the non-zero magnitudes (NaNs ranked last, ignored below).
    ranks = _average_ranks(magnitude)
    r_plus = np.where(kept > 0, ranks, 0.0).sum(axis=1)
    count = (~np.isnan(kept)).sum(axis=1).astype(np.float64)
    equal = magnitude[:, :, None] == magnitude[:, None, :]  # NaN equals nothing
    group = equal.sum(axis=2).astype(np.float64)  # each value's tie group size
    tie_terms = np.where(np.isnan(magnitude), 0.0, group**2 - 1.0).sum(axis=1)  # Σ t³ - t
    has_ties = (group > 1).any(axis=1)
    has_zeros = np.isnan(kept).any(axis=1)
    p = _wilcoxon_normal(r_plus, count, tie_terms)
    if n <= _EXACT_AT_MOST:
        exact = ~has_ties & ~has_zeros
        if exact.any():
            p[exact] = _wilcoxon_exact(r_plus[exact], n)
        # (scipy refuses a sign-flip test of one difference: NaN, as the normal gives it)
        flips = ~exact if 2 <= n <= _PERMUTATION_AT_MOST else np.zeros(rows, dtype=bool)
        for start in range(0, int(flips.sum()), _ROWS_AT_ONCE):
            chosen = np.flatnonzero(flips)[start : start + _ROWS_AT_ONCE]
            p[chosen] = _wilcoxon_flips(kept[chosen], ranks[chosen], r_plus[chosen])
    return p


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Per row, the average rank of each value (1 = smallest; NaNs after the rest)."""
    smaller = values[:, None, :] < values[:, :, None]
    equal = values[:, None, :] == values[:, :, None]
    ranks = smaller.sum(axis=2) + (equal.sum(axis=2) + 1) / 2.0
    return np.where(np.isnan(values), np.nan, ranks)


def _wilcoxon_normal(r_plus: np.ndarray, count: np.ndarray, tie_terms: np.ndarray) -> np.ndarray:
    mean = count * (count + 1.0) * 0.25
    spread = count * (count + 1.0) * (2.0 * count + 1.0)
    se = np.sqrt((spread - tie_terms / 2.0) / 24.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (r_plus - mean) / se
    return 2.0 * special.ndtr(-np.abs(z))


def _signed_rank_distribution(n: int) -> np.ndarray:
    """P(W = k), k = 0 .. n(n+1)/2: the rank sum of the positive signs of n distinct
    non-zero differences under the null (each sign + or − with probability one half)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):  # subsets of {1..rank}: with rank or without
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts / 2.0**n


def _wilcoxon_exact(r_plus: np.ndarray, n: int) -> np.ndarray:
    pmf = _signed_rank_distribution(n)
    mean = n * (n + 1) / 4.0
    cumulative = np.cumsum(pmf)
    tail = np.cumsum(pmf[::-1])[::-1]

    def cdf(k: np.ndarray) -> np.ndarray:  # scipy: Σ pmf[:k+1] below the mean, else 1 - sf
        k = k.astype(np.int64)
        return np.where(k <= mean, cumulative[k], 1.0 - tail[np.minimum(k + 1, len(pmf) - 1)])

    def sf(k: np.ndarray) -> np.ndarray:  # scipy: Σ pmf[k:] below the mean, else 1 - cdf
        k = k.astype(np.int64)
        return np.where(k <= mean, tail[k], 1.0 - cumulative[np.maximum(k - 1, 0)])

    p = 2.0 * np.minimum(sf(np.floor(r_plus)), cdf(np.ceil(r_plus)))
    return np.clip(p, 0.0, 1.0)


def _wilcoxon_flips(kept: np.ndarray, ranks: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Every sign flip of each row (zeros stay zero): the share of flips whose rank sum is
    as small (or as large) as the observed one, within scipy's tolerance, twice the
    smaller, capped at 1."""
    n = kept.shape[1]
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1  # 2**n x n
    flips = np.where(patterns == 1, -1.0, 1.0)
    positive = (flips[None, :, :] * np.sign(np.nan_to_num(kept))[:, None, :]) > 0
    null = np.where(positive, np.nan_to_num(ranks)[:, None, :], 0.0).sum(axis=2)
    gamma = np.abs(np.finfo(np.float64).eps * 100 * observed)[:, None]
    less = (null <= observed[:, None] + gamma).sum(axis=1) / 2.0**n
    greater = (null >= observed[:, None] - gamma).sum(axis=1) / 2.0**n
    return np.clip(np.minimum(less, greater) * 2.0, 0.0, 1.0)
