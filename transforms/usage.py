"""Usage (contract 1.3, bounded in 1.4): what the model calls behind a score cost, per
episode and above.

A harness writes each call's tokens, cost and latency on the reply row the call produced
(``docs/contract.md``, "Usage"). Usage never changes a score, nor whether it counts: it is
carried beside it.

- **Episode** (``episode_usage``): each measure is the sum of what the episode's assistant
  rows carry, in turn order (tokens as int64: exact), null where no row carries it; where
  some row carries usage, ``replies_without_usage`` counts the reply turns that carry none
  and ``calls`` the model calls behind the episode: its rows that carry usage (a call's
  usage is on the reply it produced) and those reply turns (both null where the episode
  records no usage at all), and ``wall_ms`` the harness's time from its ``episode_start``
  to its ``episode_end`` (their ``ts``; null where it records no usage, as ``calls``). An
  episode one of whose assistant rows
  carries a value no reply can have (negative, NaN, infinite, above ``USAGE_MAXIMA``), or
  whose sum would not fit its type, has its usage refused: every measure null, and
  ``usage_refused`` says why (``usage_invalid``, the turn, the column and its value).
- **Task** (``usage_sums`` per file, ``task_usage`` from them): ``usage_episodes``, the
  episodes that record usage, ``usage_incomplete``, those of them with replies without
  usage, and each measure's total over them (``calls`` too): null where none records it or
  one of them does not (a total of some of them would read as the whole, and ``total /
  usage_episodes`` is then the mean per episode, exactly).
- **Category, model** (``rolled_up``): the same, from the task rows (the standings'
  task rows included), so a standing's usage is its tasks' whatever nights they come from.

Floats are added left to right in a fixed order (turns, episodes, files, tasks): a rerun
gives the same bits. Integers are added as int128 and kept where the total fits an int64
(null where it would not: never, with every reply bounded, below 9 x 10^10 replies); a float
total is kept where it is finite. Rows scored before cogscore read usage have it null,
never 0.
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
    USAGE_REFUSED,
    WALL_MS,
)
from schemas.contract import (
    FILE,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    REPLY_KINDS,
    USAGE_DTYPES,
    USAGE_MAXIMA,
    USAGE_ROLE,
    Col,
    Kind,
)
from schemas.rules import USAGE_INVALID

MEASURES: Final = tuple(USAGE_DTYPES)
# What is totalled per task, category and model: the contract's measures, the calls and the
# wall time.
TOTALLED: Final[dict[str, pl.DataType]] = {
    **USAGE_DTYPES,
    CALLS: pl.Int64(),
    WALL_MS: pl.Float64(),
}
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
    reply = (pl.col(Col.ROLE) == USAGE_ROLE) & pl.col(Col.KIND).is_in(
        [k.value for k in REPLY_KINDS]
    )
    return (reply & pl.col(Col.CONTENT).is_not_null() & ~_recorded()).alias(UNPRICED_REPLY)


_INT64_MAX: Final = 2**63 - 1


def fitting(total: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A total kept only where its type holds it: an int128 sum where it fits an int64, a
    float where it is finite (null otherwise: a table never holds a wrapped or infinite
    total), cast to ``dtype``."""
    fits = total <= _INT64_MAX if dtype.is_integer() else total.is_finite()
    return pl.when(fits).then(total).cast(dtype)


