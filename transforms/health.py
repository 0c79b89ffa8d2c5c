"""The benchmark's health, as it stands: how stable its ranking is, which tasks discriminate
and which cannot, each category's best and worst model, and LearningBench's behavioural
signals. Computed from a standing's task rows (``task_standings``: one row per model and
task) every night, where its authors computed them once, by hand (``UPSTREAM_README.md``
section 6; its figures on the published table are reproduced by the tests).

- ``stability``: leave one task out. Per group of models that ran the same tasks (three
  models or more), each task removed in turn: the models' scores without it (each task
  weighing the same, as the leaderboard), Spearman's rho of them against the full scores
  (average ranks, as ``scipy.stats.spearmanr``), and the largest change of a model's rank
  (ties share the better rank, as the leaderboard ranks). Their mean, minimum and maximum.
- ``task_health``: per task, the models that ran it, their mean, spread and range; at
  ceiling (every model scored 1) or floor (every model 0); its discrimination: Spearman's
  rho, over the models, of the task score against the model's score on its other tasks
  (the corrected item-total correlation of test theory; null below three models or where
  the task or the rest do not vary).
- ``category_health``: per category, its best and worst model (by category score) and the
  spread between them.
- ``signals``: LearningBench's behavioural signals, each Spearman's rho over the standing's
  results (a model's result on a task) with its two-sided p-value (Student's t with n - 2
  degrees of freedom, as ``scipy.stats.spearmanr``): examples requested against score in
  concept formation and language learning (its H1), tokens spent against score in runtime
  RL (its H2). Null where fewer than three results hold the behaviour.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import AS_OF, MEAN_TOKENS, SCORE, Component
from schemas.comparisons import N_TASKS
from schemas.contract import Category, Col
from schemas.health import (
    AT_CEILING,
    AT_FLOOR,
    BEST_MODEL,
    BEST_SCORE,
    DISCRIMINATION,
    HIGHEST,
    LOO_MAX_RANK_CHANGE,
    LOO_SPEARMAN_MEAN,
    LOO_SPEARMAN_MIN,
    LOWEST,
    MEAN,
    MODELS,
    N_MODELS,
    N_RESULTS,
    P_VALUE,
    SIGNAL,
    SPEARMAN,
    SPREAD,
    WORST_MODEL,
    WORST_SCORE,
    Signal,
)
from transforms.aggregate import MEAN_PREFIX, mean_in_order

# Working columns (never written).
_TASKS: Final = "__tasks"  # a model's task set, joined
_SUM: Final = "__sum"
_N: Final = "__n"
_FULL: Final = "__full"
_LOO: Final = "__loo"
_REMOVED: Final = "__removed"
_RHO: Final = "__rho"
_MOVE: Final = "__move"
_REST: Final = "__rest"
MIN_MODELS: Final = 3  # a ranking of fewer models says nothing about its stability


def _spearman(a: str, b: str, order: str = Col.MODEL) -> pl.Expr:
    """Spearman's rho of two columns in a group: Pearson's of their average ranks (null
    where either does not vary), summed in ``order`` (the same bits whatever the row order)."""
    return pl.corr(
        pl.col(a).sort_by(order).rank("average"), pl.col(b).sort_by(order).rank("average")
    )


def _std_in_order(value: pl.Expr, order: str) -> pl.Expr:
    """The sample standard deviation of ``value`` in a group (null for one value), its sums
    left to right in ``order``: the same bits whatever the rows' order or memory layout
    (polars' own ``std`` changed in the last bit between two layouts of the same rows)."""
    deviation = value - mean_in_order(value, order)
    squares = (deviation * deviation).sort_by(order).cum_sum().last()
    n = pl.len().cast(pl.Float64)
    return pl.when(n > 1).then((squares / (n - 1.0)).sqrt())


def _sum(value: str, order: str) -> pl.Expr:
    """The sum of ``value`` in a group, left to right in ``order``: the same bits whatever
    the row order (polars' own sum adds in any order)."""
    return pl.col(value).sort_by(order).cum_sum().last()


def _rank(column: str) -> pl.Expr:
    """A model's rank by ``column`` in a group, as the leaderboard ranks (1 = best, ties
    share the better rank), signed: ranks are subtracted."""
    return pl.col(column).rank("min", descending=True).cast(pl.Int64)


def stability(tasks: pl.LazyFrame) -> pl.LazyFrame:
    """Per ``as_of`` and group of models that ran the same tasks: the group's ``models``
    (by name: which group the row is), ``n_models``, ``n_tasks``, ``loo_spearman_mean``,
    ``loo_spearman_min`` and ``loo_max_rank_change`` (see the module; null where the group
    has fewer than three models or one task)."""
    cells = tasks.select(AS_OF, Col.MODEL, Col.TASK, SCORE)
    per_model = cells.group_by(AS_OF, Col.MODEL).agg(
        pl.col(Col.TASK).sort().str.join("\x1f").alias(_TASKS),
        _sum(SCORE, Col.TASK).alias(_SUM),
        pl.len().cast(pl.Int64).alias(_N),
    )
    group = [AS_OF, _TASKS]
    # Every model's score with each task of its group removed in turn.
    removed = (
        cells.join(per_model, on=[AS_OF, Col.MODEL])
        .with_columns(
            (pl.col(_SUM) / pl.col(_N)).alias(_FULL),
            pl.when(pl.col(_N) > 1)
            .then((pl.col(_SUM) - pl.col(SCORE)) / (pl.col(_N) - 1))
            .alias(_LOO),
        )
        .select(*group, Col.MODEL, pl.col(Col.TASK).alias(_REMOVED), _FULL, _LOO)
    )
    full = removed.select(*group, Col.MODEL, _FULL).unique()
    # (group, removed task) x model: the model's score without that task.
    pairs = full.join(removed.select(*group, _REMOVED).unique(), on=group).join(
        removed.select(*group, Col.MODEL, _REMOVED, _LOO),
        on=[*group, Col.MODEL, _REMOVED],
        how="left",
    )
    by_task = pairs.group_by(*group, _REMOVED).agg(
        _spearman(_FULL, _LOO).fill_nan(None).alias(_RHO),
        (_rank(_FULL) - _rank(_LOO)).abs().max().alias(_MOVE),
        pl.len().cast(pl.Int64).alias(N_MODELS),
        pl.col(Col.MODEL).sort().alias(MODELS),
    )
    enough = (pl.col(N_MODELS).first() >= MIN_MODELS) & (pl.len() > 1)
    return (
        by_task.group_by(*group)
        .agg(
            pl.col(MODELS).first(),
            pl.col(N_MODELS).first(),
            pl.len().cast(pl.Int64).alias(N_TASKS),
            # (a left-out task whose rho is undefined, the scores all equal, makes it so)
            pl.when(enough & pl.col(_RHO).is_not_null().all())
            .then(mean_in_order(pl.col(_RHO), _REMOVED))
            .alias(LOO_SPEARMAN_MEAN),
            pl.when(enough & pl.col(_RHO).is_not_null().all())
            .then(pl.col(_RHO).min())
            .alias(LOO_SPEARMAN_MIN),
            pl.when(enough).then(pl.col(_MOVE).max()).alias(LOO_MAX_RANK_CHANGE),
        )
        .drop(_TASKS)
        .sort(AS_OF, N_MODELS, N_TASKS, descending=[False, True, True])
    )


def task_health(tasks: pl.LazyFrame) -> pl.LazyFrame:
    """Per ``as_of`` and task: ``n_models``, ``mean``, ``std``, ``min``, ``max``,
    ``at_ceiling``, ``at_floor`` and ``discrimination`` (see the module)."""
    cells = tasks.select(AS_OF, Col.MODEL, Col.CATEGORY, Col.TASK, SCORE)
    totals = cells.group_by(AS_OF, Col.MODEL).agg(
        _sum(SCORE, Col.TASK).alias(_SUM), pl.len().cast(pl.Int64).alias(_N)
    )
    rest = pl.when(pl.col(_N) > 1).then((pl.col(_SUM) - pl.col(SCORE)) / (pl.col(_N) - 1))
    score = pl.col(SCORE)
    n_models = pl.len().cast(pl.Int64)
    return (
        cells.join(totals, on=[AS_OF, Col.MODEL])
        .with_columns(rest.alias(_REST))
        .group_by(AS_OF, Col.CATEGORY, Col.TASK)
        .agg(
            n_models.alias(N_MODELS),
            mean_in_order(score, Col.MODEL).alias(MEAN),
            _std_in_order(score, Col.MODEL).alias(SPREAD),
            score.min().alias(LOWEST),
            score.max().alias(HIGHEST),
            (score == 1.0).all().alias(AT_CEILING),
            (score == 0.0).all().alias(AT_FLOOR),
            pl.when(n_models >= MIN_MODELS).then(_spearman(SCORE, _REST)).alias(DISCRIMINATION),
        )
        .with_columns(pl.col(DISCRIMINATION).fill_nan(None))
        .sort(AS_OF, Col.CATEGORY, Col.TASK)
    )


def category_health(categories: pl.LazyFrame) -> pl.LazyFrame:
    """Per ``as_of`` and category (``category_standings`` rows): ``n_models``, the best and
    the worst model by category score (ties: the first by name) and their scores."""
    score = pl.col(SCORE)
    model = pl.col(Col.MODEL)
    ordered = categories.select(AS_OF, Col.CATEGORY, Col.MODEL, SCORE).sort(
        AS_OF, Col.CATEGORY, SCORE, Col.MODEL, descending=[False, False, True, False]
    )
    return (
        ordered.group_by(AS_OF, Col.CATEGORY, maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias(N_MODELS),
            model.first().alias(BEST_MODEL),
            score.first().alias(BEST_SCORE),
            model.sort_by(score, model, descending=[False, False]).first().alias(WORST_MODEL),
            score.min().alias(WORST_SCORE),
        )
        .sort(AS_OF, Col.CATEGORY)
    )


# Each signal: its categories and the column of a task row that holds the behaviour.
SIGNALS: Final[dict[Signal, tuple[tuple[Category, ...], str]]] = {
    Signal.EXAMPLES: (
        (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING),
        MEAN_PREFIX + Component.EXAMPLES_USED,
    ),
    Signal.TOKENS: ((Category.RUNTIME_RL,), MEAN_TOKENS),  # contract 1.3's usage
}


def signals(tasks: pl.LazyFrame) -> pl.DataFrame:
    """Per ``as_of`` and signal (``SIGNALS``): the results that hold the behaviour
    (``n_results``), Spearman's rho of the behaviour against the score and its p-value."""
    have = tasks.collect_schema()
    rows = []
    for signal, (categories, column) in SIGNALS.items():
        behaviour = pl.col(column) if column in have else pl.lit(None, pl.Float64)
        held = (
            tasks.filter(pl.col(Col.CATEGORY).is_in([str(c) for c in categories]))
            .select(
                AS_OF,
                pl.concat_str(Col.MODEL, Col.TASK, separator="\x1f").alias(_REMOVED),
                behaviour.cast(pl.Float64).alias(_REST),
                SCORE,
            )
            .filter(pl.col(_REST).is_not_null() & pl.col(SCORE).is_not_null())
        )
        rows.append(
            held.group_by(AS_OF).agg(
                pl.lit(str(signal)).alias(SIGNAL),
                pl.len().cast(pl.Int64).alias(N_RESULTS),
                pl.when(pl.len() >= MIN_MODELS)
                .then(_spearman(_REST, SCORE, _REMOVED))
                .alias(SPEARMAN),
            )
        )
    found = pl.concat(pl.collect_all(rows)).with_columns(pl.col(SPEARMAN).fill_nan(None))
    return found.with_columns(_p_values(found)).sort(AS_OF, SIGNAL)


def _p_values(found: pl.DataFrame) -> pl.Series:
    """The two-sided p-value of each Spearman's rho: t = rho sqrt((n-2)/(1-rho^2)) against
    Student's t with n - 2 degrees of freedom (``scipy.stats.spearmanr``'s)."""
    import numpy as np
    from scipy import special  # (scipy.stats costs 0.4 s more to import)

    rho = found[SPEARMAN].to_numpy().astype(np.float64)
    df = found[N_RESULTS].to_numpy().astype(np.float64) - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt(df / ((1.0 - rho) * (1.0 + rho)))
        p = 2.0 * special.stdtr(np.maximum(df, 1.0), -np.abs(t))
    return pl.Series(P_VALUE, p, pl.Float64).fill_nan(None)
