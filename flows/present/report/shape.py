"""The frames the report draws: one small pure function of polars frames per chart or
table (no I/O, no figures)."""

from __future__ import annotations

from statistics import NormalDist
from typing import Final, TypeVar

import polars as pl

from schemas.columns import (
    CALLS,
    N_EPISODES,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    RANK,
    RULES,
    SCORE,
    STATUS,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
    WALL_MS,
    EpisodeStatus,
)
from schemas.comparisons import (
    ALERT_LEVEL,
    CATEGORIES_COVERED,
    CI_HIGH,
    CI_HIGH_BY_CATEGORY,
    CI_LOW,
    CI_LOW_BY_CATEGORY,
    DELTA,
    DESIGN,
    DIFF,
    DIFF_LEVEL,
    DIFF_LEVEL_MODEL,
    FORMULA_VERSIONS,
    LEVEL_ALERT,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    MODEL_A,
    MODEL_B,
    N_RANKED,
    N_TASKS,
    N_TASKS_A_BETTER,
    N_TASKS_B_BETTER,
    NEW_FORMULA,
    NEW_RANK,
    NEW_SCORE,
    OLD_FORMULA,
    OLD_RANK,
    OLD_SCORE,
    OVERALL,
    P_HOLM,
    P_WILCOXON,
    PAIRED,
    RANK_BY_CATEGORY,
    RANK_HIGH,
    RANK_LOW,
    RANK_UB,
    RANKED_AMONG,
    REASON,
    SCOPE,
    SCORE_BY_CATEGORY,
    TIER,
    VERDICT,
)
from schemas.contract import (
    COST_USD,
    DUMP_DATE,
    INPUT_TOKENS,
    LATENCY_MS,
    OUTPUT_TOKENS,
    Category,
    Col,
)

UNKNOWN: Final = "(unknown)"


def nights(models: pl.DataFrame, column: str = DUMP_DATE) -> list[str | None]:
    """The nights of ``column`` in date order (the undated one first)."""
    return sorted(models[column].unique().to_list(), key=lambda n: (n is not None, n or ""))


Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def of_night(frame: Frame, night: str | None, column: str = DUMP_DATE) -> Frame:
    """``frame``'s rows of ``night`` in its night column ``column`` (``dump_date``, or a
    standing's ``as_of``; ``None``: the undated night); a scan of a Delta table so
    filtered reads only that night's partition."""
    if column not in frame.collect_schema().names():
        return frame
    return frame.filter(pl.col(column).is_null() if night is None else pl.col(column) == night)


def leaderboard(models: pl.DataFrame) -> pl.DataFrame:
    """The night's models (or a standing's), widest coverage first, each coverage group in
    rank order; a standing's with the nights its results come from."""
    nights = [c for c in (OLDEST_NIGHT, NEWEST_NIGHT) if c in models.columns]
    return models.select(
        RANK,
        RANK_LOW,
        RANK_HIGH,
        RANK_UB,
        TIER,
        RANKED_AMONG,
        N_RANKED,
        Col.MODEL,
        SCORE,
        CI_LOW,
        CI_HIGH,
        SCORE_BY_CATEGORY,
        CI_LOW_BY_CATEGORY,
        CI_HIGH_BY_CATEGORY,
        RANK_BY_CATEGORY,
        CATEGORIES_COVERED,
        N_TASKS,
        N_EPISODES,
        *nights,
    ).sort(
        [CATEGORIES_COVERED, RANKED_AMONG, RANK, Col.MODEL],
        descending=[True, False, False, False],
    )


PER_EPISODE: Final = "_per_episode"  # score_and_cost: a total over the episodes with usage


