"""The output tables: column names, dtypes and their pandera models.

Every table is validated against its model (data included) before it is written.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import pandera.polars as pa
import polars as pl

from schemas.comparisons import (
    A_BETTER,
    B_BETTER,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    OVERALL,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    UNRESOLVED,
)
from schemas.contract import DUMP_DATE, FILE, INSTANCE_ID, REPORTED_SCORE, Category, Col

SCORE: Final = "score"
FORMULA_VERSION: Final = "formula_version"
N_ROWS: Final = "n_rows"
SCORER_VERSION: Final = "scorer_version"
INPUT_FINGERPRINT: Final = "input_fingerprint"
# Feedback values outside [0, 1] are legal (progress is clamped) but counted as warnings.
FEEDBACK_OUT_OF_RANGE: Final = "feedback_out_of_range"
# Contract 1.2: the harness's reported score beside cogscore's, whether the two differ
# (float64 inequality, nothing rounded; null without a reported score), and the items whose
# declarative verdict differs from the harness's recorded one (null: none compared).
SCORE_MISMATCH: Final = "score_mismatch"
VERDICT_MISMATCHES: Final = "verdict_mismatches"
STATUS: Final = "status"
RULES: Final = "rules"
REASONS: Final = "reasons"
ROWS: Final = "rows"
# A value in [0, 1], checked as one range (pandera runs each check as its own query: two
# checks, ge and le, cost twice as much per table written).
UNIT_INTERVAL: Final = {"min_value": 0.0, "max_value": 1.0}


class EpisodeStatus(StrEnum):
    SCORED = "scored"
    REJECTED = "rejected"
    HARNESS_ERROR = "harness_error"


class Component(StrEnum):
    """Formula components written beside the score (null where not the category's)."""

    CORRECT_COUNT = "correct_count"
    N_ITEMS = "n_items"
    ACCURACY = "accuracy"
    EXAMPLES_USED = "examples_used"
    EFFICIENCY = "efficiency"
    SUCCESS = "success"
    STEPS = "steps"
    PROGRESS = "progress"
    TRANSFER = "transfer"
    ASYMPTOTE = "asymptote"
    TRAJECTORY = "trajectory"
    CONSISTENCY = "consistency"
    POSITIONAL = "positional"


COMPONENT_DTYPES: Final[dict[str, pl.DataType]] = {
    c: (
        pl.Int64()
        if c
        in (Component.CORRECT_COUNT, Component.N_ITEMS, Component.EXAMPLES_USED, Component.STEPS)
        else pl.Boolean()
        if c is Component.SUCCESS
        else pl.Float64()
    )
    for c in Component
}

EPISODE_SCORES: Final[dict[str, pl.DataType]] = {
    Col.RUN_ID: pl.String(),
    Col.EPISODE_ID: pl.String(),
    Col.MODEL: pl.String(),
    Col.TASK: pl.String(),
    Col.CATEGORY: pl.String(),
    INSTANCE_ID: pl.String(),
    DUMP_DATE: pl.String(),
    SCORE: pl.Float64(),
    FORMULA_VERSION: pl.String(),
    **COMPONENT_DTYPES,
    FEEDBACK_OUT_OF_RANGE: pl.Int64(),
    N_ROWS: pl.Int64(),
    FILE: pl.String(),
    REPORTED_SCORE: pl.Float64(),
    SCORE_MISMATCH: pl.Boolean(),
    VERDICT_MISMATCHES: pl.Int64(),
}
# What a night's reduction holds of each episode whose rows are staged (``flows.score.stage``,
# ``transforms.compact``): text of few distinct values as Categorical, 4 bytes a row
# against 16 or more as String (polars frees categories once no frame uses them); the
# episode_id stays text (the bootstrap's order, the check of ids across files).
SLIM_DTYPES: Final[dict[str, pl.DataType]] = {
    DUMP_DATE: pl.Categorical(),
    Col.MODEL: pl.Categorical(),
    Col.CATEGORY: pl.Categorical(),
    Col.TASK: pl.Categorical(),
    Col.EPISODE_ID: pl.String(),
    INSTANCE_ID: pl.Categorical(),
    SCORE: pl.Float64(),
    FORMULA_VERSION: pl.Categorical(),
    FILE: pl.Categorical(),
    N_ROWS: pl.Int64(),
    FEEDBACK_OUT_OF_RANGE: pl.Int64(),
}
# Written with every table row by the flow (not by the transforms).
PROVENANCE: Final[dict[str, pl.DataType]] = {
    SCORER_VERSION: pl.String(),
    INPUT_FINGERPRINT: pl.String(),
}

REJECTS: Final[dict[str, pl.DataType]] = {
    Col.EPISODE_ID: pl.String(),
    FILE: pl.String(),
    DUMP_DATE: pl.String(),
    Col.MODEL: pl.String(),
    Col.TASK: pl.String(),
    Col.CATEGORY: pl.String(),
    STATUS: pl.String(),
    RULES: pl.List(pl.String()),
    REASONS: pl.List(pl.String()),
    ROWS: pl.Int64(),
}


class EpisodeScores(pa.DataFrameModel):
    """One row per scored episode."""

    run_id: str
    episode_id: str
    model: str
    task: str
    category: str = pa.Field(isin=list(Category))
    instance_id: str = pa.Field(nullable=True)  # contract 1.1; null: not shared
    dump_date: str = pa.Field(nullable=True)
    score: float = pa.Field(nullable=False)
    formula_version: str
    correct_count: pl.Int64 = pa.Field(nullable=True, ge=0)
    n_items: pl.Int64 = pa.Field(nullable=True, ge=0)
    accuracy: float = pa.Field(nullable=True)
    examples_used: pl.Int64 = pa.Field(nullable=True, ge=0)
    efficiency: float = pa.Field(nullable=True)
    success: bool = pa.Field(nullable=True)
    steps: pl.Int64 = pa.Field(nullable=True, ge=0)
    progress: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    transfer: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    asymptote: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    trajectory: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    consistency: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    positional: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    feedback_out_of_range: pl.Int64 = pa.Field(ge=0)
    n_rows: pl.Int64 = pa.Field(ge=1)
    file: str
    reported_score: float = pa.Field(nullable=True)  # contract 1.2
    score_mismatch: bool = pa.Field(nullable=True)
    verdict_mismatches: pl.Int64 = pa.Field(nullable=True, ge=0)
    scorer_version: str
    input_fingerprint: str

    class Config:
        strict = True
        ordered = True
        unique = ("dump_date", "episode_id")  # copies within a night are rejected


class Rejects(pa.DataFrameModel):
    """One row per unscored episode and file (and per file, the rows with no episode_id)."""

    episode_id: str = pa.Field(nullable=True)
    file: str
    dump_date: str = pa.Field(nullable=True)
    model: str = pa.Field(nullable=True)
    task: str = pa.Field(nullable=True)
    category: str = pa.Field(nullable=True)
    status: str = pa.Field(isin=[EpisodeStatus.REJECTED, EpisodeStatus.HARNESS_ERROR])
    rules: pl.List(pl.String)  # type: ignore[valid-type]
    reasons: pl.List(pl.String)  # type: ignore[valid-type]
    rows: pl.Int64 = pa.Field(ge=0)  # an unreadable file's rows cannot be counted
    scorer_version: str
    input_fingerprint: str

    class Config:
        strict = True
        ordered = True


class _Interval(pa.DataFrameModel):
    # Not bounded to [0, 1]: a runtime RL `floor` parameter above 1 can lift a score past 1.
    ci_low: float
    ci_high: float

    @pa.dataframe_check
    @classmethod
    def low_below_high(cls, data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("ci_low") <= pl.col("ci_high"))


class TaskScores(_Interval):
    """Per night, model and task: mean episode score, spread, interval, mean components."""

    dump_date: str = pa.Field(nullable=True)
    model: str
    category: str = pa.Field(isin=list(Category))
    task: str
    score: float
    n_episodes: pl.Int64 = pa.Field(ge=1)
    std: float = pa.Field(nullable=True, ge=0.0)
    formula_version: str
    scorer_version: str
    input_fingerprint: str
    mean_components: float = pa.Field(nullable=True, alias="mean_.+", regex=True)


class CategoryScores(_Interval):
    """Per night, model and category: the mean of its task scores."""

    dump_date: str = pa.Field(nullable=True)
    model: str
    category: str = pa.Field(isin=list(Category))
    score: float
    n_tasks: pl.Int64 = pa.Field(ge=1)
    n_episodes: pl.Int64 = pa.Field(ge=1)
    formula_version: str
    scorer_version: str
    input_fingerprint: str


class ModelScores(_Interval):
    """Per night and model: the mean of its category scores, its rank among the models of
    the same coverage, the rank's bootstrap interval and its significance tier."""

    dump_date: str = pa.Field(nullable=True)
    model: str
    score: float
    categories_covered: pl.Int64 = pa.Field(ge=1, le=len(Category))
    ranked_among: str  # the categories covered, comma-joined: models are ranked among these
    n_episodes: pl.Int64 = pa.Field(ge=1)
    n_ranked: pl.Int64 = pa.Field(ge=1)
    rank: pl.Int64 = pa.Field(ge=1)
    rank_low: pl.Int64 = pa.Field(ge=1)
    rank_high: pl.Int64 = pa.Field(ge=1)
    tier: pl.Int64 = pa.Field(nullable=True, ge=1)  # null: alone in its coverage group
    formula_versions: str
    scorer_version: str
    input_fingerprint: str

    @pa.dataframe_check
    @classmethod
    def ranks_within_group(cls, data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("rank_low") <= pl.col("rank_high"))
            & (pl.col("rank_high") <= pl.col("n_ranked"))
            & (pl.col("rank") <= pl.col("n_ranked"))
        )


