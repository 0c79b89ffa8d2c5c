"""What an output holds and what ran into it, printed: ``cogscore status``, ``history`` and
``compare`` as lines for the terminal or as JSON, from the facts ``flows.overview`` gathers."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from rich.markup import escape
from rich.table import Table

from flows.overview import TwoStandings, history
from flows.present.changes import fmt, interval, noise, result_moved
from flows.present.formats import signed
from flows.present.terminal import line_width, printable, render, table_of_columns
from flows.store.output import Output, describe_unfinished
from schemas.columns import RANK, SCORE, USAGE_REFUSED
from schemas.comparisons import (
    ALERT_LEVEL,
    BASELINE_SCORE,
    CATEGORIES_COVERED,
    CHANGE,
    CHANGE_KIND,
    CI_HIGH,
    CI_LOW,
    DESIGN,
    DIFF,
    HOLM_FAMILY_NOTE,
    LEVEL_NOT_COMPARABLE,
    MDE,
    MODEL_A,
    MODEL_B,
    MOVED_BY,
    NEW_RANK,
    NEW_RANK_HIGH,
    NEW_RANK_LOW,
    OLD_RANK,
    OLD_RANK_HIGH,
    OLD_RANK_LOW,
    P_HOLM,
    P_VALUE,
    P_WILCOXON,
    PAIRED,
    Q_BH,
    RANKED_AMONG,
    REASON,
    VERDICT,
)
from schemas.contract import Col
from schemas.rules import USAGE_INVALID
from schemas.views import VIEWS, View


def history_lines(output: Output) -> list[str]:
    runs = history(output)
    if runs.is_empty():
        return [f"no run recorded in {output}"]
    table = table_of_columns()
    for name in ("run", "kind", "status", "finished (UTC)", "nights", "episodes", "engine"):
        table.add_column(name, overflow="fold")
    for run in runs.iter_rows(named=True):
        code = run["exit_code"]
        failed = ", ".join(run["nights_failed"])
        table.add_row(
            escape(run["run_id"]),
            run["kind"],
            run["status"]
            + ("" if code in (None, 0) else f" (exit {code})")
            + (f"\n[dim]failed: {escape(failed)}[/dim]" if failed else ""),
            run["finished"].strftime("%Y-%m-%d %H:%M:%S"),
            escape(", ".join(run["nights"]) or "-"),
            str(run["episodes_scored"] or 0),
            escape(printable(run["engine"] or "")),
        )
    return [f"runs of {output}, newest first:", *render(table)]


UNSCORED_WORDS = {
    "episodes_rejected": "rejected episode(s)",
    "episodes_harness_error": "harness error(s)",
    "files_rejected": "rejected file(s)",
}


def status_lines(report: dict[str, Any]) -> list[str]:

    lines = [f"output {report['output']}"]
    if report.get("unfinished"):
        lines.append(f"  no run finished: {describe_unfinished(report['unfinished'])}")
    nights = report["nights"]
    lines.append(f"  nights: {len(nights)}" + (f" ({nights[0]} .. {nights[-1]})" if nights else ""))
    lines.append("  formula set: " + ",".join(f"{c}={v}" for c, v in report["formula_set"].items()))
    for night, differ in report["nights_off_set"].items():
        lines.append(f"  night {night} scored with other versions: {differ}")
    for night, why in report["nights_failed"].items():
        lines.append(f"  night {night} FAILED: {why}")
    for night, models in report["models_unscored"].items():
        for model, why in models.items():
            lines.append(f"  night {night}: model {model} has no score ({why})")
    unscored = {
        n: c
        for n, c in report["unscored"].items()
        if any((v or 0) > 0 for v in c.values()) and n not in report["nights_failed"]
    }
    for night, counts in unscored.items():
        described = ", ".join(
            f"{v} {UNSCORED_WORDS[k]}" for k, v in counts.items() if v and k in UNSCORED_WORDS
        )
        lines.append(f"  night {night} scored; not scored in it: {described}")
    for night, counts in report["mismatches"].items():
        if any((v or 0) > 0 for v in counts.values()):
            lines.append(
                f"  night {night}: {counts['episodes_score_mismatch'] or 0} episode(s) scored "
                f"other than the harness reported, {counts['episodes_verdict_mismatch'] or 0} "
                "with verdicts other than the harness's"
            )
    for night, refused in report["usage_refused"].items():
        if refused:
            lines.append(
                f"  night {night}: {refused} episode(s) scored with their usage refused "
                f"({USAGE_INVALID}: episode_scores.{USAGE_REFUSED} says why)"
            )
    for night, replaced in report.get("replaced", {}).items():
        if replaced:
            lines.append(
                f"  night {night}: {replaced} episode(s) scored and replaced by a later run of "
                "their model and task (replaced_episodes says which, and by what)"
            )
    versions = ", ".join(f"{t} v{v}" for t, v in sorted(report["table_versions"].items()))
    lines.append(f"  table versions: {versions or '-'}")
    for run in report["last_runs"]:
        code = "" if run.get("exit_code") in (None, 0) else f" (exit {run['exit_code']})"
        lines.append(
            f"  run {run['run_id']}: {run['kind']} {run['status']}{code}, "
            f"finished {run['finished']}"
        )
    for run in report["runs_not_imported"]:
        why = ", ".join(run["reasons"]) + (f": {run['detail']}" if run["detail"] else "")
        lines.append(f"  harness run not imported (run {run['run_id']}): {run['run_file']}: {why}")
    lines.append(f"  lease: {report['lease'] or 'free'}")
    if "dump" in report:
        for kind, listed in report["dump"].items():
            lines.append(f"  dump nights {kind.replace('_', ' ')}: {', '.join(listed) or '-'}")
    return [printable(line) for line in lines]


def as_json(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def comparison_lines(
    table: pl.DataFrame, level: float, order: Sequence[str] = (), width: int | None = None
) -> list[str]:
    """The comparisons of ``comparisons``, their intervals labelled with their ``level``
    (``night_level``), each pair once: model a the one placed first in ``order`` (the
    leaderboard's: ``leaderboard_order``), the pairs in that order (the table and ``--json``
    hold both orders, the same pair's). A row a line where the names fit beside the numbers
    (``width``: as ``render``'s; off a terminal always); else each pair's names on a line of
    their own above its numbers, whole: a name is never folded to what the numbers leave.
    Each row's ``reason`` (why its statistics are null, its mde, or its interval
    approximate) is a note under the table, and so is what Holm's correction covers."""

    if table.is_empty():
        return ["no pair of models to compare"]
    table = once_per_pair(table, order)
    notes: dict[str, int] = {}
    for reason in table.get_column(REASON, default=pl.Series([None] * table.height)):
        if reason:
            notes.setdefault(reason, len(notes) + 1)
    designs = sorted({str(d) for d in table.get_column(DESIGN, default=pl.Series([None]))})
    named = f"sampling design: {', '.join(designs)} (README 'Comparisons and statistics')"
    footnotes = [f"[{n}] {printable(reason)}" for reason, n in notes.items()]
    room = line_width(width)
    below = [  # folded at the table's width, never cut (off a terminal: a line each)
        folded
        for line in (*footnotes, named, HOLM_FAMILY_NOTE)
        for folded in textwrap.wrap(line, room, subsequent_indent="    ", break_on_hyphens=False)
    ]
    lines = render(_comparison_grid(table, level, notes, names=True), width)
    if len(lines) == 2 + table.height:  # the header, its rule and a line a row: it fits
        return [*lines, *below]
    numbers = render(_comparison_grid(table, level, notes, names=False), room - 2)
    stacked = [f"  {line}" for line in numbers[:2]]
    for row, line in zip(table.iter_rows(named=True), numbers[2:], strict=True):
        pair = f"a: {printable(row[MODEL_A])}   b: {printable(row[MODEL_B])}"
        stacked += textwrap.wrap(pair, room, subsequent_indent="   ", break_on_hyphens=False)
        stacked.append(f"  {line}")
    return [*stacked, *below]


def _comparison_grid(
    table: pl.DataFrame, level: float, notes: Mapping[str, int], names: bool
) -> Table:
    """The comparisons as a table: the models (``names``), then the numbers and the mark of
    each row's note (``notes``: a reason and its number)."""
    grid = table_of_columns()
    for name in ("model a", "model b") if names else ():
        grid.add_column(name, overflow="fold")
    # The raw p beside Holm's: a comparison planned alone (as LearningBench's H4) reads the
    # raw one; the verdict is Holm's, over every pair of the night and scope.
    headers = ("a - b", f"{level:.0%} interval", "p", "p (Holm)", "verdict", "mde")
    for name in (*headers, "p (Wilcoxon)", "paired", "note"):
        grid.add_column(name, no_wrap=True)

    def number(value: float | None, spec: str = ".3f") -> str:
        return "-" if value is None else format(value, spec)

    for row in table.iter_rows(named=True):
        models = [escape(printable(row[MODEL_A])), escape(printable(row[MODEL_B]))]
        reason = row.get(REASON)
        grid.add_row(
            *(models if names else []),
            signed(row[DIFF]),
            f"[{number(row[CI_LOW])}, {number(row[CI_HIGH])}]",
            number(row[P_VALUE], ".3g"),
            number(row[P_HOLM], ".3g"),
            row[VERDICT],
            number(row[MDE]),
            number(row.get(P_WILCOXON), ".3g"),
            row[PAIRED],
            f"[{notes[reason]}]" if reason else "",
        )
    return grid


def once_per_pair(table: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """Each pair of ``table``'s comparisons once: the row whose model a comes first in
    ``order`` (models not in it after those in it, by name), in that order."""
    position = {model: i for i, model in enumerate(order)}

    def place(column: str) -> pl.Expr:
        return pl.col(column).replace_strict(position, default=len(position), return_dtype=pl.Int64)

    a, b = place(MODEL_A), place(MODEL_B)
    first = (a < b) | ((a == b) & (pl.col(MODEL_A) < pl.col(MODEL_B)))
    return table.filter(first).sort(a, b, MODEL_A, MODEL_B)


def leaderboard_order(
    output: Output, night: str | None, as_of: str | None = None, view: View = View.STANDING
) -> list[str]:
    """The models of ``night``'s leaderboard (the standing as of it, or with ``view`` night
    its own), in its order: the widest coverage first, each coverage group by rank."""
    tables = VIEWS[view]
    column = pl.col(tables.night)
    rows = output.scan(tables.models.name, as_of).filter(
        column.is_null() if night is None else column == night
    )
    ordered = rows.select(Col.MODEL, CATEGORIES_COVERED, RANKED_AMONG, RANK).sort(
        [CATEGORIES_COVERED, RANKED_AMONG, RANK, Col.MODEL],
        descending=[True, False, False, False],
    )
    return ordered.collect()[Col.MODEL].to_list()


def standing_comparison_lines(two: TwoStandings, level: float) -> list[str]:
    """``compare --against``: each model's score and rank in both standings, the change
    with its interval (at ``level``) and BH q-value, what the statistics call it and what
    moved it; then every result that changed between them (score and night before and now)."""
    rows, cells, night, against = two.models, two.tasks, two.night, two.against
    if rows.is_empty():
        return ["no model stands in this scope"]
    grid = table_of_columns()
    grid.add_column("model", overflow="fold")
    for name in (against, "rank", night, "rank", "change", f"{level:.0%} interval", "q (BH)"):
        grid.add_column(name, no_wrap=True)
    grid.add_column("noise", overflow="fold")
    grid.add_column("what moved it", overflow="fold")

    def rank(value: int | None, low: int | None, high: int | None) -> str:
        return "-" if value is None else f"{value} ({interval(low, high)})"

    for row in rows.iter_rows(named=True):
        kind = row[CHANGE_KIND]
        moved = "unchanged" if kind is None else f"{kind}: {row[MOVED_BY] or '-'}"
        if row[ALERT_LEVEL] == LEVEL_NOT_COMPARABLE and row[REASON]:
            moved += f" ({row[REASON]})"
        grid.add_row(
            escape(printable(row[Col.MODEL])),
            fmt(row[BASELINE_SCORE]),
            rank(row[OLD_RANK], row[OLD_RANK_LOW], row[OLD_RANK_HIGH]),
            fmt(row[SCORE]),
            rank(row[NEW_RANK], row[NEW_RANK_LOW], row[NEW_RANK_HIGH]),
            fmt(row[CHANGE], "+.3f"),
            f"[{fmt(row[CI_LOW], '+.3f')}, {fmt(row[CI_HIGH], '+.3f')}]",
            fmt(row[Q_BH], ".3g"),
            "-" if kind is None else noise(row),
            escape(printable(moved)),
        )
    lines = render(grid)
    if not cells.is_empty():
        lines.append(f"results that changed between them ({cells.height}):")
        ordered = cells.sort(Col.MODEL, Col.CATEGORY, Col.TASK)
        lines += [f"  {r[CHANGE_KIND]} {result_moved(r)}" for r in ordered.iter_rows(named=True)]
    return lines
