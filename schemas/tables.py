"""The output tables: column names, dtypes, and the registry of every table (``TABLES``).

Each table is declared once, here: its columns (dtype, nulls, the checks its values must
meet), its partitions after ``dump_date`` and its sort order. Storage, validation (the
pandera schemas of ``schemas.models``, built from these declarations), the SQL views and the
report read it. Nothing here imports pandera: the read commands need only the dtypes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

import polars as pl

from schemas import health
from schemas.comparisons import (
    A_BETTER,
    ALERT_LEVEL,
    B_BETTER,
    BASELINE,
    BASELINE_DATES,
    BASELINE_SCORE,
    CATEGORIES_COVERED,
    CHANGE,
    CHANGE_KIND,
    CI_HIGH,
    CI_HIGH_BY_CATEGORY,
    CI_LOW,
    CI_LOW_BY_CATEGORY,
    DELTA,
    DESIGN,
    DF,
    DIFF,
    DIFF_LEVEL,
    DIFF_LEVELS,
    FORMULA_VERSIONS,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    MARGIN,
    MDE,
    MODEL_A,
    MODEL_B,
    MOVED_BY,
    N_BASELINE_NIGHTS,
    N_EPISODES_A,
    N_EPISODES_B,
    N_PAIRS,
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
    OVERALL_BY_CATEGORY,
    P_HOLM,
    P_VALUE,
    P_WILCOXON,
    PAIRED,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    PREVIOUS_AS_OF,
    Q_BH,
    RANK_BY_CATEGORY,
    RANK_CHANGE_SIGNIFICANT,
    RANK_HIGH,
    RANK_LOW,
    RANK_UB,
    RANKED_AMONG,
    REASON,
    SCOPE,
    SCORE_A,
    SCORE_B,
    SCORE_BY_CATEGORY,
    SE,
    SE_TASKS,
    SE_WITHIN,
    TASKS_ADDED,
    TASKS_DROPPED,
    TASKS_RERUN,
    TASKS_RESCORED,
    TIER,
    UNRESOLVED,
    VERDICT,
    ChangeKind,
    Design,
)
from schemas.contract import (
    COST_USD,
    DUMP_DATE,
    FILE,
    INPUT_TOKENS,
    INSTANCE_ID,
    LATENCY_MS,
    OUTPUT_TOKENS,
    REPORTED_SCORE,
    USAGE_DTYPES,
    Category,
    Col,
)

SCORE: Final = "score"
# The standings' night: a standing as of night N holds, for each model and task, the result
# of the latest night <= N on which the model ran the task (``transforms.standings``).
AS_OF: Final = "as_of"
# The columns a table's writes replace one value of (``Table.night``): the night of the
# episodes, or the night a standing is as of.
NIGHT_COLUMNS: Final = (DUMP_DATE, AS_OF)
# standings: the oldest and the newest night its model's results come from.
OLDEST_NIGHT: Final = "oldest_night"
NEWEST_NIGHT: Final = "newest_night"
# The range of every formula's score at the contract's parameter defaults, and of the
# benchmark's reported scores; the intervals of category and model scores stay in it. A
# runtime RL `floor` above 1 (or below 0), or an imported score outside it, leaves it: where
# an episode of a scope scored past a bound, the interval is not held to that bound.
SCORE_RANGE: Final = (0.0, 1.0)
RANK: Final = "rank"  # model_scores: the model's rank among those of its coverage group
N_EPISODES: Final = "n_episodes"
STD: Final = "std"
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
# Contract 1.3: an episode's reply turns that carry no usage where others do (null: the
# episode records none); per task, category and model, the episodes that record usage and,
# of those, the ones with replies without it. The usage columns themselves keep the
# contract's names (``schemas.contract.USAGE_DTYPES``): sums per episode, totals above.
REPLIES_WITHOUT_USAGE: Final = "replies_without_usage"
USAGE_EPISODES: Final = "usage_episodes"
USAGE_INCOMPLETE: Final = "usage_incomplete"
# Per task: tokens (input and output) per episode that records usage, the behaviour of
# LearningBench's token signal (``transforms.health``: tokens spent against score).
MEAN_TOKENS: Final = "mean_tokens"
STATUS: Final = "status"
RULES: Final = "rules"
REASONS: Final = "reasons"
ROWS: Final = "rows"


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

# An episode_scores row as scoring makes it (the flow adds ``PROVENANCE``; the table,
# ``EPISODE_SCORES_TABLE``, is these and the provenance).
EPISODE_SCORES_DTYPES: Final[dict[str, pl.DataType]] = {
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
    **USAGE_DTYPES,
    REPLIES_WITHOUT_USAGE: pl.Int64(),
}
# What the comparisons, rank intervals and regressions read of an episode (``flows.comparisons``):
# a few bytes, not the whole row.
COMPARED_COLUMNS: Final = (
    DUMP_DATE,
    Col.MODEL,
    Col.CATEGORY,
    Col.TASK,
    Col.EPISODE_ID,
    INSTANCE_ID,
    SCORE,
    FORMULA_VERSION,
)
# What a night's reduction holds of each episode whose rows are staged (``flows.score.stage``,
# ``transforms.compact``): the compared columns and the row accounting's; text of few
# distinct values as Categorical, 4 bytes a row against 16 or more as String (polars frees
# categories once no frame uses them); the episode_id stays text (the bootstrap's order, the
# check of ids across files).
HELD_DTYPES: Final[dict[str, pl.DataType]] = {
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

# A rejects row as scoring makes it (the flow adds ``PROVENANCE``).
REJECTS_DTYPES: Final[dict[str, pl.DataType]] = {
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


# --- the registry ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column's dtype, whether it may hold nulls, and what its values must meet (checked by
    pandera, ``schemas.models``): at least ``ge``, at most ``le``, in [0, 1] (``unit``: one
    range check, not two: pandera runs each check as a query of its own), or one of
    ``isin``."""

    dtype: pl.DataType
    nullable: bool = False
    ge: float | None = None
    le: float | None = None
    unit: bool = False
    isin: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table:
    """One output table: its columns in order (``patterns``: columns named by a regular
    expression, such as ``mean_.+``), its night column (``night``: ``dump_date``, or a
    standing's ``as_of``; a run replaces one value of it at a time, its first partition,
    unless the table is ``appended`` to), its partition columns after it, its sort order,
    and its whole-table rules (``strict``: no other column; ``ordered``: in this order;
    ``unique``: no two rows share these; ``frame_checks``: named checks of several columns,
    defined in ``schemas.models``)."""

    name: str
    columns: Mapping[str, Column]
    partitions: tuple[str, ...] = ()
    night: str = DUMP_DATE
    # A log: each run appends its rows (no night is replaced); the runs table pins its
    # version as every table's.
    appended: bool = False
    sort: tuple[str, ...] = ()
    patterns: Mapping[str, Column] = field(default_factory=dict)
    strict: bool = False
    ordered: bool = False
    unique: tuple[str, ...] | None = None
    frame_checks: tuple[str, ...] = ()

    @property
    def dtypes(self) -> dict[str, pl.DataType]:
        """The literal columns' dtypes, in order (what an empty table of it holds)."""
        return {name: column.dtype for name, column in self.columns.items()}

    def empty(self) -> pl.DataFrame:
        """The table with no rows: its literal columns (a regex column left out)."""
        return pl.DataFrame(schema=self.dtypes)

    @property
    def partition_by(self) -> tuple[str, ...]:
        """Every partition column, the night column first."""
        return (self.night, *self.partitions)


