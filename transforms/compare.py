"""Comparisons that hold up: paired model differences, rank intervals, significance tiers,
regression alerts and the significance of a formula change (docs/comparisons.md).

Input: episode scores, one row per scored episode, with ``dump_date``, ``model``,
``category``, ``task``, ``episode_id``, ``score`` and optionally ``instance_id`` (contract
1.1: episodes of the same task with the same ``instance_id`` faced the same instance).

Scores are those of ``transforms.aggregate`` bit for bit: a task's score is the mean of its
episode scores, a category's the mean of its task scores, a model's the mean of its category
scores. A comparison is a linear contrast of such scores (``score_a - score_b``, a night
against the mean of its baseline nights, ``new - old`` under two formulas). Its variance is
computed with the tasks fixed (the score's own definition: the uncertainty is that of the
instances sampled within each task), cluster-robust with instances as clusters, so that
episodes of several models (or nights, or formulas) on the same instance are paired. A second
standard error treats the tasks as a sample (clustered by task, stratified by category).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Final, Literal

import numpy as np
import polars as pl

from schemas.comparisons import (
    A_BETTER,
    B_BETTER,
    BASELINE,
    BASELINE_DATES,
    BASELINE_SCORE,
    CATEGORIES_COVERED,
    CHANGE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    DIFF,
    FORMULA_VERSIONS,
    GROUP_RANK,
    HARNESS_ERROR_SHARE,
    HARNESS_ERRORS,
    LEVEL,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    MARGIN,
    MDE,
    MODEL_A,
    MODEL_B,
    N_BASELINE_NIGHTS,
    N_EPISODES_A,
    N_EPISODES_B,
    N_EPISODES_NEW,
    N_EPISODES_OLD,
    N_PAIRS,
    N_RANKED,
    N_TASKS,
    NEW_DIFF,
    NEW_SCORE,
    OLD_DIFF,
    OLD_SCORE,
    OVERALL,
    P_HOLM,
    P_NEW_DIFF,
    P_VALUE,
    PAIRED,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    Q_BH,
    RANK_CHANGE_SIGNIFICANT,
    RANK_HIGH,
    RANK_LOW,
    RANKED_AMONG,
    REASON,
    SCOPE,
    SCORE_A,
    SCORE_B,
    SE,
    SE_TASKS,
    SIGNIFICANT,
    TIER,
    UNRESOLVED,
    VERDICT,
)
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from schemas.tables import FORMULA_VERSION, SCORE
from transforms.aggregate import mean_in_order
from transforms.compact import plain
from transforms.stats import adjust_over, mde_factor, normal_p_values, z_quantile

# Internal columns.
_UNIT: Final = "__unit"
_CLUSTER: Final = "__cluster"
_TASK: Final = "__task"  # a task's code
_PAIR: Final = "__pair"  # a (night, model)'s code
_ORDER: Final = "__order"  # an episode's place in id order
_CID: Final = "__cid"
_COEF: Final = "__coef"
_N: Final = "__n"
_MEAN: Final = "__mean"
_K: Final = "__k"
_DEV: Final = "__dev"
_W: Final = "__w"
_WC: Final = "__wc"
_F: Final = "__f"
_COVERAGE: Final = "__coverage"
_CAT_SCORE: Final = "__cat_score"
_VALUE: Final = "__value"
_UNITS: Final = "__units"
_VAR: Final = "__var"
_VAR_TASKS: Final = "__var_tasks"
_SHARED: Final = "__shared_episodes"
_TOTAL: Final = "__total_episodes"
_VERSION: Final = "__version"
_SEP: Final = "\x1f"

_TASK_KEY: Final = [Col.CATEGORY, Col.TASK]
_SHARED_INSTANCE: Final = "__instance"  # the episode's instance, numbered (null: none)
_DRAWS_AT_ONCE: Final = 1_000_000  # rank bootstrap: counts drawn at once (replicates x profiles)
_ATOMS_AT_ONCE: Final = 1_000_000  # comparisons: episodes prepared, cluster terms paired, at once


def _sum_or_null(value: pl.Expr, name: str) -> pl.Expr:
    """The sum, null when any term is null (polars' sum skips nulls)."""
    return pl.when(value.is_null().any()).then(None).otherwise(value.sum()).alias(name)


@dataclass(frozen=True)
class _Prepared:
    """Episode scores digested per unit (a model on a night, or under a formula)."""

    units: pl.DataFrame  # _UNIT and the unit's key columns
    cells: pl.DataFrame  # per unit and task: _N, _MEAN (task score), _K (√ of G/(G-1) factor)
    atoms: pl.DataFrame  # per unit, task (_TASK) and cluster: _DEV = Σ (score - mean) / n, _N
    scopes: pl.DataFrame  # per unit and scope: SCORE, _N episodes, N_TASKS, _COVERAGE
    weights: pl.DataFrame  # per unit, scope and task: _W (weight in the scope), _WC, _F
    categories: pl.DataFrame  # per unit and category: _CAT_SCORE
    tasks: pl.DataFrame  # _TASK (numbered in text order) and the task's key


def _needed(scores: pl.DataFrame | pl.LazyFrame, columns: Sequence[str]) -> pl.DataFrame:
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
    # Instances are numbered in text order: text, or Categorical (which ranks so too,
    # without a copy as text).
    if chosen.schema[INSTANCE_ID] == pl.Categorical:
        return chosen
    return chosen.with_columns(pl.col(INSTANCE_ID).cast(pl.String))


def _prepare(scores: pl.DataFrame | pl.LazyFrame, unit_cols: Sequence[str]) -> _Prepared:
    frame = _needed(scores, [*unit_cols, *_TASK_KEY, Col.EPISODE_ID, SCORE])
    # The episode-level work runs on integer codes, not on the text keys (sorting and
    # grouping 1.5 M episodes by text cost 900 MB; by codes a third): units, tasks, the
    # episode's place in id order (a dense rank: the same order as the ids) and clusters.
    # (Keys may be Categorical, ``transforms.compact``: coded in the frame's dtypes, then text.)
    units_coded = frame.select(unit_cols).unique().sort(unit_cols, nulls_last=True)
    units_coded = units_coded.with_row_index(_UNIT)
    tasks_coded = frame.select(_TASK_KEY).unique().sort(_TASK_KEY).with_row_index(_TASK)
    units, tasks = plain(units_coded), plain(tasks_coded)
    pairs = None
    if list(unit_cols) != [DUMP_DATE, Col.MODEL]:  # else the units are the pairs
        pairs = frame.select(DUMP_DATE, Col.MODEL).unique()
        pairs = pairs.sort(DUMP_DATE, Col.MODEL, nulls_last=True).with_row_index(_PAIR)
    # A task's clusters, episode order and terms do not depend on the other tasks: a large
    # night is digested a task at a time (ranked, joined and sorted whole, 4 M episodes took
    # 300 MB beyond them), a small one at once (a loop of small plans costs more).
    parts: list[pl.DataFrame | pl.LazyFrame] = [frame]
    if frame.height > _ATOMS_AT_ONCE:
        parts = [episodes for _, _, episodes in _each_task(frame, tasks)]
    coded_cells, coded_atoms = [], []
    for part in parts:
        cells_part, atoms_part = _episode_terms(part, unit_cols, units_coded, tasks_coded, pairs)
        coded_cells.append(cells_part)
        coded_atoms.append(atoms_part)
    # Back to the tasks' names (small frames: a row per unit and task, or per cluster).
    cells = pl.concat(coded_cells).join(tasks, on=_TASK)
    cells = cells.select(_UNIT, *_TASK_KEY, _MEAN, _N, _K).sort(_UNIT, *_TASK_KEY)
    # Atoms stay coded (about one per episode: text keys would double them). In (unit, task,
    # cluster) order, or task by task where split: either way each (unit, task) is contiguous,
    # which keeps polars' sums over it in order (over scattered rows they are not stable).
    atoms = pl.concat(coded_atoms).select(_UNIT, _TASK, _CLUSTER, _DEV, _N)
    categories = (
        cells.group_by(_UNIT, Col.CATEGORY, maintain_order=True)
        .agg(
            mean_in_order(pl.col(_MEAN), Col.TASK).alias(_CAT_SCORE),
            pl.len().alias(N_TASKS),
            pl.col(_N).sum(),
            pl.col(Col.TASK).sort().str.join(",").alias(_COVERAGE),
        )
        .sort(_UNIT, Col.CATEGORY)
    )
    overall = categories.group_by(_UNIT, maintain_order=True).agg(
        mean_in_order(pl.col(_CAT_SCORE), Col.CATEGORY).alias(SCORE),
        pl.col(N_TASKS).sum(),
        pl.col(_N).sum(),
        pl.col(Col.CATEGORY).sort().str.join(",").alias(_COVERAGE),
        pl.len().alias("__n_categories"),
    )
    scopes = pl.concat(
        [
            categories.select(
                _UNIT,
                pl.col(Col.CATEGORY).alias(SCOPE),
                pl.col(_CAT_SCORE).alias(SCORE),
                _N,
                N_TASKS,
                _COVERAGE,
            ),
            overall.select(_UNIT, pl.lit(OVERALL).alias(SCOPE), SCORE, _N, N_TASKS, _COVERAGE),
        ]
    ).sort(_UNIT, SCOPE)
    per_task = cells.select(_UNIT, *_TASK_KEY).join(
        categories.select(_UNIT, Col.CATEGORY, N_TASKS), on=[_UNIT, Col.CATEGORY]
    )
    within = 1.0 / pl.col(N_TASKS).cast(pl.Float64)
    weights = pl.concat(
        [
            per_task.select(
                _UNIT,
                pl.col(Col.CATEGORY).alias(SCOPE),
                *_TASK_KEY,
                within.alias(_W),
                within.alias(_WC),
                pl.lit(1.0).alias(_F),
            ),
            per_task.join(overall.select(_UNIT, "__n_categories"), on=_UNIT).select(
                _UNIT,
                pl.lit(OVERALL).alias(SCOPE),
                *_TASK_KEY,
                (within / pl.col("__n_categories")).alias(_W),
                within.alias(_WC),
                (1.0 / pl.col("__n_categories").cast(pl.Float64)).alias(_F),
            ),
        ]
    )
    return _Prepared(
        units,
        cells,
        atoms,
        scopes,
        weights,
        categories.select(_UNIT, Col.CATEGORY, _CAT_SCORE),
        tasks,
    )


def _each_task(frame: pl.DataFrame, keys: pl.DataFrame) -> Iterator[tuple[str, str, pl.LazyFrame]]:
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
    """Coded per-cell and per-cluster terms (``_Prepared.cells``, ``.atoms``) of the
    episodes of ``frame`` (of one task, or all): clusters numbered, episodes in id order."""
    # A shared instance is a cluster of every unit that faced it (all models, all nights,
    # both formulas); an episode without an instance is a cluster of its own, shared only by
    # the same episode under another formula: numbered after the instances, by (night and
    # model, episode). Numbers are only compared within a task.
    shared = pl.col(INSTANCE_ID).rank("dense").cast(pl.Int64)  # in text order (``_needed``)
    order = pl.col(Col.EPISODE_ID).rank("dense").cast(pl.Int64)
    ranked = pl.col(_SHARED_INSTANCE)
    alone = pl.col(_PAIR).cast(pl.Int64) * (pl.col(_ORDER).max() + 1) + pl.col(_ORDER)
    cluster = (
        pl.when(ranked.is_not_null()).then(ranked).otherwise(ranked.max().fill_null(0) + 1 + alone)
    )
    # One plan for the episode-level work (no intermediate copies of the episodes kept).
    # (The ids are ranked first: their text is not carried through the joins.)
    coded = (
        frame.lazy()
        .with_columns(order.alias(_ORDER), shared.alias(_SHARED_INSTANCE))
        .drop(Col.EPISODE_ID)
        .join(units_coded.lazy(), on=list(unit_cols), nulls_equal=True)
        .join(tasks_coded.lazy(), on=_TASK_KEY)
    )
    if pairs is None:  # units are the pairs: no join
        coded = coded.with_columns(pl.col(_UNIT).alias(_PAIR))
    else:
        coded = coded.join(pairs.lazy(), on=[DUMP_DATE, Col.MODEL], nulls_equal=True)
    # Each cluster's episodes together, in id order: its terms are summed in that order
    # however the night is split (sorted by id alone, a 3-episode cluster's sum differed in
    # its last bit between a whole night and a task).
    episodes = (
        coded.with_columns(cluster.alias(_CLUSTER))
        .select(_UNIT, _TASK, _ORDER, SCORE, _CLUSTER)
        .sort(_UNIT, _TASK, _CLUSTER, _ORDER)
        .cache()
    )
    groups = pl.col(_CLUSTER).n_unique().cast(pl.Float64)
    cells_plan = (
        episodes.group_by(_UNIT, _TASK, maintain_order=True)
        .agg(
            mean_in_order(pl.col(SCORE), _ORDER).alias(_MEAN),
            pl.len().alias(_N),
            # The small-sample factor of the unit's influence values in this task.
            pl.when(groups > 1).then((groups / (groups - 1.0)).sqrt()).alias(_K),
        )
        .sort(_UNIT, _TASK)
    )
    atoms_plan = (
        episodes.join(cells_plan, on=[_UNIT, _TASK], maintain_order="left")
        .with_columns(((pl.col(SCORE) - pl.col(_MEAN)) / pl.col(_N)).alias(_DEV))
        .group_by(_UNIT, _TASK, _CLUSTER, maintain_order=True)
        .agg(pl.col(_DEV).sum(), pl.len().alias(_N))
    )
    cells, atoms = pl.collect_all([cells_plan, atoms_plan])
    return cells, atoms


def _variances(prep: _Prepared, contrasts: pl.DataFrame) -> pl.DataFrame:
    """Per contrast (``_CID``; rows ``_UNIT``, ``_COEF``, ``SCOPE``): the variance of
    ``Σ coef × score(unit, scope)`` with the tasks fixed (``_VAR``, instance clusters) and
    with the tasks a sample (``_VAR_TASKS``, task clusters stratified by category), the
    tasks every unit covers (``N_TASKS``), the clusters shared by two units or more
    (``N_PAIRS``) and ``PAIRED``."""
    rows = contrasts.join(prep.weights, on=[_UNIT, SCOPE])
    n_units = contrasts.group_by(_CID).agg(pl.col(_UNIT).n_unique().alias(_UNITS))
    fixed = _pair_fixed(prep, rows) if _two_units(contrasts) else _fixed(prep, rows)
    return _with_task_sample(prep, rows, n_units, fixed)


def _two_units(contrasts: pl.DataFrame) -> bool:
    """Every contrast is ``unit_a - unit_b`` (two rows, coefficients +1 and -1)."""
    shape = contrasts.group_by(_CID).agg(
        pl.len().alias("__rows"), pl.col(_COEF).min().alias("__lo"), pl.col(_COEF).max()
    )
    two = (shape["__rows"] == 2) & (shape["__lo"] == -1.0) & (shape[_COEF] == 1.0)
    return bool(two.all())


def _pair_fixed(prep: _Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """``_fixed`` for contrasts ``a - b``, from per-task sufficient statistics instead of
    one row per contrast and cluster (which grows with the square of the models):

        Σ_t Σ_g (x_a D_a,g − x_b D_b,g)² = Σ_t x_a² S_a,t + x_b² S_b,t − 2 x_a x_b P_ab,t

    with ``x = w · k`` per unit and task, ``S_u,t = Σ_g D_u,g²`` and
    ``P_ab,t = Σ_g D_a,g D_b,g`` over the clusters both units have (the same algebra, summed
    in another order)."""
    weights = rows.join(prep.cells.select(_UNIT, *_TASK_KEY, _K), on=[_UNIT, *_TASK_KEY])
    weights = weights.with_columns((pl.col(_W) * pl.col(_K)).alias(_VALUE))
    weights = weights.join(prep.tasks, on=_TASK_KEY)
    # Sorted before every sum, so that the same input gives the same bits (a join's rows
    # come in any order).
    own = prep.atoms.group_by(_UNIT, _TASK, maintain_order=True).agg(
        (pl.col(_DEV) ** 2).sum().alias("__s"), pl.col(_N).sum().alias("__e")
    )
    terms = weights.join(own, on=[_UNIT, _TASK]).sort(_CID, *_TASK_KEY, _UNIT)
    self_part = terms.group_by(_CID, maintain_order=True).agg(
        _sum_or_null(pl.col(_VALUE) ** 2 * pl.col("__s"), _VAR),
        pl.col("__e").sum().alias(_TOTAL),
    )
    a_side = weights.filter(pl.col(_COEF) > 0).select(_CID, _UNIT, *_TASK_KEY, _TASK, _VALUE)
    b_side = weights.filter(pl.col(_COEF) < 0).select(_CID, _UNIT, *_TASK_KEY, _TASK, _VALUE)
    both = a_side.join(b_side.drop(_TASK), on=[_CID, *_TASK_KEY], suffix="_b")
    needed = both.select(_UNIT, _UNIT + "_b").unique()
    # A cluster's row meets every other unit's (units² rows per cluster), which for a whole
    # night of millions of episodes took gigabytes: a large night a task at a time (the same
    # sums; a small one at once, as a loop of small plans costs more than it saves).
    large = prep.atoms.height > _ATOMS_AT_ONCE
    parts = prep.atoms.partition_by(_TASK, maintain_order=True) if large else [prep.atoms]
    products = pl.concat([_cluster_products(atoms, needed) for atoms in parts]).sort(
        _UNIT, _UNIT + "_b", _TASK
    )
    cross = (
        both.join(products, on=[_UNIT, _UNIT + "_b", _TASK])
        .sort(_CID, *_TASK_KEY)
        .group_by(_CID, maintain_order=True)
        .agg(
            (2.0 * pl.col(_VALUE) * pl.col(_VALUE + "_b") * pl.col("__p")).sum().alias("__cross"),
            pl.col(N_PAIRS).sum().cast(pl.Int64),
            pl.col(_SHARED).sum(),
        )
    )
    return (
        self_part.join(cross, on=_CID, how="left")
        .with_columns(
            # A sum of squares: never below 0, whatever the rounding of the expansion.
            (pl.col(_VAR) - pl.col("__cross").fill_null(0.0)).clip(lower_bound=0.0),
            pl.col(N_PAIRS).fill_null(0),
            pl.col(_SHARED).fill_null(0),
        )
        .select(_CID, _VAR, N_PAIRS, _SHARED, _TOTAL)
    )


def _cluster_products(atoms: pl.DataFrame, needed: pl.DataFrame) -> pl.DataFrame:
    """Per pair of units (``needed``) and task: ``Σ_g D_a,g D_b,g`` over their shared
    clusters, how many, and the episodes on them (``_pair_fixed``), from ``atoms``."""
    # Only clusters that more than one unit has can pair two units.
    multi = atoms.group_by(_TASK, _CLUSTER).agg(pl.len().alias("__units"))
    shared = atoms.join(multi.filter(pl.col("__units") > 1), on=[_TASK, _CLUSTER])
    return (
        shared.join(needed, on=_UNIT)
        .join(
            shared,
            left_on=[_UNIT + "_b", _TASK, _CLUSTER],
            right_on=[_UNIT, _TASK, _CLUSTER],
            suffix="_b",
        )
        .sort(_UNIT, _UNIT + "_b", _TASK, _CLUSTER)
        .group_by(_UNIT, _UNIT + "_b", _TASK, maintain_order=True)
        .agg(
            (pl.col(_DEV) * pl.col(_DEV + "_b")).sum().alias("__p"),
            pl.len().alias(N_PAIRS),
            (pl.col(_N) + pl.col(_N + "_b")).sum().alias(_SHARED),
        )
    )


def _fixed(prep: _Prepared, rows: pl.DataFrame) -> pl.DataFrame:
    """Tasks fixed: Σ_task Σ_cluster (Σ_unit coef · w · k · dev)², every unit's influence
    values scaled by its own small-sample factor; clusters shared by two units or more, and
    the episodes on them."""
    return (
        rows.join(prep.cells.select(_UNIT, *_TASK_KEY, _K), on=[_UNIT, *_TASK_KEY])
        .join(prep.tasks, on=_TASK_KEY)
        .join(prep.atoms, on=[_UNIT, _TASK])
        .with_columns((pl.col(_COEF) * pl.col(_W) * pl.col(_K) * pl.col(_DEV)).alias(_VALUE))
        .sort(_CID, *_TASK_KEY, _CLUSTER, _UNIT)
        .group_by(_CID, *_TASK_KEY, _CLUSTER, maintain_order=True)
        .agg(
            _sum_or_null(pl.col(_VALUE), _VALUE),
            pl.col(_UNIT).n_unique().alias(_UNITS),
            pl.col(_N).sum(),
        )
        .group_by(_CID, maintain_order=True)
        .agg(
            _sum_or_null(pl.col(_VALUE) ** 2, _VAR),
            (pl.col(_UNITS) > 1).sum().cast(pl.Int64).alias(N_PAIRS),
            pl.col(_N).filter(pl.col(_UNITS) > 1).sum().alias(_SHARED),
            pl.col(_N).sum().alias(_TOTAL),
        )
    )


def _with_task_sample(
    prep: _Prepared, rows: pl.DataFrame, n_units: pl.DataFrame, fixed: pl.DataFrame
) -> pl.DataFrame:
    # Tasks a sample: per category, G/(G-1) Σ_task (Σ_unit coef · f · wc · (task - category))²,
    # summed over the categories (strata); null where a category has fewer than two tasks.
    per_task = (
        rows.join(prep.cells.select(_UNIT, *_TASK_KEY, _MEAN), on=[_UNIT, *_TASK_KEY])
        .join(prep.categories, on=[_UNIT, Col.CATEGORY])
        .with_columns(
            (pl.col(_COEF) * pl.col(_F) * pl.col(_WC) * (pl.col(_MEAN) - pl.col(_CAT_SCORE))).alias(
                _VALUE
            )
        )
        .sort(_CID, *_TASK_KEY, _UNIT)
        .group_by(_CID, *_TASK_KEY, maintain_order=True)
        .agg(pl.col(_VALUE).sum(), pl.col(_UNIT).n_unique().alias(_UNITS))
    )
    tasks = pl.len().cast(pl.Float64)
    sampled = (
        per_task.group_by(_CID, Col.CATEGORY, maintain_order=True)
        .agg(
            pl.when(tasks > 1).then((pl.col(_VALUE) ** 2).sum() * tasks / (tasks - 1.0)).alias(_VAR)
        )
        .group_by(_CID, maintain_order=True)
        .agg(_sum_or_null(pl.col(_VAR), _VAR_TASKS))
    )
    shared_tasks = (
        per_task.join(n_units.rename({_UNITS: "__all"}), on=_CID)
        .group_by(_CID)
        .agg((pl.col(_UNITS) == pl.col("__all")).sum().cast(pl.Int64).alias(N_TASKS))
    )
    paired = (
        pl.when(pl.col(N_PAIRS) == 0)
        .then(pl.lit(PAIRED_NONE))
        .when(pl.col(_SHARED) == pl.col(_TOTAL))
        .then(pl.lit(PAIRED_FULL))
        .otherwise(pl.lit(PAIRED_PARTIAL))
    )
    return (
        fixed.join(sampled, on=_CID, how="left")
        .join(shared_tasks, on=_CID, how="left")
        .with_columns(paired.alias(PAIRED))
        .select(_CID, _VAR, _VAR_TASKS, N_TASKS, N_PAIRS, PAIRED)
    )


def _inference(frame: pl.DataFrame, estimate: str, alpha: float, power: float) -> pl.DataFrame:
    """Adds SE, CI_LOW, CI_HIGH, P_VALUE and MDE from ``estimate`` and ``_VAR`` (normal
    approximation). A zero standard error gives p = 1 for a zero estimate, else 0."""
    se = frame[_VAR].sqrt()
    est = frame[estimate]
    z = (est / se).to_numpy().astype(np.float64)  # null -> NaN
    p = normal_p_values(z)
    p = np.where((se.to_numpy() == 0.0) & (est.to_numpy() == 0.0), 1.0, p)
    half = z_quantile(1.0 - alpha / 2.0)
    return frame.with_columns(
        se.alias(SE),
        (est - half * se).alias(CI_LOW),
        (est + half * se).alias(CI_HIGH),
        pl.Series(P_VALUE, p, pl.Float64).fill_nan(None),
        (mde_factor(alpha, power) * se).alias(MDE),
    )


def _scope_table(prep: _Prepared) -> pl.DataFrame:
    return prep.scopes.join(prep.units, on=_UNIT)


def _pairs(scopes: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Unordered pairs (model_a < model_b) of units sharing ``by`` and the scope; the
    overall scope pairs only models that cover the same categories."""
    left = scopes.select(*by, SCOPE, Col.MODEL, _UNIT, SCORE, _N, _COVERAGE)
    pairs = left.join(left, on=[*by, SCOPE], suffix="_b", nulls_equal=True).filter(
        (pl.col(Col.MODEL) < pl.col(Col.MODEL + "_b"))
        & ((pl.col(SCOPE) != OVERALL) | (pl.col(_COVERAGE) == pl.col(_COVERAGE + "_b")))
    )
    return pairs.sort([*by, SCOPE, Col.MODEL, Col.MODEL + "_b"], nulls_last=True).with_row_index(
        _CID
    )


def _two_unit_contrasts(pairs: pl.DataFrame, unit_a: str, unit_b: str) -> pl.DataFrame:
    return pl.concat(
        [
            pairs.select(_CID, pl.col(unit_a).alias(_UNIT), pl.lit(1.0).alias(_COEF), SCOPE),
            pairs.select(_CID, pl.col(unit_b).alias(_UNIT), pl.lit(-1.0).alias(_COEF), SCOPE),
        ]
    )


def model_comparisons(
    scores: pl.DataFrame | pl.LazyFrame, alpha: float = 0.05, power: float = 0.8
) -> pl.DataFrame:
    """Per night (``dump_date``), scope (each category, and ``overall``) and ordered pair of
    models that share the scope: ``diff = score_a - score_b`` with its standard error (tasks
    fixed, instance-paired where instances are shared), ``se_tasks`` (tasks a sample),
    interval, p-value, Holm-adjusted p-value, verdict and minimum detectable effect.

    In a category scope every pair of models with episodes in it is compared; in the overall
    scope only models covering the same categories. Holm runs over the unordered pairs of a
    night and scope: both rows of a pair carry the same ``p_value`` and ``p_holm``.
    """
    return _comparisons(_prepare(scores, [DUMP_DATE, Col.MODEL]), alpha, power)


def comparisons_and_rank_intervals(
    scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
    resamples: int = 1000,
    seed: int = 20261202,
    level: float = 0.95,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``model_comparisons``, ``rank_intervals``) of the same scores, the episodes
    prepared once for both (a night's tables need both)."""
    prep = _prepare(scores, [DUMP_DATE, Col.MODEL])
    comparisons = _comparisons(prep, alpha, power)
    # The rank bootstrap reads the scopes' scores, not the per-cluster terms (about one
    # per episode): freed before it.
    prep = replace(prep, atoms=prep.atoms.clear())
    return comparisons, _rank_intervals(prep, scores, resamples, seed, level)


def _comparisons(prep: _Prepared, alpha: float, power: float) -> pl.DataFrame:
    pairs = _pairs(_scope_table(prep), [DUMP_DATE])
    var = _variances(prep, _two_unit_contrasts(pairs, _UNIT, _UNIT + "_b"))
    half = pairs.join(var, on=_CID, how="left").with_columns(
        (pl.col(SCORE) - pl.col(SCORE + "_b")).alias(DIFF)
    )
    half = _inference(half, DIFF, alpha, power).with_columns(
        pl.col(_VAR_TASKS).sqrt().alias(SE_TASKS)
    )
    half = adjust_over(half, P_VALUE, [DUMP_DATE, SCOPE], "holm", P_HOLM)
    verdict = (
        pl.when(pl.col(P_HOLM).is_null() | (pl.col(P_HOLM) >= alpha))
        .then(pl.lit(UNRESOLVED))
        .when(pl.col(DIFF) > 0)
        .then(pl.lit(A_BETTER))
        .when(pl.col(DIFF) < 0)
        .then(pl.lit(B_BETTER))
        .otherwise(pl.lit(UNRESOLVED))
    )
    half = half.with_columns(verdict.alias(VERDICT))
    common = [N_TASKS, N_PAIRS, PAIRED]
    forward = half.select(
        DUMP_DATE,
        SCOPE,
        pl.col(Col.MODEL).alias(MODEL_A),
        pl.col(Col.MODEL + "_b").alias(MODEL_B),
        *common,
        pl.col(_N).cast(pl.Int64).alias(N_EPISODES_A),
        pl.col(_N + "_b").cast(pl.Int64).alias(N_EPISODES_B),
        pl.col(SCORE).alias(SCORE_A),
        pl.col(SCORE + "_b").alias(SCORE_B),
        DIFF,
        SE,
        SE_TASKS,
        CI_LOW,
        CI_HIGH,
        P_VALUE,
        P_HOLM,
        VERDICT,
        MDE,
    )
    swapped_verdict = (
        pl.when(pl.col(VERDICT) == A_BETTER)
        .then(pl.lit(B_BETTER))
        .when(pl.col(VERDICT) == B_BETTER)
        .then(pl.lit(A_BETTER))
        .otherwise(pl.col(VERDICT))
    )
    backward = forward.with_columns(
        pl.col(MODEL_B).alias(MODEL_A),
        pl.col(MODEL_A).alias(MODEL_B),
        pl.col(N_EPISODES_B).alias(N_EPISODES_A),
        pl.col(N_EPISODES_A).alias(N_EPISODES_B),
        pl.col(SCORE_B).alias(SCORE_A),
        pl.col(SCORE_A).alias(SCORE_B),
        -pl.col(DIFF),
        (-pl.col(CI_HIGH)).alias(CI_LOW),
        (-pl.col(CI_LOW)).alias(CI_HIGH),
        swapped_verdict.alias(VERDICT),
    )
    return (
        pl.concat([forward, backward])
        .with_columns(pl.col(N_TASKS).fill_null(0), pl.col(N_PAIRS).fill_null(0))
        .sort(DUMP_DATE, SCOPE, MODEL_A, MODEL_B, nulls_last=True)
        .select(COMPARISON_COLUMNS)
    )


COMPARISON_COLUMNS: Final = [
    DUMP_DATE,
    SCOPE,
    MODEL_A,
    MODEL_B,
    N_TASKS,
    N_EPISODES_A,
    N_EPISODES_B,
    N_PAIRS,
    PAIRED,
    SCORE_A,
    SCORE_B,
    DIFF,
    SE,
    SE_TASKS,
    CI_LOW,
    CI_HIGH,
    P_VALUE,
    P_HOLM,
    VERDICT,
    MDE,
]


# ---------------------------------------------------------------------------------------
# Rank intervals and significance tiers


def _stream(seed: int, key: Sequence[object]) -> np.random.Generator:
    digest = hashlib.sha256(_SEP.join("" if k is None else str(k) for k in key).encode())
    words = np.frombuffer(digest.digest()[:16], dtype=np.uint32)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *words.tolist()])))


