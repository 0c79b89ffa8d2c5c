"""Small exact building blocks of the comparison statistics (``transforms.compare``).

Numpy, polars and the standard library only: the normal distribution comes from
``math.erfc`` and ``statistics.NormalDist``, the multiple-testing adjustments repeat
statsmodels' arithmetic operation for operation, so that the tests can hold them to scipy
(1e-12) and to ``statsmodels.stats.multitest.multipletests`` (bit for bit).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

import numpy as np
import polars as pl

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
    ordered = (
        frame.with_row_index(row)
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
            .with_columns(pl.when(pl.col(p).is_null()).then(None).otherwise(pl.col(alias)))
        )
    elif method == "bh":
        ecdf = pl.col(rank).cast(pl.Float64) / pl.col(m).cast(pl.Float64)
        adjusted = ordered.with_columns((pl.col(p) / ecdf).alias(raw)).with_columns(
            pl.col(raw).cum_min(reverse=True).over(by).alias(alias)
        )
    else:
        raise ValueError(f"unknown adjustment {method!r}: 'holm' or 'bh'")
    capped = pl.when(pl.col(alias) > 1.0).then(1.0).otherwise(pl.col(alias)).alias(alias)
    return (
        adjusted.with_columns(capped)
        .sort(row)
        .drop(row, rank, m, raw)
        .select(*frame.columns, alias)
    )


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
