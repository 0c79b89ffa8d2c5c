"""Per-episode facts: what the rules and the formulas need to know of an episode's rows.

An episode is keyed by (file, episode_id): episodes never span files, and a copy of an
episode_id in another file is a different (rejected) episode. The rows of each file without
an episode_id form one bucket of their own.

``in_episode_order`` brings each episode's rows together in turn order (a harness writes
them so; other rows are sorted) and numbers the episodes (``SEGMENT``: consecutive
integers). Every per-episode step then groups and joins on that integer over contiguous
rows, several times faster than hashing the string key, and turn order is row order.

``episode_facts`` makes one pass over every row with plain aggregations only (sums of row
conditions, counts, first values; for the verdict without a group-by: running counts read at
each episode's last row, the values of its first row), plus small passes over the ``item``,
``round_end``, ``episode_start`` and ``answer`` rows. Row-level rules are folded into one
count per kind of row (``rules.problems``): that is enough to tell which episodes are scored.
``detailed=True`` also counts every row-level rule apart and the distinct values of the
episode-constant columns, for the messages of the few unscored episodes
(``rules.explain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Final

import polars as pl

from schemas.contract import (
    CATEGORY_VALUES,
    DUMP_DATE,
    EPISODE_CONSTANT,
    FILE,
    INPUT_KINDS,
    INSTANCE_ID,
    REPORTED_SCORE,
    SINGLE_RUN_STARTED,
    SOURCE_NAMES,
    VERDICT,
    Col,
    Kind,
    Match,
)
from transforms.params import with_params
from transforms.rules import (
    EPISODE_CATEGORY,
    HARNESS,
    N_EXAMPLES,
    N_INPUTS,
    N_ITEMS,
    N_ROUNDS,
    N_ROWS,
    N_STARTS,
    REPEATED_ITEM_IDS,
    REPEATED_ROUNDS,
    REPORTED_LAST,
    SEGMENT,
    UNJUDGED_ANSWERS,
    UNKNOWN_ANSWERS,
    changes,
    distinct_count,
    episode_category,
    is_kind,
    null_count,
    problem_row,
    problems,
    row_checks,
    unknown_count,
)

KEY: Final = [FILE, Col.EPISODE_ID]
_STARTS: Final = "__starts"  # in_episode_order: the first row of each run of one key
# Rows of a kind that the rules count; an episode with no such rows has none (not null).
_COUNTS: Final = (N_EXAMPLES, N_ITEMS, N_ROUNDS, N_STARTS, N_INPUTS)


def in_episode_order(rows: pl.LazyFrame) -> pl.LazyFrame:
    """The rows with each episode's rows together and in turn order, and ``SEGMENT``: 0, 1,
    2 ... one number per episode (and per file's rows without an id).

    Rows that are already so (as a harness writes them) keep their order; others are sorted
    by file, episode_id and turn (nulls last).

    >>> rows = pl.LazyFrame({"file": ["f"] * 3, "episode_id": ["b", "a", "b"], "turn": [1, 0, 0]})
    >>> in_episode_order(rows).collect()["segment"].to_list()
    [0, 1, 1]
    """
    schema = {**rows.collect_schema(), SEGMENT: pl.UInt32()}
    return rows.map_batches(_numbered_episodes, schema=schema)


def _numbered_episodes(frame: pl.DataFrame) -> pl.DataFrame:
    # A frame-level step (polars inside, no Python per row): sorting costs more than
    # checking, and dumps come in order.
    number = pl.struct(*KEY).rle_id().alias(SEGMENT)  # a new number where the key changes
    numbered = aligned(frame.with_columns(number))
    turn, segment = pl.col(Col.TURN), pl.col(SEGMENT)
    starts = (segment != segment.shift()).fill_null(True)
    runs = numbered.select(*KEY, starts.alias(_STARTS)).filter(_STARTS).drop(_STARTS)
    ordered = numbered.select(
        turn.is_not_null().all() & (starts | (turn >= turn.shift())).all()
    ).item()
    if ordered and not runs.is_duplicated().any():  # each episode's rows in one run
        return numbered
    ordered_rows = frame.sort([FILE, Col.EPISODE_ID, Col.TURN], nulls_last=True)
    return ordered_rows.with_columns(number)


def aligned(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every column in chunks of the same lengths.

    A file's columns come in chunks (the reader's morsels) and the columns made from
    literals or whole-column steps (``file``, ``segment``) in one: columns chunked unlike
    made every later step realign them (a comparison of ``kind`` took 8 ms instead of 0.4).
    Cutting the few one-chunk columns at the others' boundaries costs a fraction of copying
    every column into one chunk (``rechunk``: 13 ms a file of 264k rows), which is done
    only where the columns of several chunks differ among themselves.

    >>> parts = pl.concat([pl.Series("a", [1, 2]), pl.Series("a", [3])], rechunk=False)
    >>> aligned(pl.DataFrame([parts, pl.Series("b", [4, 5, 6])])).n_chunks("all")
    [2, 2]
    """
    layouts = {tuple(len(c) for c in s.get_chunks()) for s in frame.get_columns()}
    chunked = [layout for layout in layouts if len(layout) > 1]
    if not chunked:
        return frame
    if len(chunked) > 1:
        return frame.rechunk()
    ends = list(accumulate(chunked[0]))
    starts = [0, *ends[:-1]]

    def cut(column: pl.Series) -> pl.Series:
        if column.n_chunks() > 1:
            return column
        return pl.concat(
            [column.slice(s, e - s) for s, e in zip(starts, ends, strict=True)], rechunk=False
        )

    return pl.DataFrame([cut(c) for c in frame.get_columns()])


def repeats(column: str) -> pl.Expr:
    """How many non-null values repeat an earlier one, from plain aggregations: the
    non-null values less their distinct values (``n_unique`` counts null as one).

    >>> pl.DataFrame({"x": [1, 1, None, None, 2]}).select(repeats("x")).item()
    1
    """
    values = pl.col(column)
    nulls = values.null_count().cast(pl.Int64)
    distinct = values.n_unique().cast(pl.Int64) - (nulls > 0).cast(pl.Int64)
    return pl.len().cast(pl.Int64) - nulls - distinct


def of_kind(rows: pl.LazyFrame, kind: Kind, *columns: str) -> pl.LazyFrame:
    """``SEGMENT`` and ``columns`` of the rows of one kind (in episode order)."""
    return rows.filter(is_kind(kind)).select(SEGMENT, *dict.fromkeys(columns))


def _summary(rows: pl.LazyFrame, detailed: bool) -> pl.LazyFrame:
    """One pass over every row of every episode.

    Row conditions are computed on the whole frame first (neighbouring rows compare in
    episode order there, and an aggregation sums a column at full speed)."""
    if not detailed:
        return _fast_summary(rows)
    constant = [str(c) for c in EPISODE_CONSTANT]
    checked = [c.row for c in row_checks() if c.row is not None]
    assert HARNESS.row is not None
    flags = [problem_row(None), HARNESS.row, *checked]
    aggregations = [
        *(pl.col(c).first() for c in KEY),
        pl.len().alias(N_ROWS),
        *(pl.col(f.meta.output_name()).sum() for f in flags),
        is_kind(Kind.EXAMPLE).sum().alias(N_EXAMPLES),
        _is_input().sum().alias(N_INPUTS),
        # What a reject reports: the smallest value (a scored episode has one).
        *(pl.col(c).min() for c in constant),
        pl.col(DUMP_DATE).first(),
        *(pl.col(c).drop_nulls().n_unique().alias(distinct_count(c)) for c in constant),
    ]
    return rows.with_columns(flags).group_by(SEGMENT).agg(aggregations)


def _fast_summary(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``_summary`` for the verdict alone, without a group-by: an episode's rows are
    contiguous, so its first values are those of its first row, and its count of rows that
    meet a condition is the difference of the condition's running count at its last row
    and at the last row of the episode before (a running sum costs a fraction of a grouped
    sum).

    An unknown ``category`` is judged once per episode, on its first row: where the
    category is not the same on every row, the episode breaks a rule anyway."""
    constant = [str(c) for c in EPISODE_CONSTANT]
    assert HARNESS.row is not None
    category = pl.col(Col.CATEGORY)
    counted = [
        problem_row(None, without=(unknown_count(Col.CATEGORY),)),
        HARNESS.row,
        *(
            c.row
            for c in row_checks()
            if c.row is not None
            and c.row.meta.output_name() in (null_count(Col.CATEGORY), changes(Col.CATEGORY))
        ),
        # a null kind is no example (a null here would void every later running count)
        is_kind(Kind.EXAMPLE).fill_null(False).alias(N_EXAMPLES),
        _is_input().fill_null(False).alias(N_INPUTS),
        pl.col(SEGMENT).is_not_null().alias(N_ROWS),  # every row
    ]
    segment = pl.col(SEGMENT)
    running = [c.cast(pl.UInt32).cum_sum() for c in counted]
    names = [c.meta.output_name() for c in counted]
    last_rows = rows.select(segment, *running).filter(
        (segment != segment.shift(-1)).fill_null(True)
    )
    counts = last_rows.select(pl.col(n) - pl.col(n).shift(1, fill_value=0) for n in names)
    first_rows = rows.filter((segment != segment.shift()).fill_null(True)).select(
        SEGMENT, *KEY, *constant, DUMP_DATE
    )
    unknown = (category.is_not_null() & ~category.is_in(list(CATEGORY_VALUES))).cast(pl.UInt32)
    any_row = problems(None)
    return pl.concat([first_rows, counts], how="horizontal").with_columns(pl.col(any_row) + unknown)


def unknown_answers(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: answers whose item_id names no item of the episode (null names none).
    The items as they are: an anti-join asks only whether one matches (made distinct first,
    5.9 ms of a file of 264,000 rows against 4.0)."""
    items = of_kind(rows, Kind.ITEM, Col.ITEM_ID)
    return (
        of_kind(rows, Kind.ANSWER, Col.ITEM_ID)
        .join(items, on=[SEGMENT, Col.ITEM_ID], how="anti")
        .group_by(SEGMENT)
        .agg(pl.len().alias(UNKNOWN_ANSWERS))
    )


def unjudged_answers(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: answers to a ``recorded`` item that carry no ``verdict``."""
    recorded = of_kind(rows, Kind.ITEM, Col.ITEM_ID, Col.MATCH).filter(
        pl.col(Col.MATCH) == Match.RECORDED
    )
    return (
        of_kind(rows, Kind.ANSWER, Col.ITEM_ID, VERDICT)
        .filter(pl.col(VERDICT).is_null())
        .join(recorded.select(SEGMENT, Col.ITEM_ID).unique(), on=[SEGMENT, Col.ITEM_ID])
        .group_by(SEGMENT)
        .agg(pl.len().alias(UNJUDGED_ANSWERS))
    )


# What an episode's ``episode_start`` row says of it: its parameters, and contract 1.1's
# instance, 1.4's single run's start and 1.5's source names.
_STARTED: Final = (Col.PARAMS, INSTANCE_ID, SINGLE_RUN_STARTED, SOURCE_NAMES)


def episode_facts(rows: pl.LazyFrame, *, detailed: bool = False) -> pl.LazyFrame:
    """One row per episode of rows in ``in_episode_order`` (the null episode_id of each
    file included): its key, counts, category, parameters (``transforms.params``) and what
    the rules read."""
    parts = [
        _kind_facts(rows, Kind.ITEM, Col.ITEM_ID, N_ITEMS, REPEATED_ITEM_IDS),
        _kind_facts(rows, Kind.ROUND_END, Col.ROUND, N_ROUNDS, REPEATED_ROUNDS),
        # Parameters are read only where there is exactly one episode_start (rules.checks).
        of_kind(rows, Kind.EPISODE_START, *_STARTED)
        .group_by(SEGMENT)
        .agg(pl.len().alias(N_STARTS), pl.col(*_STARTED).first()),
        unknown_answers(rows),
        unjudged_answers(rows),
        reported_facts(rows),
    ]
    counted = beside(_summary(rows, detailed), parts).with_columns(
        pl.col(c).fill_null(0)
        for c in _COUNTS  # no such rows
    )
    # with_params reads the facts twice (its distinct params, and the join): once here.
    return with_params(counted.with_columns(episode_category()).cache(), EPISODE_CATEGORY)


def _is_input() -> pl.Expr:
    """A row of a kind that carries formula inputs (``INPUT_KINDS``): counted per episode
    (``N_INPUTS``) with the summary's other counts. An equality a kind: ``is_in`` hashed
    every row's text (3 ms a file of 264,000 rows against 1.5)."""
    return pl.any_horizontal(is_kind(Kind(k)) for k in INPUT_KINDS)


def beside(episodes: pl.LazyFrame, parts: Sequence[pl.LazyFrame]) -> pl.LazyFrame:
    """``episodes`` (one row per ``SEGMENT``) left-joined with each of ``parts`` (at most one
    row per ``SEGMENT``): the parts joined to the segment numbers alone, then to the
    episodes once. Joined to the episodes one after the other, every join copied the growing
    frame's every column (12 ms of a file's plan for six parts)."""
    episodes = episodes.cache()
    narrow = episodes.select(SEGMENT)
    for part in parts:
        narrow = narrow.join(part, on=SEGMENT, how="left")
    return episodes.join(narrow, on=SEGMENT, how="left")


def reported_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode with one: its reported score (contract 1.2: the last non-null one on an
    ``episode_end`` row, by turn). An episode with a reported score and no input
    (``N_INPUTS``, the summary's) is scored as reported
    (``transforms.rules.reported_only``)."""
    reported = pl.col(REPORTED_SCORE)
    ends = of_kind(rows, Kind.EPISODE_END, REPORTED_SCORE).filter(reported.is_not_null())
    return ends.group_by(SEGMENT).agg(reported.last().alias(REPORTED_LAST))


def _kind_facts(
    rows: pl.LazyFrame, kind: Kind, key: str, count: str, repeated: str
) -> pl.LazyFrame:
    """Per episode, of its rows of one kind: how many, how many repeat a ``key`` (an item's
    id, a round's number), and how many break a row-level rule of that kind."""
    checks = [c.row for c in row_checks(kind) if c.row is not None]
    read = dict.fromkeys([key, *(n for c in checks for n in c.meta.root_names())])
    return (
        of_kind(rows, kind, *read)
        .group_by(SEGMENT)
        .agg(pl.len().alias(count), repeats(key).alias(repeated), problem_row(kind).sum())
    )