def _rank_desc(values: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = largest, ties share the better rank ("min")."""
    return (values[..., None, :] > values[..., :, None]).sum(axis=-1) + 1


def rank_intervals(
    scores: pl.DataFrame | pl.LazyFrame,
    resamples: int = 1000,
    seed: int = 20261202,
    level: float = 0.95,
) -> pl.DataFrame:
    """Per night and model: its rank among the models covering the same categories
    (``ranked_among``, ``n_ranked``, ``group_rank`` = rank of the point scores, 1 = best,
    ties share the better rank) and a percentile bootstrap interval of that rank
    (``rank_low``, ``rank_high``).

    A replicate resamples, within each task, the task's instances with replacement, the
    same draw for every model (pairing kept); episodes without an instance are resampled
    per model within the task. Each model's overall score is recomputed from the
    replicate's task means (tasks, then categories, each weighing the same) and the models
    of a coverage group are ranked. ``rank_low`` is the lower ``(1 - level)/2`` quantile of
    the replicate ranks (numpy ``method="lower"``), ``rank_high`` the upper one
    (``method="higher"``): the narrowest integer interval holding the linear quantiles.
    Each task draws from its own stream (seed, night, category, task).
    """
    return _rank_intervals(_prepare(scores, [DUMP_DATE, Col.MODEL]), scores, resamples, seed, level)


def _rank_intervals(
    prep: _Prepared,
    scores: pl.DataFrame | pl.LazyFrame,
    resamples: int,
    seed: int,
    level: float,
) -> pl.DataFrame:
    frame = _needed(scores, [DUMP_DATE, Col.MODEL, *_TASK_KEY, SCORE])  # the ids are not drawn
    overall = _scope_table(prep).filter(pl.col(SCOPE) == OVERALL)
    tail = (1.0 - level) / 2.0
    out: list[pl.DataFrame] = []
    # A task's replicates do not depend on the order of its episodes: no sorted copy, and
    # no copy at all of a single night.
    one_night = frame.height > 0 and frame[DUMP_DATE].n_unique() == 1
    nights = [((frame[DUMP_DATE][0],), frame)] if one_night else frame.group_by(DUMP_DATE)
    for (date,), night in nights:
        points = overall.filter(
            pl.col(DUMP_DATE).is_null() if date is None else pl.col(DUMP_DATE) == date
        )
        models = sorted(points[Col.MODEL].to_list())
        index = {m: i for i, m in enumerate(models)}
        # task means per replicate: [model][(category, task)] -> array (resamples,)
        replicate_tasks: dict[tuple[str, str], np.ndarray] = {}
        present: dict[tuple[str, str], np.ndarray] = {}
        in_night = night.select(_TASK_KEY).unique(maintain_order=True)
        tasks = list(_each_task(night, in_night))
        drawn = _tasks_replicates(tasks, index, resamples, seed, date)
        for (category, task, _), (means, has) in zip(tasks, drawn, strict=True):
            replicate_tasks[(str(category), str(task))] = means
            present[(str(category), str(task))] = has
        categories = sorted({c for c, _ in replicate_tasks})
        totals = np.zeros((len(models), resamples))
        n_categories = np.zeros(len(models))
        for category in categories:
            keys = sorted(k for k in replicate_tasks if k[0] == category)
            stacked = np.stack([replicate_tasks[k] for k in keys])  # tasks, models, resamples
            mask = np.stack([present[k] for k in keys])  # tasks, models
            counts = mask.sum(axis=0)
            covered = counts > 0
            sums = np.where(mask[:, :, None], stacked, 0.0).sum(axis=0)
            totals[covered] += sums[covered] / counts[covered, None]
            n_categories += covered
        model_reps = totals / np.maximum(n_categories, 1)[:, None]
        coverage = dict(zip(points[Col.MODEL].to_list(), points[_COVERAGE].to_list(), strict=True))
        point = dict(zip(points[Col.MODEL].to_list(), points[SCORE].to_list(), strict=True))
        for group in sorted(set(coverage.values())):
            members = [m for m in models if coverage[m] == group]
            rows = np.array([index[m] for m in members])
            ranks = _rank_desc(model_reps[rows].T)  # resamples, members
            point_ranks = _rank_desc(np.array([point[m] for m in members]))
            low = np.quantile(ranks, tail, axis=0, method="lower")
            high = np.quantile(ranks, 1.0 - tail, axis=0, method="higher")
            out.append(
                pl.DataFrame(
                    {
                        DUMP_DATE: [date] * len(members),
                        Col.MODEL: members,
                        RANKED_AMONG: [group] * len(members),
                        N_RANKED: [len(members)] * len(members),
                        GROUP_RANK: point_ranks.astype(np.int64),
                        RANK_LOW: low.astype(np.int64),
                        RANK_HIGH: high.astype(np.int64),
                    },
                    schema={
                        DUMP_DATE: pl.String,
                        Col.MODEL: pl.String,
                        RANKED_AMONG: pl.String,
                        N_RANKED: pl.Int64,
                        GROUP_RANK: pl.Int64,
                        RANK_LOW: pl.Int64,
                        RANK_HIGH: pl.Int64,
                    },
                )
            )
    schema = {
        DUMP_DATE: pl.String,
        Col.MODEL: pl.String,
        RANKED_AMONG: pl.String,
        N_RANKED: pl.Int64,
        GROUP_RANK: pl.Int64,
        RANK_LOW: pl.Int64,
        RANK_HIGH: pl.Int64,
    }
    if not out:
        return pl.DataFrame(schema=schema)
    return pl.concat(out).sort(DUMP_DATE, RANKED_AMONG, GROUP_RANK, Col.MODEL, nulls_last=True)


def _tasks_replicates(
    tasks: Sequence[tuple[str, str, pl.LazyFrame]],
    index: dict[str, int],
    resamples: int,
    seed: int,
    date: object,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``_task_replicates`` of each task of a night, in its order. The tasks run in threads
    (numpy's draws release the GIL), one task at a time each; each task draws from a stream
    of its own key, so the order they run in changes nothing."""

    def replicates(job: tuple[str, str, pl.LazyFrame]) -> tuple[np.ndarray, np.ndarray]:
        category, task, episodes = job
        return _task_replicates(episodes.collect(), index, resamples, seed, (date, category, task))

    workers = max(1, min(len(tasks), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(replicates, tasks))


def _task_replicates(
    cell: pl.DataFrame,
    index: dict[str, int],
    resamples: int,
    seed: int,
    key: tuple[object, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """One task of a night: per model (rows of ``index``) the mean of each replicate
    (models x resamples) and whether the model has the task.

    Drawing G instances with replacement is drawing multinomial counts per instance; where
    instances repeat the same profile (every model's sum and count on it), the counts per
    distinct profile are multinomial with the profiles' shares: the same distribution, at the
    cost of the distinct profiles (a few hundred), not of the instances. Episodes alone are
    drawn the same way per distinct score."""
    n_models = len(index)
    model_idx = cell[Col.MODEL].replace_strict(index, return_dtype=pl.Int64).to_numpy()
    values = cell[SCORE].to_numpy().astype(np.float64)
    codes = cell[INSTANCE_ID].rank("dense")  # 1..G in text order; null: not shared
    shared = codes.is_not_null().to_numpy()
    has = np.zeros(n_models, dtype=bool)
    has[model_idx] = True
    sums = np.zeros((n_models, resamples))
    counts = np.zeros((n_models, resamples))
    if shared.any():
        inst = codes.drop_nulls().to_numpy().astype(np.int64) - 1
        g = int(inst.max()) + 1
        flat = model_idx[shared] * g + inst
        s = np.bincount(flat, weights=values[shared], minlength=n_models * g)
        c = np.bincount(flat, minlength=n_models * g).astype(np.float64)
        stacked = np.vstack([s.reshape(n_models, g), c.reshape(n_models, g)])
        unique, multiplicity = np.unique(stacked, axis=1, return_counts=True)
        profiles = np.asarray(unique, dtype=np.float64)
        # The same instance draw for every model: how often each profile is drawn; in
        # blocks of replicates (one stream, drawn in the same order) where a task has
        # thousands of profiles (a block of draws is replicates x profiles).
        stream, shares = _stream(seed, key), multiplicity / g
        at_once = max(1, _DRAWS_AT_ONCE // len(shares))
        for start in range(0, resamples, at_once):
            block = slice(start, min(start + at_once, resamples))
            drawn = stream.multinomial(g, shares, size=block.stop - block.start)
            sums[:, block] += profiles[:n_models] @ drawn.T
            counts[:, block] += profiles[n_models:] @ drawn.T
    for m in np.unique(model_idx[~shared]):
        own = values[(model_idx == m) & ~shared]
        distinct, times = np.unique(own, return_counts=True)
        drawn = _stream(seed, (*key, "model", m)).multinomial(
            len(own), times / len(own), size=resamples
        )
        sums[m] += drawn @ distinct
        counts[m] += len(own)
    # A model none of whose instances was drawn keeps its point mean in that replicate.
    point = np.bincount(model_idx, weights=values, minlength=n_models)
    n = np.bincount(model_idx, minlength=n_models).astype(np.float64)
    point = np.divide(point, n, out=np.zeros(n_models), where=n > 0)
    means = np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), point[:, None])
    return means, has


def significance_tiers(comparisons: pl.DataFrame, scope: str = OVERALL) -> pl.DataFrame:
    """Per night, significance tiers of the models compared in ``scope`` (the Holm verdicts
    of ``model_comparisons``): tier 1 is the best-scoring model and every model not
    significantly worse than it; those removed, tier 2 is the best of the rest and the
    models not significantly worse than it; and so on. In the overall scope comparisons
    exist only between models covering the same categories, so each coverage group is
    tiered on its own (a model alone in its group has no comparison and no tier)."""
    rows = comparisons.filter(pl.col(SCOPE) == scope)
    out: list[tuple[str | None, str, int]] = []
    for (date,), night in rows.group_by(DUMP_DATE, maintain_order=True):
        score = dict(zip(night[MODEL_A].to_list(), night[SCORE_A].to_list(), strict=True))
        worse = {
            (a, b)
            for a, b, v in zip(
                night[MODEL_A].to_list(),
                night[MODEL_B].to_list(),
                night[VERDICT].to_list(),
                strict=True,
            )
            if v == A_BETTER
        }
        neighbours: dict[str, set[str]] = {m: set() for m in score}
        for a, b in zip(night[MODEL_A].to_list(), night[MODEL_B].to_list(), strict=True):
            neighbours[a].add(b)
        seen: set[str] = set()
        for start in sorted(score):
            if start in seen:
                continue
            group = {start} | neighbours[start]
            seen |= group
            remaining = sorted(group)
            tier = 1
            while remaining:
                best = min(remaining, key=lambda m: (-score[m], m))
                members = [m for m in remaining if m == best or (best, m) not in worse]
                out.extend((date, m, tier) for m in members)
                remaining = [m for m in remaining if m not in members]
                tier += 1
    return pl.DataFrame(
        out, schema={DUMP_DATE: pl.String, Col.MODEL: pl.String, TIER: pl.Int64}, orient="row"
    ).sort(DUMP_DATE, TIER, Col.MODEL, nulls_last=True)


# ---------------------------------------------------------------------------------------
# Regressions


def _formula_strings(
    scores: pl.DataFrame | pl.LazyFrame, prep: _Prepared
) -> dict[tuple[int, str], str]:
    """Per unit and scope, the formula version(s) behind the score (from the scores'
    ``formula_version`` column; empty where there is none)."""
    frame = scores.lazy().collect() if isinstance(scores, pl.LazyFrame) else scores
    if FORMULA_VERSION not in frame.columns:
        return {}
    # Per model and category first (keys may be Categorical: few rows, then text).
    present = plain(frame.group_by(DUMP_DATE, Col.MODEL, Col.CATEGORY, FORMULA_VERSION).len())
    versions = (
        present.join(prep.units, on=[DUMP_DATE, Col.MODEL], nulls_equal=True)
        .group_by(_UNIT, Col.CATEGORY)
        .agg(pl.col(FORMULA_VERSION).unique().sort().str.join("|"))
        .sort(_UNIT, Col.CATEGORY)
    )
    out: dict[tuple[int, str], str] = {}
    joined: dict[int, list[str]] = {}
    for unit, category, version in versions.iter_rows():
        out[(unit, category)] = version
        joined.setdefault(unit, []).append(f"{category}={version}")
    for unit, parts in joined.items():
        out[(unit, OVERALL)] = ",".join(parts)
    return out


def _metadata_version(versions: str | None, scope: str) -> str | None:
    if versions is None or scope == OVERALL:
        return versions
    for part in versions.split(","):
        name, _, version = part.partition("=")
        if name.strip() == scope:
            return version.strip()
    return versions


def regressions(
    scores_by_night: pl.DataFrame | pl.LazyFrame,
    baseline: Literal["previous", "mean"] = "previous",
    k: int = 7,
    margin: float | None = None,
    metadata: pl.DataFrame | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    harness_error_tolerance: int = 0,
    harness_error_share_tolerance: float = 0.02,
) -> pl.DataFrame:
    """Per night, model and scope (each category and ``overall``): the change of the score
    from a baseline (``previous``: the model's last earlier night with that scope;
    ``mean``: the mean of its last ``k`` earlier nights with that scope), its standard
    error (tasks fixed; instances shared across nights are paired), interval, p-value,
    Benjamini–Hochberg q-value across the night's comparable tests, and a level:

    - ``not_comparable``: the coverage (tasks of a category; categories of the overall
      score), the formula versions, or (from ``metadata``) the harness errors changed from
      the baseline, said in ``reason``: never reported as a regression;
    - ``alert``: ``q_bh < alpha`` and a drop larger than ``margin`` (default: the row's
      ``mde``);
    - ``watch``: a drop with raw ``p_value < alpha``;
    - ``none`` otherwise (including every rise).

    ``metadata`` (optional): per ``dump_date`` and ``model``, any of ``formula_versions``
    (``category=version,…``), ``categories_covered``, ``harness_errors`` (count) and
    ``harness_error_share`` (harness errors / episodes the harness ran); harness errors
    differing by more than ``harness_error_tolerance``, or a share by more than
    ``harness_error_share_tolerance``, make a night not comparable with its baseline.
    """
    if baseline not in ("previous", "mean"):
        raise ValueError(f"baseline must be 'previous' or 'mean', not {baseline!r}")
    if k < 1:
        raise ValueError("k must be at least 1")
    span = 1 if baseline == "previous" else k
    prep = _prepare(scores_by_night, [DUMP_DATE, Col.MODEL])
    scopes = _scope_table(prep).filter(pl.col(DUMP_DATE).is_not_null())
    formulas = _formula_strings(scores_by_night, prep)
    meta: dict[tuple[str, str], dict[str, object]] = {}
    if metadata is not None:
        for row in metadata.iter_rows(named=True):
            meta[(row[DUMP_DATE], row[Col.MODEL])] = row

    records: list[dict[str, object]] = []
    contrasts: list[tuple[int, int, float, str]] = []
    for (model, scope), history in scopes.sort(DUMP_DATE).group_by(
        Col.MODEL, SCOPE, maintain_order=True
    ):
        dates = history[DUMP_DATE].to_list()
        units = history[_UNIT].to_list()
        values = history[SCORE].to_list()
        coverage = history[_COVERAGE].to_list()
        for i in range(1, len(dates)):
            base = list(range(max(0, i - span), i))
            cid = len(records)
            reasons = _reasons(
                scope,
                i,
                base,
                dates,
                units,
                coverage,
                formulas,
                meta,
                str(model),
                harness_error_tolerance,
                harness_error_share_tolerance,
            )
            base_score = math.fsum(values[j] for j in base) / len(base)
            records.append(
                {
                    _CID: cid,
                    DUMP_DATE: dates[i],
                    Col.MODEL: model,
                    SCOPE: scope,
                    BASELINE: baseline,
                    BASELINE_DATES: ",".join(dates[j] for j in base),
                    N_BASELINE_NIGHTS: len(base),
                    SCORE: values[i],
                    BASELINE_SCORE: base_score,
                    CHANGE: values[i] - base_score,
                    REASON: "; ".join(reasons) if reasons else None,
                }
            )
            contrasts.append((cid, units[i], 1.0, str(scope)))
            contrasts.extend((cid, units[j], -1.0 / len(base), str(scope)) for j in base)
    columns = REGRESSION_COLUMNS
    if not records:
        return pl.DataFrame(schema=_REGRESSION_SCHEMA).select(columns)
    table = pl.DataFrame(records, schema_overrides={_CID: pl.UInt32, REASON: pl.String})
    contrast_frame = pl.DataFrame(
        contrasts,
        schema={_CID: pl.UInt32, _UNIT: pl.UInt32, _COEF: pl.Float64, SCOPE: pl.String},
        orient="row",
    )
    table = table.join(_variances(prep, contrast_frame), on=_CID, how="left")
    table = _inference(table, CHANGE, alpha, power)
    comparable = pl.col(REASON).is_null()
    table = table.with_columns(
        pl.when(comparable).then(pl.col(P_VALUE)).alias("__p_family"),
        (pl.col(MDE) if margin is None else pl.lit(float(margin))).alias(MARGIN),
    )
    table = adjust_over(table, "__p_family", [DUMP_DATE], "bh", Q_BH)
    drop = pl.col(CHANGE) < 0
    level = (
        pl.when(~comparable)
        .then(pl.lit(LEVEL_NOT_COMPARABLE))
        .when(drop & (pl.col(Q_BH) < alpha) & (-pl.col(CHANGE) > pl.col(MARGIN)))
        .then(pl.lit(LEVEL_ALERT))
        .when(drop & (pl.col(P_VALUE) < alpha))
        .then(pl.lit(LEVEL_WATCH))
        .otherwise(pl.lit(LEVEL_NONE))
    )
    return (
        table.with_columns(level.alias(LEVEL), pl.col(N_PAIRS).fill_null(0))
        .sort(DUMP_DATE, Col.MODEL, SCOPE)
        .select(columns)
    )


REGRESSION_COLUMNS: Final = [
    DUMP_DATE,
    Col.MODEL,
    SCOPE,
    BASELINE,
    BASELINE_DATES,
    N_BASELINE_NIGHTS,
    SCORE,
    BASELINE_SCORE,
    CHANGE,
    SE,
    CI_LOW,
    CI_HIGH,
    P_VALUE,
    Q_BH,
    MDE,
    MARGIN,
    N_PAIRS,
    PAIRED,
    LEVEL,
    REASON,
]
_REGRESSION_SCHEMA: Final = {
    DUMP_DATE: pl.String,
    Col.MODEL: pl.String,
    SCOPE: pl.String,
    BASELINE: pl.String,
    BASELINE_DATES: pl.String,
    N_BASELINE_NIGHTS: pl.Int64,
    SCORE: pl.Float64,
    BASELINE_SCORE: pl.Float64,
    CHANGE: pl.Float64,
    SE: pl.Float64,
    CI_LOW: pl.Float64,
    CI_HIGH: pl.Float64,
    P_VALUE: pl.Float64,
    Q_BH: pl.Float64,
    MDE: pl.Float64,
    MARGIN: pl.Float64,
    N_PAIRS: pl.Int64,
    PAIRED: pl.String,
    LEVEL: pl.String,
    REASON: pl.String,
}


def _reasons(
    scope: str,
    i: int,
    base: list[int],
    dates: list[str],
    units: list[int],
    coverage: list[str],
    formulas: dict[tuple[int, str], str],
    meta: dict[tuple[str, str], dict[str, object]],
    model: str,
    tolerance: int,
    share_tolerance: float = 0.02,
) -> list[str]:
    """Why night ``i`` is not comparable with its baseline nights ``base`` (empty: it is)."""
    reasons: list[str] = []
    what = "categories" if scope == OVERALL else "tasks"
    changed = [j for j in base if coverage[j] != coverage[i]]
    if changed:
        reasons.append(
            f"{what} covered changed: {coverage[changed[-1]]} on {dates[changed[-1]]},"
            f" {coverage[i]} now"
        )
    now_formula = formulas.get((units[i], scope))
    changed = [j for j in base if formulas.get((units[j], scope)) != now_formula]
    if changed:
        reasons.append(
            f"formula versions changed: {formulas.get((units[changed[-1]], scope))}"
            f" on {dates[changed[-1]]}, {now_formula} now"
        )
    now = meta.get((dates[i], model), {})
    for j in base:
        then = meta.get((dates[j], model), {})
        if FORMULA_VERSIONS in now or FORMULA_VERSIONS in then:
            a = _metadata_version(_opt_str(then.get(FORMULA_VERSIONS)), scope)
            b = _metadata_version(_opt_str(now.get(FORMULA_VERSIONS)), scope)
            if a != b:
                reasons.append(f"formula versions changed: {a} on {dates[j]}, {b} now")
        if scope == OVERALL and then.get(CATEGORIES_COVERED) != now.get(CATEGORIES_COVERED):
            reasons.append(
                f"categories covered changed: {then.get(CATEGORIES_COVERED)} on {dates[j]},"
                f" {now.get(CATEGORIES_COVERED)} now"
            )
        errors_then, errors_now = then.get(HARNESS_ERRORS), now.get(HARNESS_ERRORS)
        if (errors_then is None) != (errors_now is None) or (
            isinstance(errors_then, int)
            and isinstance(errors_now, int)
            and abs(errors_now - errors_then) > tolerance
        ):
            reasons.append(f"harness errors changed: {errors_then} on {dates[j]}, {errors_now} now")
        share_then, share_now = then.get(HARNESS_ERROR_SHARE), now.get(HARNESS_ERROR_SHARE)
        if (
            isinstance(share_then, float)
            and isinstance(share_now, float)
            and abs(share_now - share_then) > share_tolerance
        ):
            reasons.append(
                f"harness errors changed: {share_then:.1%} of the episodes on {dates[j]},"
                f" {share_now:.1%} now"
            )
    return list(dict.fromkeys(reasons))


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


# ---------------------------------------------------------------------------------------
# Rescore: the same episodes under two formulas


def _rescore_prepared(
    old_scores: pl.DataFrame | pl.LazyFrame, new_scores: pl.DataFrame | pl.LazyFrame
) -> _Prepared:
    old = old_scores.lazy().collect() if isinstance(old_scores, pl.LazyFrame) else old_scores
    new = new_scores.lazy().collect() if isinstance(new_scores, pl.LazyFrame) else new_scores
    columns = [DUMP_DATE, Col.MODEL, *_TASK_KEY, Col.EPISODE_ID, SCORE]
    if INSTANCE_ID in old.columns and INSTANCE_ID in new.columns:
        columns.append(INSTANCE_ID)
    both = pl.concat(
        [
            old.select(columns).with_columns(pl.lit("old").alias(_VERSION)),
            new.select(columns).with_columns(pl.lit("new").alias(_VERSION)),
        ]
    )
    return _prepare(both, [DUMP_DATE, Col.MODEL, _VERSION])


def _old_new(prep: _Prepared) -> pl.DataFrame:
    table = _scope_table(prep)
    old = table.filter(pl.col(_VERSION) == "old").drop(_VERSION)
    new = table.filter(pl.col(_VERSION) == "new").drop(_VERSION)
    return old.join(new, on=[DUMP_DATE, Col.MODEL, SCOPE], suffix="_new", nulls_equal=True)


def rescore_significance(
    old_scores: pl.DataFrame | pl.LazyFrame,
    new_scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
) -> pl.DataFrame:
    """Per night, model and scope present under both formulas: ``delta = new_score -
    old_score`` with its standard error, interval and p-value. The two scores are of the
    same episodes, so the difference is paired episode by episode (by instance where
    instances are given); ``paired`` says ``full`` when every episode is scored under both.

    ``rank_change_significant`` (overall rows): null when the model's order against every
    model of its coverage group is unchanged; else whether at least one of the changed
    orders is significant (``rescore_rank_changes``, Holm over the night's changed pairs).
    """
    prep = _rescore_prepared(old_scores, new_scores)
    pairs = _old_new(prep).sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True).with_row_index(_CID)
    contrasts = pl.concat(
        [
            pairs.select(
                _CID, pl.col(_UNIT + "_new").alias(_UNIT), pl.lit(1.0).alias(_COEF), SCOPE
            ),
            pairs.select(_CID, pl.col(_UNIT).alias(_UNIT), pl.lit(-1.0).alias(_COEF), SCOPE),
        ]
    )
    table = pairs.join(_variances(prep, contrasts), on=_CID, how="left").with_columns(
        (pl.col(SCORE + "_new") - pl.col(SCORE)).alias(DELTA)
    )
    table = _inference(table, DELTA, alpha, power)
    changes = _rank_changes(prep, alpha, power)
    flipped = pl.concat(
        [
            changes.select(DUMP_DATE, pl.col(MODEL_A).alias(Col.MODEL), SIGNIFICANT),
            changes.select(DUMP_DATE, pl.col(MODEL_B).alias(Col.MODEL), SIGNIFICANT),
        ]
    )
    per_model = (
        flipped.group_by(DUMP_DATE, Col.MODEL)
        .agg(pl.col(SIGNIFICANT).any().alias(RANK_CHANGE_SIGNIFICANT))
        .with_columns(pl.lit(OVERALL).alias(SCOPE))
    )
    table = table.join(per_model, on=[DUMP_DATE, Col.MODEL, SCOPE], how="left", nulls_equal=True)
    return table.select(
        DUMP_DATE,
        Col.MODEL,
        SCOPE,
        pl.col(SCORE).alias(OLD_SCORE),
        pl.col(SCORE + "_new").alias(NEW_SCORE),
        DELTA,
        SE,
        CI_LOW,
        CI_HIGH,
        P_VALUE,
        MDE,
        pl.col(_N).cast(pl.Int64).alias(N_EPISODES_OLD),
        pl.col(_N + "_new").cast(pl.Int64).alias(N_EPISODES_NEW),
        pl.col(N_PAIRS).fill_null(0),
        PAIRED,
        RANK_CHANGE_SIGNIFICANT,
    ).sort(DUMP_DATE, Col.MODEL, SCOPE, nulls_last=True)


def rescore_rank_changes(
    old_scores: pl.DataFrame | pl.LazyFrame,
    new_scores: pl.DataFrame | pl.LazyFrame,
    alpha: float = 0.05,
    power: float = 0.8,
) -> pl.DataFrame:
    """Per night, every pair of models (same categories covered, under both formulas)
    whose overall order changed: ``old_diff`` and ``new_diff`` (``score_a - score_b``,
    ``model_a`` the model ahead under the new formula), ``change = new_diff - old_diff``
    with its standard error (a four-score contrast, paired episode by episode and instance
    by instance), interval, p-value, ``p_holm`` (Holm over the night's changed pairs),
    ``significant`` (``p_holm < alpha``: the formula moves the two models past each other
    by more than the instances sampled explain) and ``p_new_diff`` (the raw p-value of the
    new order itself, as in ``model_comparisons``)."""
    return _rank_changes(_rescore_prepared(old_scores, new_scores), alpha, power)


def _rank_changes(prep: _Prepared, alpha: float, power: float) -> pl.DataFrame:
    table = _old_new(prep).filter(pl.col(SCOPE) == OVERALL)
    cols = [DUMP_DATE, Col.MODEL, _UNIT, _UNIT + "_new", SCORE, SCORE + "_new"]
    left = table.select(*cols, _COVERAGE, _COVERAGE + "_new")
    pairs = (
        left.join(left, on=DUMP_DATE, suffix="_b", nulls_equal=True)
        .filter(
            (pl.col(Col.MODEL) != pl.col(Col.MODEL + "_b"))
            & (pl.col(_COVERAGE) == pl.col(_COVERAGE + "_b"))
            & (pl.col(_COVERAGE + "_new") == pl.col(_COVERAGE + "_new_b"))
        )
        .with_columns(
            (pl.col(SCORE) - pl.col(SCORE + "_b")).alias(OLD_DIFF),
            (pl.col(SCORE + "_new") - pl.col(SCORE + "_new_b")).alias(NEW_DIFF),
        )
        # model_a is ahead under the new formula (the first by name on a tie).
        .filter(
            (pl.col(NEW_DIFF) > 0)
            | ((pl.col(NEW_DIFF) == 0) & (pl.col(Col.MODEL) < pl.col(Col.MODEL + "_b")))
        )
        .filter(pl.col(OLD_DIFF).sign() != pl.col(NEW_DIFF).sign())
        .sort(DUMP_DATE, Col.MODEL, Col.MODEL + "_b", nulls_last=True)
        .with_row_index(_CID)
        .with_columns(pl.lit(OVERALL).alias(SCOPE))
    )

    def contrast(units: list[tuple[str, float]]) -> pl.DataFrame:
        return pl.concat(
            [
                pairs.select(_CID, pl.col(u).alias(_UNIT), pl.lit(c).alias(_COEF), SCOPE)
                for u, c in units
            ]
        )

    change = contrast(
        [(_UNIT + "_new", 1.0), (_UNIT + "_new_b", -1.0), (_UNIT, -1.0), (_UNIT + "_b", 1.0)]
    )
    new_only = contrast([(_UNIT + "_new", 1.0), (_UNIT + "_new_b", -1.0)])
    table = pairs.join(_variances(prep, change), on=_CID, how="left").with_columns(
        (pl.col(NEW_DIFF) - pl.col(OLD_DIFF)).alias(CHANGE)
    )
    table = _inference(table, CHANGE, alpha, power)
    new_p = _inference(
        pairs.join(_variances(prep, new_only).select(_CID, _VAR), on=_CID, how="left"),
        NEW_DIFF,
        alpha,
        power,
    ).select(_CID, pl.col(P_VALUE).alias(P_NEW_DIFF))
    table = adjust_over(table.join(new_p, on=_CID), P_VALUE, [DUMP_DATE], "holm", P_HOLM)
    return table.select(
        DUMP_DATE,
        pl.col(Col.MODEL).alias(MODEL_A),
        pl.col(Col.MODEL + "_b").alias(MODEL_B),
        OLD_DIFF,
        NEW_DIFF,
        CHANGE,
        SE,
        CI_LOW,
        CI_HIGH,
        P_VALUE,
        P_HOLM,
        (pl.col(P_HOLM) < alpha).fill_null(False).alias(SIGNIFICANT),
        P_NEW_DIFF,
    ).sort(DUMP_DATE, MODEL_A, MODEL_B, nulls_last=True)
