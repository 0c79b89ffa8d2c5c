"""What each model's score cost, on the terminal under the leaderboard: per episode that
records usage (contract 1.3), its model calls, the seconds those calls took, its tokens and
its cost, from the same rows as the leaderboard (``standings`` or ``model_scores``)."""

from __future__ import annotations

from typing import Final

import polars as pl
from rich.markup import escape

from flows.present.terminal import printable, render, table_of_columns
from schemas.columns import CALLS, N_EPISODES, USAGE_EPISODES, USAGE_INCOMPLETE
from schemas.contract import COST_USD, INPUT_TOKENS, LATENCY_MS, OUTPUT_TOKENS, Col

# (header, column, format) of each figure per episode that records usage.
PER_EPISODE: Final = (
    ("calls", CALLS, ",.1f"),
    ("s of calls", LATENCY_MS, ",.1f"),  # the calls' own time: their latency, in seconds
    ("tokens in", INPUT_TOKENS, ",.0f"),
    ("tokens out", OUTPUT_TOKENS, ",.0f"),
    ("$", COST_USD, ".3g"),
)


def usage_lines(models: pl.DataFrame, width: int | None = None) -> list[str]:
    """Per model whose episodes record usage, in the rows' order: the episodes that do (of
    those scored; ``incomplete``: some of their calls record none, and the figures leave
    them out), then per such episode its calls, their seconds, tokens and cost. No lines
    where no model records usage (or the rows were scored before cogscore read it)."""
    if USAGE_EPISODES not in models.columns:
        return []
    priced = models.filter(pl.col(USAGE_EPISODES) > 0)
    if priced.is_empty():
        return []
    grid = table_of_columns()
    grid.padding = (0, 0, 0, 1)
    grid.add_column("model", overflow="fold")
    grid.add_column("episodes", justify="right", no_wrap=True)
    for header, _, _ in PER_EPISODE:
        grid.add_column(header, justify="right", no_wrap=True)
    for row in priced.iter_rows(named=True):
        episodes = row[USAGE_EPISODES]
        counted = f"{episodes} of {row[N_EPISODES]}"
        if row.get(USAGE_INCOMPLETE):
            counted += f" ({row[USAGE_INCOMPLETE]} incomplete)"
        grid.add_row(
            escape(printable(row[Col.MODEL])),
            counted,
            *(_each(row.get(column), episodes, column, spec) for _, column, spec in PER_EPISODE),
        )
    title = (
        "usage per episode that records it (contract 1.3: the model calls, the seconds they "
        "took, their tokens and cost; not the harness's wall time):"
    )
    return [title, *render(grid, width)]


def _each(total: object, episodes: int, column: str, spec: str) -> str:
    """``total`` per episode (latency in seconds); ``-`` where not recorded.

    >>> _each(3000.0, 2, "latency_ms", ",.1f"), _each(None, 2, "calls", ",.1f")
    ('1.5', '-')
    """
    if not isinstance(total, int | float):
        return "-"
    each = total / episodes / (1000 if column == LATENCY_MS else 1)
    return format(each, spec)
