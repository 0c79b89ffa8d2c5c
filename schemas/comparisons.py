"""Column names and values of the comparison tables: ``model_comparisons``, ``regressions``,
the rank columns of ``model_scores`` and the significance columns of ``rescore_diff``
(``transforms.compare`` computes them; README "Comparisons and statistics")."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# model_comparisons columns.
SCOPE: Final = "scope"  # a category, OVERALL or OVERALL_BY_CATEGORY
# The benchmark's overall score: the mean of the model's task scores, each task weighing
# the same (the published LearningBench leaderboard's `mean_score`); the default.
OVERALL: Final = "overall"
# The mean of the model's category scores, each category weighing the same.
OVERALL_BY_CATEGORY: Final = "overall_by_category"
OVERALL_SCOPES: Final = (OVERALL, OVERALL_BY_CATEGORY)
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
SE: Final = "se"  # the standard error of the row's DESIGN: intervals, p-values, verdicts
SE_TASKS: Final = "se_tasks"  # two-level (tasks sampled); null: a category with one task
SE_WITHIN: Final = "se_within"  # tasks fixed: episodes within the tasks only
DF: Final = "df"  # degrees of freedom of the t reference (null: normal)
DESIGN: Final = "design"  # Design: which sampling design `se` is
CI_LOW: Final = "ci_low"
CI_HIGH: Final = "ci_high"
P_VALUE: Final = "p_value"
P_HOLM: Final = "p_holm"
VERDICT: Final = "verdict"
MDE: Final = "mde"
P_WILCOXON: Final = "p_wilcoxon"  # Wilcoxon signed-rank over the tasks both models ran
N_TASKS_A_BETTER: Final = "n_tasks_a_better"  # tasks where a's task score is higher
N_TASKS_B_BETTER: Final = "n_tasks_b_better"

PAIRED_FULL: Final = "full"
PAIRED_PARTIAL: Final = "partial"
PAIRED_NONE: Final = "none"


class Design(StrEnum):
    """The sampling design behind a standard error (README "Comparisons and statistics")."""

    TWO_LEVEL = "two_level"  # tasks a sample of the ability, episodes within tasks
    WITHIN_TASKS = "within_tasks"  # tasks fixed: only the episodes within them are random
    # two-level, with the within-task variance standing in for a category of one task
    MIXED = "mixed"
    NONE = "none"  # no variance can be estimated (one task, one episode): no verdict


# The designs a caller chooses between (MIXED and NONE are outcomes, not choices).
DESIGNS: Final = (Design.TWO_LEVEL, Design.WITHIN_TASKS)
# The confidence level of every interval a run writes (ci_low..ci_high of scores, changes
# and differences, rank_low..rank_high) unless the run is given another (``--level``,
# COGSCORE_LEVEL): declared here, once, for the statistics and the run options alike. A run
# records the level it used (the runs table's details, ``bootstrap.level``).
DEFAULT_LEVEL: Final = 0.95


# Why a comparison's statistics are null, or its MDE, or why its interval is approximate
# (``model_comparisons.reason``; null where none applies). A cause of its own per stratum
# (a category, or ``overall``) where the variance is null; ``{}`` is where the strata go.
class Unestimable(StrEnum):
    """Why a contrast's standard error is not estimated (its ``design`` is ``none``)."""

    # the difference is the same on every task (or instance) it is estimated from
    NO_SPREAD = "no spread"
    ONE_EPISODE = "one task, one episode"  # a stratum of one task, one instance of it
    ONE_TASK = "a model's only task"  # a model's single task there, the other's not
    TASKS_FIXED = "one episode per task"  # the tasks fixed, a task of one instance


REASON_TEXT: Final = {
    Unestimable.NO_SPREAD: "no spread: the difference is the same on every task it is estimated "
    "from, and a spread of 0 is not evidence",
    Unestimable.ONE_EPISODE: "one task, one episode ({}): the models share a single task there, "
    "one instance of it each, so neither how tasks vary nor how its episodes vary can be "
    "estimated",
    Unestimable.ONE_TASK: "a model's only task ({}): a model has a single task there that the "
    "other did not run, so how its task scores vary cannot be estimated",
    Unestimable.TASKS_FIXED: "one episode per task ({}): with the tasks fixed there is no "
    "within-task spread to estimate",
}
# A statistic shown only where it says something: an MDE past the scores' range (a
# difference of scores in [0, 1] is at most 1) detects no difference there.
REASON_MDE: Final = (
    "mde not shown: at {} degrees of freedom no difference within the scores' range is "
    "detected with the test's power"
)
# Intervals of differences (a t interval on few tasks) under this many degrees of freedom
# (about 20 tasks) are approximate: on the published table's shape (benchmarks/calibration.py)
# some pairs' 95% intervals covered their true difference in 87-92% of the nights with 3 to
# 14 tasks; from 20 tasks the worst of its 91 pairs is within sampling error of 95%.
APPROXIMATE_BELOW_DF: Final = 19.0
REASON_APPROXIMATE: Final = (
    "approximate interval: {} degrees of freedom, under "
    f"{APPROXIMATE_BELOW_DF:g}: on so few tasks of scores with many 0s and 1s (the published "
    "table's shape) some pairs' intervals cover the true difference less often than their "
    "level says (docs/comparisons.md)"
)
# What a verdict's family is, said where verdicts are shown (``compare``, the report): Holm
# holds the chance of any false "better" at α among one night's pairs in one scope, not
# across the scopes a reader can look at (benchmarks/calibration.py measures how often a
# night of equal models shows one somewhere).
HOLM_FAMILY_NOTE: Final = (
    "verdicts: Holm's correction holds the chance of any false 'better' to 5% among this "
    "night's pairs in this scope only; read across the 8 scopes (6 categories, overall, "
    "overall_by_category), 17% of simulated nights where no model differs show some false "
    "'better' (docs/comparisons.md)"
)

