"""The inference from a contrast's variance: standard errors, intervals, p-values and the
minimum detectable effect, Student's t with the variance's degrees of freedom or the normal
(``transforms.compare.variance``).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import special  # scipy.stats's t is these (0.4 s more to import)

from schemas.columns import SCORE_RANGE
from schemas.comparisons import CI_HIGH, CI_LOW, DF, MDE, P_VALUE, SE, SE_TASKS, SE_WITHIN, Work
from transforms.stats import normal_p_values, z_quantile


def inference(
    frame: pl.DataFrame,
    estimate: str,
    alpha: float = 0.05,
    power: float = 0.8,
    level: float | None = None,
) -> pl.DataFrame:
    """Adds ``SE``, ``SE_WITHIN``, ``SE_TASKS``, ``CI_LOW``, ``CI_HIGH`` (a ``level``
    interval; default ``1 - alpha``), ``P_VALUE`` (two-sided) and ``MDE`` (the true
    difference a level-``alpha`` test detects with probability ``power``) from ``estimate``,
    ``VAR`` and ``DF``: Student's t with ``DF`` degrees of freedom, the normal where ``DF``
    is null. A zero standard error gives p = 1 for a zero estimate, else 0. The MDE is null
    where it is past the scores' range (``_on_scale``)."""
    level = 1.0 - alpha if level is None else level
    # (In numpy, then one polars query: each Series step was a query of its own; the same
    # IEEE operations, so the same bits.)
    # (x / 0 and the like give inf and NaN, as polars gives them, without numpy's warning)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(frame[Work.VAR].to_numpy().astype(np.float64))  # null -> NaN
        est = frame[estimate].to_numpy().astype(np.float64)
        z = est / se  # null -> NaN
    df = frame[DF].to_numpy().astype(np.float64)  # null -> NaN: the normal
    normal = np.isnan(df)
    t_df = np.where(normal, 1.0, df)  # (a placeholder where the normal is used)
    p = np.where(normal, normal_p_values(z), 2.0 * special.stdtr(t_df, -np.abs(z)))
    p = np.where(np.isnan(z), np.nan, p)
    p = np.where((se == 0.0) & (est == 0.0), 1.0, p)

    def quantile(q: float) -> np.ndarray:
        return np.where(normal, z_quantile(q), special.stdtrit(t_df, q))

    half = quantile(0.5 + level / 2.0)
    detect = quantile(1.0 - alpha / 2.0) + quantile(power)
    error = pl.col(Work.VAR).sqrt()
    return frame.with_columns(
        error.alias(SE),
        pl.col(Work.VAR_WITHIN).sqrt().alias(SE_WITHIN),
        pl.col(Work.VAR_TASKS).sqrt().alias(SE_TASKS),
        (pl.col(estimate) - pl.lit(pl.Series(half)) * error).alias(CI_LOW),
        (pl.col(estimate) + pl.lit(pl.Series(half)) * error).alias(CI_HIGH),
        pl.lit(pl.Series(P_VALUE, p, pl.Float64, nan_to_null=True)),
        pl.lit(_on_scale(detect, se)),
    )


def detectable(frame: pl.DataFrame, alpha: str, power: float = 0.8) -> pl.Series:
    """``MDE`` at each row's own test level (column ``alpha``: Holm's step, say): the true
    difference a two-sided test at that level detects with probability ``power``,
    ``(t_{1−α/2} + t_{power}) · SE`` with the row's ``DF`` (the normal where it is null)."""
    df = frame[DF].to_numpy().astype(np.float64)
    level = frame[alpha].to_numpy().astype(np.float64)  # null -> NaN
    normal = np.isnan(df)
    t_df = np.where(normal, 1.0, df)

    def quantile(q: np.ndarray) -> np.ndarray:
        return np.where(normal, special.ndtri(q), special.stdtrit(t_df, q))

    factor = quantile(1.0 - level / 2.0) + quantile(np.full(len(level), power))
    return _on_scale(factor, frame[SE].to_numpy().astype(np.float64))


def _on_scale(factor: np.ndarray, se: np.ndarray) -> pl.Series:
    """``MDE``: ``factor · se`` where it is a difference scores can have: finite and at most the
    width of ``SCORE_RANGE`` (two scores in [0, 1] differ by 1 at most), else null (and
    where NaN: a null standard error): a test whose MDE is past the range detects no
    difference there with its power (at 1 degree of freedom and Holm's level, MDEs of 100
    and more)."""
    low, high = SCORE_RANGE
    with np.errstate(invalid="ignore"):  # (inf · 0: NaN, as polars gives it)
        mde = factor * se
    kept = np.where(mde <= high - low, mde, np.nan)  # (NaN is not <=: null)
    return pl.Series(MDE, kept, pl.Float64, nan_to_null=True)
