"""The variances of a night's contrasts in few polars queries (issue 48): a standing makes
three (its pairs, its score intervals, its re-run cells' test), and each eager step of them
was a query of its own whatever the rows, most of a standing's cost. Each variance is now
one plan, its sums too, run as ``preparation.exactly`` runs it, which keeps the bits of the
steps taken eagerly (``tests/transforms/test_exact_sums.py``); the pairs' Wilcoxon tests one
query for every pair (``tests/transforms/test_known_pairs.py``,
``tests/flows/test_standings_from_scratch.py`` hold the statistics to scratch)."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from schemas.columns import FORMULA_VERSION, SCORE
from schemas.comparisons import DIFF, SCOPE, Work
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from tests.queries import polars_queries
from transforms.compare.inference import detectable, inference
from transforms.compare.pairs import (
    Known,
    comparisons_of,
    task_signed_ranks,
    two_unit_contrasts,
    unordered_pairs,
)
from transforms.compare.preparation import Prepared, prepare
from transforms.compare.regressions import regressions
from transforms.compare.variance import _shapes, variances
from transforms.compare.variance_tasks import _task_sample
from transforms.exact import exactly
from transforms.stats import adjust_over, holm_levels

# Queries of one call at most, on the night below (a576f4e: 79 for the pairs, 44 for the
# models' own scores; 10b36df: 48 and 27, the pairs' Wilcoxon tests 15; i48-variance4: 4,
# 2 and 1).
PAIRS_AT_MOST = 5
OWN_AT_MOST = 3
SIGNED_RANKS_AT_MOST = 1
# ``prepare`` of the night (a standing prepares twice: its statistics, its re-run cells),
# and its changed models taken out (10b36df: 40 and 8; i48-variance4: 9 and 3).
PREPARE_AT_MOST = 9
OF_UNITS_AT_MOST = 3
# The inference from the pairs' variances, and their MDE at Holm's levels (10b36df: 6 and 2).
INFERENCE_AT_MOST = 1
DETECTABLE_AT_MOST = 0
# Holm's and BH's adjustments, and Holm's levels, a call each (10b36df: 9, 8 and 5).
ADJUST_AT_MOST = 1
# A night's comparisons, all of them, and with the pairs of unchanged models known
# (d0882e1: 35 and 44; i48-rest, the joins, the intervals held and the rows both ways
# each one query: 18 and 23).
COMPARISONS_AT_MOST = 18
KNOWN_COMPARISONS_AT_MOST = 23
# A re-run test of two nights (their formula versions read; d0882e1: 30; i48-rest, the
# versions and the rows' levels each one query: 25).
REGRESSIONS_AT_MOST = 25


def _episodes() -> pl.DataFrame:
    """Three models on the same six tasks of two categories, two instances a task."""
    rng = random.Random(3)
    rows = [
        {
            DUMP_DATE: "2026-01-01",
            Col.MODEL: model,
            Col.CATEGORY: category,
            Col.TASK: f"{category}-{task}",
            INSTANCE_ID: f"{category}-{task}#{i}",
            Col.EPISODE_ID: f"{model}-{category}-{task}-{i}",
            "score": rng.random(),
        }
        for model in ("a", "b", "c")
        for category in ("associative_learning", "runtime_rl")
        for task in range(3)
        for i in range(2)
    ]
    return pl.DataFrame(rows)


def _night() -> Prepared:
    return prepare(_episodes(), [DUMP_DATE, Col.MODEL])


def test_the_variances_of_a_nights_pairs_take_few_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    prep = _night()
    pairs = unordered_pairs(prep.scope_table(), [DUMP_DATE])
    contrasts = two_unit_contrasts(pairs, Work.UNIT, Work.UNIT + "_b")
    made = polars_queries(monkeypatch, lambda: variances(prep, contrasts, "two_level"))
    assert 0 < made <= PAIRS_AT_MOST


def test_the_variances_of_the_models_own_scores_take_few_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prep = _night()
    table = prep.scope_table().with_row_index(Work.CID)
    own = table.select(Work.CID, Work.UNIT, pl.lit(1.0).alias(Work.COEF), SCOPE)
    made = polars_queries(
        monkeypatch, lambda: variances(prep, own, "two_level", zero_is_unknown=False)
    )
    assert 0 < made <= OWN_AT_MOST


def test_the_signed_rank_tests_of_a_nights_pairs_take_one_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prep = _night()
    pairs = unordered_pairs(prep.scope_table(), [DUMP_DATE])
    made = polars_queries(monkeypatch, lambda: task_signed_ranks(prep, pairs))
    assert 0 < made <= SIGNED_RANKS_AT_MOST


def test_a_nights_preparation_takes_few_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    episodes = _episodes()
    made = polars_queries(monkeypatch, lambda: prepare(episodes, [DUMP_DATE, Col.MODEL]))
    assert 0 < made <= PREPARE_AT_MOST
    prep = prepare(episodes, [DUMP_DATE, Col.MODEL])
    changed = polars_queries(monkeypatch, lambda: prep.of_units(pl.col(Col.MODEL) == "a"))
    assert 0 < changed <= OF_UNITS_AT_MOST


def test_the_inference_from_the_variances_takes_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    prep = _night()
    pairs = unordered_pairs(prep.scope_table(), [DUMP_DATE])
    var = variances(prep, two_unit_contrasts(pairs, Work.UNIT, Work.UNIT + "_b"), "two_level")
    half = pairs.join(var, on=Work.CID).with_columns(
        (pl.col(SCORE) - pl.col(SCORE + "_b")).alias(DIFF)
    )
    made = polars_queries(monkeypatch, lambda: inference(half, DIFF))
    assert 0 < made <= INFERENCE_AT_MOST
    inferred = inference(half, DIFF).with_columns(pl.lit(0.05).alias(Work.HOLM_LEVEL))
    assert (
        polars_queries(monkeypatch, lambda: detectable(inferred, Work.HOLM_LEVEL))
        <= DETECTABLE_AT_MOST
    )


def test_the_adjustments_of_p_values_take_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = pl.DataFrame({"g": [1, 1, 1, 2, 2], "p": [0.01, None, 0.03, 0.2, 0.001]})
    for method in ("holm", "bh"):
        made = polars_queries(monkeypatch, lambda m=method: adjust_over(frame, "p", ["g"], m, "q"))
        assert 0 < made <= ADJUST_AT_MOST
    q = adjust_over(frame, "p", ["g"], "holm", "q")
    levels = polars_queries(monkeypatch, lambda: holm_levels(q, "p", "q", ["g"], 0.05, "level"))
    assert 0 < levels <= ADJUST_AT_MOST


def test_a_nights_comparisons_take_few_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    prep = _night()
    made = polars_queries(monkeypatch, lambda: comparisons_of(prep))
    assert 0 < made <= COMPARISONS_AT_MOST
    known = Known(comparisons_of(prep), frozenset({"a"}))
    kept = polars_queries(monkeypatch, lambda: comparisons_of(prep, known=known))
    assert 0 < kept <= KNOWN_COMPARISONS_AT_MOST


def test_a_re_run_test_takes_few_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _episodes().with_columns(pl.lit("v1").alias(FORMULA_VERSION))
    second = first.with_columns(pl.lit("2026-01-02").alias(DUMP_DATE), pl.col(SCORE) * 0.9)
    nights = pl.concat([first, second])
    made = polars_queries(monkeypatch, lambda: regressions(nights, baseline="previous", k=1))
    assert 0 < made <= REGRESSIONS_AT_MOST


def test_the_cells_and_weights_carry_task_codes_that_order_tasks_as_their_keys() -> None:
    # The variances sort and group a contrast's rows by the task's code (``Work.TASK``), not
    # by its two texts: the same order, so the same sums to the bit, only where every code
    # is its key's rank. Rows come shuffled, tasks named against their first appearance.
    episodes = _episodes().with_columns(
        pl.col(Col.TASK).str.replace(r"-(\d)$", "-z$1").str.replace("runtime_rl-z0", "a")
    )
    prep = prepare(episodes.sample(fraction=1.0, shuffle=True, seed=5), [DUMP_DATE, Col.MODEL])
    key = [Col.CATEGORY, Col.TASK]
    codes = prep.tasks.sort(key)[Work.TASK]
    assert codes.to_list() == sorted(codes.to_list())
    for frame in (prep.cells, prep.weights):
        pairs = frame.select(*key, Work.TASK).unique()
        assert pairs.join(prep.tasks, on=key, suffix="_named")[Work.TASK].to_list() == (
            pairs.join(prep.tasks, on=key, suffix="_named")[Work.TASK + "_named"].to_list()
        )
        assert pairs.height == prep.tasks.height
    assert prep.cells.equals(prep.cells.sort(Work.UNIT, *key))


def test_where_every_unit_ran_every_task_the_task_sample_gathers_no_pattern_lists() -> None:
    """A standing's models ran the same tasks (LearningBench's shape): each contrast's tasks
    in a stratum are one coverage pattern, so its members' lists and their text are not
    gathered (issue 48: 1.5-2 ms of a standing's pairs, 25,000 rows); the variances are
    those of the plan that gathers them, to the bit."""
    prep = _night()
    pairs = unordered_pairs(prep.scope_table(), [DUMP_DATE])
    contrasts = two_unit_contrasts(pairs, Work.UNIT, Work.UNIT + "_b")
    assert _shapes(prep, contrasts)[2]  # every unit ran every task
    plan = contrasts.lazy()
    rows = plan.join(prep.weights.lazy(), on=[Work.UNIT, SCOPE])
    lean = _task_sample(prep, rows, plan, borrow=False)
    assert "list.join" not in lean[0].explain() and Work.MEMBERS not in lean[0].explain()
    every = _task_sample(prep, rows, plan, borrow=True)
    for made, gathered in zip(exactly(*lean), exactly(*every), strict=True):
        assert_frame_equal(made, gathered, check_exact=True)