def score_and_cost(models: pl.DataFrame) -> pl.DataFrame:
    """The models whose episodes record a cost (contract 1.3): score, its interval, and per
    episode that records usage, the cost, tokens, latency, calls and wall time (each total over
    ``usage_episodes``); cheapest first. Empty where no model records a cost."""
    episodes = pl.col(USAGE_EPISODES).cast(pl.Float64)
    measures = (COST_USD, INPUT_TOKENS, OUTPUT_TOKENS, LATENCY_MS, CALLS, WALL_MS)
    for column, dtype in ((CALLS, pl.Int64), (WALL_MS, pl.Float64)):
        if column not in models.columns:  # rows scored before cogscore counted it: null
            models = models.with_columns(pl.lit(None, dtype).alias(column))
    return (
        models.filter(pl.col(COST_USD).is_not_null() & (pl.col(USAGE_EPISODES) > 0))
        .select(
            Col.MODEL,
            SCORE,
            CI_LOW,
            CI_HIGH,
            N_EPISODES,
            USAGE_EPISODES,
            USAGE_INCOMPLETE,
            COST_USD,
            *((pl.col(m).cast(pl.Float64) / episodes).alias(m + PER_EPISODE) for m in measures),
        )
        .sort(COST_USD + PER_EPISODE, Col.MODEL)
    )


def pairwise(comparisons: pl.DataFrame, scope: str = OVERALL) -> pl.DataFrame:
    """The night's comparisons in ``scope``: one row per ordered pair."""
    return comparisons.filter(pl.col(SCOPE) == scope).select(
        MODEL_A,
        MODEL_B,
        DIFF,
        CI_LOW,
        CI_HIGH,
        P_HOLM,
        VERDICT,
        PAIRED,
        DESIGN,
        P_WILCOXON,
        N_TASKS_A_BETTER,
        N_TASKS_B_BETTER,
        REASON,
    )


def flagged_regressions(regressions: pl.DataFrame) -> pl.DataFrame:
    """The night's regression rows that are not quiet: alerts, watches, not comparable."""
    order = {LEVEL_ALERT: 0, LEVEL_WATCH: 1, LEVEL_NOT_COMPARABLE: 2}
    return (
        regressions.filter(pl.col(ALERT_LEVEL).is_in(list(order)))
        .with_columns(pl.col(ALERT_LEVEL).replace_strict(order, return_dtype=pl.Int64).alias("_o"))
        .sort("_o", Col.MODEL, "scope")
        .drop("_o")
    )


def category_profile(categories: pl.DataFrame) -> pl.DataFrame:
    order = {c: i for i, c in enumerate(Category)}
    return categories.select(
        Col.MODEL,
        Col.CATEGORY,
        SCORE,
        CI_LOW,
        CI_HIGH,
        N_EPISODES,
        pl.col(Col.CATEGORY).replace_strict(order, default=len(order)).alias("order"),
    ).sort("order", Col.MODEL)


def z_of(level: float) -> float:
    """The standard normal quantile of a two-sided ``level`` interval.

    >>> round(z_of(0.95), 4), round(z_of(0.90), 4)
    (1.96, 1.6449)
    """
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def mean_interval(value: str, level: float) -> list[pl.Expr]:
    """Mean, count and normal-approximation ``level`` interval of ``value`` (per group)."""
    half = z_of(level) * pl.col(value).std() / pl.col(value).count().sqrt()
    return [
        pl.col(value).mean().alias("mean"),
        pl.col(value).count().alias("n"),
        (pl.col(value).mean() - half).alias("low"),
        (pl.col(value).mean() + half).alias("high"),
    ]


