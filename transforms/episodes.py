"""Per-episode facts: what the rules and the formulas need to know of an episode's rows.

An episode is keyed by (file, episode_id): episodes never span files, and a copy of an
episode_id in another file is a different (rejected) episode. The rows of each file without
an episode_id form one bucket of their own.

``in_episode_order`` sorts the rows by (file, episode_id, turn) and numbers the episodes
(``SEGMENT``: consecutive integers). Every per-episode step then groups and joins on that
integer over contiguous rows, which is several times faster than hashing the string key,
and turn order is row order. A harness writes an episode's rows together and in turn
order, so the sort finds them in order and costs little.

``episode_facts`` makes one pass over every row with plain aggregations only (counts,
smallest and largest values), plus small passes over the ``item``, ``round_end``,
``episode_start`` and ``answer`` rows. Row-level rules are folded into one count per kind of
row (``rules.problems``): that is enough to tell which episodes are scored.
``detailed=True`` also counts every row-level rule apart and the distinct values of the
episode-constant columns, for the messages of the few unscored episodes
(``rules.explain``).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import DUMP_DATE, EPISODE_CONSTANT, FILE, Col, Kind
from transforms.params import with_params
from transforms.rules import (
    EPISODE_CATEGORY,
    HARNESS,
    N_EXAMPLES,
    N_ITEMS,
    N_ROUNDS,
    N_ROWS,
    N_STARTS,
    REPEATED_ITEM_IDS,
    REPEATED_ROUNDS,
    REPEATED_TURNS,
    UNKNOWN_ANSWERS,
    distinct_count,
    episode_category,
    is_kind,
    largest,
    null_count,
    problem_rows,
    row_checks,
)

KEY: Final = [FILE, Col.EPISODE_ID]
# The episode's number within a frame sorted by ``in_episode_order``.
SEGMENT: Final = "segment"
_KIND_COUNTS: Final = {
    N_STARTS: Kind.EPISODE_START,
    N_EXAMPLES: Kind.EXAMPLE,
    N_ITEMS: Kind.ITEM,
    N_ROUNDS: Kind.ROUND_END,
}


def in_episode_order(rows: pl.LazyFrame) -> pl.LazyFrame:
    """The rows sorted by file, episode_id (null last) and turn (null last), with
    ``SEGMENT``: 0, 1, 2 ... one number per episode (and per file's rows without an id).

    >>> rows = pl.LazyFrame({"file": ["f"] * 3, "episode_id": ["b", "a", "b"], "turn": [1, 0, 0]})
    >>> in_episode_order(rows).collect()["segment"].to_list()
    [0, 1, 1]
    """
    ordered = rows.sort([FILE, Col.EPISODE_ID, Col.TURN], nulls_last=True)
    return ordered.with_columns(pl.struct(*KEY).rle_id().alias(SEGMENT))


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


def _repeated_turn() -> pl.Expr:
    """True where a row has the turn of the row before it in the same episode: in episode
    order, repeated turns are neighbours (nulls, last, repeat nothing)."""
    same_episode = pl.col(SEGMENT) == pl.col(SEGMENT).shift()
    return (same_episode & (pl.col(Col.TURN) == pl.col(Col.TURN).shift())).fill_null(False)


def of_kind(rows: pl.LazyFrame, kind: Kind, *columns: str) -> pl.LazyFrame:
    """``SEGMENT`` and ``columns`` of the rows of one kind (in episode order)."""
    return rows.filter(is_kind(kind)).select(SEGMENT, *columns)


def _summary(rows: pl.LazyFrame, detailed: bool) -> pl.LazyFrame:
    """One pass over every row of every episode."""
    constant = [str(c) for c in EPISODE_CONSTANT]
    assert HARNESS.row is not None
    aggregations = [
        *(pl.col(c).first() for c in KEY),
        pl.len().alias(N_ROWS),
        problem_rows(None),
        HARNESS.row.sum(),
        *(is_kind(kind).sum().alias(name) for name, kind in _KIND_COUNTS.items()),
        _repeated_turn().sum().cast(pl.Int64).alias(REPEATED_TURNS),
        # Smallest (what a reject reports) and largest: one value iff they are equal.
        *(pl.col(c).min() for c in constant),
        *(pl.col(c).max().alias(largest(c)) for c in constant),
        pl.col(DUMP_DATE).min(),
    ]
    if detailed:
        aggregations += [c.row.sum() for c in row_checks() if c.row is not None]
        aggregations += [
            pl.col(c).drop_nulls().n_unique().alias(distinct_count(c)) for c in constant
        ]
    else:  # the one row count the episode's category needs (detailed: a row check's)
        aggregations.append(pl.col(Col.CATEGORY).null_count().alias(null_count(Col.CATEGORY)))
    return rows.group_by(SEGMENT).agg(aggregations)


def unknown_answers(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: answers whose item_id names no item of the episode (null names none)."""
    items = of_kind(rows, Kind.ITEM, Col.ITEM_ID).unique()
    return (
        of_kind(rows, Kind.ANSWER, Col.ITEM_ID)
        .join(items, on=[SEGMENT, Col.ITEM_ID], how="anti")
        .group_by(SEGMENT)
        .agg(pl.len().alias(UNKNOWN_ANSWERS))
    )


def episode_facts(rows: pl.LazyFrame, *, detailed: bool = False) -> pl.LazyFrame:
    """One row per episode of rows in ``in_episode_order`` (the null episode_id of each
    file included): its key, counts, category, parameters (``transforms.params``) and what
    the rules read."""
    parts = [
        of_kind(rows, Kind.ITEM, *_read_by(Kind.ITEM, Col.ITEM_ID))
        .group_by(SEGMENT)
        .agg(repeats(Col.ITEM_ID).alias(REPEATED_ITEM_IDS), problem_rows(Kind.ITEM)),
        of_kind(rows, Kind.ROUND_END, *_read_by(Kind.ROUND_END, Col.ROUND))
        .group_by(SEGMENT)
        .agg(repeats(Col.ROUND).alias(REPEATED_ROUNDS), problem_rows(Kind.ROUND_END)),
        # Parameters are read only where there is exactly one episode_start (rules.checks).
        of_kind(rows, Kind.EPISODE_START, Col.PARAMS)
        .group_by(SEGMENT)
        .agg(pl.col(Col.PARAMS).first()),
        unknown_answers(rows),
    ]
    facts = _summary(rows, detailed)
    for part in parts:
        facts = facts.join(part, on=SEGMENT, how="left")
    return with_params(facts.with_columns(episode_category()), EPISODE_CATEGORY)


def _read_by(kind: Kind, *columns: str) -> list[str]:
    """``columns`` and those the row-level checks of ``kind`` rows read."""
    names = [n for c in row_checks(kind) if c.row is not None for n in c.row.meta.root_names()]
    return list(dict.fromkeys([*columns, *names]))
