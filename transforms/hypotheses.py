"""The planned hypotheses of a standing (``schemas.hypotheses``): each tested as declared on
the standing's task scores, with scipy's own tests called as LearningBench's authors call
them (``analysis/scripts/30_hypothesis_tests.py``), Benjamini-Hochberg over the file's
hypotheses (as the authors), and an honest verdict.

- ``wilcoxon``: ``scipy.stats.wilcoxon(x, y, zero_method="wilcox", alternative=...)`` (no
  continuity correction, ``method="auto"``: exact without ties or zeros, every sign flip up
  to 13 pairs, else the normal), ``x`` and ``y`` the two models' task scores over the tasks
  of the scope both have a result on;
- ``mann-whitney``: ``scipy.stats.mannwhitneyu(x, y, alternative=...)`` (continuity
  correction, ``method="auto"``: exact up to 8 a side without ties), ``x`` and ``y`` each
  model's mean over its task scores in the scope (each task weighing the same).

A hypothesis is a test of a few numbers a standing: the loop over hypotheses is not a hot
path (the standing's task rows are filtered and joined in polars).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import polars as pl

from schemas.columns import AS_OF, PROVENANCE, SCORE
from schemas.comparisons import DEFAULT_LEVEL, P_VALUE, REASON, SCOPE, VERDICT
from schemas.contract import Col
from schemas.hypotheses import (
    ALPHA,
    ALTERNATIVE,
    CLAIM,
    ESTIMATE,
    HYPOTHESES_TABLE,
    ID,
    MEAN_A,
    MEAN_B,
    MIN_PAIRS,
    N_A_BETTER,
    N_B_BETTER,
    P_ADJUSTED,
    STATISTIC,
    TEST,
    A,
    Alternative,
    B,
    Hypothesis,
    N,
    Procedure,
    Verdict,
)
from transforms.exact import exactly
from transforms.stats import adjust_over

_TOWARD: Final = "__toward"  # +1: the test leans to a, -1: to b, 0: neither
_COLUMNS: Final = {
    name: dtype for name, dtype in HYPOTHESES_TABLE.dtypes.items() if name not in PROVENANCE
}


def hypotheses(
    tasks: pl.LazyFrame, planned: Sequence[Hypothesis], level: float = DEFAULT_LEVEL
) -> pl.LazyFrame:
    """Per ``as_of`` of ``tasks`` (``task_standings`` rows: ``as_of``, ``model``,
    ``category``, ``task``, ``score``) and hypothesis of ``planned``: the ``hypotheses``
    rows (no provenance), ``p_adjusted`` Benjamini-Hochberg over the standing's estimable
    hypotheses, the verdict at ``alpha = 1 - level`` (the run's intervals' level)."""
    if not planned:
        return pl.LazyFrame(schema=_COLUMNS)
    alpha = round(1.0 - level, 12)  # 0.05, not 0.050000000000000044
    (frame,) = exactly(tasks.select(AS_OF, Col.MODEL, Col.CATEGORY, Col.TASK, SCORE))
    rows = [
        {AS_OF: as_of, **_tested(hypothesis, frame.filter(pl.col(AS_OF).eq_missing(as_of)))}
        for as_of in frame[AS_OF].unique(maintain_order=True).sort(nulls_last=False)
        for hypothesis in planned
    ]
    found = pl.DataFrame(rows, schema={**_COLUMNS, _TOWARD: pl.Int8})
    adjusted = adjust_over(found.drop(P_ADJUSTED), P_VALUE, [AS_OF], "bh", P_ADJUSTED)
    significant = pl.col(P_ADJUSTED) < alpha
    verdict = (
        pl.when(pl.col(P_VALUE).is_null())
        .then(pl.lit(Verdict.NOT_ESTIMABLE.value))
        .when(significant & (pl.col(_TOWARD) > 0))
        .then(pl.lit(Verdict.SUPPORTED.value))
        .when(significant & (pl.col(_TOWARD) < 0))
        .then(pl.lit(Verdict.CONTRADICTED.value))
        .otherwise(pl.lit(Verdict.NOT_SUPPORTED.value))
    )
    contradicted = pl.format(
        "significant the other way: b scored higher (p_adjusted {} < alpha {})",
        pl.col(P_ADJUSTED),
        pl.lit(alpha),
    )
    return (
        adjusted.with_columns(verdict.alias(VERDICT), pl.lit(alpha).alias(ALPHA))
        .with_columns(
            pl.when(pl.col(VERDICT) == Verdict.CONTRADICTED.value)
            .then(contradicted)
            .otherwise(pl.col(REASON))
            .alias(REASON)
        )
        .select(list(_COLUMNS))
        .sort(AS_OF, ID, nulls_last=False)
        .lazy()
    )


def _tested(hypothesis: Hypothesis, standing: pl.DataFrame) -> dict[str, Any]:
    """One hypothesis on one standing's task rows: its row but ``as_of``, ``p_adjusted``
    and the verdict (``_TOWARD``: where the test leans)."""
    scoped = standing
    if hypothesis.scope:
        scoped = standing.filter(pl.col(Col.CATEGORY).is_in(hypothesis.scope))
    row: dict[str, Any] = {
        ID: hypothesis.id,
        CLAIM: hypothesis.claim,
        TEST: hypothesis.test.value,
        SCOPE: hypothesis.scope_name,
        ALTERNATIVE: hypothesis.alternative.value,
        A: list(hypothesis.a),
        B: list(hypothesis.b),
        **dict.fromkeys((N_A_BETTER, N_B_BETTER, MEAN_A, MEAN_B, ESTIMATE, STATISTIC)),
        **dict.fromkeys((P_VALUE, P_ADJUSTED, ALPHA, VERDICT, REASON)),
        N: 0,
        _TOWARD: 0,
    }
    present = set(scoped[Col.MODEL].unique().to_list())
    missing = [m for m in (*hypothesis.a, *hypothesis.b) if m not in present]
    if missing:
        row[REASON] = (
            f"no result of {', '.join(map(repr, missing))} in {hypothesis.scope_name} in "
            "this standing"
        )
        return row
    if hypothesis.test is Procedure.WILCOXON:
        x, y = _paired(scoped, hypothesis.a[0], hypothesis.b[0])
        row[N] = len(x)
        if len(x) < MIN_PAIRS:
            row[REASON] = (
                f"{len(x)} task(s) of {hypothesis.scope_name} with a result of both: the "
                f"test needs {MIN_PAIRS} at least"
            )
            return row
        if (x == y).all():
            row[REASON] = f"every one of the {len(x)} paired differences is 0"
            return row
        wins = (int((x > y).sum()), int((x < y).sum()))
    else:
        x, y = (_means(scoped, models) for models in (hypothesis.a, hypothesis.b))
        row[N] = len(x) + len(y)
        row[REASON] = _coverage(scoped, (*hypothesis.a, *hypothesis.b))
        above = x[:, None] - y[None, :]
        wins = (int((above > 0).sum()), int((above < 0).sum()))
    statistic, p, toward = _test(hypothesis.test, x, y, hypothesis.alternative)
    row[N_A_BETTER], row[N_B_BETTER] = wins
    row[MEAN_A], row[MEAN_B] = float(np.mean(x)), float(np.mean(y))
    row[ESTIMATE] = row[MEAN_A] - row[MEAN_B]
    if np.isnan(p):
        row[REASON] = "scipy gives no p-value for these scores"
        return row
    row[STATISTIC], row[P_VALUE], row[_TOWARD] = statistic, p, toward
    return row


def _paired(scoped: pl.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """The task scores of ``a`` and ``b`` over the tasks both have (in task order)."""
    left, right = (
        scoped.filter(pl.col(Col.MODEL) == model).select(Col.TASK, pl.col(SCORE).alias(side))
        for model, side in ((a, A), (b, B))
    )
    both = left.join(right, on=Col.TASK).sort(Col.TASK)
    return both[A].to_numpy(), both[B].to_numpy()


def _means(scoped: pl.DataFrame, models: Sequence[str]) -> np.ndarray:
    """Each model's mean task score in the scope, in the order declared, its sum correctly
    rounded (``math.fsum``): models whose scores add up the same tie whatever order the
    standing's rows come in (a float sum in the rows' order breaks such a tie one way or
    the other, and ``mannwhitneyu`` then leaves its tie-corrected normal p-value for the
    exact one). A few models' task scores: Python's own sum is no hot path here."""
    scores = (
        scoped.filter(pl.col(Col.MODEL).is_in(list(models)))
        .group_by(Col.MODEL)
        .agg(pl.col(SCORE).drop_nulls())
    )
    by_model = dict(zip(scores[Col.MODEL], scores[SCORE].to_list(), strict=True))
    return np.array(
        [math.fsum(s) / len(s) if s else math.nan for s in map(by_model.get, models)],
        dtype=np.float64,
    )


def _coverage(scoped: pl.DataFrame, models: Sequence[str]) -> str | None:
    """Where the models' means cover different numbers of the scope's tasks, says so
    (each mean is over the tasks the model has a result on in the standing)."""
    counts = scoped.filter(pl.col(Col.MODEL).is_in(list(models)))[Col.MODEL].value_counts()
    fewest, most = (int(v) for v in counts["count"].sort()[[0, -1]])
    if fewest == most:
        return None
    return (
        f"the models' means cover {fewest} to {most} of the scope's "
        f"{scoped[Col.TASK].n_unique()} tasks: they ran different tasks"
    )


def _test(
    test: Procedure, x: np.ndarray, y: np.ndarray, alternative: Alternative
) -> tuple[float, float, int]:
    """scipy's statistic and p-value, and where the test leans (+1: ``x`` higher, -1:
    ``y``, 0: neither): its one-sided p-values compared."""
    from scipy import stats  # (0.4 s to import: only where hypotheses are declared)

    def call(side: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a NaN p-value is reported
            if test is Procedure.WILCOXON:
                return stats.wilcoxon(x, y, zero_method="wilcox", alternative=side)
            return stats.mannwhitneyu(x, y, alternative=side)

    result = call(alternative.value)
    greater, less = call("greater").pvalue, call("less").pvalue
    toward = 1 if greater < less else -1 if less < greater else 0
    return float(result.statistic), float(result.pvalue), toward
