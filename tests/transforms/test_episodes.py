"""``transforms.episodes``: episode order and numbering, and the fast facts' verdict against
the detailed facts' on generated dumps."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from schemas.columns import STATUS, Component
from schemas.contract import FILE, Col
from tests.dumps import Row
from tests.run import chunked, rows_frame, run_pipeline
from tests.strategies import dumps
from transforms.episodes import KEY, aligned, episode_facts, in_episode_order, unknown_answers
from transforms.rules import SEGMENT, with_status

SETTINGS = settings(max_examples=60, deadline=None)


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {FILE: pl.String, Col.EPISODE_ID: pl.String, Col.TURN: pl.Int64, "row": pl.Int64}
    return pl.DataFrame([{**r, "row": i} for i, r in enumerate(rows)], schema=schema)


def _ordered(frame: pl.DataFrame) -> pl.DataFrame:
    return in_episode_order(frame.lazy()).collect()


def _assert_numbered(before: pl.DataFrame, after: pl.DataFrame) -> None:
    """Every row kept; one segment per (file, episode_id), numbered 0, 1, ... in row order;
    each segment's rows together and in turn order."""
    assert sorted(after["row"].to_list()) == sorted(before["row"].to_list())
    segments = after[SEGMENT].to_list()
    assert segments == sorted(segments)
    assert sorted(set(segments)) == list(range(len(set(segments))))
    per_segment = after.group_by(SEGMENT).agg(pl.struct(KEY).n_unique().alias("keys"))
    assert per_segment["keys"].to_list() == [1] * per_segment.height
    per_key = after.group_by(KEY).agg(pl.col(SEGMENT).n_unique().alias("segments"))
    assert per_key["segments"].to_list() == [1] * per_key.height
    named = after.filter(pl.col(Col.EPISODE_ID).is_not_null())
    for _, episode in named.group_by(SEGMENT):
        turns = episode[Col.TURN].to_list()
        present = [t for t in turns if t is not None]
        assert present == sorted(present) and turns[: len(present)] == present  # nulls last


def test_rows_in_order_keep_their_order() -> None:
    # Episodes together and in turn order, ids not sorted: as a harness writes them.
    rows = [
        {FILE: "f", Col.EPISODE_ID: "b", Col.TURN: 0},
        {FILE: "f", Col.EPISODE_ID: "b", Col.TURN: 1},
        {FILE: "f", Col.EPISODE_ID: "a", Col.TURN: 0},
        {FILE: "f", Col.EPISODE_ID: "a", Col.TURN: 5},
    ]
    after = _ordered(_frame(rows))
    assert after["row"].to_list() == [0, 1, 2, 3]
    assert after[SEGMENT].to_list() == [0, 0, 1, 1]


def test_split_and_unordered_episodes_are_sorted() -> None:
    rows = [
        {FILE: "f", Col.EPISODE_ID: "b", Col.TURN: 1},
        {FILE: "f", Col.EPISODE_ID: "a", Col.TURN: 0},
        {FILE: "f", Col.EPISODE_ID: "b", Col.TURN: 0},  # b again, and before its turn 1
        {FILE: "f", Col.EPISODE_ID: None, Col.TURN: 3},
        {FILE: "g", Col.EPISODE_ID: "a", Col.TURN: 0},  # another file's a
        {FILE: "f", Col.EPISODE_ID: None, Col.TURN: None},
    ]
    before = _frame(rows)
    after = _ordered(before)
    _assert_numbered(before, after)
    assert after["row"].to_list() == [1, 2, 0, 3, 5, 4]


@SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                FILE: st.sampled_from(["f", "g"]),
                Col.EPISODE_ID: st.sampled_from(["a", "b", "c", None]),
                Col.TURN: st.none() | st.integers(0, 4),
            }
        ),
        max_size=25,
    ),
    st.booleans(),
)
def test_every_arrangement_is_numbered_by_episode(rows: list[dict[str, Any]], tidy: bool) -> None:
    if tidy:  # episodes together and in turn order (the frame may then keep its order)
        rows.sort(key=lambda r: (r[FILE], str(r[Col.EPISODE_ID]), r[Col.TURN] is None))
    before = _frame(rows)
    _assert_numbered(before, _ordered(before))