def learning_curve(rounds: pl.DataFrame, episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Mean round score by practice round and model, over the night's scored procedural
    episodes (the rounds of rejected episodes are left out by the join)."""
    scored = episodes.filter(pl.col(Col.CATEGORY) == Category.PROCEDURAL_LEARNING).select(
        Col.EPISODE_ID, Col.MODEL
    )
    return (
        rounds.join(scored, on=Col.EPISODE_ID, how="inner")
        .group_by(Col.MODEL, Col.ROUND)
        .agg(mean_interval(Col.VALUE, level))
        .sort(Col.MODEL, Col.ROUND)
    )


PROCEDURAL_COMPONENTS: Final = ("asymptote", "trajectory", "consistency", "transfer")


def procedural_components(episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Per model and component: the mean of the procedural episodes' component."""
    return (
        episodes.filter(pl.col(Col.CATEGORY) == Category.PROCEDURAL_LEARNING)
        .unpivot(PROCEDURAL_COMPONENTS, index=Col.MODEL, variable_name="component")
        .group_by(Col.MODEL, "component")
        .agg(mean_interval("value", level))
        .sort(Col.MODEL, "component")
    )


def episode_values(episodes: pl.DataFrame, category: Category, value: str) -> pl.DataFrame:
    """``value`` of every scored episode of ``category`` that has one."""
    return (
        episodes.filter((pl.col(Col.CATEGORY) == category) & pl.col(value).is_not_null())
        .select(Col.MODEL, Col.TASK, value)
        .sort(Col.MODEL, Col.TASK)
    )


def solve_rates(episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Runtime RL solve rate per model and task with its ``level`` Wilson interval."""
    z = z_of(level)
    z2 = z * z
    n, p = pl.col("n"), pl.col("rate")
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * ((p * (1 - p) / n + z2 / (4 * n * n)).sqrt()) / (1 + z2 / n)
    return (
        episodes.filter(pl.col(Col.CATEGORY) == Category.RUNTIME_RL)
        .group_by(Col.MODEL, Col.TASK)
        .agg(pl.col("success").cast(pl.Float64).mean().alias("rate"), pl.len().alias("n"))
        .with_columns((centre - half).alias("low"), (centre + half).alias("high"))
        .sort(Col.TASK, Col.MODEL)
    )


def accuracy_by_examples(episodes: pl.DataFrame, category: Category, level: float) -> pl.DataFrame:
    """Mean accuracy per model and number of examples used (with its interval)."""
    return (
        episodes.filter((pl.col(Col.CATEGORY) == category) & pl.col("examples_used").is_not_null())
        .group_by(Col.MODEL, "examples_used")
        .agg(mean_interval("accuracy", level))
        .sort(Col.MODEL, "examples_used")
    )


def over_time(models: pl.DataFrame, column: str = DUMP_DATE) -> pl.DataFrame:
    """Each model's overall score night by night (``column``: the night column of
    ``models``, a night's ``model_scores`` or the ``standings``), as ``dump_date``."""
    return (
        models.filter(pl.col(column).is_not_null())
        .select(
            pl.col(column).alias(DUMP_DATE),
            Col.MODEL,
            SCORE,
            CI_LOW,
            CI_HIGH,
            RANK,
            FORMULA_VERSIONS,
        )
        .sort(DUMP_DATE, Col.MODEL)
    )


def reject_reasons(rejects: pl.DataFrame) -> pl.DataFrame:
    """Rejected episodes (not harness errors) per rule broken and model: an episode that
    broke two rules counts under both."""
    return (
        rejects.filter(pl.col(STATUS) == EpisodeStatus.REJECTED)
        .select(pl.col(Col.MODEL).fill_null(UNKNOWN), pl.col(RULES).alias("rule"))
        .explode("rule")
        .group_by("rule", Col.MODEL)
        .agg(pl.len().alias("episodes"))
        .sort("rule", Col.MODEL)
    )


def harness_errors(rejects: Frame) -> Frame:
    return (
        rejects.filter(pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR)
        .group_by(pl.col(Col.MODEL).fill_null(UNKNOWN), pl.col(DUMP_DATE).fill_null("undated"))
        .agg(pl.len().alias("episodes"))
        .sort(DUMP_DATE, Col.MODEL)
    )


def diff_rows(diff: pl.DataFrame) -> pl.DataFrame:
    """The rescore diff, one row per night, model and level, ``what`` = overall or the
    category."""
    return diff.select(
        DUMP_DATE,
        Col.MODEL,
        pl.when(pl.col(DIFF_LEVEL) == DIFF_LEVEL_MODEL)
        .then(pl.lit(OVERALL))
        .otherwise(pl.col(Col.CATEGORY))
        .alias("what"),
        OLD_SCORE,
        NEW_SCORE,
        DELTA,
        OLD_RANK,
        NEW_RANK,
        OLD_FORMULA,
        NEW_FORMULA,
        (pl.col(DIFF_LEVEL) == DIFF_LEVEL_MODEL).alias("overall"),
    ).sort(DUMP_DATE, pl.col("overall").not_(), "what", Col.MODEL)