VERDICTS: Final = (A_BETTER, B_BETTER, UNRESOLVED)
PAIRINGS: Final = (PAIRED_FULL, PAIRED_PARTIAL, PAIRED_NONE)
LEVELS: Final = (LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT, LEVEL_NOT_COMPARABLE)
SCOPES: Final = [c.value for c in Category] + [OVERALL]


class RescoreDiff(pa.DataFrameModel):
    """Per night, model and level: what a rescore with other formula versions moved."""

    dump_date: str = pa.Field(nullable=True)
    model: str
    level: str = pa.Field(isin=["model", "category"])
    category: str = pa.Field(isin=[c.value for c in Category] + ["overall"])
    old_score: float = pa.Field(nullable=True)
    new_score: float = pa.Field(nullable=True)
    delta: float = pa.Field(nullable=True)
    old_rank: pl.Int64 = pa.Field(nullable=True, ge=1)
    new_rank: pl.Int64 = pa.Field(nullable=True, ge=1)
    old_formula: str = pa.Field(nullable=True)
    new_formula: str = pa.Field(nullable=True)
    se: float = pa.Field(nullable=True, ge=0.0)
    ci_low: float = pa.Field(nullable=True)
    ci_high: float = pa.Field(nullable=True)
    p_value: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    mde: float = pa.Field(nullable=True, ge=0.0)
    n_pairs: pl.Int64 = pa.Field(nullable=True, ge=0)
    paired: str = pa.Field(nullable=True, isin=list(PAIRINGS))
    rank_change_significant: bool = pa.Field(nullable=True)
    scorer_version: str
    input_fingerprint: str


