"""Column names and values of the benchmark's health tables (``stability``, ``task_health``,
``category_health``, ``signals``; ``transforms.health`` computes them per standing)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# stability: leave one task out, per group of models that ran the same tasks
N_MODELS: Final = "n_models"
LOO_SPEARMAN_MEAN: Final = "loo_spearman_mean"
LOO_SPEARMAN_MIN: Final = "loo_spearman_min"
LOO_MAX_RANK_CHANGE: Final = "loo_max_rank_change"
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
