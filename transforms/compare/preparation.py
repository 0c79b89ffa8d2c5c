"""Episode scores digested once for every comparison: units, task scores, the per-cluster
terms of the within-task variance, each scope's score and each task's weight in it.

A unit is a model on a night (or, in a rescore, under a formula). A task's score is the
mean of its episode scores; a category's the mean of its task scores; ``overall`` the mean
of the unit's task scores (each task weighs the same, as the published leaderboard);
``overall_by_category`` the mean of its category scores. Every one is a fixed-weight sum
``Σ_t w_{u,t} T_{u,t}`` of the unit's task scores, the same bits as ``transforms.aggregate``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import polars as pl

from schemas.columns import CODED_IDS, SCORE, SCORE_RANGE
from schemas.comparisons import N_TASKS, OVERALL, OVERALL_BY_CATEGORY, SCOPE, Work
from schemas.contract import DUMP_DATE, INSTANCE_ID, UNCATEGORISED, Col
from transforms.aggregate import mean_in_order
from transforms.compact import plain
from transforms.exact import EXACT_ENGINE, exactly

TASK_KEY: Final = [Col.CATEGORY, Col.TASK]
# Episodes prepared (and cluster terms paired) at once; a larger night goes a task at a time
# (issue 48: 1,000,000 before; a night of 500,000 episodes took +217 MiB prepared at once,
# +69 a task at a time).
ATOMS_AT_ONCE: Final = 200_000


@dataclass(frozen=True)
class Prepared:
    """Episode scores digested per unit (a model on a night, or under a formula)."""

    units: pl.DataFrame  # UNIT and the unit's key columns
    # per unit and task (its key and its code, TASK): MEAN (task score), N episodes, G
    # clusters, K (√ of G/(G-1)), the lowest and highest episode scores (LOWEST, HIGHEST)
    cells: pl.DataFrame
    atoms: pl.DataFrame  # per unit, task (TASK) and cluster: DEV = Σ (score - mean) / n, N
    # per unit and scope: SCORE, N episodes, N_TASKS, COVERAGE (what the score averages),
    # GROUP (the categories covered)
    scopes: pl.DataFrame
    # per unit, scope and task (its key and TASK): W (the task's weight in the scope's
    # score), STRATUM (where the task is drawn from: its category, or for ``overall`` every
    # task alike) and CENTRE (the unit's score in the stratum: within it the scope weighs
    # the unit's tasks alike)
    weights: pl.DataFrame
    # TASK (numbered in text order) and the task's key: ordering rows by TASK orders them
    # as by the key, and a code sorts, groups and joins for a fraction of two texts' cost
    tasks: pl.DataFrame
    # per unit and task (coded): SELF = Σ DEV² over its clusters, EPISODES = Σ N (the own
    # terms of every variance; summed once, a task at a time where the night is split)
    own: pl.DataFrame

    def scope_table(self) -> pl.DataFrame:
        """``scopes`` with the units' key columns."""
        return self.scopes.join(self.units, on=Work.UNIT)

    def of_units(self, chosen: pl.Expr) -> Prepared:
        """The units ``chosen`` (an expression of their key columns) alone: their rows of
        each frame, in the same order, so each unit's terms are summed as before (a unit's
        task scores, clusters and their sums are its own episodes')."""
        codes = self.units.filter(chosen)[Work.UNIT].implode()
        keep = pl.col(Work.UNIT).is_in(codes)
        frames = (self.units, self.cells, self.atoms, self.scopes, self.weights, self.own)
        # (A filter keeps the rows' order: one query for the six.)
        kept = exactly(*(frame.lazy().filter(keep) for frame in frames))
        units, cells, atoms, scopes, weights, own = kept
        return Prepared(units, cells, atoms, scopes, weights, self.tasks, own)


