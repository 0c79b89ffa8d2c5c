"""Usage (contract 1.3): what the model calls behind a score cost, per episode and above.

A harness writes each call's tokens, cost and latency on the reply row the call produced
(``docs/contract.md``, "Usage"). Usage never changes a score: it is carried beside it.

- **Episode** (``episode_usage``): each measure is the sum of what the episode's assistant
  rows carry, in turn order (tokens as int64: exact), null where no row carries it; where
  some row carries usage, ``replies_without_usage`` counts the reply turns that carry none
  and ``calls`` the model calls behind the episode: its rows that carry usage (a call's
  usage is on the reply it produced) and those reply turns (both null where the episode
  records no usage at all).
- **Task** (``usage_sums`` per file, ``task_usage`` from them): ``usage_episodes``, the
  episodes that record usage, ``usage_incomplete``, those of them with replies without
  usage, and each measure's total over them (``calls`` too): null where none records it or
  one of them does not (a total of some of them would read as the whole, and ``total /
  usage_episodes`` is then the mean per episode, exactly).
- **Category, model** (``rolled_up``): the same, from the task rows (the standings'
  task rows included), so a standing's usage is its tasks' whatever nights they come from.

Floats are added left to right in a fixed order (turns, episodes, files, tasks): a rerun
gives the same bits. Rows scored before cogscore read usage have it null, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import polars as pl

from schemas.columns import (
    CALLS,
    MEAN_TOKENS,
    REPLIES_WITHOUT_USAGE,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
)
from schemas.contract import (
    FILE,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    REPLY_KINDS,
    USAGE_DTYPES,
    USAGE_ROLE,
    Col,
)

MEASURES: Final = tuple(USAGE_DTYPES)
# What is totalled per task, category and model: the contract's measures and the calls.
TOTALLED: Final[dict[str, pl.DataType]] = {**USAGE_DTYPES, CALLS: pl.Int64()}
_USAGE_ROWS: Final = "__usage_rows"  # episode_usage: the rows that carry usage
# A row column (working name) of score_rows' cached table: a reply turn with no usage.
UNPRICED_REPLY: Final = "__reply_without_usage"
_SUM: Final = "usage_sum_"  # usage_sums: per file and task, each measure's sum ...
_COUNT: Final = "usage_n_"  # ... and how many episodes record it


def _recorded(names: Sequence[str] = MEASURES) -> pl.Expr:
    """True where some of the measures ``names`` is not null."""
    return pl.any_horizontal(pl.col(m).is_not_null() for m in names)


def _is_usage_row() -> pl.Expr:
    return (pl.col(Col.ROLE) == USAGE_ROLE) & _recorded()


def unpriced_reply() -> pl.Expr:
    """A row flag, made while the row's content is still there: a reply turn (an assistant
    ``message`` or ``action`` with content) that carries no usage."""
    reply = (pl.col(Col.ROLE) == USAGE_ROLE) & pl.col(Col.KIND).is_in(list(REPLY_KINDS))
    return (reply & pl.col(Col.CONTENT).is_not_null() & ~_recorded()).alias(UNPRICED_REPLY)


def _in_order(column: str, *order: str) -> pl.Expr:
    """The sum of the non-null values, left to right in the order of ``order``; null where
    there is none (never 0)."""
    present = pl.col(column).sort_by(*order).drop_nulls()
    return pl.when(present.len() > 0).then(present.cum_sum().last())


def _row_sum(column: str, dtype: pl.DataType) -> pl.Expr:
    """An episode's sum of a measure over its rows, null where none has it: integers exactly
    (in any order), floats left to right in the rows' order (a group keeps its rows' order:
    turn order here), without sorting again."""
    values = pl.col(column)
    if dtype.is_integer():
        return pl.when(values.count() > 0).then(values.sum()).cast(dtype).alias(column)
    return values.drop_nulls().cum_sum().last().cast(dtype).alias(column)


def episode_usage(rows: pl.LazyFrame, segment: str) -> pl.LazyFrame:
    """Per episode (``segment``) that records usage: each measure's sum and its reply turns
    without usage. ``rows``: in episode order (``transforms.episodes.in_episode_order``),
    with the ``unpriced_reply`` flag."""
    recorded = (
        rows.filter(_is_usage_row())
        .group_by(segment)
        .agg(
            *(_row_sum(m, t) for m, t in USAGE_DTYPES.items()),
            pl.len().cast(pl.Int64).alias(_USAGE_ROWS),
        )
    )
    unpriced = (
        rows.filter(pl.col(UNPRICED_REPLY))
        .join(recorded.select(segment), on=segment, how="semi")
        .group_by(segment)
        .agg(pl.len().cast(pl.Int64).alias(REPLIES_WITHOUT_USAGE))
    )
    return (
        recorded.join(unpriced, on=segment, how="left")
        .with_columns(pl.col(REPLIES_WITHOUT_USAGE).fill_null(0))
        .with_columns((pl.col(_USAGE_ROWS) + pl.col(REPLIES_WITHOUT_USAGE)).alias(CALLS))
        .drop(_USAGE_ROWS)
    )


def with_usage(frame: pl.LazyFrame, columns: dict[str, pl.DataType]) -> pl.LazyFrame:
    """``frame`` with the ``columns`` it lacks, null (rows of an earlier cogscore)."""
    schema = frame.collect_schema()
    absent = {c: t for c, t in columns.items() if c not in schema}
    return frame.with_columns(pl.lit(None, t).alias(c) for c, t in absent.items())


EPISODE_COLUMNS: Final[dict[str, pl.DataType]] = {
    **USAGE_DTYPES,
    REPLIES_WITHOUT_USAGE: pl.Int64(),
    CALLS: pl.Int64(),
}
TOTALS: Final[dict[str, pl.DataType]] = {
    USAGE_EPISODES: pl.Int64(),
    USAGE_INCOMPLETE: pl.Int64(),
    **TOTALLED,
}


def usage_sums() -> list[pl.Expr]:
    """Aggregations of a group of episode scores (one file's of a task, say): each
    measure's sum (in episode order) and count, the episodes that record usage and the
    incomplete ones: all a night's reduction needs of its files' usage (``task_usage``).
    The scores need ``EPISODE_COLUMNS`` (``with_usage``)."""
    return [
        *(_in_order(m, Col.EPISODE_ID).cast(t).alias(_SUM + m) for m, t in TOTALLED.items()),
        *(pl.col(m).count().cast(pl.Int64).alias(_COUNT + m) for m in TOTALLED),
        _recorded().sum().cast(pl.Int64).alias(USAGE_EPISODES),
        (pl.col(REPLIES_WITHOUT_USAGE) > 0).sum().cast(pl.Int64).alias(USAGE_INCOMPLETE),
    ]


def task_usage(sums: pl.LazyFrame, key: Sequence[str]) -> pl.LazyFrame:
    """Per group ``key``: the usage of its episodes from the files' ``usage_sums`` (per
    ``FILE`` and group), added in file order, and the tokens (input and output) per episode
    that records usage (``mean_tokens``)."""
    episodes = pl.col(USAGE_EPISODES).sum()
    tokens = pl.col(INPUT_TOKENS) + pl.col(OUTPUT_TOKENS)
    return (
        sums.sort(FILE)
        .group_by(key)
        .agg(
            episodes.alias(USAGE_EPISODES),
            pl.col(USAGE_INCOMPLETE).sum().alias(USAGE_INCOMPLETE),
            *(
                pl.when(pl.col(_COUNT + m).sum() == episodes)
                .then(_in_order(_SUM + m, FILE))
                .cast(t)
                .alias(m)
                for m, t in TOTALLED.items()
            ),
        )
        .with_columns((tokens.cast(pl.Float64) / pl.col(USAGE_EPISODES)).alias(MEAN_TOKENS))
    )


def rolled_up(*order: str) -> list[pl.Expr]:
    """Aggregations of a group of task rows (with ``TOTALS``: ``with_usage``): their usage
    added up, floats in the order of the columns ``order``. A measure is null where no task
    has it, or where a task whose episodes record usage lacks it; the counts are null where
    every task row's is (rows scored before cogscore read usage)."""

    def counted(column: str) -> pl.Expr:
        values = pl.col(column)
        return pl.when(values.count() > 0).then(values.sum()).cast(pl.Int64).alias(column)

    def total(measure: str, dtype: pl.DataType) -> pl.Expr:
        lacking = (pl.col(measure).is_null() & (pl.col(USAGE_EPISODES) > 0)).any()
        return pl.when(~lacking).then(_in_order(measure, *order)).cast(dtype).alias(measure)

    return [
        counted(USAGE_EPISODES),
        counted(USAGE_INCOMPLETE),
        *(total(m, t) for m, t in TOTALLED.items()),
    ]