@settings(max_examples=40, deadline=None)
@given(rows=dumps(max_episodes=8))
def test_the_fast_verdict_is_the_detailed_one(rows: list[Row]) -> None:
    table = in_episode_order(rows_frame(rows).drop(Col.CONTENT)).collect().lazy()
    verdicts = [
        with_status(episode_facts(table, detailed=detailed)).select(*KEY, STATUS).collect()
        for detailed in (False, True)
    ]
    fast, detailed = (v.sort(KEY, nulls_last=True) for v in verdicts)
    assert fast.equals(detailed)


@SETTINGS
@given(
    st.lists(st.integers(0, 9), min_size=0, max_size=30),
    st.lists(st.integers(1, 29), max_size=4),
    st.lists(st.integers(1, 29), max_size=4),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
)
def test_aligned_columns_keep_their_values_in_chunks_alike(
    values: list[int], cuts: list[int], other_cuts: list[int], whole: list[str]
) -> None:
    frame = pl.DataFrame({"a": values, "b": values, "c": [str(v) for v in values]})
    cut = chunked(frame, cuts, whole)
    # A column of another layout too: every column must then be one chunk.
    mixed = cut.with_columns(chunked(frame.select("b"), other_cuts)["b"])
    for before in (cut, mixed):
        after = aligned(before)
        assert_frame_equal(after, frame)
        layouts = {tuple(len(c) for c in s.get_chunks()) for s in after.get_columns()}
        assert len(layouts) == 1, layouts


def test_a_null_kind_does_not_lose_the_next_episodes_examples() -> None:
    """A row whose ``kind`` is null (its episode rejected: ``null_required``) left a null in
    the running count of examples, and the episode after it in the file counted none: its
    efficiency and score came from 0 examples (found by the reference comparison)."""
    rejected = {FILE: "f", Col.EPISODE_ID: "a", Col.TURN: 0, Col.KIND: None}
    params = '{"initial_examples": 0, "max_examples": 16, "num_test_items": 1}'
    start = {Col.KIND: "episode_start", Col.ROLE: "environment", Col.PARAMS: params}
    body = [
        start,
        *[{Col.KIND: "example", Col.ROLE: "environment", Col.CONTENT: "x"}] * 3,
        {Col.KIND: "item", Col.ROLE: "environment", Col.ITEM_ID: "q", Col.EXPECTED: "y"},
    ]
    scored = [{FILE: "f", Col.EPISODE_ID: "b", Col.TURN: t, **r} for t, r in enumerate(body)]
    rows = [{**r, Col.RUN_ID: "r", Col.MODEL: "m", Col.TASK: "t"} for r in [rejected, *scored]]
    rows = [{Col.ROLE: "assistant", Col.CATEGORY: "language_learning", **r} for r in rows]
    scores, rejects = run_pipeline(rows)
    assert rejects[Col.EPISODE_ID].to_list() == ["a"]
    assert scores[Component.EXAMPLES_USED].to_list() == [3]


def test_answers_name_an_item_however_often_it_is_repeated() -> None:
    """``unknown_answers``: an answer naming an item of its episode is known whether the
    item's id is repeated or not; one naming another episode's item, or none, is unknown."""
    rows = pl.LazyFrame(
        {
            SEGMENT: [0, 0, 0, 0, 0, 1, 1, 1],
            Col.KIND: ["item", "item", "answer", "answer", "answer", "item", "answer", "answer"],
            Col.ITEM_ID: ["q1", "q1", "q1", "q2", None, "q2", "q2", "q1"],
        },
        schema_overrides={SEGMENT: pl.UInt32},
    )
    got = unknown_answers(rows).collect().sort(SEGMENT)
    assert got.rows() == [(0, 2), (1, 1)]