def _summed(values: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """The sum of ``values`` in ``dtype``'s widest exact type: int128 for integers (no
    overflow below 2^127), left to right for floats."""
    if dtype.is_integer():
        return values.cast(pl.Int128).sum()
    return values.cum_sum().last()


def _in_order(column: str, dtype: pl.DataType, *order: str) -> pl.Expr:
    """The sum of the non-null values, left to right in the order of ``order`` (none: the
    group's rows' order), where its type holds it (``fitting``); null where there is none
    (never 0)."""
    values = pl.col(column)
    present = (values.sort_by(*order) if order else values).drop_nulls()
    return fitting(pl.when(present.len() > 0).then(_summed(present, dtype)), dtype)


def beyond(measure: str) -> pl.Expr:
    """True where a row's ``measure`` is a value no reply's call can have (contract 1.4):
    negative, NaN, infinite or above its ``USAGE_MAXIMA`` bound (null: not recorded)."""
    value = pl.col(measure)
    out = (value < 0) | (value > USAGE_MAXIMA[measure])
    return (out | value.is_nan()) if USAGE_DTYPES[measure].is_float() else out


def _bound(measure: str) -> str:
    """``measure``'s range as a refusal names it: ``[0, 1000]``."""
    return f"[0, {USAGE_MAXIMA[measure]:.15g}]"


def _invalid_value() -> pl.Expr:
    """Per row: the first of its measures beyond its bound, as ``column value`` (the range
    it should lie in), null where none is."""
    said = pl.lit(None, pl.String)
    for measure in reversed(MEASURES):
        text = pl.format(
            "{} = {}, outside {}", pl.lit(measure), pl.col(measure), pl.lit(_bound(measure))
        )
        said = pl.when(beyond(measure).fill_null(False)).then(text).otherwise(said)
    return said


def _beyond_any() -> pl.Expr:
    """Per row: some measure lies beyond its bound (``_invalid_value`` is not null)."""
    return pl.any_horizontal(beyond(m).fill_null(False) for m in MEASURES)


def invalid_usage(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Contract 1.4: the assistant rows of ``rows`` that carry a usage value no call can
    have, in the rows' order, each as ``turn 3: cost_usd = 1e+308, outside [0, 1000]``
    (column ``usage_invalid``): what an importer flags before the scorer refuses it."""
    said = pl.format("turn {}: {}", pl.col(Col.TURN), _invalid_value()).alias(USAGE_INVALID)
    return rows.filter(pl.col(Col.ROLE) == USAGE_ROLE).select(said).drop_nulls()


_INVALID_ROWS: Final = "__usage_invalid_rows"
_FIRST_INVALID: Final = "__usage_first_invalid"
_RAW: Final = "__usage_raw_"  # an episode's sum of a measure in the widest type (``_summed``)


def _row_sum(column: str, dtype: pl.DataType) -> pl.Expr:
    """An episode's sum of a measure over its rows in the widest type (``_summed``), null
    where none has it: integers exactly (in any order), floats left to right in the rows'
    order (a group keeps its rows' order: turn order here), without sorting again."""
    values = pl.col(column).drop_nulls()
    return pl.when(values.len() > 0).then(_summed(values, dtype)).alias(_RAW + column)


def _refusal() -> pl.Expr:
    """Why an episode's usage is refused (``usage_invalid``), from its ``_row_sum``s and
    invalid rows; null where it is kept."""
    unfit = [
        pl.when(pl.col(_RAW + m).is_not_null() & fitting(pl.col(_RAW + m), t).is_null()).then(
            pl.lit(m)
        )
        for m, t in USAGE_DTYPES.items()
    ]
    overflow = pl.concat_str(unfit, separator=", ", ignore_nulls=True)
    others = pl.col(_INVALID_ROWS) - 1
    more = pl.when(others > 0).then(pl.format(" (and {} more assistant row(s))", others))
    code = pl.lit(USAGE_INVALID)
    return (
        pl.when(pl.col(_INVALID_ROWS) > 0)
        .then(pl.format("{}: {}{}", code, pl.col(_FIRST_INVALID), more.otherwise(pl.lit(""))))
        .when(overflow != "")
        .then(pl.format("{}: the episode's sum of {} does not fit its type", code, overflow))
    )


def episode_usage(rows: pl.LazyFrame, segment: str) -> pl.LazyFrame:
    """Per episode (``segment``) that records usage: each measure's sum, its reply turns
    without usage and, where its usage is refused (contract 1.4: a row's value beyond its
    bound, or a sum its type cannot hold), why (``usage_refused``), its measures and reply
    count then null. ``rows``: in episode order (``transforms.episodes.in_episode_order``),
    with the ``unpriced_reply`` flag.

    The text of a refusal is made for the rows beyond a bound alone (rare), not formatted
    for every usage row and dropped (60 ms of a file of 264,000 rows, 113,000 with usage)."""
    usage_rows = rows.filter(_is_usage_row())
    beyond_rows = usage_rows.filter(_beyond_any())
    first = pl.format("turn {}: {}", pl.col(Col.TURN), _invalid_value()).first()
    refused = (
        beyond_rows.group_by(segment)
        .agg(pl.len().alias(_INVALID_ROWS), first.alias(_FIRST_INVALID))
        .with_columns(pl.col(_INVALID_ROWS).cast(pl.UInt32))
    )
    recorded = (
        usage_rows.group_by(segment)
        .agg(
            *(_row_sum(m, t) for m, t in USAGE_DTYPES.items()),
            pl.len().cast(pl.Int64).alias(_USAGE_ROWS),
        )
        .join(refused, on=segment, how="left")
        .with_columns(pl.col(_INVALID_ROWS).fill_null(0))
    )
    unpriced = (
        rows.filter(pl.col(UNPRICED_REPLY))
        .join(recorded.select(segment), on=segment, how="semi")
        .group_by(segment)
        .agg(pl.len().cast(pl.Int64).alias(REPLIES_WITHOUT_USAGE))
    )
    kept = pl.col(USAGE_REFUSED).is_null()
    return (
        recorded.join(unpriced, on=segment, how="left")
        .join(_wall(rows, recorded.select(segment), segment), on=segment, how="left")
        .with_columns(pl.col(REPLIES_WITHOUT_USAGE).fill_null(0), _refusal().alias(USAGE_REFUSED))
        .select(
            segment,
            *(
                pl.when(kept).then(fitting(pl.col(_RAW + m), t)).alias(m)
                for m, t in USAGE_DTYPES.items()
            ),
            pl.when(kept).then(pl.col(REPLIES_WITHOUT_USAGE)).alias(REPLIES_WITHOUT_USAGE),
            pl.when(kept).then(pl.col(_USAGE_ROWS) + pl.col(REPLIES_WITHOUT_USAGE)).alias(CALLS),
            USAGE_REFUSED,
            pl.when(kept).then(pl.col(WALL_MS)).alias(WALL_MS),
        )
    )


def _wall(rows: pl.LazyFrame, recorded: pl.LazyFrame, segment: str) -> pl.LazyFrame:
    """Per episode of ``recorded`` (its ``segment``): its wall time (``wall_ms``), from the
    earliest ``ts`` of its ``episode_start`` rows to the latest of its ``episode_end`` rows,
    in whole milliseconds (a float of an integer: exact, so its totals are in any order;
    polars divides a column by 1000 as a product by 0.001, whose last bit depends on how
    many rows it divides); null where either has none or the end comes before the start."""
    kind, ts = pl.col(Col.KIND), pl.col(Col.TS)
    start, end = kind == Kind.EPISODE_START, kind == Kind.EPISODE_END
    span = ts.filter(end).max() - ts.filter(start).min()
    ms = span.dt.total_milliseconds().cast(pl.Float64)
    return (
        rows.filter(start | end)
        .select(segment, Col.KIND, Col.TS)
        .join(recorded, on=segment, how="semi")
        .group_by(segment)
        .agg(pl.when(ms >= 0).then(ms).alias(WALL_MS))
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
    WALL_MS: pl.Float64(),
}
TOTALS: Final[dict[str, pl.DataType]] = {
    USAGE_EPISODES: pl.Int64(),
    USAGE_INCOMPLETE: pl.Int64(),
    **TOTALLED,
}


def usage_sums() -> list[pl.Expr]:
    """Aggregations of a group of episode scores (one file's of a task, say) whose rows
    come in episode order (``transforms.aggregate.component_sums`` sorts them once): each
    measure's sum (in that order) and count, the episodes that record usage and the
    incomplete ones: all a night's reduction needs of its files' usage (``task_usage``).
    The scores need ``EPISODE_COLUMNS`` (``with_usage``)."""
    return [
        *(_in_order(m, t).alias(_SUM + m) for m, t in TOTALLED.items()),
        *(pl.col(m).count().cast(pl.Int64).alias(_COUNT + m) for m in TOTALLED),
        _recorded().sum().cast(pl.Int64).alias(USAGE_EPISODES),
        (pl.col(REPLIES_WITHOUT_USAGE) > 0).sum().cast(pl.Int64).alias(USAGE_INCOMPLETE),
    ]


def task_usage(sums: pl.LazyFrame, key: Sequence[str]) -> pl.LazyFrame:
    """Per group ``key``: the usage of its episodes from the files' ``usage_sums`` (per
    ``FILE`` and group), added in file order (null where a file's sum is: it did not fit),
    and the tokens (input and output) per episode that records usage (``mean_tokens``)."""
    episodes = pl.col(USAGE_EPISODES).sum()
    tokens = pl.col(INPUT_TOKENS).cast(pl.Float64) + pl.col(OUTPUT_TOKENS).cast(pl.Float64)

    def whole(measure: str) -> pl.Expr:
        """Every episode that records usage has ``measure``, and every file's sum fit."""
        lost = (pl.col(_SUM + measure).is_null() & (pl.col(_COUNT + measure) > 0)).any()
        return (pl.col(_COUNT + measure).sum() == episodes) & ~lost

    return (
        sums.sort(FILE)
        .group_by(key)
        .agg(
            episodes.alias(USAGE_EPISODES),
            pl.col(USAGE_INCOMPLETE).sum().alias(USAGE_INCOMPLETE),
            *(
                pl.when(whole(m)).then(_in_order(_SUM + m, t, FILE)).cast(t).alias(m)
                for m, t in TOTALLED.items()
            ),
        )
        .with_columns((tokens / pl.col(USAGE_EPISODES)).alias(MEAN_TOKENS))
    )


def rolled_up(*order: str) -> list[pl.Expr]:
    """Aggregations of a group of task rows (with ``TOTALS``: ``with_usage``): their usage
    added up, floats in the order of the columns ``order``. A measure is null where no task
    has it, where a task whose episodes record usage lacks it, or where the total does not
    fit its type (``fitting``); the counts are null where every task row's is (rows scored
    before cogscore read usage)."""

    def counted(column: str) -> pl.Expr:
        values = pl.col(column)
        return pl.when(values.count() > 0).then(values.sum()).cast(pl.Int64).alias(column)

    def total(measure: str, dtype: pl.DataType) -> pl.Expr:
        lacking = (pl.col(measure).is_null() & (pl.col(USAGE_EPISODES) > 0)).any()
        return pl.when(~lacking).then(_in_order(measure, dtype, *order)).alias(measure)

    return [
        counted(USAGE_EPISODES),
        counted(USAGE_INCOMPLETE),
        *(total(m, t) for m, t in TOTALLED.items()),
    ]