def needed(scores: pl.DataFrame | pl.LazyFrame, columns: Sequence[str]) -> pl.DataFrame:
    """The episodes with a score, only ``columns`` and ``instance_id`` (null where the
    scores have none; text unless Categorical): a copy of what is read, not of every
    column."""
    lazy = scores.lazy()
    if INSTANCE_ID not in lazy.collect_schema():
        lazy = lazy.with_columns(pl.lit(None, pl.String).alias(INSTANCE_ID))
    keep = [*dict.fromkeys([*columns, INSTANCE_ID])]
    valid = pl.col(SCORE).is_not_null() & pl.col(SCORE).is_not_nan()
    if isinstance(scores, pl.DataFrame) and INSTANCE_ID in scores.columns:
        chosen = scores.select(keep)  # the same columns, not a copy (a night's episodes)
        chosen = chosen if chosen.select(valid.all()).item() else chosen.filter(valid)
    else:
        chosen = lazy.select(keep).filter(valid).collect()
    # Instances are numbered in text order: text, Categorical (which ranks so too, without
    # a copy as text) or coded (``transforms.compact.coded``: ranks in text order).
    if chosen.schema[INSTANCE_ID] in (pl.Categorical, CODED_IDS[INSTANCE_ID]):
        return chosen
    return chosen.with_columns(pl.col(INSTANCE_ID).cast(pl.String))


def prepare(scores: pl.DataFrame | pl.LazyFrame, unit_cols: Sequence[str]) -> Prepared:
    frame = needed(scores, [*unit_cols, *TASK_KEY, Col.EPISODE_ID, SCORE])
    # The episode-level work runs on integer codes, not on the text keys (sorting and
    # grouping 1.5 M episodes by text cost 900 MB; by codes a third): units, tasks, the
    # episode's place in id order (a dense rank: the same order as the ids) and clusters.
    # (Keys may be Categorical, ``transforms.compact``: coded in the frame's dtypes, then text.)
    # (Each key's values found lazily: polars' eager ``unique`` of a night's 2 M episodes
    # took +107 MiB, its streaming engine +2.)
    # (Both in one query: the units' and the tasks'.)
    units_coded, tasks_coded = pl.collect_all(
        [_distinct(frame, unit_cols, Work.UNIT), _distinct(frame, TASK_KEY, Work.TASK, False)]
    )
    units, tasks = plain(units_coded), plain(tasks_coded)
    pairs = None
    if list(unit_cols) != [DUMP_DATE, Col.MODEL]:  # else the units are the pairs
        pairs = _distinct(frame, [DUMP_DATE, Col.MODEL], Work.PAIR).collect()
    # A task's clusters, episode order and terms do not depend on the other tasks: a large
    # night is digested a task at a time (ranked, joined and sorted whole, 4 M episodes took
    # 300 MB beyond them), a small one at once (a loop of small plans costs more).
    parts: list[pl.DataFrame | pl.LazyFrame] = [frame]
    if frame.height > ATOMS_AT_ONCE:
        parts = [episodes for _, _, episodes in each_task(frame, tasks)]
    coded_cells, coded_atoms, own = [], [], []
    for part in parts:
        cells_part, atoms_part = _episode_terms(part, unit_cols, units_coded, tasks_coded, pairs)
        coded_cells.append(cells_part)
        coded_atoms.append(atoms_part)
        own.append(_own_terms(atoms_part))
    # Back to the tasks' names (small frames: a row per unit and task, or per cluster).
    # (One query: no sum here.)
    cells = (
        pl.concat(coded_cells)
        .lazy()
        .join(tasks.lazy(), on=Work.TASK)
        .select(
            Work.UNIT,
            *TASK_KEY,
            Work.TASK,
            Work.MEAN,
            Work.N,
            Work.G,
            Work.K,
            Work.LOWEST,
            Work.HIGHEST,
        )
        .sort(Work.UNIT, Work.TASK)  # (the tasks' codes are in the order of their keys)
        .collect(engine=EXACT_ENGINE)
    )
    # Atoms stay coded (about one per episode: text keys would double them). In (unit, task,
    # cluster) order, or task by task where split: either way each (unit, task) is contiguous,
    # which keeps polars' sums over it in order (over scattered rows they are not stable).
    atoms = pl.concat(coded_atoms).select(Work.UNIT, Work.TASK, Work.CLUSTER, Work.DEV, Work.N)
    scopes, weights = _scopes_and_weights(cells)
    return Prepared(units, cells, atoms, scopes, weights, tasks, pl.concat(own))