def _text(nullable: bool = False, isin: tuple[str, ...] | None = None) -> Column:
    return Column(pl.String(), nullable, isin=isin)


def _count(at_least: int = 0, nullable: bool = False) -> Column:
    return Column(pl.Int64(), nullable, ge=at_least)


def _real(nullable: bool = False, ge: float | None = None, unit: bool = False) -> Column:
    return Column(pl.Float64(), nullable, ge=ge, unit=unit)


CATEGORIES: Final = tuple(str(c) for c in Category)
SCOPES: Final = (*CATEGORIES, OVERALL, OVERALL_BY_CATEGORY)
DESIGN_VALUES: Final = tuple(d.value for d in Design)
VERDICTS: Final = (A_BETTER, B_BETTER, UNRESOLVED)
PAIRINGS: Final = (PAIRED_FULL, PAIRED_PARTIAL, PAIRED_NONE)
LEVELS: Final = (LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT, LEVEL_NOT_COMPARABLE)
_PROVENANCE: Final = {name: _text() for name in PROVENANCE}
# Within SCORE_RANGE unless an episode behind the score lies outside it (a runtime RL
# `floor` above 1 can lift a score past 1). Null where there is no spread to measure (a
# task's episodes that do not vary; a category or model of one task and one episode, or of
# scores all the same): never an interval of zero width for want of an estimator.
_INTERVAL: Final = {CI_LOW: _real(nullable=True), CI_HIGH: _real(nullable=True)}
_COMPONENT_RULES: Final[dict[str, Column]] = {
    Component.CORRECT_COUNT: _count(nullable=True),
    Component.N_ITEMS: _count(nullable=True),
    Component.EXAMPLES_USED: _count(nullable=True),
    Component.STEPS: _count(nullable=True),
    Component.SUCCESS: Column(pl.Boolean(), nullable=True),
    **{
        c: _real(nullable=True, unit=True)
        for c in (
            Component.PROGRESS,
            Component.TRANSFER,
            Component.ASYMPTOTE,
            Component.TRAJECTORY,
            Component.CONSISTENCY,
            Component.POSITIONAL,
        )
    },
}
_EPISODE_RULES: Final[dict[str, Column]] = {
    Col.CATEGORY: _text(isin=CATEGORIES),
    INSTANCE_ID: _text(nullable=True),  # contract 1.1; null: not shared
    DUMP_DATE: _text(nullable=True),
    FEEDBACK_OUT_OF_RANGE: _count(),
    N_ROWS: _count(1),
    **_COMPONENT_RULES,
    REPORTED_SCORE: _real(nullable=True),  # contract 1.2
    SCORE_MISMATCH: Column(pl.Boolean(), nullable=True),
    VERDICT_MISMATCHES: _count(nullable=True),
    **{name: _count(nullable=True) for name in (INPUT_TOKENS, OUTPUT_TOKENS)},  # contract 1.3
    **{name: _real(nullable=True, ge=0.0) for name in (COST_USD, LATENCY_MS)},
    REPLIES_WITHOUT_USAGE: _count(nullable=True),
}
# Contract 1.3, per task, category and model: the episodes that record usage and the
# incomplete ones (null in rows scored before cogscore read usage), and each measure's total
# over them (null where none records it, or one of them does not: a total of some of them
# would read as the whole).
_USAGE_RULES: Final[dict[str, Column]] = {
    USAGE_EPISODES: _count(nullable=True),
    USAGE_INCOMPLETE: _count(nullable=True),
    **{name: _count(nullable=True) for name in (INPUT_TOKENS, OUTPUT_TOKENS)},
    **{name: _real(nullable=True, ge=0.0) for name in (COST_USD, LATENCY_MS)},
}

