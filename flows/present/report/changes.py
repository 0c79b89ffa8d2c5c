"""The report's "Standing changes": what moved the standing as of the night shown, every
change told (``standing_changes``: each model's overall change whatever moved it, its rank
before and now and what the statistics call it; each flagged category) and every result
re-run (``task_changes``: model, task, score and night before and now). Within noise is a
label, never a reason to leave a change out."""

from __future__ import annotations

import html
from collections import Counter
from typing import Any, Final

import polars as pl

from flows.present.changes import (
    BEYOND,
    NOT_COMPARABLE,
    NOT_ESTIMABLE,
    UNCHANGED,
    WITHIN,
    noise,
    rank_move,
)
from flows.present.report.figures import Section, fmt
from schemas.columns import SCORE
from schemas.comparisons import (
    ALERT_LEVEL,
    CHANGE,
    CHANGE_KIND,
    LEVEL_ALERT,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    NEW_NIGHT,
    NEW_SCORE,
    OLD_NIGHT,
    OLD_SCORE,
    OVERALL,
    PREVIOUS_AS_OF,
    SCOPE,
    ChangeKind,
)
from schemas.contract import Col

# Re-run results the page lists (a harness that re-runs every task every night re-runs them
# all), the largest moves first; the rest are counted (table task_changes has them all).
MOST_RESULTS: Final = 500


# How the page counts the changes it lists, by what the statistics call them.
PHRASES: Final = {
    BEYOND: "beyond noise",
    WITHIN: "within noise",
    NOT_ESTIMABLE: "whose noise is not estimable",
    NOT_COMPARABLE: "not comparable",
    UNCHANGED: "ranked anew by others' changes",
}


def told_changes(changes: pl.DataFrame) -> pl.DataFrame:
    """The standing changes the page lists: every model's overall row (whatever moved it)
    and each flagged category's; alerts, then watches, then the rest, by model."""
    listed = pl.col(ALERT_LEVEL).is_in([LEVEL_ALERT, LEVEL_WATCH]) | (pl.col(SCOPE) == OVERALL)
    order = {LEVEL_ALERT: 0, LEVEL_WATCH: 1}
    level = pl.col(ALERT_LEVEL).replace_strict(order, default=2)
    others = pl.col(CHANGE_KIND) == ChangeKind.RERANKED  # after the changes that moved them
    return (
        changes.filter(listed)
        .with_columns(level.alias("_o"), others.alias("_k"))
        .sort("_o", "_k", Col.MODEL, SCOPE, PREVIOUS_AS_OF)
        .drop("_o", "_k")
    )


def changes_section(changes: pl.DataFrame, results: pl.DataFrame, night: str) -> Section:
    """What moved the standing as of ``night``: ``changes`` (its ``standing_changes``
    rows), ``results`` (its ``task_changes`` rows of kind ``rerun``)."""
    shown = told_changes(changes)
    if shown.is_empty() and results.is_empty():
        return Section(
            "changes",
            "Standing changes",
            f"Nothing moved the standing as of {html.escape(night)} since the night before: "
            "no result re-run, no model new, gone, covering other tasks or ranked anew.",
        )
    counted = Counter(noise(r) for r in shown.iter_rows(named=True))
    said = "; ".join(f"{n} {PHRASES[what]}" for what, n in sorted(counted.items())) or "-"
    text = (
        f"What moved the standing as of {html.escape(night)} since the night before (table "
        "<code>standing_changes</code>), every change told whether or not it is beyond noise: "
        "each model's overall change and each flagged category (alert: Benjamini-Hochberg q "
        "under 0.05 and a drop beyond the margin; watch: a drop with p under 0.05), with its "
        "rank among its coverage group before and now and what the statistics call it "
        "(<b>beyond noise</b>: the re-run's q under 0.05, a rise or a drop; <b>within "
        "noise</b>; <b>noise not estimable</b>: one result a side; a model new, gone, "
        "covering other tasks or scored anew is not comparable; a model whose results did "
        f"not change but whose rank others moved: {UNCHANGED}). Here: {html.escape(said)}. "
    )
    rows = "".join(_change_row(r) for r in shown.iter_rows(named=True))
    after = (
        "<table><thead><tr><th>level</th><th>kind</th><th>model</th><th>scope</th>"
        "<th>before</th><th>now</th><th>change</th><th>interval</th><th>q (BH)</th>"
        "<th>noise</th><th>rank</th><th>moved by</th><th>why not comparable</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    if not results.is_empty():
        text += _results_text(results)
        after += _results_table(results)
    elif not changes.filter(pl.col(CHANGE_KIND) == ChangeKind.RERUN).is_empty():
        text += (
            "The results re-run are not in table <code>task_changes</code> (written by an "
            "earlier cogscore): <code>cogscore compare OUT --date "
            f"{html.escape(night)} --against NIGHT</code> lists them."
        )
    return Section("changes", "Standing changes", text, after=after)


def _change_row(r: dict[str, Any]) -> str:
    said = noise(r)
    moved = rank_move(r)
    rank = "-" if moved is None else f"{moved[0]} ({moved[1]})"
    why = r["reason"] if r[ALERT_LEVEL] == LEVEL_NOT_COMPARABLE else ""
    return (
        f"<tr><td>{html.escape(r[ALERT_LEVEL])}</td><td>{html.escape(r[CHANGE_KIND])}</td>"
        f"<td>{html.escape(r[Col.MODEL])}</td><td>{html.escape(r[SCOPE])}</td>"
        f"<td>{fmt(r['baseline_score'])}</td><td>{fmt(r[SCORE])}</td>"
        f"<td>{fmt(r[CHANGE], '+.3f')}</td>"
        f"<td>[{fmt(r['ci_low'], '+.3f')}, {fmt(r['ci_high'], '+.3f')}]</td>"
        f"<td>{fmt(r['q_bh'], '.3g')}</td><td>{html.escape(said)}</td>"
        f"<td>{html.escape(rank)}</td><td>{html.escape(r['moved_by'] or '')}</td>"
        f"<td>{html.escape(why or '')}</td></tr>"
    )


def _results_text(results: pl.DataFrame) -> str:
    listed = min(results.height, MOST_RESULTS)
    more = (
        f"; the {listed} largest moves are listed, the other {results.height - listed} are in "
        "table <code>task_changes</code>"
        if results.height > listed
        else ""
    )
    return (
        f"{results.height} result(s) were re-run (table <code>task_changes</code>: a model's "
        "result on a task from a newer night than the standing before held), each with its "
        f"score and night before and now{more}; its model's row above says how far it moved "
        "the standing."
    )


def _results_table(results: pl.DataFrame) -> str:
    shown = (
        results.sort(pl.col(CHANGE).abs(), descending=True, nulls_last=True)
        .head(MOST_RESULTS)
        .sort(Col.MODEL, Col.CATEGORY, Col.TASK)
    )
    rows = "".join(
        f"<tr><td>{html.escape(r[Col.MODEL])}</td><td>{html.escape(r[Col.TASK])}</td>"
        f"<td>{html.escape(r[Col.CATEGORY])}</td>"
        f"<td>{fmt(r[OLD_SCORE])} ({html.escape(r[OLD_NIGHT] or '-')})</td>"
        f"<td>{fmt(r[NEW_SCORE])} ({html.escape(r[NEW_NIGHT] or '-')})</td>"
        f"<td>{fmt(r[CHANGE], '+.3f')}</td></tr>"
        for r in shown.iter_rows(named=True)
    )
    return (
        "<table class='reruns'><thead><tr><th>model</th><th>task</th><th>category</th>"
        "<th>before (night)</th><th>now (night)</th><th>change</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
