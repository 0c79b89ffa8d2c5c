"""The benchmark as it stands: each model's latest result on every task.

A harness benchmark does not run every model on every task every night: models are added,
tasks re-run as they change, and its leaderboard is each model's latest result on each task,
whenever it ran. The **standing as of night N** holds, for each model and task, the task's
result (its row of ``task_scores``: score, episodes, interval) from the latest night <= N on
which that model had the task's episodes scored. A re-run replaces the earlier result for
that task only; a task never re-run keeps its result.

A standing is built from the one before it and the night's own task rows
(``task_standing``): it never needs all of history again. Its categories, models, ranks and
comparisons are the night's statistics over the standing's episodes (``flows.standings``).
What changed between two standings, cell by cell (``cell_changes``) and per model and scope
(``standing_changes``), says which tasks moved a model's score.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import AS_OF, FORMULA_VERSION, PROVENANCE, RANK, SCORE
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
    N_TASKS,
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
    OVERALL,
    P_VALUE,
    PAIRED,
    PREVIOUS_AS_OF,
    Q_BH,
    RANK_HIGH,
    RANK_LOW,
    REASON,
    SCOPE,
    SE,
    TASKS_ADDED,
    TASKS_DROPPED,
    TASKS_RERUN,
    TASKS_RESCORED,
    ChangeKind,
)
from schemas.contract import DUMP_DATE, UNCATEGORISED, Col
from schemas.tables import STANDING_CHANGES_TABLE, TASK_CHANGES_TABLE
from transforms.compare.regressions import alert_level

CELL: Final = [Col.MODEL, Col.CATEGORY, Col.TASK]
# cell_changes' kind of change (a working name: task_changes writes it as ``kind``).
CELL_CHANGE: Final = "cell_change"
# How many tasks ``moved_by`` names (the largest moves first); the rest are counted.
MOVED_NAMED: Final = 8


def task_standing(
    previous: pl.LazyFrame | None, tonight: pl.LazyFrame, as_of: str | None
) -> pl.LazyFrame:
    """The task rows of the standing as of ``as_of``: ``tonight``'s task rows (``task_scores``
    of night ``as_of``) and, for every model and task they lack, the previous standing's
    (``previous``: ``task_standings`` of the standing before, or None for the first).
    ``dump_date`` stays the night each result comes from; ``as_of`` comes first.

    >>> before = pl.LazyFrame({"dump_date": ["01", "01"], "model": ["m", "m"],
    ...     "category": ["c", "c"], "task": ["t", "u"], "score": [0.1, 0.2]})
    >>> tonight = pl.LazyFrame({"dump_date": ["02"], "model": ["m"], "category": ["c"],
    ...     "task": ["u"], "score": [0.5]})
    >>> task_standing(before, tonight, "02").sort("task").collect().rows()
    [('02', '01', 'm', 'c', 't', 0.1), ('02', '02', 'm', 'c', 'u', 0.5)]
    """
    rows = tonight
    if previous is not None:
        kept = previous.drop(AS_OF, strict=False).join(tonight, on=CELL, how="anti")
        rows = pl.concat([kept, tonight], how="diagonal_relaxed")
    return rows.select(pl.lit(as_of, pl.String).alias(AS_OF), pl.all().exclude(AS_OF))


def cell_changes(previous: pl.LazyFrame, current: pl.LazyFrame) -> pl.LazyFrame:
    """Each model and task whose result differs between two standings' task rows, and how
    (``CELL_CHANGE``, a ``ChangeKind`` of a cell: ``rerun``, a newer night's result;
    ``coverage``, a task added or dropped; ``rescored``, the same night's result scored
    anew), with the nights and scores before and after (null where there is none).

    >>> old = pl.LazyFrame({"dump_date": ["01", "01", "01"], "model": ["m"] * 3,
    ...     "category": ["c"] * 3, "task": ["s", "t", "u"], "score": [0.1, 0.2, 0.3],
    ...     "formula_version": ["v1"] * 3})
    >>> new = pl.LazyFrame({"dump_date": ["01", "02", "02"], "model": ["m"] * 3,
    ...     "category": ["c"] * 3, "task": ["s", "t", "v"], "score": [0.1, 0.6, 0.9],
    ...     "formula_version": ["v1"] * 3})
    >>> cell_changes(old, new).select("task", "cell_change").sort("task").collect().rows()
    [('t', 'rerun'), ('u', 'coverage'), ('v', 'coverage')]
    """

    def side(frame: pl.LazyFrame, night: str, score: str, formula: str) -> pl.LazyFrame:
        return frame.select(
            *CELL,
            pl.col(DUMP_DATE).alias(night),
            pl.col(SCORE).alias(score),
            pl.col(FORMULA_VERSION).alias(formula),
        )

    old = side(previous, OLD_NIGHT, OLD_SCORE, OLD_FORMULA)
    new = side(current, NEW_NIGHT, NEW_SCORE, NEW_FORMULA)
    joined = old.join(new, on=CELL, how="full", coalesce=True, nulls_equal=True)
    absent = pl.col(OLD_SCORE).is_null() | pl.col(NEW_SCORE).is_null()
    kind = (
        pl.when(absent)
        .then(pl.lit(ChangeKind.COVERAGE.value))
        .when(pl.col(OLD_NIGHT).ne_missing(pl.col(NEW_NIGHT)))
        .then(pl.lit(ChangeKind.RERUN.value))
        .when(
            pl.col(OLD_SCORE).ne_missing(pl.col(NEW_SCORE))
            | pl.col(OLD_FORMULA).ne_missing(pl.col(NEW_FORMULA))
        )
        .then(pl.lit(ChangeKind.RESCORED.value))
    )
    return joined.with_columns(kind.alias(CELL_CHANGE)).filter(pl.col(CELL_CHANGE).is_not_null())


def task_changes(cells: pl.LazyFrame, *, as_of: str, previous_as_of: str) -> pl.LazyFrame:
    """``task_changes`` rows of the standing as of ``as_of`` against the one as of
    ``previous_as_of``: each changed cell (``cell_changes``), its result before and now.

    >>> cells = pl.LazyFrame({"model": ["m"], "category": ["c"], "task": ["t"],
    ...     "old_night": ["01"], "old_score": [0.0], "old_formula": ["reported"],
    ...     "new_night": ["02"], "new_score": [0.875], "new_formula": ["reported"],
    ...     "cell_change": ["rerun"]})
    >>> row = task_changes(cells, as_of="02", previous_as_of="01").collect().row(0)
    >>> row[:6], row[8:11]
    (('02', '01', 'm', 'c', 't', 'rerun'), (0.0, 0.875, 0.875))
    """
    return (
        cells.with_columns(
            pl.lit(as_of, pl.String).alias(AS_OF),
            pl.lit(previous_as_of, pl.String).alias(PREVIOUS_AS_OF),
            pl.col(CELL_CHANGE).alias(CHANGE_KIND),
            (pl.col(NEW_SCORE) - pl.col(OLD_SCORE)).alias(CHANGE),
        )
        .select(pl.col(c).cast(TASK_CHANGES_TABLE.dtypes[c]) for c in _OWN_CELLS)
        .sort(list(TASK_CHANGES_TABLE.sort))
    )


def _scoped(cells: pl.LazyFrame) -> pl.LazyFrame:
    """Each changed cell once under its category's scope and once under ``overall``; a cell
    of a task in no category (contract 1.4) under ``overall`` alone."""
    return pl.concat(
        [
            cells.filter(pl.col(Col.CATEGORY) != UNCATEGORISED).with_columns(
                pl.col(Col.CATEGORY).alias(SCOPE)
            ),
            cells.with_columns(pl.lit(OVERALL).alias(SCOPE)),
        ]
    )


def _moved_by() -> pl.Expr:
    """The tasks that moved the score, the largest move first, each with the change of its
    own score (``+0.250``) or how it changed coverage; the rest counted."""
    move = pl.col(NEW_SCORE).fill_null(0.0) - pl.col(OLD_SCORE).fill_null(0.0)
    label = (
        pl.when(pl.col(OLD_SCORE).is_null())
        .then(pl.format("{} (added)", Col.TASK))
        .when(pl.col(NEW_SCORE).is_null())
        .then(pl.format("{} (dropped)", Col.TASK))
        .otherwise(
            pl.format(
                "{} {}",
                Col.TASK,
                pl.when(move >= 0).then(pl.lit("+")).otherwise(pl.lit(""))
                + move.round_sig_figs(3).cast(pl.String),
            )
        )
    )
    ordered = label.sort_by(move.abs(), Col.TASK, descending=[True, False])
    named = ordered.head(MOVED_NAMED).str.join(", ")
    more = pl.len().cast(pl.Int64) - MOVED_NAMED
    return (pl.when(more > 0).then(pl.format("{}, … {} more", named, more)).otherwise(named)).alias(
        MOVED_BY
    )


def _counts(cells: pl.LazyFrame) -> pl.LazyFrame:
    """Per model and scope: the changed cells counted by kind, and what moved."""
    of = pl.col(CELL_CHANGE)
    return cells.group_by(Col.MODEL, SCOPE).agg(
        (of == ChangeKind.RERUN).sum().cast(pl.Int64).alias(TASKS_RERUN),
        ((of == ChangeKind.COVERAGE) & pl.col(OLD_SCORE).is_null())
        .sum()
        .cast(pl.Int64)
        .alias(TASKS_ADDED),
        ((of == ChangeKind.COVERAGE) & pl.col(NEW_SCORE).is_null())
        .sum()
        .cast(pl.Int64)
        .alias(TASKS_DROPPED),
        (of == ChangeKind.RESCORED).sum().cast(pl.Int64).alias(TASKS_RESCORED),
        _moved_by(),
    )


# A standing's rank columns, and their names in standing_changes before and now.
RANKS: Final = {
    RANK: (OLD_RANK, NEW_RANK),
    RANK_LOW: (OLD_RANK_LOW, NEW_RANK_LOW),
    RANK_HIGH: (OLD_RANK_HIGH, NEW_RANK_HIGH),
}


def _ranks(frame: pl.LazyFrame) -> list[pl.Expr]:
    """A standing's rank and rank interval, where its rows have them (null elsewhere: a
    scope without ranks)."""
    have = frame.collect_schema()
    return [(pl.col(c) if c in have else pl.lit(None)).cast(pl.Int64).alias(c) for c in RANKS]


def _scores(models: pl.LazyFrame, categories: pl.LazyFrame) -> pl.LazyFrame:
    """Per model and scope: a standing's score, its tasks and its rank (overall and each
    category)."""
    return pl.concat(
        [
            models.select(Col.MODEL, pl.lit(OVERALL).alias(SCOPE), SCORE, N_TASKS, *_ranks(models)),
            categories.select(
                Col.MODEL,
                pl.col(Col.CATEGORY).alias(SCOPE),
                SCORE,
                N_TASKS,
                *_ranks(categories),
            ),
        ]
    )


def _sides(
    before: tuple[pl.LazyFrame, pl.LazyFrame], after: tuple[pl.LazyFrame, pl.LazyFrame]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Per model and scope, two standings' scores and ranks under their names in
    ``standing_changes``: the one before's (``baseline_score``, ``old_rank``, ...) and the
    one after's (``score``, ``new_rank``, ...)."""
    old = _scores(*before).rename(
        {SCORE: BASELINE_SCORE, N_TASKS: "__old_tasks"} | {c: o for c, (o, _) in RANKS.items()}
    )
    return old, _scores(*after).rename({c: n for c, (_, n) in RANKS.items()})


