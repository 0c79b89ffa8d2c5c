"""The output tables' building blocks: the column names, dtypes and enums the tables share
(scores, provenance, usage, an episode's status and components, a run's status and counts),
and how a table is declared (``Column``, ``Table``, ``text_column``, ``count_column``,
``real_column``, and the rules several tables repeat). The tables themselves are declared
in ``schemas.tables`` (the health tables in ``schemas.health``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

import polars as pl

from schemas.comparisons import (
    A_BETTER,
    B_BETTER,
    CI_HIGH,
    CI_LOW,
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
from schemas.contract import (
    CATEGORY_VALUES,
    COST_USD,
    DUMP_DATE,
    FILE,
    INPUT_TOKENS,
    INSTANCE_ID,
    LATENCY_MS,
    OUTPUT_TOKENS,
    REPORTED_SCORE,
    SINGLE_RUN_STARTED,
    SOURCE_NAMES,
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


# Contract 1.4: why an episode's usage was refused (``usage_invalid``: the turn, the column
# and its value beyond the contract's bounds), its measures then null; null where its usage,
# if any, is kept. The episode's score is kept either way: usage never decides whether it
# counts.
USAGE_REFUSED: Final = "usage_refused"


USAGE_EPISODES: Final = "usage_episodes"


USAGE_INCOMPLETE: Final = "usage_incomplete"


# The model calls behind an episode where it records usage (contract 1.3): its assistant rows
# that carry usage and its reply turns that carry none (``replies_without_usage``); totalled
# per task, category and model over the episodes that record usage, as the usage columns.
CALLS: Final = "calls"


# The harness's wall time of an episode where it records usage (as ``calls``): from its
# ``episode_start`` row's ``ts`` to its ``episode_end`` row's (the latest end less the
# earliest start, in whole milliseconds; null where either has no ``ts`` or the end comes
# first). Totalled per task, category and model as the usage columns.
WALL_MS: Final = "wall_ms"


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
    USAGE_REFUSED: pl.String(),
    SINGLE_RUN_STARTED: pl.Datetime("us", "UTC"),  # contract 1.4 (null: not a single run)
    CALLS: pl.Int64(),
    SOURCE_NAMES: pl.String(),  # contract 1.5 (null: the source named it as shown)
    WALL_MS: pl.Float64(),
}


# Contract 1.4: a replaced episode (``replaced_episodes``) names the episode that replaced it,
# a later single run of the same model and task on the same night (``transforms.replaced``).
REPLACED_BY: Final = "replaced_by"


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
# check of ids across files). The counts as Int32, 4 bytes a row against 8 (an episode's rows
# and warnings are far under 2^31; their sums over a night are taken as Int64). While the
# night's other files are scored they wait on disk, as text (``flows.store.spill``).
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
    N_ROWS: pl.Int32(),
    FEEDBACK_OUT_OF_RANGE: pl.Int32(),
}


# The ids of a night held coded (``transforms.compact.coded``): each ``episode_id`` and
# ``instance_id`` (null stays null) as its dense rank in text order among the episodes of its
# category, 4 bytes a row against 41 and more as text (and ~119 a distinct instance in
# polars' category map). A night's own tables compare ids only within a task, by order and
# equality, which the ranks keep: the same bits as the text. Where other nights' text meets
# them (regressions against a baseline, standings, a rescore's diff), the text is read again.
CODED_IDS: Final[dict[str, pl.DataType]] = {
    Col.EPISODE_ID: pl.UInt32(),
    INSTANCE_ID: pl.UInt32(),
}

# What a night's reduction holds of each episode staged by a worker (``flows.coded``): the
# compared columns, compact, the ids coded (36 bytes an episode); the row accounting's sums
# are taken as the rows are read back.
CODED_DTYPES: Final[dict[str, pl.DataType]] = {
    c: CODED_IDS.get(c, HELD_DTYPES[c]) for c in COMPARED_COLUMNS
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


def text_column(nullable: bool = False, isin: tuple[str, ...] | None = None) -> Column:
    return Column(pl.String(), nullable, isin=isin)


def count_column(at_least: int = 0, nullable: bool = False) -> Column:
    return Column(pl.Int64(), nullable, ge=at_least)


def real_column(nullable: bool = False, ge: float | None = None, unit: bool = False) -> Column:
    return Column(pl.Float64(), nullable, ge=ge, unit=unit)


def usage_column() -> Column:
    """A usage total (cost, latency, tokens per episode), contract 1.4: null or a finite
    number at least 0; at most float64's largest, so an infinite or NaN total fails the
    table's validation before it is written (none is made: ``transforms.usage.fitting``)."""
    return Column(pl.Float64(), nullable=True, ge=0.0, le=sys.float_info.max)


