"""What changed between two standings (``transforms.standings`` computes it): per model and
scope, ``standing_changes``; per model and task, ``task_changes``. Registered with the other
standing tables in ``schemas.tables`` (``STANDING_TABLES``)."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import (
    AS_OF,
    DESIGN_VALUES,
    LEVELS,
    PAIRINGS,
    PROVENANCE_RULES,
    SCOPES,
    SCORE,
    TASK_CATEGORIES,
    Column,
    Table,
    count_column,
    real_column,
    text_column,
)
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE_SCORE,
    BEYOND_NOISE,
    CHANGE,
    CHANGE_KIND,
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DF,
    MARGIN,
    MDE,
    MOVED_BY,
    N_PAIRS,
    NEW_FORMULA,
    NEW_NIGHT,
    NEW_RANK,
    NEW_RANK_HIGH,
    NEW_RANK_LOW,
    NEW_SCORE,
    OLD_FORMULA,
    OLD_NIGHT,
    OLD_RANK,
    OLD_RANK_HIGH,
    OLD_RANK_LOW,
    OLD_SCORE,
    P_VALUE,
    PAIRED,
    PREVIOUS_AS_OF,
    Q_BH,
    REASON,
    SCOPE,
    SE,
    TASKS_ADDED,
    TASKS_DROPPED,
    TASKS_RERUN,
    TASKS_RESCORED,
    ChangeKind,
)
from schemas.contract import Col

STANDING_CHANGES_TABLE: Final = Table(
    "standing_changes",
    {
        AS_OF: text_column(),
        PREVIOUS_AS_OF: text_column(),
        Col.MODEL: text_column(),
        SCOPE: text_column(isin=SCOPES),
        CHANGE_KIND: text_column(isin=tuple(k.value for k in ChangeKind)),
        TASKS_RERUN: count_column(),
        TASKS_ADDED: count_column(),
        TASKS_DROPPED: count_column(),
        TASKS_RESCORED: count_column(),
        MOVED_BY: text_column(nullable=True),
        BASELINE_SCORE: real_column(nullable=True),  # the previous standing's (null: a new model)
        SCORE: real_column(nullable=True),  # null: the model vanished
        CHANGE: real_column(nullable=True),
        # the rank and rank interval before and now (null: no rank in one of them, or a
        # scope without ranks)
        OLD_RANK: count_column(1, nullable=True),
        NEW_RANK: count_column(1, nullable=True),
        OLD_RANK_LOW: count_column(1, nullable=True),
        OLD_RANK_HIGH: count_column(1, nullable=True),
        NEW_RANK_LOW: count_column(1, nullable=True),
        NEW_RANK_HIGH: count_column(1, nullable=True),
        SE: real_column(nullable=True, ge=0.0),
        DF: real_column(nullable=True, ge=0.0),
        DESIGN: text_column(nullable=True, isin=DESIGN_VALUES),
        CI_LOW: real_column(nullable=True),
        CI_HIGH: real_column(nullable=True),
        P_VALUE: real_column(nullable=True, unit=True),
        Q_BH: real_column(nullable=True, unit=True),
        MDE: real_column(nullable=True, ge=0.0),
        MARGIN: real_column(nullable=True, ge=0.0),
        N_PAIRS: count_column(nullable=True),
        PAIRED: text_column(nullable=True, isin=PAIRINGS),
        ALERT_LEVEL: text_column(isin=LEVELS),
        BEYOND_NOISE: Column(pl.Boolean(), nullable=True),
        REASON: text_column(nullable=True),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    # A standing has a row per model and scope against the night before, and (``rescored``)
    # one against itself as the output held it before a run scored its nights anew.
    sort=(Col.MODEL, SCOPE, PREVIOUS_AS_OF),
    strict=True,
    ordered=True,
    unique=(AS_OF, PREVIOUS_AS_OF, Col.MODEL, SCOPE),
)


# How a model's result on a task changed between two standings: a newer night's result
# (``rerun``), one added or dropped (``coverage``), the same night's scored anew (``rescored``).
CELL_KINDS: Final = tuple(
    k.value for k in (ChangeKind.RERUN, ChangeKind.COVERAGE, ChangeKind.RESCORED)
)

# One row per standing, standing compared with, model and task whose result changed: the
# result before (its night, score, formula) and now. A dashboard's "what was re-run".
TASK_CHANGES_TABLE: Final = Table(
    "task_changes",
    {
        AS_OF: text_column(),
        PREVIOUS_AS_OF: text_column(),  # as in standing_changes
        Col.MODEL: text_column(),
        Col.CATEGORY: text_column(isin=TASK_CATEGORIES),  # a task in none: uncategorised
        Col.TASK: text_column(),
        CHANGE_KIND: text_column(isin=CELL_KINDS),
        OLD_NIGHT: text_column(nullable=True),  # null: no result before (added)
        NEW_NIGHT: text_column(nullable=True),  # null: none now (dropped)
        OLD_SCORE: real_column(nullable=True),
        NEW_SCORE: real_column(nullable=True),
        CHANGE: real_column(nullable=True),  # new_score - old_score
        OLD_FORMULA: text_column(nullable=True),
        NEW_FORMULA: text_column(nullable=True),
        **PROVENANCE_RULES,
    },
    night=AS_OF,
    sort=(Col.MODEL, Col.CATEGORY, Col.TASK, PREVIOUS_AS_OF),
    strict=True,
    ordered=True,
    unique=(AS_OF, PREVIOUS_AS_OF, Col.MODEL, Col.CATEGORY, Col.TASK),
)