A_BETTER: Final = "a_better"
B_BETTER: Final = "b_better"
UNRESOLVED: Final = "unresolved"

# rank_intervals and significance_tiers columns.
RANKED_AMONG: Final = "ranked_among"  # the coverage group: categories covered, comma-joined
N_RANKED: Final = "n_ranked"
GROUP_RANK: Final = "group_rank"
RANK_LOW: Final = "rank_low"
RANK_HIGH: Final = "rank_high"
# 1 + the models the verdicts (Holm) call better: the best rank they leave a model
# (LMArena's "rank (UB)").
RANK_UB: Final = "rank_ub"
TIER: Final = "tier"

# regressions columns.
BASELINE: Final = "baseline"  # "previous" or "mean"
BASELINE_DATES: Final = "baseline_dates"
N_BASELINE_NIGHTS: Final = "n_baseline_nights"
BASELINE_SCORE: Final = "baseline_score"
CHANGE: Final = "change"
Q_BH: Final = "q_bh"
MARGIN: Final = "margin"
# How far a regression row is from its baseline: LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT,
# LEVEL_NOT_COMPARABLE (stored as "level", as rescore_diff's ``DIFF_LEVEL``: one column name,
# two tables, two meanings; the constants keep them apart).
ALERT_LEVEL: Final = "level"
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

# standing_changes columns: a model's standing against the previous night's standing (or,
# ``rescored``, against itself before a run scored its nights anew), what moved it
# (``transforms.standings``), with the regressions' columns of the change.
PREVIOUS_AS_OF: Final = "previous_as_of"
CHANGE_KIND: Final = "kind"
TASKS_RERUN: Final = "tasks_rerun"  # tasks whose result comes from a newer night now
TASKS_ADDED: Final = "tasks_added"  # tasks the model has a result for now, not before
TASKS_DROPPED: Final = "tasks_dropped"  # tasks it had a result for, not now (a night emptied)
TASKS_RESCORED: Final = "tasks_rescored"  # the same night's result, scored anew (a rescore)
MOVED_BY: Final = "moved_by"  # the tasks that moved the score, each with its share of the change
# task_changes columns (besides OLD_SCORE, NEW_SCORE, OLD_FORMULA, NEW_FORMULA): the night
# a model's result on a task comes from in the standing before and in this one.
OLD_NIGHT: Final = "old_night"
NEW_NIGHT: Final = "new_night"
# The rank (``rank`` of the scope's standing, within its coverage group) and rank interval
# of the model in the standing before (OLD_RANK, ...) and in this one (NEW_RANK, ...).
OLD_RANK_LOW: Final = "old_rank_low"
OLD_RANK_HIGH: Final = "old_rank_high"
NEW_RANK_LOW: Final = "new_rank_low"
NEW_RANK_HIGH: Final = "new_rank_high"
# Whether the statistics call the change beyond noise: its Benjamini-Hochberg q-value under
# alpha, a rise or a drop (null: not tested, or its noise could not be estimated).
BEYOND_NOISE: Final = "beyond_noise"


class ChangeKind(StrEnum):
    """Why a model's standing changed since the previous night's standing."""

    RERUN = "rerun"  # tasks re-run, the same tasks covered: a comparable change
    COVERAGE = "coverage"  # tasks added or dropped: the score averages other tasks now
    # Results of the same night scored anew (a rescore, a night delivered again): the standing
    # against itself as the output held it before the run (``previous_as_of`` = ``as_of``).
    RESCORED = "rescored"
    NEW_MODEL = "new_model"  # no standing before
    VANISHED = "vanished"  # a standing before, none now
    # Its results unchanged, its rank moved: other models' changes moved it.
    RERANKED = "reranked"