# --- comparisons (README "Comparisons"; computed by transforms.compare) -----------------


class ModelComparisons(pa.DataFrameModel):
    """Per night, scope and ordered pair of models: the difference, its uncertainty and
    the Holm-corrected verdict."""

    dump_date: str = pa.Field(nullable=True)
    scope: str = pa.Field(isin=SCOPES)
    model_a: str
    model_b: str
    n_tasks: pl.Int64 = pa.Field(ge=0)
    n_episodes_a: pl.Int64 = pa.Field(ge=1)
    n_episodes_b: pl.Int64 = pa.Field(ge=1)
    n_pairs: pl.Int64 = pa.Field(ge=0)
    paired: str = pa.Field(isin=list(PAIRINGS))
    score_a: float
    score_b: float
    diff: float
    se: float = pa.Field(nullable=True, ge=0.0)
    se_tasks: float = pa.Field(nullable=True, ge=0.0)
    ci_low: float = pa.Field(nullable=True)
    ci_high: float = pa.Field(nullable=True)
    p_value: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    p_holm: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    verdict: str = pa.Field(isin=list(VERDICTS))
    mde: float = pa.Field(nullable=True, ge=0.0)
    scorer_version: str
    input_fingerprint: str

    class Config:
        strict = True
        ordered = True
        unique = ("dump_date", "scope", "model_a", "model_b")


class Regressions(pa.DataFrameModel):
    """Per night, model and scope: the change from the baseline nights, its uncertainty,
    the Benjamini-Hochberg q-value over the night's tests, and the alert level."""

    dump_date: str
    model: str
    scope: str = pa.Field(isin=SCOPES)
    baseline: str = pa.Field(isin=["previous", "mean"])
    baseline_dates: str
    n_baseline_nights: pl.Int64 = pa.Field(ge=1)
    score: float
    baseline_score: float
    change: float
    se: float = pa.Field(nullable=True, ge=0.0)
    ci_low: float = pa.Field(nullable=True)
    ci_high: float = pa.Field(nullable=True)
    p_value: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    q_bh: float = pa.Field(nullable=True, in_range=UNIT_INTERVAL)
    mde: float = pa.Field(nullable=True, ge=0.0)
    margin: float = pa.Field(nullable=True, ge=0.0)
    n_pairs: pl.Int64 = pa.Field(ge=0)
    paired: str = pa.Field(isin=list(PAIRINGS))
    level: str = pa.Field(isin=list(LEVELS))
    reason: str = pa.Field(nullable=True)
    scorer_version: str
    input_fingerprint: str

    class Config:
        strict = True
        ordered = True
        unique = ("dump_date", "model", "scope")
