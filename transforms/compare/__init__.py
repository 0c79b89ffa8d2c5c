"""Comparisons that hold up: paired model differences, score and rank intervals,
significance tiers, regression alerts and the significance of a formula change (README
"Comparisons"; docs/comparisons.md).

Input: episode scores, one row per scored episode, with ``dump_date``, ``model``,
``category``, ``task``, ``episode_id``, ``score`` and optionally ``instance_id`` (contract
1.1: episodes of the same task with the same ``instance_id`` faced the same instance).

Scores are those of ``transforms.aggregate`` bit for bit (``prepare``). A comparison is a
linear contrast of such scores (``score_a - score_b``, a night against the mean of its
baseline nights, ``new - old`` under two formulas); its variance follows a sampling design
(``variance``): by default two-level, the tasks a sample of the ability and the episodes a
sample within each task (Miller, "Adding Error Bars to Evals", arXiv:2411.00640); or, as
before, the tasks fixed.

- ``preparation``: the episodes digested once (units, task scores, cluster terms, weights);
- ``variance``: the designs' variances (``variance_within``: tasks fixed, ``variance_tasks``:
  tasks a sample); ``inference``: the intervals, p-values and MDE from them;
- ``pairs``: ``model_comparisons``; ``scores``: ``score_intervals``;
- ``ranks``: ``rank_intervals`` (joint, and the verdicts' rank bound; a category's:
  ``category_rank_intervals``), ``significance_tiers``;
- ``regressions``: ``regressions``; ``rescore``: ``rescore_significance``,
  ``rescore_rank_changes``.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from schemas.comparisons import (
    A_BETTER,
    B_BETTER,
    DEFAULT_LEVEL,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    OVERALL,
    OVERALL_BY_CATEGORY,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    UNRESOLVED,
    Design,
)
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from transforms.compare.pairs import COMPARISON_COLUMNS, Known, comparisons_of, model_comparisons
from transforms.compare.preparation import prepare
from transforms.compare.ranks import (
    category_rank_intervals,
    rank_intervals,
    rank_intervals_of,
    significance_tiers,
)
from transforms.compare.regressions import REGRESSION_COLUMNS, regressions
from transforms.compare.rescore import rescore_rank_changes, rescore_significance
from transforms.compare.scores import score_intervals, score_intervals_known
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, check_design

__all__ = [
    "A_BETTER",
    "B_BETTER",
    "COMPARISON_COLUMNS",
    "DEFAULT_DESIGN",
    "INSTANCE_ID",
    "LEVEL_ALERT",
    "LEVEL_NONE",
    "LEVEL_NOT_COMPARABLE",
    "LEVEL_WATCH",
    "OVERALL",
    "OVERALL_BY_CATEGORY",
    "PAIRED_FULL",
    "PAIRED_NONE",
    "PAIRED_PARTIAL",
    "REGRESSION_COLUMNS",
    "UNRESOLVED",
    "Design",
    "DesignChoice",
    "Known",
    "NightStatistics",
    "check_design",
    "comparisons_and_rank_intervals",
    "model_comparisons",
    "rank_intervals",
    "regressions",
    "rescore_rank_changes",
    "rescore_significance",
    "score_intervals",
    "significance_tiers",
]


class NightStatistics(NamedTuple):
    """What a night's tables need of its episodes, prepared once."""

    comparisons: pl.DataFrame  # model_comparisons
    ranks: pl.DataFrame  # rank_intervals
    intervals: pl.DataFrame  # score_intervals
    category_ranks: pl.DataFrame  # category_rank_intervals


def comparisons_and_rank_intervals(
    scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
    known: Known | None = None,
) -> NightStatistics:
    """(``model_comparisons``, ``rank_intervals``, ``score_intervals``,
    ``category_rank_intervals``) of the same scores, the episodes prepared once for all (a
    night's tables need all four). Every interval is a ``level`` interval; the verdicts are
    at ``alpha``. ``known``: the pairs compared already (a standing made from the one
    before: ``pairs.Known``), and the unchanged models' score intervals where it holds
    them."""
    prep = prepare(scores, [DUMP_DATE, Col.MODEL])
    comparisons = comparisons_of(prep, alpha, power, design, level, known)
    intervals = score_intervals_known(prep, level, design, known)
    ranks = rank_intervals_of(prep, comparisons, level)
    per_category = category_rank_intervals(prep, comparisons, level)
    return NightStatistics(comparisons, ranks, intervals, per_category)