EPISODE_SCORES_TABLE: Final = Table(
    "episode_scores",
    {
        **{
            name: _EPISODE_RULES.get(name, Column(dtype, nullable=name in COMPONENT_DTYPES))
            for name, dtype in EPISODE_SCORES_DTYPES.items()
        },
        **_PROVENANCE,
    },
    partitions=(Col.CATEGORY,),
    sort=(FILE, Col.EPISODE_ID),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, Col.EPISODE_ID),  # copies within a night are rejected
)
REJECTS_TABLE: Final = Table(
    "rejects",
    {
        **{name: Column(dtype, nullable=True) for name, dtype in REJECTS_DTYPES.items()},
        FILE: _text(),
        STATUS: _text(isin=(EpisodeStatus.REJECTED, EpisodeStatus.HARNESS_ERROR)),
        RULES: Column(pl.List(pl.String())),
        REASONS: Column(pl.List(pl.String())),
        ROWS: _count(),  # an unreadable file's rows cannot be counted
        **_PROVENANCE,
    },
    sort=(FILE, Col.EPISODE_ID),
    strict=True,
    ordered=True,
)
TASK_SCORES_TABLE: Final = Table(
    "task_scores",
    {
        **_INTERVAL,
        DUMP_DATE: _text(nullable=True),
        Col.MODEL: _text(),
        Col.CATEGORY: _text(isin=CATEGORIES),
        Col.TASK: _text(),
        SCORE: _real(),
        N_EPISODES: _count(1),
        STD: _real(nullable=True, ge=0.0),
        FORMULA_VERSION: _text(),
        **_USAGE_RULES,
        MEAN_TOKENS: _real(nullable=True, ge=0.0),
        **_PROVENANCE,
    },
    sort=(Col.MODEL, Col.CATEGORY, Col.TASK),
    patterns={"mean_.+": _real(nullable=True)},
    frame_checks=("low_below_high",),
)
CATEGORY_SCORES_TABLE: Final = Table(
    "category_scores",
    {
        **_INTERVAL,
        DUMP_DATE: _text(nullable=True),
        Col.MODEL: _text(),
        Col.CATEGORY: _text(isin=CATEGORIES),
        SCORE: _real(),
        N_TASKS: _count(1),
        N_EPISODES: _count(1),
        FORMULA_VERSION: _text(),
        **_USAGE_RULES,
        **_PROVENANCE,
    },
    sort=(Col.MODEL, Col.CATEGORY),
    frame_checks=("low_below_high",),
)
MODEL_SCORES_TABLE: Final = Table(
    "model_scores",
    {
        **_INTERVAL,
        DUMP_DATE: _text(nullable=True),
        Col.MODEL: _text(),
        SCORE: _real(),  # the mean of the model's task scores: each task weighs the same
        SCORE_BY_CATEGORY: _real(),  # the mean of its category scores
        CI_LOW_BY_CATEGORY: _real(nullable=True),
        CI_HIGH_BY_CATEGORY: _real(nullable=True),
        RANK_BY_CATEGORY: _count(1),
        CATEGORIES_COVERED: Column(pl.Int64(), ge=1, le=len(Category)),
        RANKED_AMONG: _text(),  # the categories covered, comma-joined: ranked among these
        N_TASKS: _count(1),
        N_EPISODES: _count(1),
        N_RANKED: _count(1),
        RANK: _count(1),
        RANK_LOW: _count(1),  # the rank interval: it holds for every model at once
        RANK_HIGH: _count(1),
        RANK_UB: _count(1),  # 1 + the models significantly better (Holm): LMArena's rank (UB)
        # the greedy grouping of the Holm verdicts, kept for its readers: a model of a worse
        # tier is not always significantly worse (RANK_UB is the statement)
        TIER: _count(1, nullable=True),  # null: alone in its coverage group
        FORMULA_VERSIONS: _text(),
        **_USAGE_RULES,
        **_PROVENANCE,
    },
    sort=(RANKED_AMONG, RANK, Col.MODEL),
    frame_checks=("ranks_within_group", "low_below_high"),
)
RESCORE_DIFF_TABLE: Final = Table(
    "rescore_diff",
    {
        DUMP_DATE: _text(nullable=True),
        Col.MODEL: _text(),
        DIFF_LEVEL: _text(isin=DIFF_LEVELS),
        Col.CATEGORY: _text(isin=SCOPES),
        OLD_SCORE: _real(nullable=True),
        NEW_SCORE: _real(nullable=True),
        DELTA: _real(nullable=True),
        OLD_RANK: _count(1, nullable=True),
        NEW_RANK: _count(1, nullable=True),
        OLD_FORMULA: _text(nullable=True),
        NEW_FORMULA: _text(nullable=True),
        SE: _real(nullable=True, ge=0.0),
        DF: _real(nullable=True, ge=0.0),
        DESIGN: _text(nullable=True, isin=DESIGN_VALUES),
        CI_LOW: _real(nullable=True),
        CI_HIGH: _real(nullable=True),
        P_VALUE: _real(nullable=True, unit=True),
        MDE: _real(nullable=True, ge=0.0),
        N_PAIRS: _count(nullable=True),
        PAIRED: _text(nullable=True, isin=PAIRINGS),
        RANK_CHANGE_SIGNIFICANT: Column(pl.Boolean(), nullable=True),
        **_PROVENANCE,
    },
    sort=(Col.MODEL, DIFF_LEVEL, Col.CATEGORY),
)
MODEL_COMPARISONS_TABLE: Final = Table(
    "model_comparisons",
    {
        DUMP_DATE: _text(nullable=True),
        SCOPE: _text(isin=SCOPES),
        MODEL_A: _text(),
        MODEL_B: _text(),
        N_TASKS: _count(),
        N_EPISODES_A: _count(1),
        N_EPISODES_B: _count(1),
        N_PAIRS: _count(),
        PAIRED: _text(isin=PAIRINGS),
        SCORE_A: _real(),
        SCORE_B: _real(),
        DIFF: _real(),
        SE: _real(nullable=True, ge=0.0),
        SE_TASKS: _real(nullable=True, ge=0.0),
        SE_WITHIN: _real(nullable=True, ge=0.0),
        DF: _real(nullable=True, ge=0.0),
        DESIGN: _text(isin=DESIGN_VALUES),
        CI_LOW: _real(nullable=True),
        CI_HIGH: _real(nullable=True),
        P_VALUE: _real(nullable=True, unit=True),
        P_HOLM: _real(nullable=True, unit=True),
        VERDICT: _text(isin=VERDICTS),
        MDE: _real(nullable=True, ge=0.0),
        P_WILCOXON: _real(nullable=True, unit=True),
        N_TASKS_A_BETTER: _count(),
        N_TASKS_B_BETTER: _count(),
        **_PROVENANCE,
    },
    sort=(SCOPE, MODEL_A, MODEL_B),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, SCOPE, MODEL_A, MODEL_B),
)
REGRESSIONS_TABLE: Final = Table(
    "regressions",
    {
        DUMP_DATE: _text(),
        Col.MODEL: _text(),
        SCOPE: _text(isin=SCOPES),
        BASELINE: _text(isin=("previous", "mean")),
        BASELINE_DATES: _text(),
        N_BASELINE_NIGHTS: _count(1),
        # null only where the model had episodes but none scored (level not_comparable)
        SCORE: _real(nullable=True),
        BASELINE_SCORE: _real(nullable=True),
        CHANGE: _real(nullable=True),
        SE: _real(nullable=True, ge=0.0),
        DF: _real(nullable=True, ge=0.0),
        DESIGN: _text(isin=DESIGN_VALUES),
        CI_LOW: _real(nullable=True),
        CI_HIGH: _real(nullable=True),
        P_VALUE: _real(nullable=True, unit=True),
        Q_BH: _real(nullable=True, unit=True),
        MDE: _real(nullable=True, ge=0.0),
        MARGIN: _real(nullable=True, ge=0.0),
        N_PAIRS: _count(),
        PAIRED: _text(isin=PAIRINGS),
        ALERT_LEVEL: _text(isin=LEVELS),
        REASON: _text(nullable=True),
        **_PROVENANCE,
    },
    sort=(Col.MODEL, SCOPE),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, Col.MODEL, SCOPE),
)


