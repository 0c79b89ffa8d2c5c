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
  Beside it, the tasks drawn again (a bootstrap of the group's tasks, 1,000 draws, seeded):
  the mean rho, the share of draws that change some rank, the most places a model moves.
  Leaving one task of 135 out moves little (0.998 on the published table), which reads as
  "the ranking is settled"; drawing another sample of tasks like these changes some rank
  almost always (0.978, 98% of draws, up to 4 places there): the ranks' intervals say how
  far.
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

import numpy as np
import polars as pl

from schemas.columns import AS_OF, MEAN_TOKENS, SCORE, Component
from schemas.comparisons import N_TASKS
from schemas.contract import Category, Col
from schemas.health import (
    AT_CEILING,
    AT_FLOOR,
    BEST_MODEL,
    BEST_SCORE,
    BOOT_MAX_RANK_CHANGE,
    BOOT_RANK_CHANGED,
    BOOT_SPEARMAN_MEAN,
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
from transforms.aggregate import MEAN_PREFIX, Bootstrap, group_seed, mean_in_order
from transforms.exact import exactly

# Working columns (never written).
_TASKS: Final = "__tasks"  # a model's task set, joined
_GROUP: Final = "__group"  # a group of models that ran the same tasks, by number
# What tells the groups apart: the night and the tasks (a number by their dense rank).
_GROUP_CODE: Final = pl.concat_str(pl.col(AS_OF).fill_null(""), pl.col(_TASKS), separator="\x1e")
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
    ``loo_spearman_min``, ``loo_max_rank_change`` and the task bootstrap's
    ``boot_spearman_mean``, ``boot_rank_changed`` and ``boot_max_rank_change`` (see the
    module; null where the group has fewer than three models or one task)."""
    # A task is its category's: one name may be a task of two categories (a dump's own
    # tasks), and the bootstrap's table of tasks by models holds one score a cell.
    task = pl.concat_str(pl.col(Col.CATEGORY), pl.col(Col.TASK), separator="/")
    cells = tasks.select(AS_OF, Col.MODEL, task.alias(Col.TASK), SCORE)
    per_model = cells.group_by(AS_OF, Col.MODEL).agg(
        pl.col(Col.TASK).sort().str.join("\x1f").alias(_TASKS),
        _sum(SCORE, Col.TASK).alias(_SUM),
        pl.len().cast(pl.Int64).alias(_N),
    )
    # A group by a number (its tasks' text, a few KB, kept once a model, not once a cell:
    # copied to each of a standing's 2,300 cells and grouped on, it cost a fifth of this).
    per_model = per_model.with_columns(_GROUP_CODE.rank("dense").cast(pl.Int64).alias(_GROUP))
    group = [AS_OF, _GROUP]
    # Every model's score with each task of its group removed in turn.
    removed = (
        cells.join(per_model.drop(_TASKS), on=[AS_OF, Col.MODEL])
        .with_columns(
            (pl.col(_SUM) / pl.col(_N)).alias(_FULL),
            pl.when(pl.col(_N) > 1)
            .then((pl.col(_SUM) - pl.col(SCORE)) / (pl.col(_N) - 1))
            .alias(_LOO),
        )
        .select(*group, Col.MODEL, pl.col(Col.TASK).alias(_REMOVED), _FULL, _LOO)
    )
    # (group, removed task) x model: the model's score without that task. A group's
    # models ran the same tasks, so each of them has a row of every task of the group:
    # ``removed`` is every pair already (no model's score is missing without a task).
    by_task = removed.group_by(*group, _REMOVED).agg(
        _spearman(_FULL, _LOO).fill_nan(None).alias(_RHO),
        (_rank(_FULL) - _rank(_LOO)).abs().max().alias(_MOVE),
        pl.len().cast(pl.Int64).alias(N_MODELS),
        pl.col(Col.MODEL).sort().alias(MODELS),
    )
    enough = (pl.col(N_MODELS).first() >= MIN_MODELS) & (pl.len() > 1)
    groups, coded = exactly(
        per_model.select(*group, _TASKS).unique().sort(AS_OF, _TASKS, nulls_last=True),
        per_model.select(AS_OF, Col.MODEL, _GROUP).join(
            cells, on=[AS_OF, Col.MODEL], nulls_equal=True
        ),
    )
    drawn = pl.LazyFrame(_task_bootstrap(groups, coded), schema=_BOOT_SCHEMA)
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
        .join(drawn, on=group, how="left", nulls_equal=True)
        .drop(_GROUP)
        .sort(AS_OF, N_MODELS, N_TASKS, descending=[False, True, True])
    )


_BOOT_SCHEMA: Final = {
    AS_OF: pl.String,
    _GROUP: pl.Int64,
    BOOT_SPEARMAN_MEAN: pl.Float64,
    BOOT_RANK_CHANGED: pl.Float64,
    BOOT_MAX_RANK_CHANGE: pl.Int64,
}


_DRAWS: Final = Bootstrap()  # the run's resamples and seed


def _task_bootstrap(
    groups: pl.DataFrame, cells: pl.DataFrame, draws: Bootstrap = _DRAWS
) -> list[dict[str, object]]:
    """Per ``as_of`` and group of models that ran the same tasks (``groups``, in order: its
    code, ``_GROUP``, and its tasks, ``_TASKS``; ``cells``: the scores, each with its model's
    group; three models or more, two tasks or more): the group's tasks drawn again
    ``draws.resamples`` times (as many, with replacement; each group from its own stream of
    ``draws.seed``), the models' scores on each draw (each task weighing the same), and
    against the full scores: the mean of Spearman's rho (over the draws where both vary),
    the share of draws in which some model's rank (ties share the better rank) differs, the
    most places a model moves. A Python loop over the groups (a standing has a few), numpy
    within."""
    out: list[dict[str, object]] = []
    for as_of, code, tasks in groups.select(AS_OF, _GROUP, _TASKS).iter_rows():
        group = cells.filter(pl.col(_GROUP) == code)
        wide = group.pivot(on=Col.MODEL, index=Col.TASK, values=SCORE).sort(Col.TASK)
        scores = wide.drop(Col.TASK).to_numpy().astype(np.float64)  # tasks x models
        n_tasks, n_models = scores.shape
        if n_models < MIN_MODELS or n_tasks < 2:
            continue
        rng = group_seed(draws.seed, ("stability", as_of, tasks))
        counts = rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), draws.resamples)
        drawn = counts.astype(np.float64) @ scores / n_tasks  # resamples x models
        full = np.ones(n_tasks) @ scores / n_tasks
        moved = np.abs(_min_ranks(drawn) - _min_ranks(full[None, :]))
        rho = _pearson(_average_ranks(drawn), _average_ranks(full[None, :]))
        out.append(
            {
                AS_OF: as_of,
                _GROUP: code,
                BOOT_SPEARMAN_MEAN: float(np.nanmean(rho)) if np.isfinite(rho).any() else None,
                BOOT_RANK_CHANGED: float((moved.max(axis=1) > 0).mean()),
                BOOT_MAX_RANK_CHANGE: int(moved.max()),
            }
        )
    return out


def _min_ranks(scores: np.ndarray) -> np.ndarray:
    """Per row, each model's rank as the leaderboard ranks (1 = best, ties the better)."""
    return 1 + (scores[:, None, :] > scores[:, :, None]).sum(axis=2)


def _average_ranks(scores: np.ndarray) -> np.ndarray:
    """Per row, each model's average rank (ties share their mean rank): ``rankdata``'s."""
    below = (scores[:, None, :] < scores[:, :, None]).sum(axis=2)
    equal = (scores[:, None, :] == scores[:, :, None]).sum(axis=2)
    return below + (equal + 1) / 2.0


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per row, Pearson's correlation of ``x`` and ``y`` (NaN where either is constant)."""
    dx = x - x.mean(axis=1, keepdims=True)
    dy = y - y.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (dx * dy).sum(axis=1) / np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))


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
    (found,) = exactly(pl.concat(rows).with_columns(pl.col(SPEARMAN).fill_nan(None)))
    (tested,) = exactly(found.lazy().with_columns(_p_values(found)).sort(AS_OF, SIGNAL))
    return tested


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
