"""The Results section: the model × task matrix of the task scores as the benchmark stands as
of the night shown (``--view night``: the night's own), tasks grouped by category, sortable,
each cell opening the explanation of its episode(s) (``flows.present.explain``) in a panel of the
same page. The matrix and the explanations are JSON in two ``<script type=application/json>``
elements, drawn by a little inline JavaScript (``MATRIX_JS``), every name and content put in
the page as text (``textContent``), never as markup.

The page stays usable at the real benchmark's size and beyond because what it embeds is
bounded (the budget; ``docs/simulator-and-report.md``):

- ``CELL_EPISODES`` episodes are explained per cell (its first by episode id); the panel
  counts the others and lists ``CELL_MORE_IDS`` of their ids with the ``cogscore explain``
  command;
- of a turn's content, or an item's expected value or answer, the first ``FOLD_CHARS``
  characters are kept (the panel says how many more are folded);
- the explanations embed at most ``EXPLANATIONS_BUDGET`` characters of turns and items (each
  turn or item counting ``ROW_COST`` more for its JSON), shared evenly among the episodes
  explained, each share between ``EPISODE_MIN_CHARS`` and ``EPISODE_MAX_CHARS``: an episode's
  items come first, then its turns in order until its share is spent (the panel counts the
  turns left out). Where even the smallest shares do not fit every episode, the cells' first
  episodes come first; an episode left out keeps its score, formula and components, and its
  panel says its transcript was not embedded.

An imported score (formula version ``reported``) has no transcript, and a transcript whose
file is gone or changed since it was scored cannot be read: their panels say so, and the
page is written all the same.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

import polars as pl

from flows.present.explain import IMPORTED, episode_header, read_transcripts
from flows.present.report.figures import Section, script_json
from flows.present.report.read import Warehouse
from flows.store.catalog import EPISODE_SCORES
from schemas.columns import FORMULA_VERSION, SCORE
from schemas.contract import DUMP_DATE, Col
from schemas.formulas import REPORTED
from schemas.views import VIEWS, View

CELL_EPISODES: Final = 3  # episodes explained per cell
CELL_MORE_IDS: Final = 5  # ids of the cell's other episodes listed
FOLD_CHARS: Final = 1_000  # characters kept of a turn's content, an item's expected or answer
EXPLANATIONS_BUDGET: Final = 16_000_000  # characters of turns and items in one page
EPISODE_MIN_CHARS: Final = 4_000  # the smallest share of one episode
EPISODE_MAX_CHARS: Final = 200_000  # the largest
ROW_COST: Final = 120  # what a turn or item costs beside its text (its JSON)

RANK: Final = "rank_in_cell"  # 0, 1, … by episode id within a cell
N_IN_CELL: Final = "episodes_in_cell"
ROW, COLUMN = "row", "column"
CELL_KEY: Final = [Col.MODEL, Col.CATEGORY, Col.TASK, DUMP_DATE]


@dataclass(frozen=True)
class Budget:
    """How much of the explanations one page embeds: each episode's share (characters of
    turns and items) and how many episodes get one."""

    share: int
    episodes: int


def budget(with_transcript: int) -> Budget:
    """The shares of ``with_transcript`` episodes explained.

    >>> budget(12)
    Budget(share=200000, episodes=80)
    >>> budget(1_890), budget(5_670)
    (Budget(share=8465, episodes=1890), Budget(share=4000, episodes=4000))
    """
    share = EXPLANATIONS_BUDGET // max(with_transcript, 1)
    share = min(EPISODE_MAX_CHARS, max(EPISODE_MIN_CHARS, share))
    return Budget(share, EXPLANATIONS_BUDGET // share)


def matrix_grid(cells: pl.DataFrame, models: list[str]) -> tuple[pl.DataFrame, list[str]]:
    """Every (task, model) of the matrix, row by row: tasks grouped by category (categories
    and tasks by name, as LearningBench's ``leaderboard_score_matrix.csv``), models in
    ``models``' order (the leaderboard's; any other after, by name); ``score`` and the night
    its result comes from where the model has one. ``cells``: ``task_standings`` (or
    ``task_scores``) rows of the night shown."""
    order = [*models, *sorted(set(cells[Col.MODEL].to_list()) - set(models))]
    tasks = (
        cells.select(Col.CATEGORY, Col.TASK)
        .unique()
        .sort(Col.CATEGORY, Col.TASK)
        .with_row_index(ROW)
    )
    columns = pl.DataFrame({Col.MODEL: order}, schema={Col.MODEL: pl.String}).with_row_index(COLUMN)
    grid = (
        tasks.join(columns, how="cross")
        .join(cells.select(*CELL_KEY, SCORE), on=[Col.MODEL, Col.CATEGORY, Col.TASK], how="left")
        .sort(ROW, COLUMN)
    )
    return grid, order


def cell_episodes(episodes: pl.LazyFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """The scored episodes behind each cell (its model and task on the night its result comes
    from): the first ``CELL_EPISODES + CELL_MORE_IDS`` of each by episode id, numbered within
    the cell (``RANK``) and counted (``N_IN_CELL``). Only the cells' nights are read."""
    nights = cells[DUMP_DATE].unique()
    on_nights = pl.col(DUMP_DATE).is_in(nights.drop_nulls().implode())
    if nights.null_count():
        on_nights |= pl.col(DUMP_DATE).is_null()
    return (
        episodes.filter(on_nights)
        .join(cells.lazy().select(CELL_KEY), on=CELL_KEY, how="semi", nulls_equal=True)
        .with_columns(
            (pl.col(Col.EPISODE_ID).rank("ordinal").over(CELL_KEY) - 1).alias(RANK),
            pl.len().over(CELL_KEY).alias(N_IN_CELL),
        )
        .filter(pl.col(RANK) < CELL_EPISODES + CELL_MORE_IDS)
        .collect()
    )


