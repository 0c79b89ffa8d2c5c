"""The output tables and their registry (``TABLES``; the runs table, ``RUNS_TABLE``).

Each table is declared once, here (from the blocks of ``schemas.columns``; the health tables
in ``schemas.health``): its columns (dtype, nulls, the checks its values must
meet), its partitions after ``dump_date`` and its sort order. Storage, validation (the
pandera schemas of ``schemas.models``, built from these declarations), the SQL views and the
report read it. Nothing here imports pandera: the read commands need only the dtypes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from schemas.changes import STANDING_CHANGES_TABLE, TASK_CHANGES_TABLE
from schemas.columns import (
    AS_OF,
    CATEGORIES,
    COMPONENT_DTYPES,
    DESIGN_VALUES,
    EPISODE_RULES,
    EPISODE_SCORES_DTYPES,
    FORMULA_VERSION,
    INTERVAL_RULES,
    LEVELS,
    MEAN_TOKENS,
    N_EPISODES,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    PAIRINGS,
    PROVENANCE,
    PROVENANCE_RULES,
    RANK,
    REASONS,
    REJECTS_DTYPES,
    REPLACED_BY,
    ROWS,
    RULES,
    RUN_COUNTS,
    SCOPES,
    SCORE,
    SCORER_VERSION,
    STATUS,
    STD,
    TASK_CATEGORIES,
    USAGE_RULES,
    VERDICTS,
    Column,
    EpisodeStatus,
    RunStatus,
    Table,
    count_column,
    real_column,
    text_column,
    usage_column,
)
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE,
    BASELINE_DATES,
    BASELINE_SCORE,
    CATEGORIES_COVERED,
    CHANGE,
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
    MARGIN,
    MDE,
    MODEL_A,
    MODEL_B,
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
    P_HOLM,
    P_VALUE,
    P_WILCOXON,
    PAIRED,
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
    TIER,
    VERDICT,
)
from schemas.contract import DUMP_DATE, FILE, Category, Col
from schemas.health import HEALTH_TABLES
from schemas.hypotheses import HYPOTHESES_TABLE
from schemas.standing_episodes import STANDING_EPISODES_TABLE

# --- the registry ---------------------------------------------------------------------------


EPISODE_SCORES_TABLE: Final = Table(
    "episode_scores",
    {
        **{
            name: EPISODE_RULES.get(name, Column(dtype, nullable=name in COMPONENT_DTYPES))
            for name, dtype in EPISODE_SCORES_DTYPES.items()
        },
        **PROVENANCE_RULES,
    },
    partitions=(Col.CATEGORY,),
    sort=(FILE, Col.EPISODE_ID),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, Col.EPISODE_ID),  # copies within a night are rejected
)
# Contract 1.4: the episodes that a later single run of their model and task on their night
# replaced (``transforms.replaced``): scored, kept as they were, never averaged.
REPLACED_EPISODES_TABLE: Final = Table(
    "replaced_episodes",
    {
        **{n: c for n, c in EPISODE_SCORES_TABLE.columns.items() if n not in PROVENANCE_RULES},
        REPLACED_BY: text_column(),
        **PROVENANCE_RULES,
    },
    sort=(FILE, Col.EPISODE_ID),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, Col.EPISODE_ID),
)
REJECTS_TABLE: Final = Table(
    "rejects",
    {
        **{name: Column(dtype, nullable=True) for name, dtype in REJECTS_DTYPES.items()},
        FILE: text_column(),
        STATUS: text_column(isin=(EpisodeStatus.REJECTED, EpisodeStatus.HARNESS_ERROR)),
        RULES: Column(pl.List(pl.String())),
        REASONS: Column(pl.List(pl.String())),
        ROWS: count_column(),  # an unreadable file's rows cannot be counted
        **PROVENANCE_RULES,
    },
    sort=(FILE, Col.EPISODE_ID),
    strict=True,
    ordered=True,
)
TASK_SCORES_TABLE: Final = Table(
    "task_scores",
    {
        **INTERVAL_RULES,
        DUMP_DATE: text_column(nullable=True),
        Col.MODEL: text_column(),
        Col.CATEGORY: text_column(isin=TASK_CATEGORIES),  # uncategorised: in no category
        Col.TASK: text_column(),
        SCORE: real_column(),
        N_EPISODES: count_column(1),
        STD: real_column(nullable=True, ge=0.0),
        FORMULA_VERSION: text_column(),
        **USAGE_RULES,
        MEAN_TOKENS: usage_column(),
        **PROVENANCE_RULES,
    },
    sort=(Col.MODEL, Col.CATEGORY, Col.TASK),
    patterns={"mean_.+": real_column(nullable=True)},
    frame_checks=("low_below_high",),
)
CATEGORY_SCORES_TABLE: Final = Table(
    "category_scores",
    {
        **INTERVAL_RULES,
        DUMP_DATE: text_column(nullable=True),
        Col.MODEL: text_column(),
        Col.CATEGORY: text_column(isin=CATEGORIES),
        SCORE: real_column(),
        N_TASKS: count_column(1),
        N_EPISODES: count_column(1),
        FORMULA_VERSION: text_column(),
        **USAGE_RULES,
        RANK: count_column(1),  # among the category's models; its interval as model_scores'
        RANK_LOW: count_column(1),
        RANK_HIGH: count_column(1),
        **PROVENANCE_RULES,
    },
    sort=(Col.MODEL, Col.CATEGORY),
    frame_checks=("low_below_high", "rank_in_interval"),
)
MODEL_SCORES_TABLE: Final = Table(
    "model_scores",
    {
        **INTERVAL_RULES,
        DUMP_DATE: text_column(nullable=True),
        Col.MODEL: text_column(),
        SCORE: real_column(),  # the mean of the model's task scores: each task weighs the same
        SCORE_BY_CATEGORY: real_column(nullable=True),  # null: all its tasks in no category
        CI_LOW_BY_CATEGORY: real_column(nullable=True),
        CI_HIGH_BY_CATEGORY: real_column(nullable=True),
        RANK_BY_CATEGORY: count_column(1, nullable=True),
        CATEGORIES_COVERED: Column(pl.Int64(), ge=0, le=len(Category)),
        RANKED_AMONG: text_column(),  # the categories covered, comma-joined: ranked among these
        N_TASKS: count_column(1),
        N_EPISODES: count_column(1),
        N_RANKED: count_column(1),
        RANK: count_column(1),
        RANK_LOW: count_column(1),  # the rank interval: it holds for every model at once
        RANK_HIGH: count_column(1),
        RANK_UB: count_column(1),  # 1 + the models significantly better (Holm): LMArena's rank (UB)
        # the greedy grouping of the Holm verdicts, kept for its readers: a model of a worse
        # tier is not always significantly worse (RANK_UB is the statement)
        TIER: count_column(1, nullable=True),  # null: alone in its coverage group
        FORMULA_VERSIONS: text_column(),
        **USAGE_RULES,
        **PROVENANCE_RULES,
    },
    sort=(RANKED_AMONG, RANK, Col.MODEL),
    frame_checks=("ranks_within_group", "low_below_high"),
)
RESCORE_DIFF_TABLE: Final = Table(
    "rescore_diff",
    {
        DUMP_DATE: text_column(nullable=True),
        Col.MODEL: text_column(),
        DIFF_LEVEL: text_column(isin=DIFF_LEVELS),
        Col.CATEGORY: text_column(isin=SCOPES),
        OLD_SCORE: real_column(nullable=True),
        NEW_SCORE: real_column(nullable=True),
        DELTA: real_column(nullable=True),
        OLD_RANK: count_column(1, nullable=True),
        NEW_RANK: count_column(1, nullable=True),
        OLD_FORMULA: text_column(nullable=True),
        NEW_FORMULA: text_column(nullable=True),
        SE: real_column(nullable=True, ge=0.0),
        DF: real_column(nullable=True, ge=0.0),
        DESIGN: text_column(nullable=True, isin=DESIGN_VALUES),
        CI_LOW: real_column(nullable=True),
        CI_HIGH: real_column(nullable=True),
        P_VALUE: real_column(nullable=True, unit=True),
        MDE: real_column(nullable=True, ge=0.0),
        N_PAIRS: count_column(nullable=True),
        PAIRED: text_column(nullable=True, isin=PAIRINGS),
        RANK_CHANGE_SIGNIFICANT: Column(pl.Boolean(), nullable=True),
        **PROVENANCE_RULES,
    },
    sort=(Col.MODEL, DIFF_LEVEL, Col.CATEGORY),
)
MODEL_COMPARISONS_TABLE: Final = Table(
    "model_comparisons",
    {
        DUMP_DATE: text_column(nullable=True),
        SCOPE: text_column(isin=SCOPES),
        MODEL_A: text_column(),
        MODEL_B: text_column(),
        N_TASKS: count_column(),
        N_EPISODES_A: count_column(1),
        N_EPISODES_B: count_column(1),
        N_PAIRS: count_column(),
        PAIRED: text_column(isin=PAIRINGS),
        SCORE_A: real_column(),
        SCORE_B: real_column(),
        DIFF: real_column(),
        SE: real_column(nullable=True, ge=0.0),
        SE_TASKS: real_column(nullable=True, ge=0.0),
        SE_WITHIN: real_column(nullable=True, ge=0.0),
        DF: real_column(nullable=True, ge=0.0),
        DESIGN: text_column(isin=DESIGN_VALUES),
        CI_LOW: real_column(nullable=True),
        CI_HIGH: real_column(nullable=True),
        P_VALUE: real_column(nullable=True, unit=True),
        P_HOLM: real_column(nullable=True, unit=True),
        VERDICT: text_column(isin=VERDICTS),
        MDE: real_column(nullable=True, ge=0.0),
        P_WILCOXON: real_column(nullable=True, unit=True),
        N_TASKS_A_BETTER: count_column(),
        N_TASKS_B_BETTER: count_column(),
        # why se, p, the interval and the verdict are null, the mde null, or the interval
        # approximate (null: none of these); null too in tables written before it existed
        REASON: text_column(nullable=True),
        **PROVENANCE_RULES,
    },
    sort=(SCOPE, MODEL_A, MODEL_B),
    strict=True,
    ordered=True,
    unique=(DUMP_DATE, SCOPE, MODEL_A, MODEL_B),
)
REGRESSIONS_TABLE: Final = Table(
    "regressions",
    {
        DUMP_DATE: text_column(),
        Col.MODEL: text_column(),
        SCOPE: text_column(isin=SCOPES),
        BASELINE: text_column(isin=("previous", "mean")),
        BASELINE_DATES: text_column(),
        N_BASELINE_NIGHTS: count_column(1),
        # null only where the model had episodes but none scored (level not_comparable)
        SCORE: real_column(nullable=True),
        BASELINE_SCORE: real_column(nullable=True),
        CHANGE: real_column(nullable=True),
        SE: real_column(nullable=True, ge=0.0),
        DF: real_column(nullable=True, ge=0.0),
        DESIGN: text_column(isin=DESIGN_VALUES),
        CI_LOW: real_column(nullable=True),
        CI_HIGH: real_column(nullable=True),
        P_VALUE: real_column(nullable=True, unit=True),
        Q_BH: real_column(nullable=True, unit=True),
        MDE: real_column(nullable=True, ge=0.0),
        MARGIN: real_column(nullable=True, ge=0.0),
        N_PAIRS: count_column(),
        PAIRED: text_column(isin=PAIRINGS),
        ALERT_LEVEL: text_column(isin=LEVELS),
        REASON: text_column(nullable=True),
        **PROVENANCE_RULES,
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
    {AS_OF: text_column(nullable=True), **TASK_SCORES_TABLE.columns},
    night=AS_OF,
    sort=TASK_SCORES_TABLE.sort,
    patterns=TASK_SCORES_TABLE.patterns,
    frame_checks=TASK_SCORES_TABLE.frame_checks,
)
CATEGORY_STANDINGS_TABLE: Final = _as_of(CATEGORY_SCORES_TABLE, "category_standings")
STANDINGS_TABLE: Final = _as_of(
    MODEL_SCORES_TABLE,
    "standings",
    {OLDEST_NIGHT: text_column(nullable=True), NEWEST_NIGHT: text_column(nullable=True)},
)
STANDING_COMPARISONS_TABLE: Final = _as_of(MODEL_COMPARISONS_TABLE, "standing_comparisons")


# --- the benchmark's health, per standing (``transforms.health``) --------------------------


STANDING_TABLES: Final = (
    TASK_STANDINGS_TABLE,
    CATEGORY_STANDINGS_TABLE,
    STANDINGS_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDING_CHANGES_TABLE,
    TASK_CHANGES_TABLE,
    *HEALTH_TABLES,
    HYPOTHESES_TABLE,
)

# One row per harness run file a nightly with runs to import read (``cogscore nightly --runs``):
# what became of it. A run not imported is never only a line in a log.
IMPORTS_TABLE: Final = Table(
    "imports",
    {
        "run_id": text_column(),  # the cogscore run that imported it
        "imported": Column(pl.Datetime("us", "UTC")),
        "source": text_column(),  # RUNS: a folder or a URL (no credentials)
        "run_file": text_column(),  # the run file, relative to RUNS
        "run_sha256": text_column(nullable=True),  # its content's digest (null: unreadable)
        "outcome": text_column(isin=("imported", "rejected")),
        "reasons": Column(pl.List(pl.String())),  # schemas.kaggle.Reason codes
        "detail": text_column(nullable=True),
        DUMP_DATE: text_column(nullable=True),  # the night its rows went to (null: none)
        FILE: text_column(nullable=True),  # its rows' file, relative to DUMP_ROOT
        Col.MODEL: text_column(nullable=True),
        Col.TASK: text_column(nullable=True),
        SCORER_VERSION: text_column(),  # (a run file has no input fingerprint of a night)
    },
    sort=("run_file",),
    strict=True,
    ordered=True,
    appended=True,
)


# Every table a run writes but the runs table (``flows.store.runs_table``), by name.
TABLES: Final[dict[str, Table]] = {
    t.name: t
    for t in (
        EPISODE_SCORES_TABLE,
        REJECTS_TABLE,
        REPLACED_EPISODES_TABLE,
        TASK_SCORES_TABLE,
        CATEGORY_SCORES_TABLE,
        MODEL_SCORES_TABLE,
        RESCORE_DIFF_TABLE,
        MODEL_COMPARISONS_TABLE,
        REGRESSIONS_TABLE,
        *STANDING_TABLES,
        STANDING_EPISODES_TABLE,
        IMPORTS_TABLE,
    )
}


# --- the runs table (``flows.store.runs_table``): a row per run and night, appended last ---


# Written by cogscore alone (``RunRow.record``), not validated on write: the nullable columns
# are those a row may leave null or rows of earlier versions lack
# (``tests/store/test_runs_table.py`` holds the rows written to this).
RUNS_TABLE: Final = Table(
    "runs",
    {
        "run_id": text_column(),
        "kind": text_column(),  # score | nightly | rescore
        "status": text_column(isin=tuple(s.value for s in RunStatus)),
        "started": Column(pl.Datetime("us", "UTC")),
        "finished": Column(pl.Datetime("us", "UTC")),
        "night": text_column(nullable=True),  # null: the undated night, or no night scored
        **{column: count_column(nullable=True) for column in RUN_COUNTS},
        "formula_versions": text_column(),  # JSON object {category: version}
        "formula_set": text_column(nullable=True),  # JSON object: the output's set after the run
        "scorer_version": text_column(),
        "input": text_column(nullable=True),  # the dump root: a path or a URL (no credentials)
        "partitioned": Column(pl.Boolean(), nullable=True),  # by dump_date, or undated
        "input_fingerprint": text_column(nullable=True),
        # JSON list: the night's input files (size, digest, ...)
        "files": text_column(nullable=True),
        "table_versions": text_column(),  # JSON object {table: version}
        "details": text_column(nullable=True),  # JSON object: the run's own record (engine, ...)
    },
    strict=True,
    ordered=True,
)