def _own_terms(atoms: pl.DataFrame) -> pl.DataFrame:
    """Per unit and task of ``atoms`` (each (unit, task) contiguous, its clusters in order):
    ``SELF`` = Σ DEV² and ``EPISODES`` = Σ N, summed in that order (``Prepared.own``)."""
    return atoms.group_by(Work.UNIT, Work.TASK, maintain_order=True).agg(
        (pl.col(Work.DEV) ** 2).sum().alias(Work.SELF), pl.col(Work.N).sum().alias(Work.EPISODES)
    )


def _distinct(
    frame: pl.DataFrame, columns: Sequence[str], index: str, nulls_last: bool = True
) -> pl.LazyFrame:
    """The distinct values of ``columns`` in ``frame``, sorted, numbered (``index``)."""
    found = frame.lazy().select(columns).unique()
    return found.sort(columns, nulls_last=nulls_last).with_row_index(index)


def _scopes_and_weights(cells: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every scope's score per unit, and each task's weight in it (see the module). A task in
    no category (contract 1.4's ``uncategorised``) weighs in ``overall`` alone. (One query:
    its means are summed in their columns' order, ``mean_in_order``, on any engine.)"""
    categorised = cells.lazy().filter(pl.col(Col.CATEGORY) != UNCATEGORISED)
    categories = (
        categorised.group_by(Work.UNIT, Col.CATEGORY, maintain_order=True)
        .agg(
            mean_in_order(pl.col(Work.MEAN), Col.TASK).alias(Work.CAT_SCORE),
            pl.len().alias(N_TASKS),
            pl.col(Work.N).sum(),
            pl.col(Col.TASK).sort().str.join(",").alias(Work.COVERAGE),
        )
        .sort(Work.UNIT, Col.CATEGORY)
        .cache()
    )
    by_category = categories.group_by(Work.UNIT, maintain_order=True).agg(
        mean_in_order(pl.col(Work.CAT_SCORE), Col.CATEGORY).alias(SCORE),
        pl.col(N_TASKS).sum(),
        pl.col(Work.N).sum(),
        pl.col(Col.CATEGORY).sort().str.join(",").alias(Work.COVERAGE),
        pl.len().alias(Work.N_CATEGORIES),
    )
    # The task-weighted score sums the task scores in (category, task) order, as
    # ``transforms.aggregate.model_scores`` does: the same bits. It averages every task.
    task_path = pl.format("{}/{}", Col.CATEGORY, Col.TASK)
    by_task = (
        cells.lazy()
        .group_by(Work.UNIT, maintain_order=True)
        .agg(
            mean_in_order(pl.col(Work.MEAN), Col.CATEGORY, Col.TASK).alias(SCORE),
            task_path.sort().str.join(",").alias(Work.COVERAGE),
            pl.len().alias(N_TASKS),
            pl.col(Work.N).sum(),
        )
        .cache()
    )
    scopes = pl.concat(
        [
            categories.select(
                Work.UNIT,
                pl.col(Col.CATEGORY).alias(SCOPE),
                pl.col(Work.CAT_SCORE).alias(SCORE),
                Work.N,
                N_TASKS,
                Work.COVERAGE,
            ),
            by_task.select(
                Work.UNIT, pl.lit(OVERALL).alias(SCOPE), SCORE, Work.N, N_TASKS, Work.COVERAGE
            ),
            by_category.select(
                Work.UNIT,
                pl.lit(OVERALL_BY_CATEGORY).alias(SCOPE),
                SCORE,
                Work.N,
                N_TASKS,
                Work.COVERAGE,
            ),
        ]
    )
    # A unit's coverage group, the categories it covers (none: empty): models are compared
    # overall (either weighting) only within a group.
    group = by_task.select(Work.UNIT).join(
        by_category.select(Work.UNIT, pl.col(Work.COVERAGE).alias(Work.GROUP)),
        on=Work.UNIT,
        how="left",
    )
    group = group.with_columns(pl.col(Work.GROUP).fill_null(""))
    scopes = scopes.join(group, on=Work.UNIT).sort(Work.UNIT, SCOPE)
    per_task = categorised.select(Work.UNIT, *TASK_KEY, Work.TASK).join(
        categories.select(Work.UNIT, Col.CATEGORY, N_TASKS, Work.CAT_SCORE),
        on=[Work.UNIT, Col.CATEGORY],
    )
    per_task = per_task.join(by_category.select(Work.UNIT, Work.N_CATEGORIES), on=Work.UNIT)
    every_task = (
        cells.lazy()
        .select(Work.UNIT, *TASK_KEY, Work.TASK)
        .join(
            by_task.select(
                Work.UNIT, pl.col(N_TASKS).alias(Work.EPISODES), pl.col(SCORE).alias(Work.VALUE)
            ),
            on=Work.UNIT,
        )
    )
    within = 1.0 / pl.col(N_TASKS).cast(pl.Float64)
    category = pl.col(Col.CATEGORY)
    # scope: (its tasks, weight, stratum, centre). The task-weighted score pools every task
    # (Miller's clustered standard error, tasks the clusters); the others average
    # categories, which the benchmark fixes: the tasks are drawn within each.
    weight_of = {
        None: (per_task, within, category, pl.col(Work.CAT_SCORE)),  # a category scope
        OVERALL: (
            every_task,
            1.0 / pl.col(Work.EPISODES).cast(pl.Float64),  # (the unit's tasks, here)
            pl.lit(OVERALL),
            pl.col(Work.VALUE),
        ),
        OVERALL_BY_CATEGORY: (
            per_task,
            within / pl.col(Work.N_CATEGORIES).cast(pl.Float64),
            category,
            pl.col(Work.CAT_SCORE),
        ),
    }
    weights = pl.concat(
        [
            tasks.select(
                Work.UNIT,
                (category if scope is None else pl.lit(scope)).alias(SCOPE),
                *TASK_KEY,
                Work.TASK,
                weight.alias(Work.W),
                stratum.alias(Work.STRATUM),
                centre.alias(Work.CENTRE),
            )
            for scope, (tasks, weight, stratum, centre) in weight_of.items()
        ]
    )
    scope_rows, weight_rows = exactly(scopes, weights)
    return scope_rows, weight_rows


def score_bounds(prep: Prepared) -> pl.DataFrame:
    """Per unit and scope: the bounds of ``SCORE_RANGE`` its interval is held to (``LOWEST``,
    ``HIGHEST``), each null where an episode of the scope scored past it (one query)."""
    (bounds,) = exactly(score_bounds_plan(prep))
    return bounds


def score_bounds_plan(prep: Prepared) -> pl.LazyFrame:
    """``score_bounds``' plan, for a query that joins it (no row is summed: any engine)."""
    low, high = SCORE_RANGE
    return (
        prep.weights.lazy()
        .select(Work.UNIT, SCOPE, Work.TASK)
        .join(
            prep.cells.lazy().select(Work.UNIT, Work.TASK, Work.LOWEST, Work.HIGHEST),
            on=[Work.UNIT, Work.TASK],
        )
        .group_by(Work.UNIT, SCOPE)
        .agg(
            pl.when(pl.col(Work.LOWEST).min() >= low).then(pl.lit(low)).alias(Work.LOWEST),
            pl.when(pl.col(Work.HIGHEST).max() <= high).then(pl.lit(high)).alias(Work.HIGHEST),
        )
    )


def each_task(frame: pl.DataFrame, keys: pl.DataFrame) -> Iterator[tuple[str, str, pl.LazyFrame]]:
    """Each task of ``keys`` (category, task) and ``frame``'s episodes of it, filtered
    lazily: a task at a time without a partitioned copy of the whole frame, nor polars'
    eager group iteration (which holds every group's row indices: 300 MB for 4 M
    episodes)."""
    for category, task in zip(keys[Col.CATEGORY].to_list(), keys[Col.TASK].to_list(), strict=True):
        in_task = (pl.col(Col.CATEGORY) == category) & (pl.col(Col.TASK) == task)
        yield category, task, frame.lazy().filter(in_task)


def _episode_terms(
    frame: pl.DataFrame | pl.LazyFrame,
    unit_cols: Sequence[str],
    units_coded: pl.DataFrame,
    tasks_coded: pl.DataFrame,
    pairs: pl.DataFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Coded per-cell and per-cluster terms (``Prepared.cells``, ``.atoms``) of the
    episodes of ``frame`` (of one task, or all): clusters numbered, episodes in id order."""
    # A shared instance is a cluster of every unit that faced it (all models, all nights,
    # both formulas); an episode without an instance is a cluster of its own, shared only by
    # the same episode under another formula: numbered after the instances, by (night and
    # model, episode). Numbers are only compared within a task.
    shared = pl.col(INSTANCE_ID).rank("dense").cast(pl.Int64)  # in text order (``needed``)
    order = pl.col(Col.EPISODE_ID).rank("dense").cast(pl.Int64)
    ranked = pl.col(Work.SHARED_INSTANCE)
    alone = pl.col(Work.PAIR).cast(pl.Int64) * (pl.col(Work.ORDER).max() + 1) + pl.col(Work.ORDER)
    cluster = (
        pl.when(ranked.is_not_null()).then(ranked).otherwise(ranked.max().fill_null(0) + 1 + alone)
    )
    # One plan for the episode-level work (no intermediate copies of the episodes kept).
    # (The ids are ranked first: their text is not carried through the joins.)
    coded = (
        frame.lazy()
        .with_columns(order.alias(Work.ORDER), shared.alias(Work.SHARED_INSTANCE))
        .drop(Col.EPISODE_ID)
        .join(units_coded.lazy(), on=list(unit_cols), nulls_equal=True)
        .join(tasks_coded.lazy(), on=TASK_KEY)
    )
    if pairs is None:  # units are the pairs: no join
        coded = coded.with_columns(pl.col(Work.UNIT).alias(Work.PAIR))
    else:
        coded = coded.join(pairs.lazy(), on=[DUMP_DATE, Col.MODEL], nulls_equal=True)
    # Each cluster's episodes together, in id order: its terms are summed in that order
    # however the night is split (sorted by id alone, a 3-episode cluster's sum differed in
    # its last bit between a whole night and a task).
    episodes = (
        coded.with_columns(cluster.alias(Work.CLUSTER))
        .select(Work.UNIT, Work.TASK, Work.ORDER, SCORE, Work.CLUSTER)
        .sort(Work.UNIT, Work.TASK, Work.CLUSTER, Work.ORDER)
        .cache()
    )
    groups = pl.col(Work.CLUSTER).n_unique().cast(pl.Float64)
    cells_plan = (
        episodes.group_by(Work.UNIT, Work.TASK, maintain_order=True)
        .agg(
            mean_in_order(pl.col(SCORE), Work.ORDER).alias(Work.MEAN),
            pl.len().alias(Work.N),
            groups.cast(pl.Int64).alias(Work.G),
            # The small-sample factor of the unit's influence values in this task.
            pl.when(groups > 1).then((groups / (groups - 1.0)).sqrt()).alias(Work.K),
            pl.col(SCORE).min().alias(Work.LOWEST),
            pl.col(SCORE).max().alias(Work.HIGHEST),
        )
        .sort(Work.UNIT, Work.TASK)
    )
    atoms_plan = (
        episodes.join(
            cells_plan.select(Work.UNIT, Work.TASK, Work.MEAN, Work.N),
            on=[Work.UNIT, Work.TASK],
            maintain_order="left",
        )
        .with_columns(((pl.col(SCORE) - pl.col(Work.MEAN)) / pl.col(Work.N)).alias(Work.DEV))
        .group_by(Work.UNIT, Work.TASK, Work.CLUSTER, maintain_order=True)
        .agg(pl.col(Work.DEV).sum(), pl.len().alias(Work.N))
    )
    cells, atoms = pl.collect_all([cells_plan, atoms_plan])
    return cells, atoms