CATEGORIES: Final = tuple(str(c) for c in Category)


# The categories of an episode or a task: the six, or ``uncategorised`` (contract 1.4: a task
# its publisher puts in none; it counts in the overall score, in no category's table).
TASK_CATEGORIES: Final = CATEGORY_VALUES


SCOPES: Final = (*CATEGORIES, OVERALL, OVERALL_BY_CATEGORY)


DESIGN_VALUES: Final = tuple(d.value for d in Design)


VERDICTS: Final = (A_BETTER, B_BETTER, UNRESOLVED)


PAIRINGS: Final = (PAIRED_FULL, PAIRED_PARTIAL, PAIRED_NONE)


LEVELS: Final = (LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT, LEVEL_NOT_COMPARABLE)


PROVENANCE_RULES: Final = {name: text_column() for name in PROVENANCE}


# Within SCORE_RANGE unless an episode behind the score lies outside it (a runtime RL
# `floor` above 1 can lift a score past 1). Null where there is no spread to measure (a
# task's episodes that do not vary; a category or model of one task and one episode, or of
# scores all the same): never an interval of zero width for want of an estimator.
INTERVAL_RULES: Final = {CI_LOW: real_column(nullable=True), CI_HIGH: real_column(nullable=True)}


COMPONENT_RULES: Final[dict[str, Column]] = {
    Component.CORRECT_COUNT: count_column(nullable=True),
    Component.N_ITEMS: count_column(nullable=True),
    Component.EXAMPLES_USED: count_column(nullable=True),
    Component.STEPS: count_column(nullable=True),
    Component.SUCCESS: Column(pl.Boolean(), nullable=True),
    **{
        c: real_column(nullable=True, unit=True)
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


EPISODE_RULES: Final[dict[str, Column]] = {
    Col.CATEGORY: text_column(isin=TASK_CATEGORIES),
    INSTANCE_ID: text_column(nullable=True),  # contract 1.1; null: not shared
    DUMP_DATE: text_column(nullable=True),
    FEEDBACK_OUT_OF_RANGE: count_column(),
    N_ROWS: count_column(1),
    **COMPONENT_RULES,
    REPORTED_SCORE: real_column(nullable=True),  # contract 1.2
    SCORE_MISMATCH: Column(pl.Boolean(), nullable=True),
    VERDICT_MISMATCHES: count_column(nullable=True),
    **{name: count_column(nullable=True) for name in (INPUT_TOKENS, OUTPUT_TOKENS)},  # contract 1.3
    **{name: usage_column() for name in (COST_USD, LATENCY_MS)},
    REPLIES_WITHOUT_USAGE: count_column(nullable=True),
    USAGE_REFUSED: text_column(nullable=True),  # contract 1.4
    SINGLE_RUN_STARTED: Column(pl.Datetime("us", "UTC"), nullable=True),  # contract 1.4
    CALLS: count_column(nullable=True),
    SOURCE_NAMES: text_column(nullable=True),  # contract 1.5
    WALL_MS: usage_column(),
}


# Contract 1.3, per task, category and model: the episodes that record usage and the
# incomplete ones (null in rows scored before cogscore read usage), and each measure's total
# over them (null where none records it, or one of them does not: a total of some of them
# would read as the whole).
USAGE_RULES: Final[dict[str, Column]] = {
    USAGE_EPISODES: count_column(nullable=True),
    USAGE_INCOMPLETE: count_column(nullable=True),
    **{name: count_column(nullable=True) for name in (INPUT_TOKENS, OUTPUT_TOKENS)},
    **{name: usage_column() for name in (COST_USD, LATENCY_MS)},
    CALLS: count_column(nullable=True),
    WALL_MS: usage_column(),
}


class SqlFormat(StrEnum):
    """How ``cogscore sql`` prints a result (``flows.present.sql.formatted``): never a value cut."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"


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
    "episodes_usage_refused",  # contract 1.4 (null in rows of earlier runs)
    "episodes_replaced",  # contract 1.4: scored, and replaced by a later run (null: earlier)
)