# rescore_diff columns: a row is a model's overall score (DIFF_LEVEL_MODEL, category OVERALL)
# or one of its category scores (DIFF_LEVEL_CATEGORY).
DIFF_LEVEL: Final = "level"
DIFF_LEVEL_MODEL: Final = "model"
DIFF_LEVEL_CATEGORY: Final = "category"
DIFF_LEVELS: Final = (DIFF_LEVEL_MODEL, DIFF_LEVEL_CATEGORY)
OLD_RANK: Final = "old_rank"
NEW_RANK: Final = "new_rank"
OLD_FORMULA: Final = "old_formula"
NEW_FORMULA: Final = "new_formula"
# rescore_diff, rescore_significance and rescore_rank_changes columns.
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


# rank_intervals and the model score columns of the category-weighted overall score.
SCORE_BY_CATEGORY: Final = "score_by_category"
CI_LOW_BY_CATEGORY: Final = "ci_low_by_category"
CI_HIGH_BY_CATEGORY: Final = "ci_high_by_category"
RANK_BY_CATEGORY: Final = "rank_by_category"


class Work(StrEnum):
    """Working columns of ``transforms.compare`` (never written to a table)."""

    UNIT = "__unit"  # a unit's code: a model on a night (or under a formula)
    CLUSTER = "__cluster"  # an instance within a task (an episode alone: its own)
    TASK = "__task"  # a task's code
    PAIR = "__pair"  # a (night, model)'s code
    ORDER = "__order"  # an episode's place in id order
    SHARED_INSTANCE = "__instance"  # the episode's instance, numbered (null: none)
    CID = "__cid"  # a contrast's id
    COEF = "__coef"  # a unit's coefficient in a contrast
    N = "__n"  # episodes
    G = "__g"  # clusters of a unit in a task
    MEAN = "__mean"  # a unit's task score
    K = "__k"  # √(G/(G-1)), the small-sample factor of a unit in a task
    DEV = "__dev"  # Σ over a cluster of (score - task score) / n
    W = "__w"  # a task's weight in a unit's score of a scope
    CENTRE = "__centre"  # what a task score is centred on: the unit's score in its stratum
    STRATUM = "__stratum"  # the tasks are sampled within it: a category, or all (overall)
    COVERAGE = "__coverage"  # what a scope's score averages (its tasks or categories)
    GROUP = "__group"  # the categories a unit covers: its coverage group
    CAT_SCORE = "__cat_score"
    N_CATEGORIES = "__n_categories"
    VALUE = "__value"
    UNITS = "__units"
    VAR = "__var"  # the variance of the chosen design
    VAR_WITHIN = "__var_within"  # tasks fixed
    VAR_TASKS = "__var_tasks"  # tasks a sample
    CLUSTERS = "__clusters"  # distinct clusters in a contrast's stratum
    STRATUM_TASKS = "__stratum_tasks"  # tasks of a contrast's stratum
    PART = "__part"  # a unit's part of a contrast in a task: coef · w · task score
    PATTERN = "__pattern"  # the units of a contrast that ran a task (their codes, joined)
    MEMBERS = "__members"  # those units, as a list
    PATTERNS = "__patterns"  # coverage patterns in a contrast's stratum
    SOURCE = "__source"  # what a piece of a variance is estimated from
    USES = "__uses"  # how many pieces of a variance one source stands in for
    SQUARES = "__squares"  # Σ ψ² of a coverage pattern, ψ centred on the units' scores
    CENTRED = "__centred"  # Σ (ψ − ψ̄)² of a coverage pattern, centred on its own mean
    TASK_DF = "__task_df"  # degrees of freedom of a stratum's task-sample variance
    FALLBACK = "__fallback"  # a stratum of one task: its within-task variance stands in
    ALL_FALLBACK = "__all_fallback"  # every stratum of the contract fell back
    ANY_FALLBACK = "__any_fallback"  # some did
    ALL = "__all_units"  # the units of a contrast
    SHARED = "__shared_episodes"
    TOTAL = "__total_episodes"
    VERSION = "__version"  # old or new formula, in a rescore
    SELF = "__self"  # Σ_g D² of a unit in a task
    CROSS = "__cross"  # Σ_g D_a D_b of two units in a task
    EPISODES = "__episodes"
    ROWS = "__rows"
    LOW = "__low"
    LOWEST = "__lowest"  # the lowest episode score of a unit in a task (or scope)
    HIGHEST = "__highest"  # the highest
    P_FAMILY = "__p_family"
    ABOVE = "__above"  # models significantly better than a model (at the run's level)
    BELOW = "__below"  # models significantly worse
    BETTER = "__better"  # models the verdicts call better
    HOLM_LEVEL = "__holm_level"  # the level Holm's step-down tests a pair's p-value at
    CAUSE = "__cause"  # why a stratum's variance is null (Unestimable)
    WHY = "__why"  # why a contrast's variance is null: the reasons' text