# --- the standings: the benchmark as it stands as of each night --------------------------


def _as_of(table: Table, name: str, extra: Mapping[str, Column] | None = None) -> Table:
    """``table`` as a standing's table ``name``: its ``dump_date`` replaced by ``as_of`` (the
    night the standing is as of: its partition), ``extra`` columns after the others."""
    columns = {
        AS_OF if column == DUMP_DATE else column: rule for column, rule in table.columns.items()
    }
    provenance = {column: columns.pop(column) for column in PROVENANCE}
    unique = tuple(AS_OF if c == DUMP_DATE else c for c in table.unique or ()) or None
    return Table(
        name,
        {**columns, **(extra or {}), **provenance},
        night=AS_OF,
        sort=table.sort,
        patterns=table.patterns,
        strict=table.strict,
        ordered=table.ordered,
        unique=unique,
        frame_checks=table.frame_checks,
    )


# One row per as_of, model and task: the task's row of task_scores of the night it comes
# from (``dump_date``: the latest night <= as_of on which the model ran the task).
TASK_STANDINGS_TABLE: Final = Table(
    "task_standings",
    {AS_OF: _text(nullable=True), **TASK_SCORES_TABLE.columns},
    night=AS_OF,
    sort=TASK_SCORES_TABLE.sort,
    patterns=TASK_SCORES_TABLE.patterns,
    frame_checks=TASK_SCORES_TABLE.frame_checks,
)
CATEGORY_STANDINGS_TABLE: Final = _as_of(CATEGORY_SCORES_TABLE, "category_standings")
STANDINGS_TABLE: Final = _as_of(
    MODEL_SCORES_TABLE,
    "standings",
    {OLDEST_NIGHT: _text(nullable=True), NEWEST_NIGHT: _text(nullable=True)},
)
STANDING_COMPARISONS_TABLE: Final = _as_of(MODEL_COMPARISONS_TABLE, "standing_comparisons")
STANDING_CHANGES_TABLE: Final = Table(
    "standing_changes",
    {
        AS_OF: _text(),
        PREVIOUS_AS_OF: _text(),
        Col.MODEL: _text(),
        SCOPE: _text(isin=SCOPES),
        CHANGE_KIND: _text(isin=tuple(k.value for k in ChangeKind)),
        TASKS_RERUN: _count(),
        TASKS_ADDED: _count(),
        TASKS_DROPPED: _count(),
        TASKS_RESCORED: _count(),
        MOVED_BY: _text(nullable=True),
        BASELINE_SCORE: _real(nullable=True),  # the previous standing's (null: a new model)
        SCORE: _real(nullable=True),  # null: the model vanished
        CHANGE: _real(nullable=True),
        SE: _real(nullable=True, ge=0.0),
        DF: _real(nullable=True, ge=0.0),
        DESIGN: _text(nullable=True, isin=DESIGN_VALUES),
        CI_LOW: _real(nullable=True),
        CI_HIGH: _real(nullable=True),
        P_VALUE: _real(nullable=True, unit=True),
        Q_BH: _real(nullable=True, unit=True),
        MDE: _real(nullable=True, ge=0.0),
        MARGIN: _real(nullable=True, ge=0.0),
        N_PAIRS: _count(nullable=True),
        PAIRED: _text(nullable=True, isin=PAIRINGS),
        ALERT_LEVEL: _text(isin=LEVELS),
        REASON: _text(nullable=True),
        **_PROVENANCE,
    },
    night=AS_OF,
    sort=(Col.MODEL, SCOPE),
    strict=True,
    ordered=True,
    unique=(AS_OF, Col.MODEL, SCOPE),
)


