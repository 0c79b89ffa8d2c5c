"""``comparisons_of`` with pairs compared already (``pairs.Known``, issue 48): a standing made
from the one before estimates only the pairs of the models with new results, and its table
is the one estimating every pair makes, to the bit, at any level, in either design."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

from schemas.comparisons import CI_LOW
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from transforms.compare import comparisons_and_rank_intervals
from transforms.compare.pairs import Known, comparisons_of
from transforms.compare.preparation import prepare

MODELS = ("m1", "m2", "m3", "m4", "m5")
# Three categories, one of a single task (its within-task variance lent), and tasks that not
# every model ran (coverage patterns, and models compared overall only within a group).
TASKS = (("c1", "t1"), ("c1", "t2"), ("c1", "t3"), ("c2", "t4"), ("c2", "t5"), ("c3", "t6"))
MISSING = {("m4", "t5"), ("m5", "t6")}


def _episodes(rng: np.random.Generator, night: str, cells: list[tuple[str, str, str]]) -> list:
    """Episodes of ``cells`` (model, category, task): some on the task's shared instances
    (a few episodes each), some alone; ids unique to the night."""
    rows = []
    for model, category, task in cells:
        skill = 0.3 + 0.1 * MODELS.index(model)
        for instance in range(int(rng.integers(1, 5))):
            for _ in range(int(rng.integers(1, 3))):
                score = float(np.clip(skill + 0.05 * instance + rng.normal(0, 0.15), 0, 1))
                rows.append((model, category, task, score, f"{task}#{instance}"))
        for _ in range(int(rng.integers(0, 3))):
            rows.append((model, category, task, float(rng.uniform()), None))
    return [
        {
            DUMP_DATE: "2026-05-02",  # a standing: every episode as of its night
            Col.MODEL: model,
            Col.CATEGORY: category,
            Col.TASK: task,
            Col.EPISODE_ID: f"{night}/{i:05}",
            "score": score,
            INSTANCE_ID: instance,
        }
        for i, (model, category, task, score, instance) in enumerate(rows)
    ]


def _standings(seed: int, changed: tuple[str, ...]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A standing's episodes, and the next one's: ``changed`` re-ran some of their tasks."""
    rng = np.random.default_rng(seed)
    cells = [(m, c, t) for m in MODELS for c, t in TASKS if (m, t) not in MISSING]
    before = pl.DataFrame(_episodes(rng, "2026-05-01", cells))
    rerun = [cell for cell in cells if cell[0] in changed and rng.uniform() < 0.6]
    rerun = rerun or [next(cell for cell in cells if cell[0] in changed)]
    cell = pl.col(Col.MODEL) + "/" + pl.col(Col.TASK)
    gone = pl.Series([f"{m}/{t}" for m, _, t in rerun])
    after = pl.concat(
        [before.filter(~cell.is_in(gone.implode())), pl.DataFrame(_episodes(rng, "n2", rerun))]
    )
    return before, after


@pytest.mark.parametrize("design", ["two_level", "within_tasks"])
@pytest.mark.parametrize("seed", range(6))
def test_pairs_of_models_without_new_results_are_the_same_bits(seed: int, design: str) -> None:
    changed = ("m2",) if seed % 2 else ("m1", "m4")
    before, after = _standings(seed, changed)
    made_before = comparisons_of(prepare(before, [DUMP_DATE, Col.MODEL]), design=design, level=0.9)
    prep = prepare(after, [DUMP_DATE, Col.MODEL])
    everything = comparisons_of(prep, design=design, level=0.95)  # type: ignore[arg-type]
    known = Known(made_before, frozenset(changed))
    assert_frame_equal(
        comparisons_of(prep, design=design, level=0.95, known=known),  # type: ignore[arg-type]
        everything,
        check_exact=True,
    )
    # A pair the rows do not hold is estimated: the same table.
    fewer = Known(made_before.filter(pl.col("model_a") != "m3"), frozenset(changed))
    assert_frame_equal(
        comparisons_of(prep, design=design, level=0.95, known=fewer),  # type: ignore[arg-type]
        everything,
        check_exact=True,
    )


@pytest.mark.parametrize("design", ["two_level", "within_tasks"])
@pytest.mark.parametrize("seed", range(4))
def test_unchanged_models_keep_their_score_intervals_to_the_bit(seed: int, design: str) -> None:
    """With the standing before's score intervals (``Known.intervals``), only the changed
    models' are made: every table is the one made from scratch, to the bit; and an unchanged
    model's rows are the ones held (moved to this night), not made again."""
    changed = ("m2",) if seed % 2 else ("m1", "m4")
    before, after = _standings(seed, changed)
    before = before.with_columns(pl.lit("2026-05-01").alias(DUMP_DATE))  # its own night
    held = comparisons_and_rank_intervals(before, level=0.9, design=design)  # type: ignore[arg-type]
    scratch = comparisons_and_rank_intervals(after, level=0.9, design=design)  # type: ignore[arg-type]
    known = Known(held.comparisons, frozenset(changed), held.intervals)
    made = comparisons_and_rank_intervals(after, level=0.9, design=design, known=known)  # type: ignore[arg-type]
    for mine, theirs in zip(made, scratch, strict=True):
        assert_frame_equal(mine, theirs, check_exact=True)
    # Marked, the held rows of an unchanged model come out as held; a changed model's not.
    marked = held.intervals.with_columns(pl.col(CI_LOW) - 7.0)
    moved = comparisons_and_rank_intervals(
        after,
        level=0.9,
        design=design,
        known=known._replace(intervals=marked),  # type: ignore[arg-type]
    ).intervals
    for model in MODELS:
        rows = moved.filter(pl.col(Col.MODEL) == model)[CI_LOW]
        expected = scratch.intervals.filter(pl.col(Col.MODEL) == model)[CI_LOW]
        if model not in changed:
            expected = marked.filter(pl.col(Col.MODEL) == model)[CI_LOW]
        assert_series_equal(rows, expected, check_exact=True)


@pytest.mark.parametrize("design", ["two_level", "within_tasks"])
@pytest.mark.parametrize(("seed", "added"), [(0, "m1"), (1, "m3"), (2, "m5")])
def test_a_model_added_is_a_changed_one_and_the_others_keep_their_bits(
    seed: int, added: str, design: str
) -> None:
    """The standing before had a model fewer (first, between or last in the units' order):
    with it among the changed models, every table is the one made from scratch, to the bit
    (the other models' codes move, not their order)."""
    before, after = _standings(seed, ("m2",))
    before = before.filter(pl.col(Col.MODEL) != added)
    held = comparisons_and_rank_intervals(before, level=0.9, design=design)  # type: ignore[arg-type]
    scratch = comparisons_and_rank_intervals(after, level=0.9, design=design)  # type: ignore[arg-type]
    known = Known(held.comparisons, frozenset({"m2", added}), held.intervals)
    made = comparisons_and_rank_intervals(after, level=0.9, design=design, known=known)  # type: ignore[arg-type]
    for mine, theirs in zip(made, scratch, strict=True):
        assert_frame_equal(mine, theirs, check_exact=True)
