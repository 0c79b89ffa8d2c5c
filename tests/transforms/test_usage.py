"""Usage (contract 1.3): per episode from the rows, per task from the files' sums, per
category and model from the task rows; null where nothing is recorded, never 0; contract
1.4: a sum that its type cannot hold is null, never wrapped or infinite."""

from __future__ import annotations

import functools
import operator
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.columns import REPLIES_WITHOUT_USAGE, USAGE_EPISODES, USAGE_INCOMPLETE
from schemas.contract import (
    COST_USD,
    INPUT_TOKENS,
    LATENCY_MS,
    OUTPUT_TOKENS,
    USAGE_DTYPES,
    USAGE_MAXIMA,
)
from schemas.tables import TASK_SCORES_TABLE
from tests.run import run_pipeline
from transforms.aggregate import category_scores, component_sums, model_scores
from transforms.usage import task_usage

MEASURES = tuple(USAGE_DTYPES)
EPISODE_USAGE = (*MEASURES, REPLIES_WITHOUT_USAGE)


def _episode(episode_id: str, *body: dict[str, Any], file: str = "f") -> list[dict[str, Any]]:
    """An associative episode (one item, answered right) with ``body`` rows after its item."""
    rows = [
        {"kind": "episode_start", "role": "environment", "params": "{}"},
        {"kind": "item", "role": "environment", "item_id": "q", "expected": "yes"},
        *body,
        {"kind": "answer", "role": "assistant", "item_id": "q", "content": "yes"},
    ]
    identity = {"run_id": "r", "model": "m", "task": "t", "category": "associative_learning"}
    return [
        {**identity, "file": file, "episode_id": episode_id, "turn": turn, **row}
        for turn, row in enumerate(rows)
    ]


def _reply(content: str | None = "thinking", kind: str = "message", **usage: Any) -> dict:
    return {"kind": kind, "role": "assistant", "content": content, **usage}