def explained_first(shown: pl.DataFrame, grid: pl.DataFrame) -> pl.DataFrame:
    """The episodes explained (``RANK`` below ``CELL_EPISODES``) in the order the budget
    serves them: every cell's first episode (in the matrix's order) before any second."""
    position = grid.select(Col.MODEL, Col.CATEGORY, Col.TASK, ROW, COLUMN)
    return (
        shown.filter(pl.col(RANK) < CELL_EPISODES)
        .join(position, on=[Col.MODEL, Col.CATEGORY, Col.TASK], how="left")
        .sort(RANK, ROW, COLUMN)
    )


def fold(turns: pl.DataFrame, items: pl.DataFrame, share: int) -> tuple[pl.DataFrame, ...]:
    """The turns and items the page embeds (long texts folded to ``FOLD_CHARS``, each with
    ``<column>_folded``: the characters left out), each episode's items first and then its
    turns in order while they fit in ``share``; and per episode what was left out
    (``turns_total``, ``turns_left``, ``chars_left``, ``items_total``, ``items_left``)."""
    episode = pl.col(Col.EPISODE_ID)

    def folded(*columns: str) -> list[pl.Expr]:
        return [
            expr
            for c in columns
            for expr in (
                pl.col(c).str.slice(0, FOLD_CHARS),
                (pl.col(c).str.len_chars().cast(pl.Int64) - FOLD_CHARS)
                .clip(lower_bound=0)
                .alias(f"{c}_folded"),
            )
        ]

    def cost(*columns: str) -> pl.Expr:
        kept = [pl.col(c).str.len_chars().fill_null(0).cast(pl.Int64) for c in columns]
        return pl.sum_horizontal(*kept) + ROW_COST

    items = items.with_columns(folded("expected", "answer"))
    items = items.with_columns((cost("expected", "answer").cum_sum().over(episode)).alias("_spent"))
    kept_items = items.filter(pl.col("_spent") <= share)
    spent_on_items = kept_items.group_by(episode).agg(pl.col("_spent").max().alias("_items"))
    texts = [Col.CONTENT, Col.EXPECTED]
    turns = (
        turns.with_columns(pl.col(Col.CONTENT).str.len_chars().alias("_chars"), *folded(*texts))
        .join(spent_on_items, on=Col.EPISODE_ID, how="left", maintain_order="left")
        .with_columns(
            (pl.col("_items").fill_null(0) + cost(*texts).cum_sum().over(episode)).alias("_spent")
        )
        .with_columns((pl.col("_spent") <= share).alias("_kept"))
    )
    left = (
        turns.group_by(episode)
        .agg(
            pl.len().alias("turns_total"),
            (~pl.col("_kept")).sum().alias("turns_left"),
            pl.col("_chars").filter(~pl.col("_kept")).sum().alias("chars_left"),
        )
        .join(
            items.group_by(episode).agg(
                pl.len().alias("items_total"), (pl.col("_spent") > share).sum().alias("items_left")
            ),
            on=Col.EPISODE_ID,
            how="left",
        )
    )
    kept_turns = turns.filter(pl.col("_kept")).drop("_chars", "_items", "_spent", "_kept")
    return kept_turns, kept_items.drop("_spent"), left