def _reranked(counted: pl.LazyFrame, old: pl.LazyFrame, new: pl.LazyFrame) -> pl.LazyFrame:
    """Per model and scope whose results did not change but whose rank did (other models'
    changes moved it): a row of ``counted``'s columns, no task counted."""
    moved = old.join(new, on=[Col.MODEL, SCOPE], how="inner").filter(
        pl.col(OLD_RANK).ne_missing(pl.col(NEW_RANK))
    )
    none = pl.lit(0, pl.Int64)
    return moved.join(counted, on=[Col.MODEL, SCOPE], how="anti").select(
        Col.MODEL,
        SCOPE,
        *(none.alias(c) for c in (TASKS_RERUN, TASKS_ADDED, TASKS_DROPPED, TASKS_RESCORED)),
        pl.lit(None, pl.String).alias(MOVED_BY),
    )


def standing_changes(
    changes: pl.LazyFrame,
    before: tuple[pl.LazyFrame, pl.LazyFrame],
    after: tuple[pl.LazyFrame, pl.LazyFrame],
    tested: pl.LazyFrame,
    *,
    as_of: str,
    previous_as_of: str,
    margin: float | None = None,
    alpha: float = 0.05,
) -> pl.LazyFrame:
    """``standing_changes`` rows of the standing as of ``as_of`` against the one as of
    ``previous_as_of``: per model whose results changed (``changes``, ``cell_changes``), its
    overall score and the score of each category where a result changed, before and after
    (``before``, ``after``: each standing's (model rows, category rows)), the change and
    the tasks that moved it.

    A model whose tasks were only re-run (the same tasks covered, the same formulas) has a
    comparable change: ``tested`` holds the regressions (``transforms.compare.regressions``,
    night ``as_of`` against ``previous_as_of``) of its re-run tasks alone, whose change is
    the standing's divided by the share of the scope's tasks re-run. Its interval, MDE and
    margin are scaled back by that share (the p-value does not change), and its level
    follows the regressions' rule (``alert``: ``q_bh < alpha`` and a drop beyond the margin,
    by default the MDE; ``watch``: a drop with ``p_value < alpha``); it is ``beyond_noise``
    where its ``q_bh`` is under ``alpha``, a rise or a drop (null where its noise could not
    be estimated). Any other change (tasks added or dropped, results rescored, a model new
    or gone) is ``not_comparable``, its reason said. Each row has the model's rank and rank
    interval before and after (where the scope's rows have ranks); a model whose results
    did not change but whose rank did (others moved it) is ``reranked`` (level ``none``).
    A model whose standing and rank did not change has no row."""
    counted = _counts(_scoped(changes))
    old, new = _sides(before, after)
    counted = pl.concat([counted, _reranked(counted, old, new)])
    rows = counted.join(old, on=[Col.MODEL, SCOPE], how="left").join(
        new, on=[Col.MODEL, SCOPE], how="left"
    )
    added, dropped = pl.col(TASKS_ADDED) > 0, pl.col(TASKS_DROPPED) > 0
    kind = (
        pl.when(pl.col(BASELINE_SCORE).is_null() & (pl.col(SCOPE) == OVERALL))
        .then(pl.lit(ChangeKind.NEW_MODEL.value))
        .when(pl.col(SCORE).is_null() & (pl.col(SCOPE) == OVERALL))
        .then(pl.lit(ChangeKind.VANISHED.value))
        .when(added | dropped)
        .then(pl.lit(ChangeKind.COVERAGE.value))
        .when(pl.col(TASKS_RESCORED) > 0)
        .then(pl.lit(ChangeKind.RESCORED.value))
        .when(pl.col(TASKS_RERUN) > 0)
        .then(pl.lit(ChangeKind.RERUN.value))
        .otherwise(pl.lit(ChangeKind.RERANKED.value))
    )
    # A new or vanished model: its overall row says so (its categories' rows would repeat it).
    whole_model = pl.col(CHANGE_KIND).is_in([ChangeKind.NEW_MODEL, ChangeKind.VANISHED])
    rows = rows.with_columns(kind.alias(CHANGE_KIND)).filter(
        ~(
            whole_model.any().over(Col.MODEL)
            & (pl.col(SCOPE) != OVERALL)
            & (pl.col(BASELINE_SCORE).is_null() | pl.col(SCORE).is_null())
        )
    )
    share = pl.col(TASKS_RERUN).cast(pl.Float64) / pl.col(N_TASKS).cast(pl.Float64)
    test = tested.select(
        Col.MODEL,
        SCOPE,
        pl.col(CHANGE).alias("__tested_change"),
        SE,
        DF,
        DESIGN,
        pl.col(CI_LOW).alias("__low"),
        pl.col(CI_HIGH).alias("__high"),
        P_VALUE,
        Q_BH,
        MDE,
        N_PAIRS,
        PAIRED,
        pl.col(REASON).alias("__tested_reason"),
    )
    rows = rows.join(test, on=[Col.MODEL, SCOPE], how="left")
    rerun = pl.col(CHANGE_KIND) == ChangeKind.RERUN
    reranked = pl.col(CHANGE_KIND) == ChangeKind.RERANKED
    comparable = rerun & pl.col("__tested_reason").is_null()
    change = pl.col(SCORE) - pl.col(BASELINE_SCORE)
    scaled = {
        SE: pl.col(SE) * share,
        CI_LOW: change - (pl.col("__tested_change") - pl.col("__low")) * share,
        CI_HIGH: change + (pl.col("__high") - pl.col("__tested_change")) * share,
        MDE: pl.col(MDE) * share,
    }
    rows = rows.with_columns(
        change.alias(CHANGE),
        *(pl.when(rerun).then(value).alias(name) for name, value in scaled.items()),
        *(pl.when(rerun).then(pl.col(c)).alias(c) for c in (DF, DESIGN, P_VALUE, Q_BH, N_PAIRS)),
        pl.when(rerun).then(pl.col(PAIRED)).alias(PAIRED),
    ).with_columns(
        pl.when(comparable)
        .then(pl.col(MDE) if margin is None else pl.lit(float(margin)))
        .alias(MARGIN)
    )
    reason = (
        pl.when(pl.col(CHANGE_KIND) == ChangeKind.NEW_MODEL)
        .then(pl.lit("no standing before: its first results"))
        .when(pl.col(CHANGE_KIND) == ChangeKind.VANISHED)
        .then(pl.lit("no result now: the nights it came from were emptied"))
        .when(pl.col(CHANGE_KIND) == ChangeKind.COVERAGE)
        .then(
            pl.format(
                "tasks covered changed ({} added, {} dropped): the score averages other tasks",
                TASKS_ADDED,
                TASKS_DROPPED,
            )
        )
        .when(pl.col(CHANGE_KIND) == ChangeKind.RESCORED)
        .then(
            pl.format(
                "{} result(s) of the same night scored anew (a rescore, or the night delivered"
                " again)",
                TASKS_RESCORED,
            )
        )
        .otherwise(pl.col("__tested_reason"))
    )
    columns = list(STANDING_CHANGES_TABLE.dtypes)
    provenance = [c for c in columns if c not in _OWN]
    return (
        rows.with_columns(
            pl.lit(as_of, pl.String).alias(AS_OF),
            pl.lit(previous_as_of, pl.String).alias(PREVIOUS_AS_OF),
            # A rank moved by others: its own results unchanged, nothing to test.
            alert_level(comparable | reranked, alpha).alias(ALERT_LEVEL),
            pl.when(comparable & pl.col(Q_BH).is_not_null())
            .then(pl.col(Q_BH) < alpha)
            .alias(BEYOND_NOISE),
            reason.alias(REASON),
        )
        .select(pl.col(c).cast(STANDING_CHANGES_TABLE.dtypes[c]) for c in _OWN)
        .select(*(c for c in columns if c not in provenance))
        .sort(Col.MODEL, SCOPE)
    )


