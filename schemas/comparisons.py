"""Column names and values of the comparison tables: ``model_comparisons``, ``regressions``,
the rank columns of ``model_scores`` and the significance columns of ``rescore_diff``
(``transforms.compare`` computes them; README "Comparisons")."""

from __future__ import annotations

from typing import Final

# model_comparisons columns.
SCOPE: Final = "scope"  # a category, or OVERALL
OVERALL: Final = "overall"
MODEL_A: Final = "model_a"
MODEL_B: Final = "model_b"
N_TASKS: Final = "n_tasks"
N_EPISODES_A: Final = "n_episodes_a"
N_EPISODES_B: Final = "n_episodes_b"
N_PAIRS: Final = "n_pairs"
PAIRED: Final = "paired"  # PAIRED_FULL, PAIRED_PARTIAL, PAIRED_NONE
SCORE_A: Final = "score_a"
SCORE_B: Final = "score_b"
DIFF: Final = "diff"
SE: Final = "se"
SE_TASKS: Final = "se_tasks"
CI_LOW: Final = "ci_low"
CI_HIGH: Final = "ci_high"
P_VALUE: Final = "p_value"
P_HOLM: Final = "p_holm"
VERDICT: Final = "verdict"
MDE: Final = "mde"

PAIRED_FULL: Final = "full"
PAIRED_PARTIAL: Final = "partial"
PAIRED_NONE: Final = "none"
A_BETTER: Final = "a_better"
B_BETTER: Final = "b_better"
UNRESOLVED: Final = "unresolved"

# rank_intervals and significance_tiers columns.
RANKED_AMONG: Final = "ranked_among"  # the coverage group: categories covered, comma-joined
N_RANKED: Final = "n_ranked"
GROUP_RANK: Final = "group_rank"
RANK_LOW: Final = "rank_low"
RANK_HIGH: Final = "rank_high"
TIER: Final = "tier"

# regressions columns.
BASELINE: Final = "baseline"  # "previous" or "mean"
BASELINE_DATES: Final = "baseline_dates"
N_BASELINE_NIGHTS: Final = "n_baseline_nights"
BASELINE_SCORE: Final = "baseline_score"
CHANGE: Final = "change"
Q_BH: Final = "q_bh"
MARGIN: Final = "margin"
LEVEL: Final = "level"  # LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT, LEVEL_NOT_COMPARABLE
REASON: Final = "reason"
LEVEL_NONE: Final = "none"
LEVEL_WATCH: Final = "watch"
LEVEL_ALERT: Final = "alert"
LEVEL_NOT_COMPARABLE: Final = "not_comparable"
# Optional per-night model metadata for regressions.
FORMULA_VERSIONS: Final = "formula_versions"
CATEGORIES_COVERED: Final = "categories_covered"
HARNESS_ERRORS: Final = "harness_errors"
HARNESS_ERROR_SHARE: Final = "harness_error_share"

# rescore_significance and rescore_rank_changes columns.
OLD_SCORE: Final = "old_score"
NEW_SCORE: Final = "new_score"
DELTA: Final = "delta"
N_EPISODES_OLD: Final = "n_episodes_old"
N_EPISODES_NEW: Final = "n_episodes_new"
RANK_CHANGE_SIGNIFICANT: Final = "rank_change_significant"
OLD_DIFF: Final = "old_diff"
NEW_DIFF: Final = "new_diff"
P_NEW_DIFF: Final = "p_new_diff"
SIGNIFICANT: Final = "significant"