def _json_lists(frame: pl.DataFrame) -> dict[str, str]:
    """Per episode, its rows of ``frame`` as the inside of a JSON array of objects."""
    rows = pl.struct(pl.exclude(Col.EPISODE_ID)).struct.json_encode()
    grouped = frame.group_by(Col.EPISODE_ID, maintain_order=True).agg(
        rows.str.join(",").alias("json")
    )
    return dict(zip(grouped[Col.EPISODE_ID].to_list(), grouped["json"].to_list(), strict=True))


def _plain(value: Any) -> Any:
    """A value JSON can hold (``JSON.parse`` reads no NaN)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def explanations(wh: Warehouse, explained: pl.DataFrame) -> tuple[dict[str, str], dict[str, Any]]:
    """The explanation of each episode explained, as JSON text by episode id, and what was
    embedded (counts and the budget) for the section's text."""
    with_transcript = explained.filter(pl.col(FORMULA_VERSION) != REPORTED)
    room = budget(with_transcript.height)
    read = read_transcripts(wh.out, with_transcript.head(room.episodes), wh.manifest)
    turns, items, left = fold(read.turns, read.items, room.share)
    turn_json, item_json = _json_lists(turns), _json_lists(items)
    lefts = {r[Col.EPISODE_ID]: r for r in left.iter_rows(named=True)}
    embedded = set(with_transcript.head(room.episodes)[Col.EPISODE_ID].to_list())
    over = (
        f"not embedded: this page's budget for explanations ({EXPLANATIONS_BUDGET:,} "
        "characters) is spent"
    )
    found: dict[str, str] = {}
    for row in explained.iter_rows(named=True):
        episode_id = row[Col.EPISODE_ID]
        if row[FORMULA_VERSION] == REPORTED:
            why: str | None = IMPORTED
        elif episode_id not in embedded:
            why = over
        else:
            why = read.unreadable.get(episode_id)
        # What is null is left out: an imported score's header is mostly nulls.
        head = {k: _plain(v) for k, v in episode_header(row).items() if v is not None}
        head["components"] = {k: _plain(v) for k, v in head["components"].items()}
        counts = {k: v for k, v in lefts.get(episode_id, {}).items() if k != Col.EPISODE_ID}
        found[episode_id] = (
            f'{{"head":{json.dumps(head)},"transcript":{json.dumps(why)},'
            f'"command":{json.dumps(why == over)},'
            f'"turns":[{turn_json.get(episode_id, "")}],'
            f'"items":[{item_json.get(episode_id, "")}],"left":{json.dumps(counts)}}}'
        )
    facts = {
        "explained": explained.height,
        "imported": explained.height - with_transcript.height,
        "embedded": len(embedded) - len(read.unreadable),
        "unreadable": len(read.unreadable),
        "over_budget": with_transcript.height - len(embedded),
        "share": room.share,
    }
    return found, facts


