"""From canonical rows to scored episodes and rejects (lazily: nothing is collected here).

``score_rows`` returns two LazyFrames sharing one plan, the scores and the rows of the
unscored episodes; collect them together (``pl.collect_all``) so the rows are read once. Its
two halves, ``scorable_episodes`` and ``scores_of``, let a caller collect the first and score
the frame it collected (``flows.score.scored_rows``: the same result, optimised in less time).
``rejects_of`` turns the unscored rows into reject rows, with every reason; whole-night
rules come last (``transforms.duplicates.reject_duplicates``).

How the work is split, for speed:

- The rows are read once into one cached frame in episode order, ``content`` kept for
  ``answer`` rows only.
- The verdict of every episode comes from plain aggregations (``episode_facts``); only the
  unscored episodes, a small share, get the detailed facts that name every rule and reason
  (``rejects_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from schemas.columns import (
    EPISODE_SCORES_DTYPES,
    FEEDBACK_OUT_OF_RANGE,
    FORMULA_VERSION,
    N_ROWS,
    REJECTS_DTYPES,
    ROWS,
    SCORE,
    SCORE_MISMATCH,
    STATUS,
    Component,
    EpisodeStatus,
)
from schemas.contract import REPORTED_SCORE, Category, Col, Kind
from schemas.formulas import REPORTED, task_versions, version_of
from transforms import procedural, runtime_rl
from transforms.episodes import SEGMENT, episode_facts, in_episode_order, of_kind
from transforms.formulas import Registered
from transforms.items import graded_items
from transforms.registry import SCORERS
from transforms.rules import EPISODE_CATEGORY, explain, reported_only, with_status
from transforms.usage import UNPRICED_REPLY, episode_usage, unpriced_reply

# SCORERS ((category, version) -> its function and components) is generated from the
# registrations (transforms.formulas).
# Columns every scored row has, whatever its category.
BASE_COLUMNS: tuple[str, ...] = tuple(c for c in EPISODE_SCORES_DTYPES if c not in set(Component))
# A working column of ``score_rows``: the episode is scored by a formula, not as reported.
_COMPUTED: Final = "__computed"


def judged_episodes(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Every episode's detailed facts, parameters, rules broken and status, for canonical
    rows in any order."""
    facts = episode_facts(in_episode_order(rows), detailed=True)
    return explain(with_status(facts)).drop(SEGMENT)


def rejects_of(unscored: pl.LazyFrame) -> pl.LazyFrame:
    """One reject row per episode of ``unscored`` rows, with every rule and reason."""
    return (
        judged_episodes(unscored)
        .rename({N_ROWS: ROWS})
        .select(*(pl.col(c).cast(t) for c, t in REJECTS_DTYPES.items()))
    )