class View(StrEnum):
    """What a leaderboard shows: the ``standing`` as of a night (each model's latest result
    on every task: the benchmark as it stands, the default), or the ``night``'s own
    episodes alone."""

    STANDING = "standing"
    NIGHT = "night"


class SqlFormat(StrEnum):
    """How ``cogscore sql`` prints a result (``flows.present.sql.formatted``): never a value cut."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"


@dataclass(frozen=True)
class ViewTables:
    """The tables a view reads: model rows, category rows, pairwise comparisons, task rows
    (the report's matrix)."""

    models: Table
    categories: Table
    comparisons: Table
    tasks: Table

    @property
    def night(self) -> str:
        """The column naming the night shown (``as_of`` or ``dump_date``)."""
        return self.models.night


# --- the benchmark's health, per standing (``transforms.health``) --------------------------

STABILITY_TABLE: Final = Table(
    "stability",
    {
        AS_OF: _text(nullable=True),
        health.N_MODELS: _count(1),
        N_TASKS: _count(1),
        health.LOO_SPEARMAN_MEAN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        health.LOO_SPEARMAN_MIN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        health.LOO_MAX_RANK_CHANGE: _count(nullable=True),
        **_PROVENANCE,
    },
    night=AS_OF,
    sort=(health.N_MODELS, N_TASKS),
)
TASK_HEALTH_TABLE: Final = Table(
    "task_health",
    {
        AS_OF: _text(nullable=True),
        Col.CATEGORY: _text(isin=CATEGORIES),
        Col.TASK: _text(),
        health.N_MODELS: _count(1),
        health.MEAN: _real(),
        health.SPREAD: _real(nullable=True, ge=0.0),
        health.LOWEST: _real(),
        health.HIGHEST: _real(),
        health.AT_CEILING: Column(pl.Boolean()),
        health.AT_FLOOR: Column(pl.Boolean()),
        health.DISCRIMINATION: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        **_PROVENANCE,
    },
    night=AS_OF,
    sort=(Col.CATEGORY, Col.TASK),
)
CATEGORY_HEALTH_TABLE: Final = Table(
    "category_health",
    {
        AS_OF: _text(nullable=True),
        Col.CATEGORY: _text(isin=CATEGORIES),
        health.N_MODELS: _count(1),
        health.BEST_MODEL: _text(),
        health.BEST_SCORE: _real(),
        health.WORST_MODEL: _text(),
        health.WORST_SCORE: _real(),
        **_PROVENANCE,
    },
    night=AS_OF,
    sort=(Col.CATEGORY,),
)
SIGNALS_TABLE: Final = Table(
    "signals",
    {
        AS_OF: _text(nullable=True),
        health.SIGNAL: _text(isin=tuple(s.value for s in health.Signal)),
        health.N_RESULTS: _count(),
        health.SPEARMAN: Column(pl.Float64(), nullable=True, ge=-1.0, le=1.0),
        health.P_VALUE: _real(nullable=True, unit=True),
        **_PROVENANCE,
    },
    night=AS_OF,
    sort=(health.SIGNAL,),
)
HEALTH_TABLES: Final = (STABILITY_TABLE, TASK_HEALTH_TABLE, CATEGORY_HEALTH_TABLE, SIGNALS_TABLE)

STANDING_TABLES: Final = (
    TASK_STANDINGS_TABLE,
    CATEGORY_STANDINGS_TABLE,
    STANDINGS_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDING_CHANGES_TABLE,
    *HEALTH_TABLES,
)

# One row per harness run file a nightly with runs to import read (``cogscore nightly --runs``):
# what became of it. A run not imported is never only a line in a log.
IMPORTS_TABLE: Final = Table(
    "imports",
    {
        "run_id": _text(),  # the cogscore run that imported it
        "imported": Column(pl.Datetime("us", "UTC")),
        "source": _text(),  # RUNS: a folder or a URL (no credentials)
        "run_file": _text(),  # the run file, relative to RUNS
        "run_sha256": _text(nullable=True),  # its content's digest (null: unreadable)
        "outcome": _text(isin=("imported", "rejected")),
        "reasons": Column(pl.List(pl.String())),  # schemas.kaggle.Reason codes
        "detail": _text(nullable=True),
        DUMP_DATE: _text(nullable=True),  # the night its rows went to (null: none)
        FILE: _text(nullable=True),  # its rows' file, relative to DUMP_ROOT
        Col.MODEL: _text(nullable=True),
        Col.TASK: _text(nullable=True),
        SCORER_VERSION: _text(),  # (a run file has no input fingerprint of a night)
    },
    sort=("run_file",),
    strict=True,
    ordered=True,
    appended=True,
)

VIEWS: Final = {
    View.STANDING: ViewTables(
        STANDINGS_TABLE, CATEGORY_STANDINGS_TABLE, STANDING_COMPARISONS_TABLE, TASK_STANDINGS_TABLE
    ),
    View.NIGHT: ViewTables(
        MODEL_SCORES_TABLE, CATEGORY_SCORES_TABLE, MODEL_COMPARISONS_TABLE, TASK_SCORES_TABLE
    ),
}

# Every table a run writes but the runs table (``flows.store.runs_table``), by name.
TABLES: Final[dict[str, Table]] = {
    t.name: t
    for t in (
        EPISODE_SCORES_TABLE,
        REJECTS_TABLE,
        TASK_SCORES_TABLE,
        CATEGORY_SCORES_TABLE,
        MODEL_SCORES_TABLE,
        RESCORE_DIFF_TABLE,
        MODEL_COMPARISONS_TABLE,
        REGRESSIONS_TABLE,
        *STANDING_TABLES,
        IMPORTS_TABLE,
    )
}


# --- the runs table (``flows.store.runs_table``): a row per run and night, appended last ---


class RunStatus(StrEnum):
    SUCCEEDED = "succeeded"
    NOTHING_TO_DO = "nothing_to_do"  # a state all the same: it pins the versions it saw
    FAILED = "failed"


# Runs whose table versions are a consistent state of the output.
PINNING: Final = (RunStatus.SUCCEEDED.value, RunStatus.NOTHING_TO_DO.value)
RUN_COUNTS: Final = (
    "files_read",
    "files_rejected",
    "rows_read",
    "rows_scored",
    "rows_rejected",
    "episodes_scored",
    "episodes_rejected",
    "episodes_harness_error",
    "warnings_feedback_out_of_range",
    "episodes_score_mismatch",  # contract 1.2 (null in rows of earlier runs)
    "episodes_verdict_mismatch",
)
# Written by cogscore alone (``RunRow.record``), not validated on write: the nullable columns
# are those a row may leave null or rows of earlier versions lack
# (``tests/storage/test_runs_table.py`` holds the rows written to this).
RUNS_TABLE: Final = Table(
    "runs",
    {
        "run_id": _text(),
        "kind": _text(),  # score | nightly | rescore
        "status": _text(isin=tuple(s.value for s in RunStatus)),
        "started": Column(pl.Datetime("us", "UTC")),
        "finished": Column(pl.Datetime("us", "UTC")),
        "night": _text(nullable=True),  # null: the undated night, or no night scored
        **{column: _count(nullable=True) for column in RUN_COUNTS},
        "formula_versions": _text(),  # JSON object {category: version}
        "formula_set": _text(nullable=True),  # JSON object: the output's set after the run
        "scorer_version": _text(),
        "input": _text(nullable=True),  # the dump root: a path or a URL (no credentials)
        "partitioned": Column(pl.Boolean(), nullable=True),  # by dump_date, or undated
        "input_fingerprint": _text(nullable=True),
        "files": _text(nullable=True),  # JSON list: the night's input files (size, digest, ...)
        "table_versions": _text(),  # JSON object {table: version}
        "details": _text(nullable=True),  # JSON object: the run's own record (engine, ...)
    },
    strict=True,
    ordered=True,
)