def results_section(
    wh: Warehouse, night: str | None, shown: str, view: View, models: list[str]
) -> Section:
    """The matrix of the task scores of ``night`` (as the benchmark stands as of it, or
    the night's own), its cells' episodes explained (see the module)."""
    tables = VIEWS[view]
    cells = wh.night(tables.tasks.name, night, tables.night)
    grid, order = matrix_grid(cells, models)
    shown_episodes = cell_episodes(wh.scan(EPISODE_SCORES), cells)
    explained = explained_first(shown_episodes, grid)
    found, facts = explanations(wh, explained)
    ids = (
        shown_episodes.sort(RANK)
        .group_by(CELL_KEY, maintain_order=True)
        .agg(pl.col(Col.EPISODE_ID).alias("ids"), pl.col(N_IN_CELL).first().alias("n"))
    )
    rows = (
        grid.join(ids, on=CELL_KEY, how="left", nulls_equal=True, maintain_order="left")
        .group_by(ROW, maintain_order=True)
        .agg(
            pl.col(Col.CATEGORY).first(),
            pl.col(Col.TASK).first(),
            pl.col(SCORE),
            pl.struct(pl.col(DUMP_DATE).alias("night"), "n", "ids").alias("cells"),
        )
    )
    cell_lists = [
        [None if cell["n"] is None else cell for cell in row] for row in rows["cells"].to_list()
    ]
    scores = [[_plain(v) for v in row] for row in rows[SCORE].to_list()]
    matrix = {
        "out": str(wh.out),
        "as_of": wh.as_of,
        "night": shown,
        "view": str(view),
        "explained_per_cell": CELL_EPISODES,
        "models": order,
        "categories": rows[Col.CATEGORY].to_list(),
        "tasks": rows[Col.TASK].to_list(),
        "scores": scores,
        "cells": cell_lists,
    }
    blob = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in found.items()) + "}"
    of = (
        f"as the benchmark stands as of {html.escape(shown)} (table "
        f"<code>{tables.tasks.name}</code>: each model's latest result on every task)"
        if view is View.STANDING
        else f"of the night {html.escape(shown)} alone (table <code>{tables.tasks.name}</code>)"
    )
    text = (
        f"Every model's score on every task {of}: {rows.height} tasks grouped by "
        f"category, {len(order)} models in the leaderboard's order. Click a column's header to "
        "sort the tasks of each category by it (again: the other way), a category to fold it, "
        "and a score to see the episode(s) behind it: the turns, each graded item against the "
        "harness's verdict, the formula and its components, the reported score "
        "(<code>cogscore explain</code>, in a panel). "
        f"{facts['explained']} episode(s) explained (the first {CELL_EPISODES} of each cell by "
        f"episode id): {facts['embedded']} with their transcript (long turns folded to "
        f"{FOLD_CHARS:,} characters, {facts['share']:,} characters of turns and items at most "
        f"per episode), {facts['imported']} imported score(s) without one, "
        f"{facts['unreadable']} whose transcript cannot be read, {facts['over_budget']} beyond "
        f"the page's budget of {EXPLANATIONS_BUDGET:,} characters."
    )
    after = (
        "<div id='matrix' class='matrix-wrap'></div>"
        "<aside id='explain-panel' class='panel' hidden></aside>"
        "<script type='application/json' id='cogscore-matrix'>"
        f"{script_json(json.dumps(matrix))}</script>"
        "<script type='application/json' id='cogscore-explanations'>"
        f"{script_json(blob)}</script>"
    )
    return Section("results", "Results", text, after=after)


# The matrix's style and script, files of their own (a browser's, an editor's and a linter's
# languages), read once; the page carries them inline.
_HERE = resources.files("flows.present.report")
STYLE: Final = "\n" + _HERE.joinpath("matrix.css").read_text("utf-8")
MATRIX_JS: Final = "\n" + _HERE.joinpath("matrix.js").read_text("utf-8")
