"""The comparison tables of one night, from its episode scores: the intervals, rank
intervals and tiers added to ``model_scores`` and ``category_scores``, ``model_comparisons``,
and what a night's regressions need besides the statistics (the harness-error share of each
model, the models with nothing scored or absent). The I/O around them (the baseline nights
read from an output) is ``flows.comparisons``'.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from schemas.columns import COMPARED_COLUMNS, PROVENANCE, STATUS, EpisodeStatus
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE,
    BASELINE_DATES,
    CI_HIGH,
    CI_HIGH_BY_CATEGORY,
    CI_LOW,
    CI_LOW_BY_CATEGORY,
    DESIGN,
    HARNESS_ERROR_SHARE,
    LEVEL_NOT_COMPARABLE,
    N_BASELINE_NIGHTS,
    N_PAIRS,
    OVERALL,
    OVERALL_BY_CATEGORY,
    PAIRED,
    PAIRED_NONE,
    RANK_HIGH,
    RANK_LOW,
    RANK_UB,
    REASON,
    SCOPE,
    Design,
)
from schemas.contract import DUMP_DATE, Col
from schemas.tables import REGRESSIONS_TABLE
from transforms.aggregate import Bootstrap
from transforms.compact import compact, plain
from transforms.compare import (
    Known,
    NightStatistics,
    check_design,
    comparisons_and_rank_intervals,
    significance_tiers,
)


def compared(scores: pl.DataFrame) -> pl.DataFrame:
    """The columns of episode scores that comparisons read (``COMPARED_COLUMNS``), compact."""
    return compact(scores.select(COMPARED_COLUMNS))


class NightTables(NamedTuple):
    models: pl.DataFrame  # model_scores: intervals, rank intervals and tiers added
    categories: pl.DataFrame  # category_scores: intervals and ranks added
    comparisons: pl.DataFrame  # model_comparisons
    intervals: pl.DataFrame  # score_intervals (a standing's next keeps its unchanged models')


def episode_statistics(
    scores: pl.DataFrame, bootstrap: Bootstrap, known: Known | None = None
) -> NightStatistics:
    """What ``night_comparisons`` needs of the episode scores alone (not of the task, model
    or category scores): the comparisons, score and rank intervals of ``scores``' models
    (``known``: the pairs compared already, ``pairs.Known``). A caller may make it beside
    the task scores."""
    design = check_design(bootstrap.design)
    return comparisons_and_rank_intervals(
        compared(scores), level=bootstrap.level, design=design, known=known
    )


def night_comparisons(
    models: pl.DataFrame,
    categories: pl.DataFrame,
    scores: pl.DataFrame,
    bootstrap: Bootstrap,
    known: Known | None = None,
    *,
    statistics: NightStatistics | None = None,
) -> NightTables:
    """A night's model and category scores with their intervals (the two-level design at
    the bootstrap's level), each model's rank interval (holding for all models at once) and
    rank bound (from the Holm verdicts), its significance tier, each model's rank and rank
    interval in each category (among every model with a score in it), and its
    ``model_comparisons`` rows (``known``: the pairs compared already, ``pairs.Known``).
    ``statistics``: ``episode_statistics`` of the same arguments, made already."""
    night = episode_statistics(scores, bootstrap, known) if statistics is None else statistics
    tiers = plain(significance_tiers(night.comparisons))
    key = [DUMP_DATE, Col.MODEL]
    intervals = plain(night.intervals)

    def interval(scope: str, low: str, high: str) -> pl.DataFrame:
        chosen = intervals.filter(pl.col(SCOPE) == scope)
        return chosen.select(*key, pl.col(CI_LOW).alias(low), pl.col(CI_HIGH).alias(high))

    ranks = plain(night.ranks.select(*key, RANK_LOW, RANK_HIGH, RANK_UB))
    ranked = (
        plain(models)
        .join(interval(OVERALL, CI_LOW, CI_HIGH), on=key, how="left", nulls_equal=True)
        .join(
            interval(OVERALL_BY_CATEGORY, CI_LOW_BY_CATEGORY, CI_HIGH_BY_CATEGORY),
            on=key,
            how="left",
            nulls_equal=True,
        )
        .join(ranks, on=key, how="left", nulls_equal=True)
        .join(tiers, on=key, how="left", nulls_equal=True)
    )
    per_category = intervals.select(
        *key, pl.col(SCOPE).alias(Col.CATEGORY), CI_LOW, CI_HIGH
    ).filter(~pl.col(Col.CATEGORY).is_in([OVERALL, OVERALL_BY_CATEGORY]))
    with_intervals = (
        plain(categories)
        .join(per_category, on=[*key, Col.CATEGORY], how="left", nulls_equal=True)
        .join(plain(night.category_ranks), on=[*key, Col.CATEGORY], how="left", nulls_equal=True)
    )
    return NightTables(ranked, with_intervals, plain(night.comparisons), intervals)


def harness_shares(scores: pl.DataFrame, rejects: pl.DataFrame) -> pl.DataFrame:
    """Per night and model: the share of its episodes that ended in a harness error."""
    key = [DUMP_DATE, Col.MODEL]
    episodes, errors = pl.len().cast(pl.Int64), pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR
    none = pl.lit(0, pl.Int64)
    # Counted per model first: the scores may be compact, the rejects are text. (Lazily:
    # polars' eager group_by of a night's 4 M episodes with a literal took 450 MB.)
    scored = scores.lazy().group_by(key).agg(episodes.alias("__n"))
    unscored = (
        rejects.lazy()
        .filter(pl.col(Col.MODEL).is_not_null())
        .group_by(key)
        .agg(episodes.alias("__n"), errors.sum().cast(pl.Int64).alias("__errors"))
    )
    counted = pl.collect_all([scored.with_columns(none.alias("__errors")), unscored])
    ran = pl.concat([plain(frame) for frame in counted])
    share = pl.col("__errors").sum() / pl.col("__n").sum()
    return ran.group_by(key).agg(share.alias(HARNESS_ERROR_SHARE))


def models_without_scores(scores: pl.DataFrame, rejects: pl.DataFrame) -> dict[str, str]:
    """The models of a night with episodes but none scored, each with why (its harness
    errors and rejected episodes): they must not vanish from the night silently.

    >>> rejects = pl.DataFrame({"model": ["m", "m", "n"], "status": ["harness_error"] * 3})
    >>> models_without_scores(pl.DataFrame({"model": ["n"]}), rejects)
    {'m': 'no episode scored: 2 episode(s), 2 harness error(s), 0 rejected'}
    """
    scored = scores.lazy().select(pl.col(Col.MODEL).cast(pl.String).unique())
    counted = (
        rejects.lazy()
        .filter(pl.col(Col.MODEL).is_not_null())
        .join(scored, on=Col.MODEL, how="anti")
        .group_by(Col.MODEL)
        .agg(
            (pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR).sum().alias("errors"),
            (pl.col(STATUS) == EpisodeStatus.REJECTED).sum().alias("rejected"),
        )
        .sort(Col.MODEL)
        .collect()
    )
    return {
        model: nothing_scored(errors, rejected) for model, errors, rejected in counted.iter_rows()
    }


def nothing_scored(errors: int, rejected: int) -> str:
    """Why a night, or a model on it, has no score: its episodes, every one a harness
    error or rejected (the run's record, status, the report and ``regressions`` say the same).

    >>> nothing_scored(3, 1)
    'no episode scored: 4 episode(s), 3 harness error(s), 1 rejected'
    """
    return (
        f"no episode scored: {errors + rejected} episode(s), {errors} harness error(s), "
        f"{rejected} rejected"
    )


# Why a model of the baseline nights has no regression tonight: it ran nothing tonight.
ABSENT = "no episode on this night (it ran on the baseline night): its standing keeps its results"


def absent_models(baseline: list[pl.DataFrame], tonight: pl.DataFrame) -> list[str]:
    """The models with episodes on a baseline night (their ``harness_shares`` rows: scored
    or not) and none tonight, in name order.

    >>> shares = lambda *models: pl.DataFrame({"model": list(models)})
    >>> absent_models([shares("a", "b"), shares("c")], shares("b"))
    ['a', 'c']
    """
    before = {str(m) for frame in baseline for m in frame[Col.MODEL].to_list()}
    return sorted(before - {str(m) for m in tonight[Col.MODEL].to_list()})


def unscored_regressions(
    night: str, baseline_kind: str, baseline: list[str], dark: dict[str, str]
) -> pl.DataFrame:
    """A ``not_comparable`` row (scope overall) for each model of ``dark`` (with why): a
    model with episodes on ``night`` but none scored, or none at all, is never silently
    absent from the night's regressions."""
    rows = [
        {
            DUMP_DATE: night,
            Col.MODEL: model,
            SCOPE: OVERALL,
            BASELINE: baseline_kind,
            BASELINE_DATES: ",".join(baseline),
            N_BASELINE_NIGHTS: len(baseline),
            N_PAIRS: 0,
            PAIRED: PAIRED_NONE,
            DESIGN: Design.NONE.value,  # nothing scored: no variance
            ALERT_LEVEL: LEVEL_NOT_COMPARABLE,
            REASON: why,
        }
        for model, why in dark.items()
    ]
    empty = no_regressions()
    return pl.DataFrame(rows, schema=empty.schema) if rows else empty


def no_regressions() -> pl.DataFrame:
    """The ``regressions`` rows of a night with none: its columns, provenance aside."""
    return REGRESSIONS_TABLE.empty().drop(*PROVENANCE)