def every_model(
    moved: pl.LazyFrame,
    before: tuple[pl.LazyFrame, pl.LazyFrame],
    after: tuple[pl.LazyFrame, pl.LazyFrame],
) -> pl.LazyFrame:
    """Two standings side by side: ``moved`` (``standing_changes`` rows of ``after``
    against ``before``) and, for each model and scope of either standing that has none (its
    results and rank did not change), a row of its score and rank in both (``kind`` null,
    ``change`` 0).

    >>> one = pl.LazyFrame({"model": ["m"], "score": [0.5], "n_tasks": [1], "rank": [1]})
    >>> none = pl.LazyFrame(schema={"model": pl.String, "category": pl.String,
    ...     "score": pl.Float64, "n_tasks": pl.Int64})
    >>> moved = pl.LazyFrame(schema={"model": pl.String, "scope": pl.String})
    >>> every_model(moved, (one, none), (one, none)).select(
    ...     "model", "scope", "kind", "change", "old_rank", "new_rank").collect().rows()
    [('m', 'overall', None, 0.0, 1, 1)]
    """
    old, new = _sides(before, after)
    both = old.join(new, on=[Col.MODEL, SCOPE], how="full", coalesce=True)
    still = both.join(moved, on=[Col.MODEL, SCOPE], how="anti").select(
        Col.MODEL,
        SCOPE,
        pl.lit(None, pl.String).alias(CHANGE_KIND),
        BASELINE_SCORE,
        SCORE,
        (pl.col(SCORE) - pl.col(BASELINE_SCORE)).alias(CHANGE),
        *(name for pair in RANKS.values() for name in pair),
    )
    return pl.concat([moved, still], how="diagonal_relaxed")


# The columns ``standing_changes`` and ``task_changes`` make (the writer adds the provenance).
_OWN: Final = [c for c in STANDING_CHANGES_TABLE.dtypes if c not in PROVENANCE]
_OWN_CELLS: Final = [c for c in TASK_CHANGES_TABLE.dtypes if c not in PROVENANCE]