def _usage(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    scores, rejects = run_pipeline(rows)
    assert rejects.is_empty()
    return {r["episode_id"]: {c: r[c] for c in EPISODE_USAGE} for r in scores.to_dicts()}


def test_an_episode_sums_its_replies_in_turn_order_exactly() -> None:
    costs = [0.1, 0.2, 0.3]
    most = USAGE_MAXIMA[INPUT_TOKENS]  # contract 1.4: the most a reply records, kept
    body = [_reply(cost_usd=c, input_tokens=t) for c, t in zip(costs, [most, 1, 0], strict=True)]
    rows = _episode("e", *body)
    got = _usage(list(reversed(rows)))["e"]  # written out of order: summed in turn order
    in_turn_order = functools.reduce(operator.add, costs)
    assert got[COST_USD] == in_turn_order != functools.reduce(operator.add, reversed(costs))
    assert got[INPUT_TOKENS] == most + 1
    assert got[OUTPUT_TOKENS] is None and got[LATENCY_MS] is None  # not recorded: null, not 0
    assert got[REPLIES_WITHOUT_USAGE] == 0


def test_usage_recorded_nowhere_is_null_never_zero() -> None:
    got = _usage(_episode("e", _reply()))["e"]
    assert got == dict.fromkeys(EPISODE_USAGE)


def test_replies_without_usage_count_the_replies_left_out() -> None:
    body = [
        _reply(output_tokens=7, latency_ms=120.5),
        _reply(),  # a reply with no usage: counted
        _reply(kind="action"),  # counted (an action is a reply turn too)
        _reply(content=None),  # a call that failed: no reply, nothing left out
        {"kind": "message", "role": "user", "content": "x", "output_tokens": 1000},  # not read
    ]
    got = _usage(_episode("e", *body))["e"]  # its answer has no usage: not counted
    assert got[OUTPUT_TOKENS] == 7 and got[LATENCY_MS] == 120.5
    assert got[REPLIES_WITHOUT_USAGE] == 2


# --- aggregates -------------------------------------------------------------------------------

NIGHT = "2026-12-01"


@st.composite
def scored(draw: st.DrawFn) -> pl.DataFrame:
    """Episode scores of a night: two models, tasks of two categories, three files; each
    episode with some usage or none."""
    n = draw(st.integers(1, 24))
    cells = [(m, c, t) for m in ("m1", "m2") for c, t in (("c1", "t1"), ("c1", "t2"), ("c2", "t3"))]
    rows = []
    for i in range(n):
        model, category, task = draw(st.sampled_from(cells))
        usage = {
            INPUT_TOKENS: draw(st.none() | st.integers(0, 10**9)),
            OUTPUT_TOKENS: draw(st.none() | st.integers(0, 10**6)),
            COST_USD: draw(st.none() | st.sampled_from([0.1, 0.2, 0.3, 1e-9]) | st.floats(0, 9)),
            LATENCY_MS: draw(st.none() | st.floats(0, 1e6)),
        }
        recorded = any(v is not None for v in usage.values())
        rows.append(
            {
                "dump_date": NIGHT,
                "model": model,
                "category": category,
                "task": task,
                "file": draw(st.sampled_from(["a", "b", "c"])),
                "episode_id": f"e{i:03d}",
                "score": 0.5,
                "formula_version": "v1",
                **usage,
                REPLIES_WITHOUT_USAGE: draw(st.integers(0, 2)) if recorded else None,
            }
        )
    schema = {
        "score": pl.Float64,
        **USAGE_DTYPES,
        REPLIES_WITHOUT_USAGE: pl.Int64,
    }
    return pl.DataFrame(rows, schema_overrides=schema)


def _expected(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The usage of a group of episodes, from the README's words, in plain Python."""
    recording = [e for e in episodes if any(e[m] is not None for m in MEASURES)]
    out: dict[str, Any] = {
        USAGE_EPISODES: len(recording),
        USAGE_INCOMPLETE: sum(1 for e in recording if e[REPLIES_WITHOUT_USAGE] > 0),
    }
    for m in MEASURES:
        values = [e[m] for e in recording if e[m] is not None]
        out[m] = sum(values) if values and len(values) == len(recording) else None
    return out


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for column, value in want.items():
        if isinstance(value, float):  # added in another order: the last bits may differ
            assert abs(got[column] - value) <= 1e-9 * max(1.0, abs(value)), column
        else:
            assert got[column] == value, column


@settings(max_examples=80, deadline=None)
@given(scored())
def test_task_category_and_model_usage_are_their_episodes(frame: pl.DataFrame) -> None:
    tasks = (
        task_usage(component_sums(frame.lazy()), ["dump_date", "model", "category", "task"])
        .collect()
        .with_columns(pl.lit(0.5).alias("score"), pl.lit(1).alias("n_episodes"))
        .with_columns(pl.lit("v1").alias("formula_version"))
    )
    categories = category_scores(tasks.lazy())
    models = model_scores(tasks.lazy(), categories).collect()
    levels = {
        ("model", "category", "task"): tasks,
        ("model", "category"): categories.collect(),
        ("model",): models,
    }
    episodes = frame.to_dicts()
    for key, table in levels.items():
        assert table.height == len({tuple(e[k] for k in key) for e in episodes})
        for row in table.to_dicts():
            group = [e for e in episodes if all(e[k] == row[k] for k in key)]
            _same(row, _expected(group))


@settings(max_examples=30, deadline=None)
@given(scored(), st.randoms(use_true_random=False))
def test_aggregates_give_the_same_bits_whatever_the_row_order(
    frame: pl.DataFrame, rng: Any
) -> None:
    def usage(rows: pl.DataFrame) -> pl.DataFrame:
        tasks = task_usage(component_sums(rows.lazy()), ["dump_date", "model", "category", "task"])
        tasks = tasks.with_columns(pl.lit(0.5).alias("score"), pl.lit(1).alias("n_episodes"))
        tasks = tasks.with_columns(pl.lit("v1").alias("formula_version"))
        models = model_scores(tasks, category_scores(tasks)).collect()
        return models.select("model", *MEASURES).sort("model")

    order = list(range(frame.height))
    rng.shuffle(order)
    assert usage(frame).equals(usage(frame[order]))


def test_a_task_whose_usage_lacks_a_measure_on_some_episodes_totals_none_of_it() -> None:
    """Two episodes record usage, one of them no cost: the task's cost is null (a total of
    one would read as both's), its tokens summed; the model, whose other task has cost,
    has no cost either."""
    base = {"dump_date": NIGHT, "model": "m", "category": "c", "file": "f", "score": 0.5}
    rows = [
        {**base, "task": "t1", "episode_id": "a", INPUT_TOKENS: 3, COST_USD: 0.5},
        {**base, "task": "t1", "episode_id": "b", INPUT_TOKENS: 4, COST_USD: None},
        {**base, "task": "t2", "episode_id": "c", INPUT_TOKENS: 5, COST_USD: 0.25},
        {**base, "task": "t3", "episode_id": "d", INPUT_TOKENS: None, COST_USD: None},
    ]
    frame = pl.DataFrame(rows, schema_overrides={COST_USD: pl.Float64, INPUT_TOKENS: pl.Int64})
    tasks = task_usage(component_sums(frame.lazy()), ["dump_date", "model", "category", "task"])
    by_task = {r["task"]: r for r in tasks.collect().to_dicts()}
    assert [by_task[t][COST_USD] for t in ("t1", "t2", "t3")] == [None, 0.25, None]
    assert [by_task[t][INPUT_TOKENS] for t in ("t1", "t2", "t3")] == [7, 5, None]
    assert [by_task[t][USAGE_EPISODES] for t in ("t1", "t2", "t3")] == [2, 1, 0]
    tasks = tasks.with_columns(pl.lit(0.5).alias("score"), pl.lit(1).alias("n_episodes"))
    tasks = tasks.with_columns(pl.lit("v1").alias("formula_version"))
    model = model_scores(tasks, category_scores(tasks)).collect().row(0, named=True)
    assert (model[COST_USD], model[INPUT_TOKENS], model[USAGE_EPISODES]) == (None, 12, 3)


def test_task_rows_of_an_earlier_cogscore_add_up_to_null_counts() -> None:
    """Task rows written before cogscore read usage (no usage columns): their category and
    model rows have every usage column null, the counts included (not 0)."""
    tasks = pl.LazyFrame(
        {
            "dump_date": [NIGHT] * 2,
            "model": ["m"] * 2,
            "category": ["c"] * 2,
            "task": ["t1", "t2"],
            "score": [0.5, 0.25],
            "n_episodes": [1, 1],
            "formula_version": ["v1"] * 2,
        }
    )
    model = model_scores(tasks, category_scores(tasks)).collect().row(0, named=True)
    assert {c: model[c] for c in (USAGE_EPISODES, USAGE_INCOMPLETE, *MEASURES)} == dict.fromkeys(
        (USAGE_EPISODES, USAGE_INCOMPLETE, *MEASURES)
    )


def _tasks(frame: pl.DataFrame) -> pl.LazyFrame:
    key = ["dump_date", "model", "category", "task"]
    return (
        task_usage(component_sums(frame.lazy()), key)
        .with_columns(pl.lit(0.5).alias("score"), pl.lit(1).alias("n_episodes"))
        .with_columns(pl.lit("v1").alias("formula_version"))
    )


def test_a_total_its_type_cannot_hold_is_null_never_wrapped_or_infinite() -> None:
    """Issue 46: two episodes of 5e18 tokens each (legal int64s) summed to a negative int64,
    two costing 1e308 to inf, in task_scores and the standings. Episodes within the contract's
    bounds never come near (these are fed to the aggregates directly); where a sum does not
    fit, the task's total is null (``usage_episodes`` still counts its episodes), and so is
    every total above it; the fair task's totals and mean_tokens stay."""
    base = {"dump_date": NIGHT, "model": "m", "category": "c", "file": "f", "score": 0.5}
    huge = {INPUT_TOKENS: 5 * 10**18, OUTPUT_TOKENS: 5 * 10**18, COST_USD: 1e308}
    fair = {INPUT_TOKENS: 10, OUTPUT_TOKENS: 2, COST_USD: 0.5}
    rows = [
        {**base, "task": "big", "episode_id": "a", **huge},
        {**base, "task": "big", "episode_id": "b", **huge},
        {**base, "task": "fair", "episode_id": "c", **fair},
    ]
    frame = pl.DataFrame(rows, schema_overrides={**USAGE_DTYPES})
    tasks = _tasks(frame)
    by_task = {r["task"]: r for r in tasks.collect().to_dicts()}
    assert [by_task["big"][c] for c in (INPUT_TOKENS, OUTPUT_TOKENS, COST_USD)] == [None] * 3
    assert by_task["big"][USAGE_EPISODES] == 2 and by_task["big"]["mean_tokens"] is None
    assert [by_task["fair"][c] for c in (INPUT_TOKENS, COST_USD, "mean_tokens")] == [10, 0.5, 12.0]
    model = model_scores(tasks, category_scores(tasks)).collect().row(0, named=True)
    assert (model[INPUT_TOKENS], model[COST_USD], model[USAGE_EPISODES]) == (None, None, 3)


def test_task_totals_that_do_not_fit_are_null_above_the_task() -> None:
    """Two tasks whose totals fit (4.6e18 tokens, 1e308 dollars each) but whose sum does
    not: the model's total is null, not wrapped or infinite; one episode's mean_tokens of
    two such halves is finite (added as floats)."""
    base = {"dump_date": NIGHT, "model": "m", "category": "c", "file": "f", "score": 0.5}
    half = {INPUT_TOKENS: 2**62, OUTPUT_TOKENS: 2**62, COST_USD: 1e308}
    rows = [{**base, "task": t, "episode_id": t, **half} for t in ("t1", "t2")]
    tasks = _tasks(pl.DataFrame(rows, schema_overrides={**USAGE_DTYPES}))
    assert tasks.collect()["mean_tokens"].to_list() == [2.0**63] * 2
    model = model_scores(tasks, category_scores(tasks)).collect().row(0, named=True)
    assert (model[INPUT_TOKENS], model[COST_USD], model[USAGE_EPISODES]) == (None, None, 2)


def test_an_episode_whose_sum_would_not_fit_has_its_usage_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replies within the contract's bounds never come near int64's limit (9 x 10^9 of them
    would); with the bound lifted, two replies of 5e18 tokens each (legal int64s, summed to
    a negative int64 before, which failed the run) refuse the episode's usage, which says
    so; the score is kept."""
    monkeypatch.setitem(USAGE_MAXIMA, INPUT_TOKENS, 2**63 - 1)
    body = [_reply(input_tokens=5 * 10**18, cost_usd=0.5) for _ in range(2)]
    scores, rejects = run_pipeline(_episode("e", *body))
    assert rejects.is_empty()
    episode = scores.row(0, named=True)
    assert episode["score"] == 1.0 and episode[INPUT_TOKENS] is None and episode[COST_USD] is None
    assert episode["usage_refused"] == (
        "usage_invalid: the episode's sum of input_tokens does not fit its type"
    )


def test_category_and_model_scores_sort_their_task_rows_once_not_in_each_group() -> None:
    """Their sums run in (category, task) order (the test above: the same bits whatever the
    row order) because the task rows are sorted once before the groups, each group keeping
    its rows' order; not by a ``sort_by`` of the score and each usage measure in each group
    (issue 48: part of every night's and every standing's category and model scores)."""
    tasks = TASK_SCORES_TABLE.empty().lazy()
    plan = model_scores(tasks, category_scores(tasks)).explain()
    # (one left: the mean of a model's few category scores, in category order)
    assert plan.count("sort_by") == 1, plan
    assert plan.count("SORT BY") == 2, plan  # the task rows, for the categories, the models
