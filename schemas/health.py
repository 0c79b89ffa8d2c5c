"""Column names and values of the benchmark's health tables (``stability``, ``task_health``,
``category_health``, ``signals``; ``transforms.health`` computes them per standing)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import polars as pl

from schemas.columns import (
    AS_OF,
    CATEGORIES,
    PROVENANCE_RULES,
    TASK_CATEGORIES,
    Column,
    Table,
    count_column,
    real_column,
    text_column,
)
from schemas.comparisons import N_TASKS
from schemas.contract import (
    Col,
)

# stability: leave one task out, per group of models that ran the same tasks
MODELS: Final = "models"  # the group's models, by name: which group a row is
N_MODELS: Final = "n_models"
LOO_SPEARMAN_MEAN: Final = "loo_spearman_mean"
LOO_SPEARMAN_MIN: Final = "loo_spearman_min"
LOO_MAX_RANK_CHANGE: Final = "loo_max_rank_change"
# ... and the tasks drawn again (a bootstrap of the group's tasks, each resample the same
# number of tasks drawn with replacement): leaving one task out of many moves little, which
# is not that the ranking is settled; a sample of tasks like this one can move it more.
BOOT_SPEARMAN_MEAN: Final = "boot_spearman_mean"
BOOT_RANK_CHANGED: Final = "boot_rank_changed"  # share of resamples where some rank changes
BOOT_MAX_RANK_CHANGE: Final = "boot_max_rank_change"
# task_health
MEAN: Final = "mean"
SPREAD: Final = "std"
LOWEST: Final = "min"
HIGHEST: Final = "max"
AT_CEILING: Final = "at_ceiling"
AT_FLOOR: Final = "at_floor"
DISCRIMINATION: Final = "discrimination"
# category_health
BEST_MODEL: Final = "best_model"
BEST_SCORE: Final = "best_score"
WORST_MODEL: Final = "worst_model"
WORST_SCORE: Final = "worst_score"
# signals: LearningBench's behavioural signals, over a standing's results
SIGNAL: Final = "signal"
N_RESULTS: Final = "n_results"
SPEARMAN: Final = "spearman"
P_VALUE: Final = "p_value"


class Signal(StrEnum):
    """A behavioural signal: the correlation of a behaviour with the score."""

    # concept formation and language learning: examples requested against score (H1)
    EXAMPLES = "examples_requested_vs_score"
    # runtime RL: tokens spent against score (H2)
    TOKENS = "tokens_spent_vs_score"


STABILITY_TABLE: Final = Table(
    "stability",
    {
        AS_OF: text_column(nullable=True),
        MODELS: Column(pl.List(pl.String())),
        N_MODELS: count_column(1),
        N_TASKS: count_column(1),
        LOO_SPEARMAN_MEAN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        LOO_SPEARMAN_MIN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        LOO_MAX_RANK_CHANGE: count_column(nullable=True),
        BOOT_SPEARMAN_MEAN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        BOOT_RANK_CHANGED: real_column(nullable=True, unit=True),
        BOOT_MAX_RANK_CHANGE: count_column(nullable=True),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(N_MODELS, N_TASKS),
)


TASK_HEALTH_TABLE: Final = Table(
    "task_health",
    {
        AS_OF: text_column(nullable=True),
        Col.CATEGORY: text_column(isin=TASK_CATEGORIES),
        Col.TASK: text_column(),
        N_MODELS: count_column(1),
        MEAN: real_column(),
        SPREAD: real_column(nullable=True, ge=0.0),
        LOWEST: real_column(),
        HIGHEST: real_column(),
        AT_CEILING: Column(pl.Boolean()),
        AT_FLOOR: Column(pl.Boolean()),
        DISCRIMINATION: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(Col.CATEGORY, Col.TASK),
)


CATEGORY_HEALTH_TABLE: Final = Table(
    "category_health",
    {
        AS_OF: text_column(nullable=True),
        Col.CATEGORY: text_column(isin=CATEGORIES),
        N_MODELS: count_column(1),
        BEST_MODEL: text_column(),
        BEST_SCORE: real_column(),
        WORST_MODEL: text_column(),
        WORST_SCORE: real_column(),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(Col.CATEGORY,),
)


SIGNALS_TABLE: Final = Table(
    "signals",
    {
        AS_OF: text_column(nullable=True),
        SIGNAL: text_column(isin=tuple(s.value for s in Signal)),
        N_RESULTS: count_column(),
        SPEARMAN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        P_VALUE: real_column(nullable=True, unit=True),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(SIGNAL,),
)


HEALTH_TABLES: Final = (STABILITY_TABLE, TASK_HEALTH_TABLE, CATEGORY_HEALTH_TABLE, SIGNALS_TABLE)
