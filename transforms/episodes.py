"""Per-episode facts: one pass over an episode's rows, counting what the rules and the
formulas need. An episode is keyed by (file, episode_id): episodes never span files, and a
copy of an episode_id in another file is a different (rejected) episode."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import (
    DUMP_DATE,
    EPISODE_CONSTANT,
    FILE,
    REQUIRED,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)
from schemas.tables import FEEDBACK_OUT_OF_RANGE, N_ROWS
from transforms.text import INTEGER_LITERAL, py_strip

KEY: Final = [FILE, Col.EPISODE_ID]


def null_count(column: str) -> str:
    return f"null_{column}"


def distinct_count(column: str) -> str:
    return f"distinct_{column}"


def unknown_count(column: str) -> str:
    return f"unknown_{column}"


ENUMS: Final[dict[Col, list[str]]] = {
    Col.CATEGORY: list(Category),
    Col.ROLE: list(Role),
    Col.KIND: list(Kind),
    Col.MATCH: list(Match),
}


def _is(kind: Kind) -> pl.Expr:
    return pl.col(Col.KIND) == kind


def _count(condition: pl.Expr) -> pl.Expr:
    return condition.fill_null(False).sum()


def _repeats(values: pl.Expr) -> pl.Expr:
    """How many non-null values repeat an earlier one."""
    present = values.drop_nulls()
    return present.len() - present.n_unique()


def episode_facts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (file, episode_id), including the null episode_id of each file."""
    item, round_end = _is(Kind.ITEM), _is(Kind.ROUND_END)
    value, expected = pl.col(Col.VALUE), pl.col(Col.EXPECTED)
    return rows.group_by(KEY).agg(
        pl.len().alias(N_ROWS),
        *(pl.col(c).null_count().alias(null_count(c)) for c in REQUIRED),
        *(
            _count(pl.col(c).is_not_null() & ~pl.col(c).is_in(values)).alias(unknown_count(c))
            for c, values in ENUMS.items()
        ),
        *(pl.col(c).drop_nulls().n_unique().alias(distinct_count(c)) for c in EPISODE_CONSTANT),
        # For reporting; where a scored episode is concerned there is only one value.
        *(pl.col(c).min() for c in (*EPISODE_CONSTANT, DUMP_DATE)),
        _repeats(pl.col(Col.TURN)).alias("repeated_turns"),
        _count(_is(Kind.EPISODE_START)).alias("n_starts"),
        pl.col(Col.PARAMS).filter(_is(Kind.EPISODE_START)).first().alias(Col.PARAMS),
        _count(_is(Kind.EXAMPLE)).alias("n_examples"),
        _count(item).alias("n_items"),
        _count(round_end).alias("n_rounds"),
        _count(_is(Kind.EPISODE_END) & (pl.col(Col.STATUS) == Status.ERROR)).alias(
            "harness_errors"
        ),
        _count(item & pl.col(Col.ITEM_ID).is_null()).alias("items_without_id"),
        _repeats(pl.col(Col.ITEM_ID).filter(item)).alias("repeated_item_ids"),
        _count(item & (py_strip(expected).fill_null("") == "")).alias("empty_expected"),
        _count(
            item
            & (pl.col(Col.MATCH) == Match.INTEGER)
            & expected.is_not_null()
            & ~py_strip(expected).str.contains(INTEGER_LITERAL)
        ).alias("integer_not_literal"),
        _count(value.is_not_null() & ~value.is_finite()).alias("non_finite_values"),
        _count(_is(Kind.FEEDBACK) & value.is_not_null() & ((value < 0.0) | (value > 1.0))).alias(
            FEEDBACK_OUT_OF_RANGE
        ),
        _count(round_end & pl.col(Col.ROUND).is_null()).alias("rounds_without_number"),
        _repeats(pl.col(Col.ROUND).filter(round_end)).alias("repeated_rounds"),
        _count(round_end & value.is_null()).alias("rounds_without_value"),
        _count(round_end & ((value < 0.0) | (value > 1.0))).alias("rounds_out_of_range"),
    )
