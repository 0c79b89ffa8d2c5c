"""The tables of one night, made in one place.

From a night's scored result (``flows.score.assemble``): its rejects (and its episode rows,
where the workers did not stage them), the task, category and model aggregates with their
intervals, the rank intervals, tiers and pairwise comparisons, the regressions against its
baseline nights (``flows.comparisons.NightWatch`` holds the history they need), and what a
run adds for the night (a rescore's diff). No provenance yet: the writer adds it.
``above_tasks`` makes the tables above the task scores for the standings as well.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from flows.comparisons import NightWatch
from flows.score import ScoreResult
from flows.store.catalog import (
    CATEGORY_SCORES,
    MODEL_COMPARISONS,
    MODEL_SCORES,
    REGRESSIONS,
    TASK_SCORES,
)
from schemas.contract import Col
from schemas.tables import EPISODE_SCORES_TABLE, REJECTS_TABLE, REPLACED_EPISODES_TABLE
from transforms.aggregate import (
    Bootstrap,
    category_scores,
    model_scores,
    task_replicates,
    task_scores,
)
from transforms.compact import plain
from transforms.compare import Known, NightStatistics
from transforms.compare.night import NightTables, episode_statistics, night_comparisons
from transforms.compare.preparation import ATOMS_AT_ONCE
from transforms.exact import exactly

# Per night: (night, its result, its tables) -> more tables of that night.
NightHook = Callable[[str | None, ScoreResult, dict[str, pl.DataFrame]], dict[str, pl.DataFrame]]
# The night's own tables, once made (before its regressions): what may start from them.
OwnTables = Callable[[dict[str, pl.DataFrame]], None]


def tables_of_night(
    night: str | None,
    result: ScoreResult,
    bootstrap: Bootstrap,
    watch: NightWatch,
    more: NightHook | None = None,
    *,
    made: OwnTables | None = None,
) -> dict[str, pl.DataFrame]:
    """Every table of night ``night``, by table name. ``made``: called with the night's own
    tables (``night_tables``: a copy of the mapping) as soon as they are made, before its
    regressions, so that what needs no more of the night (its standing) starts beside them."""
    tables = night_tables(result, bootstrap)
    if made is not None:
        made(dict(tables))
    tables[REGRESSIONS] = watch.regressions(
        night, result.scores, result.rejects, episodes=result.episodes()
    )
    if more is not None:
        tables |= more(night, result, tables)
    return tables


def night_tables(result: ScoreResult, bootstrap: Bootstrap) -> dict[str, pl.DataFrame]:
    """The tables of one night's result (or of an undated dump's): its episode scores,
    rejects and replaced runs, and the task, category and model aggregates of its scores (no
    provenance yet)."""
    counts = result.counts
    if counts["rows_read"] != counts["rows_scored"] + counts["rows_rejected"]:
        raise RuntimeError(f"row accounting does not balance: {counts}")
    # Staged episode scores are in OUT already (committed with the night's other tables).
    episodes = {} if result.staged is not None else {EPISODE_SCORES_TABLE.name: result.scores}
    return {
        **episodes,
        REJECTS_TABLE.name: result.rejects,
        REPLACED_EPISODES_TABLE.name: result.replaced,  # contract 1.4: never aggregated
        **aggregate(result.scores, bootstrap, result.sums),
    }


def aggregate(
    scores: pl.DataFrame, bootstrap: Bootstrap, sums: pl.DataFrame | None = None
) -> dict[str, pl.DataFrame]:
    """Task, category and model scores of the episode scores, with their intervals; the
    models' rank intervals and tiers, and every pair of models compared. ``sums``: the
    files' component sums (``transforms.aggregate.component_sums``), where ``scores`` holds
    only the slim columns."""
    # A large night's task rows are made a category at a time (each task's rows depend on
    # its episodes alone): polars' group_by over a night's keys held ~100 bytes an episode
    # (issue 48: +49 MiB for 500,000 episodes), over a category's a category's worth.
    large = scores.height > ATOMS_AT_ONCE
    # A small night's comparisons (of its episodes alone) are made on a thread beside its
    # task scores (polars releases the GIL: 2 cores' worth instead of ~1.4 in the two
    # one after the other); a large night's one after the other, to hold one working set.
    with ThreadPoolExecutor(1, thread_name_prefix="cogscore-statistics") as beside:
        made = None if large else beside.submit(episode_statistics, scores, bootstrap)
        task_frame = _task_scores(scores, bootstrap, sums, large)
        statistics = None if made is None else made.result()
    above = statistics_above(task_frame, scores, bootstrap, statistics=statistics)
    return {TASK_SCORES: task_frame, **tables_above(above)}


def _task_scores(
    scores: pl.DataFrame, bootstrap: Bootstrap, sums: pl.DataFrame | None, large: bool
) -> pl.DataFrame:
    """``aggregate``'s task scores (``large``: a category at a time)."""
    keys = scores if sums is None else sums  # (a row per file and task: fewer to look at)
    categories = keys[Col.CATEGORY].unique().sort().to_list() if large else [None]
    task_frames = []
    for category in categories:
        in_category = pl.lit(True) if category is None else pl.col(Col.CATEGORY) == category
        lazy = scores.lazy().filter(in_category)
        task_reps = task_replicates(lazy, bootstrap)  # the task intervals only
        of_category = None if sums is None else sums.lazy().filter(in_category)
        # Per task and up: few rows, as text (the episodes' keys may be compact).
        task_frames.append(plain(task_scores(lazy, task_reps, bootstrap, of_category).collect()))
    return pl.concat(task_frames)


def above_tasks(
    tasks: pl.DataFrame, scores: pl.DataFrame, bootstrap: Bootstrap, known: Known | None = None
) -> dict[str, pl.DataFrame]:
    """The category and model scores of task scores ``tasks`` (text keys), with their
    intervals, ranks and tiers, and the pairwise comparisons, from the episode scores
    ``scores`` behind them (a night's, or a standing's; ``known``: the pairs the standing
    before compared whose models' results it keeps, and their score intervals where it
    holds them, ``transforms.compare.pairs.Known``), by table name (``tables_above``)."""
    return tables_above(statistics_above(tasks, scores, bootstrap, known))


def statistics_above(
    tasks: pl.DataFrame,
    scores: pl.DataFrame,
    bootstrap: Bootstrap,
    known: Known | None = None,
    *,
    statistics: NightStatistics | None = None,
) -> NightTables:
    """``above_tasks``' tables, with the score intervals they hold (a standing keeps them
    for the next one's ``Known``); ``statistics``: the episodes' (``episode_statistics``),
    made already."""
    categories = category_scores(tasks.lazy())
    models = model_scores(tasks.lazy(), categories)
    category_frame, model_frame = exactly(categories, models)
    return night_comparisons(
        model_frame, category_frame, scores, bootstrap, known, statistics=statistics
    )


def tables_above(night: NightTables) -> dict[str, pl.DataFrame]:
    """``statistics_above``' tables by name."""
    return {
        CATEGORY_SCORES: night.categories,
        MODEL_SCORES: night.models,
        MODEL_COMPARISONS: night.comparisons,
    }
