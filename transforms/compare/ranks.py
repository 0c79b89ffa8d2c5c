"""Rank intervals (a bootstrap that follows the sampling design) and significance tiers."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

import numpy as np
import polars as pl

from schemas.comparisons import (
    A_BETTER,
    DEFAULT_LEVEL,
    GROUP_RANK,
    MODEL_A,
    MODEL_B,
    N_RANKED,
    OVERALL,
    RANK_HIGH,
    RANK_LOW,
    RANKED_AMONG,
    SCOPE,
    SCORE_A,
    TIER,
    VERDICT,
    Design,
    Work,
)
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from schemas.tables import SCORE
from transforms.compare.preparation import TASK_KEY, Prepared, each_task, needed, prepare
from transforms.compare.variance import DEFAULT_DESIGN, DesignChoice, check_design

DRAWS_AT_ONCE: Final = 1_000_000  # counts drawn at once (replicates x profiles)
_SEP: Final = "\x1f"
RANK_SCHEMA: Final = {
    DUMP_DATE: pl.String,
    Col.MODEL: pl.String,
    RANKED_AMONG: pl.String,
    N_RANKED: pl.Int64,
    GROUP_RANK: pl.Int64,
    RANK_LOW: pl.Int64,
    RANK_HIGH: pl.Int64,
}


def stream(seed: int, key: Sequence[object]) -> np.random.Generator:
    """A random stream of its own for ``key`` under the run's ``seed``."""
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
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
) -> pl.DataFrame:
    """Per night and model: its rank by the overall score (each task weighing the same)
    among the models covering the same categories (``ranked_among``, ``n_ranked``,
    ``group_rank`` = rank of the point scores, 1 = best, ties share the better rank) and a
    percentile bootstrap interval of that rank (``rank_low``, ``rank_high``).

    A replicate follows the sampling ``design``. Two-level: the night's tasks are drawn with
    replacement, the same draw for every model (pairing kept), each drawn task bringing the
    model's task score (which holds its episodes' noise); a night of one task cannot be
    resampled so: its instances are. Tasks fixed: within each task, its instances are
    drawn with replacement, the same draw for every model; episodes without an instance are
    drawn per model. The models of a coverage group are ranked in
    each replicate; ``rank_low`` is the lower ``(1 - level)/2`` quantile of the replicate
    ranks (numpy ``method="lower"``), ``rank_high`` the upper one (``method="higher"``): the
    narrowest integer interval holding the linear quantiles. The task draw and each task's
    instance draw come from streams of their own (seed, night[, category, task]).
    """
    prep = prepare(scores, [DUMP_DATE, Col.MODEL])
    return rank_intervals_of(prep, scores, resamples, seed, level, design)


def rank_intervals_of(
    prep: Prepared,
    scores: pl.DataFrame | pl.LazyFrame,
    resamples: int = 1000,
    seed: int = 20261202,
    level: float = DEFAULT_LEVEL,
    design: DesignChoice = DEFAULT_DESIGN,
) -> pl.DataFrame:
    check_design(design)
    frame = needed(scores, [DUMP_DATE, Col.MODEL, *TASK_KEY, SCORE])  # the ids are not drawn
    overall = prep.scope_table().filter(pl.col(SCOPE) == OVERALL)
    cells = prep.cells.join(prep.units, on=Work.UNIT)
    tail = (1.0 - level) / 2.0
    out: list[pl.DataFrame] = []
    # A task's replicates do not depend on the order of its episodes: no sorted copy, and
    # no copy at all of a single night.
    one_night = frame.height > 0 and frame[DUMP_DATE].n_unique() == 1
    nights = [((frame[DUMP_DATE][0],), frame)] if one_night else frame.group_by(DUMP_DATE)
    for (date,), night in nights:
        on_night = pl.col(DUMP_DATE).is_null() if date is None else pl.col(DUMP_DATE) == date
        points = overall.filter(on_night)
        models = sorted(points[Col.MODEL].to_list())
        index = {m: i for i, m in enumerate(models)}
        sums, counts = _replicate_sums(
            night, cells.filter(on_night), index, resamples, seed, date, design
        )
        point = dict(zip(points[Col.MODEL].to_list(), points[SCORE].to_list(), strict=True))
        point_of = np.array([point[m] for m in models])
        # A model none of whose tasks was drawn keeps its point score in that replicate.
        model_reps = np.where(
            counts > 0, sums / np.where(counts > 0, counts, 1.0), point_of[:, None]
        )
        coverage = dict(zip(points[Col.MODEL].to_list(), points[Work.GROUP].to_list(), strict=True))
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
                    schema=RANK_SCHEMA,
                )
            )
    if not out:
        return pl.DataFrame(schema=RANK_SCHEMA)
    return pl.concat(out).sort(DUMP_DATE, RANKED_AMONG, GROUP_RANK, Col.MODEL, nulls_last=True)


def _replicate_sums(
    night: pl.DataFrame,
    cells: pl.DataFrame,
    index: dict[str, int],
    resamples: int,
    seed: int,
    date: object,
    design: DesignChoice,
) -> tuple[np.ndarray, np.ndarray]:
    """Per model and replicate (models x resamples): the sum of the task scores drawn and
    how many were drawn (of the model's own tasks), so that their ratio is the replicate's
    overall score, each task weighing the same."""
    n_models = len(index)
    sums = np.zeros((n_models, resamples))
    counts = np.zeros((n_models, resamples))
    keys = night.select(TASK_KEY).unique().sort(TASK_KEY)
    if design == Design.TWO_LEVEL and keys.height > 1:
        # The night's tasks drawn with replacement, the same draw for every model: how often
        # each task is drawn per replicate.
        column = {key: i for i, key in enumerate(keys.iter_rows())}
        rows = cells[Col.MODEL].replace_strict(index, return_dtype=pl.Int64).to_numpy()
        cols = np.array([column[key] for key in cells.select(TASK_KEY).iter_rows()])
        means = np.zeros((n_models, keys.height))
        has = np.zeros((n_models, keys.height))
        means[rows, cols] = cells[Work.MEAN].to_numpy()
        has[rows, cols] = 1.0
        g = keys.height
        drawn = stream(seed, (date, OVERALL)).multinomial(g, np.full(g, 1.0 / g), size=resamples)
        return (means * has) @ drawn.T, has @ drawn.T
    for means, present in _tasks_replicates(
        list(each_task(night, keys)), index, resamples, seed, date
    ):
        sums += np.where(present[:, None], means, 0.0)
        counts += present[:, None]
    return sums, counts


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
    (models x resamples) of its instances drawn, and whether the model has the task.

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
        draws, shares = stream(seed, key), multiplicity / g
        at_once = max(1, DRAWS_AT_ONCE // len(shares))
        for start in range(0, resamples, at_once):
            block = slice(start, min(start + at_once, resamples))
            drawn = draws.multinomial(g, shares, size=block.stop - block.start)
            sums[:, block] += profiles[:n_models] @ drawn.T
            counts[:, block] += profiles[n_models:] @ drawn.T
    for m in np.unique(model_idx[~shared]):
        own = values[(model_idx == m) & ~shared]
        distinct, times = np.unique(own, return_counts=True)
        drawn = stream(seed, (*key, "model", m)).multinomial(
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
    models not significantly worse than it; and so on. In the overall scopes comparisons
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
