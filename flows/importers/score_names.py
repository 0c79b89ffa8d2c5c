"""The names of a score table's rows (``cogscore import-scores``): each row's model resolved
to the one name cogscore shows (``transforms.names``: the names file, the dump's names, the
rule), its task by the rule, and what the table itself wrote kept as ``source_names``
(contract 1.5), so that ``cogscore export`` writes it back as published.

A row's model is named by every model column the table has: LearningBench's
``leaderboard_flat.csv`` gives a slug (``model_slug``) and a display name (``model_name``),
both aliases of one model, the display name its name where the model is new."""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.contract import SOURCE_NAMES, Col
from schemas.names import TABLE_ROW
from transforms.names import NameError_, Names, task_by_rule

# A table's columns that name a row's model (each an alias), the one that is a display name,
# and the columns kept as the table wrote them in ``source_names`` (with the row's number).
MODEL_COLUMNS: Final = ("model", "model_slug", "model_name")
DISPLAY_COLUMN: Final = "model_name"
KEPT_COLUMNS: Final = (
    *MODEL_COLUMNS, "task", "task_slug", "category", "dump_date", "eval_date", "date"
)  # fmt: skip

# The row's aliases and display name, carried until its model is resolved.
ALIASES: Final = "__aliases"
DISPLAY: Final = "__display"
# What a row carries through the import (``name_columns``) until its model is resolved.
CARRIED: Final = (ALIASES, DISPLAY, SOURCE_NAMES)


def name_columns(table: pl.DataFrame, row: str) -> list[pl.Expr]:
    """The expressions that carry a row's names through the import: its aliases (the
    table's model columns, stripped), its display name, and ``source_names`` (the table's
    name and date columns as written, and ``row``: its number, in ``row``)."""

    def text(c: str) -> pl.Expr:
        return pl.col(c).cast(pl.String)

    models = [c for c in MODEL_COLUMNS if c in table.columns]
    kept = [text(c) for c in table.columns if c in KEPT_COLUMNS]  # in the table's order
    display = text(DISPLAY_COLUMN).str.strip_chars() if DISPLAY_COLUMN in models else None
    return [
        pl.concat_list([text(c).str.strip_chars() for c in models]).alias(ALIASES),
        (display if display is not None else pl.lit(None, pl.String)).alias(DISPLAY),
        pl.struct(*kept, pl.col(row).alias(TABLE_ROW)).struct.json_encode().alias(SOURCE_NAMES),
    ]


def named_rows(
    rows: pl.DataFrame, names: Names, row: str, reasons: str
) -> tuple[pl.DataFrame, list[dict[str, object]]]:
    """``rows`` (importable, with ``name_columns``) with each model resolved by ``names`` and
    each task by the rule; the rows whose model cannot be resolved, each with why (its
    ``row``, model and task as the table wrote them, ``reasons``)."""
    distinct = rows.select(ALIASES, DISPLAY).unique(maintain_order=True)
    resolved: list[str | None] = []
    why: list[str | None] = []
    for aliases, display in distinct.iter_rows():
        try:
            resolved.append(names.resolve([a for a in aliases if a], display))
            why.append(None)
        except NameError_ as error:
            resolved.append(None)
            why.append(f"model not resolved: {error}")
    found = distinct.with_columns(
        pl.Series("__model", resolved, pl.String), pl.Series("__why", why, pl.String)
    )
    joined = rows.join(found, on=[ALIASES, DISPLAY], how="left", nulls_equal=True)
    refused = [
        {row: r[row], Col.MODEL: r[Col.MODEL], Col.TASK: r[Col.TASK], reasons: [r["__why"]]}
        for r in joined.filter(pl.col("__why").is_not_null()).iter_rows(named=True)
    ]
    named = joined.filter(pl.col("__why").is_null()).with_columns(
        pl.col("__model").alias(Col.MODEL),
        task_by_rule(pl.col(Col.TASK)),
    )
    return named.drop(ALIASES, DISPLAY, "__model", "__why"), refused