def score_rows(
    rows: pl.LazyFrame, formulas: Mapping[str, str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(episode scores, unscored rows) for canonical rows (``transforms.ingest.normalise``),
    one file's or several files' (episodes are keyed by file), in any order.

    The unscored rows (every column but content) are those of the episodes that are not
    scored; ``rejects_of`` explains them. They are few, so callers that score many files
    explain them once for all (a plan of its own costs the same for ten rows or ten
    thousand). ``scorable_episodes`` and ``scores_of`` are its two halves."""
    scorable, unscored_rows = scorable_episodes(rows)
    return scores_of(scorable.cache(), formulas), unscored_rows


def scorable_episodes(rows: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(scorable episodes, unscored rows) of canonical rows: the first half of
    ``score_rows``. Each scored episode's facts and every formula's inputs, one row per
    episode, which ``scores_of`` scores.

    A caller that collects this half first and scores the frame it collected spares
    polars' optimiser the second half's seven readers of the whole plan (each branch of
    ``scores_of`` reads it: optimising the plan once took 24 ms of a file's, the branches
    on a frame 1 ms)."""
    # Content is graded for answers only: the other rows' is never kept (usage, contract
    # 1.3, needs only whether a reply has any: a flag).
    answer_content = pl.when(pl.col(Col.KIND) == Kind.ANSWER).then(pl.col(Col.CONTENT))
    # ``kind`` as a code: the plan compares it with a kind some thirty times over the
    # file's rows (0.08 ms each instead of 0.37, its unknown values 0.4 instead of 2.0), for
    # one cast (3.5 ms a file of 264,000 rows); text again in the unscored rows.
    kind = pl.col(Col.KIND).cast(pl.Categorical)
    kept = rows.with_columns(unpriced_reply(), answer_content.alias(Col.CONTENT), kind)
    table = in_episode_order(kept).cache()
    verdicts = with_status(episode_facts(table)).cache()
    scored = pl.col(STATUS) == EpisodeStatus.SCORED
    unscored = verdicts.filter(~scored).select(SEGMENT)
    unscored_rows = (
        table.join(unscored, on=SEGMENT, how="semi")
        .drop(SEGMENT, Col.CONTENT, UNPRICED_REPLY)
        .with_columns(pl.col(Col.KIND).cast(pl.String))
    )
    episodes = verdicts.filter(scored)
    scorable = (
        episodes.drop(Col.CATEGORY)
        .rename({EPISODE_CATEGORY: Col.CATEGORY})
        .join(graded_items(table), on=SEGMENT, how="left")
        .join(runtime_rl.interaction_facts(table), on=SEGMENT, how="left")
        .join(procedural.round_facts(table), on=SEGMENT, how="left")
        .join(reported_scores(table), on=SEGMENT, how="left")
        .join(episode_usage(table, SEGMENT), on=SEGMENT, how="left")
        # Whether the formulas score it, judged once: each branch's filter reads the flag.
        .with_columns(
            pl.col(FEEDBACK_OUT_OF_RANGE).fill_null(0), (~reported_only()).alias(_COMPUTED)
        )
    )
    return scorable, unscored_rows


def scores_of(scorable: pl.LazyFrame, formulas: Mapping[str, str]) -> pl.LazyFrame:
    """The episode scores of ``scorable_episodes``' first frame (cached or collected: every
    category's branch reads it), each by its formula or as reported."""
    computed = pl.col(_COMPUTED)
    per_category = [
        _scored(scorable.filter(computed), category, version, tasks, SCORERS[category, version])
        for category in Category
        for version, tasks in _branches(formulas, category).items()
    ]
    # A reported score alone (a score table imported) is the episode's score: no formula
    # input to compute one from, so no formula version but ``reported``.
    reported = scorable.filter(~computed).with_columns(
        pl.col(REPORTED_SCORE).alias(SCORE),
        pl.lit(REPORTED).alias(FORMULA_VERSION),
        pl.lit(False).alias(SCORE_MISMATCH),  # the score is the one reported
    )
    per_category.append(reported.select(*BASE_COLUMNS))
    return pl.concat(per_category, how="diagonal_relaxed").select(
        pl.col(c).cast(t) for c, t in EPISODE_SCORES_DTYPES.items()
    )


def reported_scores(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode with one: the harness's reported score (contract 1.2), the last non-null
    one on an ``episode_end`` row. ``rows`` are in ``in_episode_order``."""
    reported = pl.col(REPORTED_SCORE)
    ends = of_kind(rows, Kind.EPISODE_END, REPORTED_SCORE).filter(reported.is_not_null())
    return ends.group_by(SEGMENT).agg(reported.last())


def _branches(formulas: Mapping[str, str], category: Category) -> dict[str, pl.Expr]:
    """Per version that ``formulas`` gives some of ``category``'s tasks: which tasks (an
    expression on ``task``). A task's own entry wins over its category's."""
    own = task_versions(formulas, category)
    default = version_of(formulas, category)
    task = pl.col(Col.TASK)
    # A task whose own version is the category's is in the category's branch: every task is
    # in exactly one branch (else its episodes would be neither scored nor rejected).
    branches = {default: ~task.is_in([t for t, v in own.items() if v != default])}
    for version in sorted(set(own.values()) - {default}):
        branches[version] = task.is_in([t for t, v in own.items() if v == version])
    return branches


def _scored(
    scorable: pl.LazyFrame, category: Category, version: str, tasks: pl.Expr, formula: Registered
) -> pl.LazyFrame:
    episodes = scorable.filter((pl.col(Col.CATEGORY) == category) & tasks)
    # Differ: float64 inequality, nothing rounded (null where nothing was reported).
    mismatch = pl.col(SCORE) != pl.col(REPORTED_SCORE)
    return (
        formula.scorer(episodes)
        .with_columns(pl.lit(version).alias(FORMULA_VERSION), mismatch.alias(SCORE_MISMATCH))
        .select(*BASE_COLUMNS, *formula.components)
    )
