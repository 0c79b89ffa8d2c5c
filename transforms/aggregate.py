"""Aggregates of episode scores: per task, per category, per model.

A night (``dump_date``) is the unit of reporting: every aggregate is per ``dump_date``.

A task's score is the mean of its episode scores, a category's the mean of its task scores;
a model's overall ``score`` is the mean of its task scores, each task weighing the same (the
published LearningBench leaderboard's mean), and ``score_by_category`` the mean of its
category scores. Means run over rows in a fixed order (episode, task, category), so a rerun
gives the same bits whatever order polars meets the rows in.

A task's interval is a percentile bootstrap of its episodes (null where they do not vary:
one episode, or every one the same score; there is no spread to resample). Each group's
random stream is seeded from the run's seed and the group's own key, so an interval does not
depend on the other groups or on row order. The
intervals of categories and models follow the comparisons' sampling design
(``transforms.compare.score_intervals``: the tasks a sample of the ability, the episodes
within them).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import numpy as np
import polars as pl

from schemas.columns import FORMULA_VERSION, N_EPISODES, RANK, SCORE, STD, Component
from schemas.comparisons import (
    CATEGORIES_COVERED,
    CI_HIGH,
    CI_LOW,
    DEFAULT_LEVEL,
    DESIGNS,
    FORMULA_VERSIONS,
    N_RANKED,
    N_TASKS,
    RANK_BY_CATEGORY,
    RANKED_AMONG,
    SCORE_BY_CATEGORY,
    Design,
)
from schemas.contract import DUMP_DATE, FILE, UNCATEGORISED, Col
from transforms.usage import EPISODE_COLUMNS, TOTALS, rolled_up, task_usage, usage_sums, with_usage

TASK_KEY: Final = [DUMP_DATE, Col.MODEL, Col.CATEGORY, Col.TASK]
CATEGORY_KEY: Final = [DUMP_DATE, Col.MODEL, Col.CATEGORY]
MODEL_KEY: Final = [DUMP_DATE, Col.MODEL]
REPLICATE: Final = "replicate"
MEAN_PREFIX: Final = "mean_"


@dataclass(frozen=True)
class Bootstrap:
    """How a run states its uncertainty: ``level`` intervals everywhere (scores, ranks,
    differences), the percentile bootstraps' ``resamples`` and ``seed``, and the sampling
    ``design`` of the intervals and tests (README "Comparisons and statistics":
    ``two_level``, the tasks a sample of the ability and the episodes within them; or
    ``within_tasks``, the tasks fixed)."""

    resamples: int = 1000
    level: float = DEFAULT_LEVEL
    seed: int = 20261202
    design: str = Design.TWO_LEVEL.value

    def __post_init__(self) -> None:
        if self.design not in DESIGNS:
            raise ValueError(f"the design is one of {', '.join(DESIGNS)}, not {self.design!r}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"the level is a share between 0 and 1, not {self.level}")

    @property
    def quantiles(self) -> tuple[float, float]:
        tail = (1.0 - self.level) / 2.0
        return tail, 1.0 - tail


def group_seed(seed: int, key: Sequence[object]) -> np.random.Generator:
    digest = hashlib.sha256("\x1f".join("" if k is None else str(k) for k in key).encode())
    words = np.frombuffer(digest.digest()[:16], dtype=np.uint32)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *words.tolist()])))


# Resamples are drawn and summed in blocks of this many, small enough to stay in cache.
_BLOCK: Final = 32
# A binomial draw costs about as much as this many index draws (measured: 100 ns against
# 9 ns): counting draws of the distinct values pays where they are this many times fewer.
_BINOMIAL_COST: Final = 16


def _replicate_means(values: np.ndarray, key: Sequence[object], bootstrap: Bootstrap) -> np.ndarray:
    # One group's episode scores (a task of a model on a night, ordered by episode id). A
    # resample draws n of them with replacement; only how often each distinct value is
    # drawn matters, which is multinomial. Where values repeat a lot (a fraction of a few
    # items), numpy draws those counts, a cost per distinct value; else it draws indices,
    # a cost per episode. Either way the same distribution, and the same numbers on every
    # run: the draws come from the group's own stream.
    n = len(values)
    if n == 1:  # every resample is the one episode: its mean is its score, nothing drawn
        return np.full(bootstrap.resamples, values[0] + 0.0)  # (a sum of draws: -0.0 is 0.0)
    rng = group_seed(bootstrap.seed, key)
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) * _BINOMIAL_COST <= n:
        drawn = rng.multinomial(n, counts / n, size=bootstrap.resamples)
        # Value times count, one distinct value after another (axis 0, not the fast axis:
        # numpy's pairwise sum there can change in the last bit with memory alignment).
        return np.add.reduce(drawn.T * distinct[:, None], axis=0) / n
    sums = np.empty(bootstrap.resamples)
    for start in range(0, bootstrap.resamples, _BLOCK):
        rows = min(_BLOCK, bootstrap.resamples - start)
        picks = rng.integers(0, n, size=(rows, n))
        # Resample j of the block is column j: reducing over axis 0 adds the rows one
        # after the other, a left-to-right sum per resample.
        np.add.reduce(values[np.ascontiguousarray(picks.T)], axis=0, out=sums[start : start + rows])
    return sums / n


def _all_replicate_means(frame: pl.DataFrame, bootstrap: Bootstrap) -> pl.DataFrame:
    # Each group's scores in episode order, the groups one after the other (in key order);
    # those that draw run in threads (numpy releases the GIL) and come back in order. Each
    # group's stream depends on its key alone.
    groups = (
        frame.group_by(TASK_KEY).agg(pl.col(SCORE).sort_by(Col.EPISODE_ID), pl.len()).sort(TASK_KEY)
    )
    values = groups[SCORE].explode().to_numpy()
    ends = groups["len"].cum_sum().to_list()
    keys = groups.select(TASK_KEY).rows()
    jobs = [
        (values[end - size : end], key)
        for end, size, key in zip(ends, groups["len"].to_list(), keys, strict=True)
    ]
    # Groups that draw run in threads; a group of one episode draws nothing, and handing
    # it to a thread cost more than its work (a night of 135 such groups: 69 ms against 3).
    alone = [len(group) == 1 for group, _ in jobs]
    drawing = [job for job, one in zip(jobs, alone, strict=True) if not one]
    workers = max(1, min(len(drawing), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        drawn = pool.map(lambda job: _replicate_means(job[0], job[1], bootstrap), drawing)
        means = [
            _replicate_means(group, key, bootstrap) if one else next(drawn)
            for (group, key), one in zip(jobs, alone, strict=True)
        ]
    resamples = bootstrap.resamples
    return pl.DataFrame(
        {
            **{c: groups[c].gather(np.repeat(np.arange(len(jobs)), resamples)) for c in TASK_KEY},
            REPLICATE: np.tile(np.arange(resamples, dtype=np.int32), len(jobs)),
            SCORE: np.concatenate(means) if means else np.empty(0),
        }
    )


def task_replicates(scores: pl.LazyFrame, bootstrap: Bootstrap) -> pl.LazyFrame:
    """One row per task group and replicate: the mean of a resample of its episodes (keys
    in the dtypes of ``scores``: text, or Categorical where the night's rows are staged)."""
    keys = scores.collect_schema()
    schema = {**{c: keys[c] for c in TASK_KEY}, REPLICATE: pl.Int32(), SCORE: pl.Float64()}
    return scores.select(*TASK_KEY, Col.EPISODE_ID, SCORE).map_batches(
        lambda frame: _all_replicate_means(frame, bootstrap), schema=schema
    )


def mean_in_order(values: pl.Expr, *order: str) -> pl.Expr:
    """The mean of the non-null values summed left to right in the order of the columns
    ``order``: the same bits whatever the row order or chunking polars meets them in (no
    ``order``: in the rows' order, for rows sorted already; a group keeps its rows' order).

    >>> df = pl.DataFrame({"v": [0.1, None, 0.2], "k": ["b", "a", "c"]})
    >>> df.select(mean_in_order(pl.col("v"), "k")).item()
    0.15000000000000002
    """
    present = (values.sort_by(*order) if order else values).drop_nulls()
    return present.cum_sum().last() / present.len().cast(pl.Float64)


def _interval(replicates: pl.LazyFrame, key: list[str], bootstrap: Bootstrap) -> pl.LazyFrame:
    """Percentile interval of each group's replicates; null where they are all the same (one
    episode, or every episode the same score): no spread to measure, rather than an
    interval of zero width."""
    low, high = bootstrap.quantiles
    varies = pl.col(SCORE).n_unique() > 1
    return replicates.group_by(key).agg(
        pl.when(varies).then(pl.col(SCORE).quantile(low, "linear")).alias(CI_LOW),
        pl.when(varies).then(pl.col(SCORE).quantile(high, "linear")).alias(CI_HIGH),
    )


PART_SUM: Final = "sum_"  # component_sums: per file and task, each component's sum ...
PART_COUNT: Final = "n_"  # ... and how many episodes have it


def component_sums(scores: pl.LazyFrame) -> pl.LazyFrame:
    """Per file and task group: each component's sum over the file's episodes, left to right
    in episode order, and its count of non-null values, and the episodes' usage
    (``transforms.usage.usage_sums``). A file's sums are all a night's reduction needs of
    its components (``component_means``) and usage (``task_usage``), so the episode rows
    can be written where the file was scored."""
    schema = scores.collect_schema()
    components = [c for c in Component if c in schema]
    if FILE not in schema:  # one part
        scores = scores.with_columns(pl.lit("").alias(FILE))
    # Sorted once by episode (a group keeps its rows' order), not in each group once per
    # component and usage measure (19 sorts): a night of 98,518 episodes' sums 47 ms of CPU
    # to 35. An id is one episode of its file: the order, and so the bits, are the same.
    return (
        with_usage(scores, EPISODE_COLUMNS)
        .sort(Col.EPISODE_ID, maintain_order=True)
        .group_by(FILE, *TASK_KEY)
        .agg(
            *(
                pl.col(c)
                .cast(pl.Float64)
                .drop_nulls()
                .cum_sum()  # left to right (a sum may add in another order)
                .last()
                .alias(PART_SUM + c)
                for c in components
            ),
            *(pl.col(c).count().alias(PART_COUNT + c) for c in components),
            *usage_sums(),
        )
    )


def component_means(sums: pl.LazyFrame) -> pl.LazyFrame:
    """Per task group: each component's mean (``mean_<component>``), from the files' sums
    added left to right in file order: the same bits on every run, whichever engine scored
    the files."""
    names = [n.removeprefix(PART_SUM) for n in sums.collect_schema() if n.startswith(PART_SUM)]
    ordered = sums.sort(FILE)
    return ordered.group_by(TASK_KEY).agg(
        (
            pl.col(PART_SUM + c).filter(pl.col(PART_COUNT + c) > 0).cum_sum().last()
            / pl.col(PART_COUNT + c).sum().cast(pl.Float64)
        ).alias(MEAN_PREFIX + c)
        for c in names
    )


def task_scores(
    scores: pl.LazyFrame,
    replicates: pl.LazyFrame,
    bootstrap: Bootstrap,
    sums: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Per model and task (per night): mean score, episodes, std, interval, mean components
    and usage (from ``sums``, the files' ``component_sums``; by default those of
    ``scores``)."""
    summary = scores.group_by(TASK_KEY).agg(
        mean_in_order(pl.col(SCORE), Col.EPISODE_ID),
        pl.len().cast(pl.Int64).alias(N_EPISODES),
        pl.col(SCORE).sort_by(Col.EPISODE_ID).std(ddof=1).alias(STD),
        pl.col(FORMULA_VERSION).min(),  # one formula per category in a run
    )
    parts = (component_sums(scores) if sums is None else sums).cache()
    means = component_means(parts).join(task_usage(parts, TASK_KEY), on=TASK_KEY, nulls_equal=True)
    return summary.join(means, on=TASK_KEY, how="left", nulls_equal=True).join(
        _interval(replicates, TASK_KEY, bootstrap), on=TASK_KEY, nulls_equal=True
    )


def in_a_category(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``rows`` (of tasks or episodes) less those of a task in no category (contract 1.4's
    ``uncategorised``): they count in the overall score, in no category's."""
    return rows.filter(pl.col(Col.CATEGORY) != UNCATEGORISED)


def category_scores(tasks: pl.LazyFrame) -> pl.LazyFrame:
    """Per model and category (per night): the mean of its task scores (each task weighs the
    same), tasks and episodes, and their usage added up from the task rows
    (``transforms.usage.rolled_up``). A task in no category is in none of these rows.
    (Intervals: ``transforms.compare.score_intervals``.)"""
    # Sorted once by task (a group keeps its rows' order), not in each group once per sum.
    return (
        with_usage(in_a_category(tasks), TOTALS)
        .sort(Col.TASK)
        .group_by(CATEGORY_KEY)
        .agg(
            mean_in_order(pl.col(SCORE)),
            pl.len().cast(pl.Int64).alias(N_TASKS),
            pl.col(N_EPISODES).sum().cast(pl.Int64),
            pl.col(FORMULA_VERSION).min(),
            *rolled_up(),
        )
    )


def model_scores(tasks: pl.LazyFrame, categories: pl.LazyFrame) -> pl.LazyFrame:
    """Per model (per night): ``score``, the mean of its task scores (each task weighs the
    same: the benchmark's own overall score), and ``score_by_category``, the mean of its
    category scores (each category weighs the same); its tasks, categories covered (of six), the
    models it is ranked among (``ranked_among``: those covering the same categories, named
    comma-joined; ``n_ranked`` of them), its rank there by ``score`` (1 = best, ties share
    the better rank) and by ``score_by_category``. A model is never ranked beside models of
    another coverage: its score averages other categories. A task in no category (contract
    1.4) counts in ``score`` and ``n_tasks`` alone; a model all of whose tasks are in none has
    no ``score_by_category`` and covers no category (0, ``ranked_among`` empty). (Intervals:
    ``transforms.compare.score_intervals``.)"""
    versions = pl.concat_str(pl.col(Col.CATEGORY), pl.lit("="), pl.col(FORMULA_VERSION))
    # Sorted once by (category, task): each group's sums run in that order.
    by_task = (
        with_usage(tasks, TOTALS)
        .sort(Col.CATEGORY, Col.TASK)
        .group_by(MODEL_KEY)
        .agg(
            mean_in_order(pl.col(SCORE)),
            pl.len().cast(pl.Int64).alias(N_TASKS),  # every task, in a category or none
            pl.col(N_EPISODES).sum().cast(pl.Int64),
            *rolled_up(),  # usage from the task rows, as the score
        )
    )
    summary = categories.group_by(MODEL_KEY).agg(
        mean_in_order(pl.col(SCORE), Col.CATEGORY).alias(SCORE_BY_CATEGORY),
        pl.len().cast(pl.Int64).alias(CATEGORIES_COVERED),
        pl.col(Col.CATEGORY).sort().str.join(",").alias(RANKED_AMONG),
        versions.sort().str.join(",").alias(FORMULA_VERSIONS),
    )
    group = [DUMP_DATE, RANKED_AMONG]
    # A model whose tasks are all in no category has an overall score and none by category.
    joined = by_task.join(summary, on=MODEL_KEY, how="left", nulls_equal=True)
    return joined.with_columns(
        pl.col(CATEGORIES_COVERED).fill_null(0),
        pl.col(RANKED_AMONG, FORMULA_VERSIONS).fill_null(""),
    ).with_columns(
        pl.len().over(group).cast(pl.Int64).alias(N_RANKED),
        pl.col(SCORE).rank("min", descending=True).over(group).cast(pl.Int64).alias(RANK),
        pl.col(SCORE_BY_CATEGORY)
        .rank("min", descending=True)
        .over(group)
        .cast(pl.Int64)
        .alias(RANK_BY_CATEGORY),
    )
