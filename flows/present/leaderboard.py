"""The leaderboard printed after a run and by ``cogscore leaderboard``: the standing (or a
night's own scores), its coverage groups, rank bounds, intervals and cost per episode, read
back from the tables the run wrote (so the terminal shows what a dashboard will show), and
under it what each model's score cost: per episode that records usage (contract 1.3), its
model calls, the seconds those calls took, its tokens and its cost."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Final

import polars as pl
from rich.markup import escape
from rich.text import Text

from flows.present.terminal import line_width, printable, render, table_of_columns
from flows.store.output import Output
from schemas.columns import (
    CALLS,
    N_EPISODES,
    RANK,
    SCORE,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
    WALL_MS,
)
from schemas.columns import Table as TableSpec
from schemas.comparisons import (
    DEFAULT_LEVEL,
    N_TASKS,
    OVERALL,
    SCORE_BY_CATEGORY,
)
from schemas.contract import COST_USD, INPUT_TOKENS, LATENCY_MS, OUTPUT_TOKENS, Category, Col
from schemas.views import VIEWS, View

# Headers short enough that the leaderboard of six categories and a cost fits in 100 columns.
COLUMN = {
    Category.ASSOCIATIVE_LEARNING: "assoc.",
    Category.CONCEPT_FORMATION: "concept",
    Category.LANGUAGE_LEARNING: "lang.",
    Category.OBSERVATIONAL_LEARNING: "obs.",
    Category.RUNTIME_RL: "RL",
    Category.PROCEDURAL_LEARNING: "proc.",
}


COST_HEADER = "$/ep."  # contract 1.3: US dollars per episode that records usage


PARTIAL_COST = "*"  # ... some of whose calls record none


MODEL_WIDTH = 12  # the least a model's name is given before it folds


def leaderboard_table(
    models: pl.DataFrame, categories: pl.DataFrame, level: float, width: int | None = None
) -> list[str]:
    """Rank, model (in full; under it the rank's interval where it spans more than one
    place), the overall score (each task weighs the same: the benchmark's own) with its
    interval, the best rank the Holm verdicts leave it (``UB``: 1 + the models significantly
    better), the score with each category weighing the same (``by cat.``), the tasks it
    averages, then each category's score, as text lines. Models are
    ranked among those covering the same categories: the widest coverage first, each
    coverage group ranked on its own and, where there are several, introduced by a line
    saying which categories its models cover (two "rank 1" rows are never unexplained),
    its columns aligned with the others'. An interval that cannot be measured (no spread)
    shows ``-``. ``width``: as ``render``'s."""
    present = [c for c in Category if c in set(categories[Col.CATEGORY])]
    by_model = {
        (m, c): s for m, c, s in categories.select(Col.MODEL, Col.CATEGORY, SCORE).iter_rows()
    }
    order = models.sort(
        ["categories_covered", "ranked_among", "rank", Col.MODEL],
        descending=[True, False, False, False],
    )
    # The tasks each model's score averages, where they are not the same for all (a model
    # that ran half the tasks says so on its line; else the title says how many).
    tasks = N_TASKS in order.columns and order[N_TASKS].n_unique() > 1
    cost = COST_USD in order.columns and order[COST_USD].is_not_null().any()
    rows = [
        _cells(*_leaderboard_cells(row, present, by_model, tasks, cost))
        for row in order.iter_rows(named=True)
    ]
    headers = ["rank", "model", "score", f"{level:.0%} interval", "UB", "by cat."]
    headers += ["tasks"] * tasks + [COST_HEADER] * cost + [COLUMN[c] for c in present]
    # Every group's table gets the same column widths: they read as one table. The model's
    # column takes what the others leave (its names fold there where they must).
    widths = _widths(headers, rows, width)
    groups = order["ranked_among"].to_list()
    lines: list[str] = []
    for group in dict.fromkeys(groups):
        if len(set(groups)) > 1:
            lines.append(group_line(group, groups.count(group)))
        members = [cells for cells, member in zip(rows, groups, strict=True) if member == group]
        lines += _rendered(headers, members, widths, not lines or len(lines) == 1, width)
    lines += coverage_note(order, width)
    if cost and any(PARTIAL_COST in cells[headers.index(COST_HEADER)].plain for cells in rows):
        lines.append(
            f"{PARTIAL_COST} some of its calls or episodes record no usage: "
            "the cost leaves them out"
        )
    return lines


def category_table(rows: pl.DataFrame, level: float, width: int | None = None) -> list[str]:
    """One category's leaderboard (``category_standings`` or ``category_scores`` rows of one
    category), as ``leaderboard_table`` draws the overall one: rank among every model with a
    score in it, model (in full; under it the rank's interval where it spans more than one
    place), the category's score (the mean of its task scores) with its interval, the tasks
    it averages where they differ, the cost per episode where some model records one. Rows
    an earlier cogscore wrote have no rank: ``-``, in score order."""
    order = rows.sort([SCORE, Col.MODEL], descending=[True, False], nulls_last=True)
    if RANK in order.columns and order[RANK].null_count() == 0:
        order = order.sort([RANK, Col.MODEL])
    tasks = N_TASKS in order.columns and order[N_TASKS].n_unique() > 1
    cost = COST_USD in order.columns and order[COST_USD].is_not_null().any()
    cells = []
    for row in order.iter_rows(named=True):
        rank = row.get(RANK)
        cells.append(
            _cells(
                "-" if rank is None else str(rank),
                escape(printable(row[Col.MODEL])) + _rank_span(row),
                f"{row[SCORE]:.3f}",
                interval(row.get("ci_low"), row.get("ci_high")),  # type: ignore[arg-type]
                *([str(row[N_TASKS])] if tasks else []),
                *([cost_per_episode(row)] if cost else []),
            )
        )
    headers = ["rank", "model", "score", f"{level:.0%} interval"]
    headers += ["tasks"] * tasks + [COST_HEADER] * cost
    return _rendered(headers, cells, _widths(headers, cells, width), True, width)


def category_lines(categories: pl.DataFrame, level: float, chosen: list[str]) -> list[str]:
    """The leaderboard of each category of ``chosen`` that ``categories`` (one night's or
    one standing's rows) holds, in the contract's order, each under a line that names it."""
    lines: list[str] = []
    for category in chosen:
        rows = categories.filter(pl.col(Col.CATEGORY) == category)
        if rows.is_empty():
            continue
        counts = rows[N_TASKS].unique().to_list() if N_TASKS in rows.columns else []
        each = f"{counts[0]} task(s) each; " if len(counts) == 1 else ""
        lines += [
            f"{category} ({each}score: the mean of its task scores; {level:.0%} intervals):",
            *category_table(rows, level),
        ]
    return lines


def _widths(headers: list[str], rows: list[list[Text]], width: int | None) -> list[int]:
    """Each column's width (its widest cell); the model's (the second) takes what the others
    leave, at least ``MODEL_WIDTH`` (its names fold there where they must)."""
    table = [_cells(*headers), *rows]  # the headers' markup read once, not once a column
    widths = [max(len(_plain(cells[i])) for cells in table) for i in range(len(headers))]
    room = line_width(width) - (sum(widths) - widths[1]) - (len(widths) - 1)
    widths[1] = max(min(widths[1], room), MODEL_WIDTH)
    return widths


def _rendered(
    headers: list[str], rows: list[list[Text]], widths: list[int], header: bool, width: int | None
) -> list[str]:
    """``rows`` as a leaderboard's table: one space between columns, the model's (the
    second) and the interval's (the fourth) left-aligned, the model's folding."""
    table = table_of_columns()
    table.show_header = header
    table.padding = (0, 0, 0, 0)  # one space between columns (the box's), no padding
    for i, title in enumerate(headers):
        table.add_column(
            title,
            justify="left" if i in (1, 3) else "right",
            no_wrap=i != 1,
            overflow="fold",
            width=widths[i],
        )
    for cells in rows:
        table.add_row(*cells)
    return render(table, width)


def _rank_span(row: Mapping[str, object]) -> str:
    """The rank's interval, under the model's name, where it spans more than one place."""
    low, high = row.get("rank_low"), row.get("rank_high")
    spans = low is not None and (low, high) != (row.get(RANK),) * 2
    return f"\n[dim]ranks {low}-{high}[/dim]" if spans else ""


def cost_per_episode(row: Mapping[str, object]) -> str:
    """A model's cost per episode in US dollars (contract 1.3: its total over the episodes
    that record usage, per such episode), three significant places; ``-`` where none
    records a cost; marked where some calls or episodes record none (the cost leaves them
    out).

    >>> cost_per_episode({"cost_usd": 0.5, "usage_episodes": 4, "n_episodes": 4})
    '0.125'
    >>> cost_per_episode({"cost_usd": 3e-5, "usage_episodes": 1, "n_episodes": 2})
    '3.0e-05*'
    >>> cost_per_episode({"cost_usd": None, "usage_episodes": 0, "n_episodes": 2})
    '-'
    """
    total, episodes = row.get(COST_USD), row.get(USAGE_EPISODES)
    if not isinstance(total, float) or not isinstance(episodes, int) or episodes == 0:
        return "-"
    each = total / episodes
    text = f"{each:.3g}" if each >= 1e-3 else f"{each:.1e}"
    scored = row.get(N_EPISODES)
    partial = bool(row.get(USAGE_INCOMPLETE)) or (isinstance(scored, int) and episodes < scored)
    return text + (PARTIAL_COST if partial else "")


def _cells(*markup: str) -> list[Text]:
    """A row's cells, their markup read once (for their widths and the table alike: rich
    reads a text cell's markup again each time it is measured and drawn)."""
    return [Text.from_markup(cell) for cell in markup]


def _plain(cell: Text) -> str:
    """A cell's widest line as shown (its markup and escapes removed)."""
    return max(cell.plain.split("\n"), key=len)


def group_line(group: str, models: int) -> str:
    """The line that introduces a coverage group of the leaderboard.

    >>> group_line("concept_formation,runtime_rl", 3)
    'ranked among the 3 model(s) covering concept, RL:'
    """
    names = ", ".join(COLUMN.get(Category(c), c) for c in group.split(",") if c in CATEGORIES)
    return f"ranked among the {models} model(s) covering {names}:"


CATEGORIES = frozenset(str(c) for c in Category)


def coverage_note(models: pl.DataFrame, width: int | None = None) -> list[str]:
    """Where the leaderboard holds several coverage groups, what one is (its ranks restart
    at 1); where no verdict tells any two models of a group apart, why UB is 1 throughout.
    Folded at spaces to ``width`` (``line_width``'s)."""
    groups = models["ranked_among"].n_unique()
    text = []
    if groups > 1:
        text.append(
            f"ranks restart in each of the {groups} coverage groups: a group is the models "
            "with results in the same categories (named above it), ranked among themselves "
            "only; UB: 1 + the models of its group the verdicts (Holm, 0.05) call better."
        )
    crowded = models.filter(pl.col("n_ranked") > 1) if "n_ranked" in models.columns else None
    if (
        crowded is not None
        and not crowded.is_empty()
        and "rank_ub" in crowded.columns
        and (crowded["rank_ub"].fill_null(1) == 1).all()
    ):
        text.append(
            "no verdict tells any two models of a group apart (UB 1 throughout): their "
            "results do not vary enough to test (one task each, say) or differ too little."
        )
    return [line for paragraph in text for line in textwrap.wrap(paragraph, line_width(width))]


def _leaderboard_cells(
    row: Mapping[str, object],
    present: list[Category],
    by_model: Mapping[tuple[str, str], float],
    tasks: bool,
    cost: bool = False,
) -> list[str]:
    model = str(row[Col.MODEL])
    cells = [f"{by_model[(model, c)]:.3f}" if (model, c) in by_model else "-" for c in present]
    # The rank's interval goes under the name (the model column wraps; 100 columns hold no
    # wider rank column).
    under = _rank_span(row)
    bound = row.get("rank_ub")  # (null: a night scored before the column existed)
    by_category = row.get(SCORE_BY_CATEGORY)
    return [
        str(row["rank"]),
        escape(printable(model)) + under,
        f"{row[SCORE]:.3f}",
        interval(row.get("ci_low"), row.get("ci_high")),  # type: ignore[arg-type]
        "-" if bound is None else str(bound),
        "-" if by_category is None else f"{by_category:.3f}",
        *([str(row[N_TASKS])] if tasks else []),
        *([cost_per_episode(row)] if cost else []),
        *cells,
    ]


def interval(low: float | None, high: float | None) -> str:
    """``[low, high]`` to three places, ``-`` where there is none.

    >>> interval(0.1234, 0.5), interval(None, None)
    ('[0.123, 0.500]', '-')
    """
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def leaderboard_lines(
    out: Output,
    levels: Mapping[str | None, float],
    view: View = View.STANDING,
    *,
    scope: str | None = None,
    as_of: str | None = None,
) -> list[str]:
    """The leaderboard of ``out``'s latest night: the standing as of it (each model's latest
    result on every task, whenever it ran), or with ``view`` night the night's own episodes
    alone; its intervals labelled with the night's level (``levels``:
    ``flows.store.output.night_levels``). ``scope``: ``overall`` (the models' leaderboard), a
    category (its own leaderboard), or None: the overall one, then each category's. The
    tables as the latest finished run (or run ``as_of``) left them. Only the latest night's
    partitions are read (not months of history). An output with no standing yet (written by
    an earlier cogscore) shows its night, and says so."""
    tables = VIEWS[view]
    latest = max((night for night in levels if night is not None), default=None)
    models = _rows_of_night(out, tables.models, latest, as_of)
    if models.is_empty() and view is View.STANDING:
        shown = leaderboard_lines(out, levels, View.NIGHT, scope=scope, as_of=as_of)
        return ["(no standing in this output yet: the night's own tables)", *shown]
    if models.is_empty() and latest is not None:  # the latest night scored nothing
        models = out.read(tables.models.name, as_of)
        latest = models[tables.night].max()  # type: ignore[assignment]
        models = models.filter(pl.col(tables.night) == latest)
    if models.is_empty():
        return ["no episode was scored"]
    categories = _rows_of_night(out, tables.categories, latest, as_of)
    level = levels.get(latest, DEFAULT_LEVEL)  # a night no run recorded: the default's
    of = f" {printable(latest)}" if latest else ""
    what = (
        f"standing as of{of} (each model's latest result on every task"
        if view is View.STANDING
        else f"leaderboard of the night{of} (its episodes alone"
    )
    if scope is not None and scope != OVERALL:
        return [f"{what}):", *category_lines(categories, level, [scope])]
    counts = models[N_TASKS].unique().to_list() if N_TASKS in models.columns else []
    each = f"{counts[0]} task(s) each; " if len(counts) == 1 else ""
    cost = COST_USD in models.columns and models[COST_USD].is_not_null().any()
    priced = f"; {COST_HEADER}: US dollars per episode" if cost else ""
    title = (
        f"{what}; {each}score: each task weighs the same; by cat.: each category; "
        f"{level:.0%} intervals{priced}):"
    )
    ordered = models.sort(  # the leaderboard's order
        ["categories_covered", "ranked_among", "rank", Col.MODEL],
        descending=[True, False, False, False],
    )
    lines = [title, *leaderboard_table(models, categories, level), *usage_lines(ordered)]
    if scope is None:  # then each category's own
        lines += category_lines(categories, level, [str(c) for c in Category])
    return lines


def _rows_of_night(
    out: Output, table: TableSpec, night: str | None, as_of: str | None = None
) -> pl.DataFrame:
    """The rows of ``table`` of ``night`` (its night column; None: the undated one), as the
    latest finished run (or run ``as_of``) left them."""
    column = pl.col(table.night)
    chosen = column.is_null() if night is None else column == night
    return out.scan(table.name, as_of).filter(chosen).collect()


# (header, column, format) of each figure per episode that records usage.
PER_EPISODE: Final = (
    ("calls", CALLS, ",.1f"),
    ("s of calls", LATENCY_MS, ",.1f"),  # the calls' own time: their latency, in seconds
    ("wall s", WALL_MS, ",.1f"),  # the harness's: from the episode's start to its end
    ("tokens in", INPUT_TOKENS, ",.0f"),
    ("tokens out", OUTPUT_TOKENS, ",.0f"),
    ("$", COST_USD, ".3g"),
)


def usage_lines(models: pl.DataFrame, width: int | None = None) -> list[str]:
    """Per model whose episodes record usage, in the rows' order: the episodes that do (of
    those scored; ``incomplete``: some of their calls record none, and the figures leave
    them out), then per such episode its calls, their seconds, its wall time, tokens and
    cost. No lines
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
        "took, the harness's wall time from the episode's start to its end, the calls' "
        "tokens and cost):"
    )
    return [title, *render(grid, width)]


def _each(total: object, episodes: int, column: str, spec: str) -> str:
    """``total`` per episode (latency and wall time in seconds); ``-`` where not recorded.

    >>> _each(3000.0, 2, "latency_ms", ",.1f"), _each(None, 2, "calls", ",.1f")
    ('1.5', '-')
    """
    if not isinstance(total, int | float):
        return "-"
    each = total / episodes / (1000 if column in (LATENCY_MS, WALL_MS) else 1)
    return format(each, spec)
