"""The report's sections on the standing and how it moved (leaderboard, cost, comparisons,
regressions, over time), one function each: the figures of a shaped frame, the text
that says what they show, and a table where one helps. Every interval is labelled with the
level it was made at (``level``: the shown night's, ``flows.store.output.night_levels``)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Final

import plotly.graph_objects as go
import polars as pl

from flows.present.report.figures import (
    SHORT,
    Section,
    error_bars,
    fmt,
    label,
    layout,
)
from flows.present.report.shape import PER_EPISODE
from schemas.columns import (
    N_EPISODES,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    SCORE,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
)
from schemas.comparisons import (
    DEFAULT_LEVEL,
    FORMULA_VERSIONS,
)
from schemas.contract import (
    COST_USD,
    DUMP_DATE,
    INPUT_TOKENS,
    LATENCY_MS,
    OUTPUT_TOKENS,
    Category,
    Col,
)


def leaderboard_section(
    board: pl.DataFrame, colours: dict[str, str], night: str, level: float, standing: bool = True
) -> Section:
    """The leaderboard: the standing as of ``night`` (each model's latest result on every
    task), or (``standing`` False) the night's own episodes alone."""
    share = f"{level:.0%}"
    of = f"as of {night}" if standing else f"of the night {night} alone"
    fig = go.Figure(
        go.Bar(
            x=board[SCORE].to_list(),
            y=[label(m) for m in board[Col.MODEL].to_list()],
            orientation="h",
            marker={"color": [colours[m] for m in board[Col.MODEL].to_list()]},
            error_x=error_bars(board, SCORE, "ci_low", "ci_high"),
            text=[f"{c}/6 categories" for c in board["categories_covered"].to_list()],
            textposition="inside",
            insidetextanchor="start",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    layout(
        fig,
        f"Overall score per model, {of} ({share} interval)",
        "overall score (0-1, mean of task scores: each task weighs the same)",
        "model",
        showlegend=False,
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(range=[0, 1.05])

    def among(r: dict[str, Any]) -> str:
        if r["categories_covered"] == len(Category):
            return f"all 6 ({r['n_ranked']} models)"
        named = ", ".join(SHORT.get(c, c) for c in r["ranked_among"].split(","))
        return f"{html.escape(named)} only ({r['n_ranked']} model{'s' * (r['n_ranked'] > 1)})"

    def interval(low: float | None, high: float | None) -> str:
        return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"

    def nights_of(r: dict[str, Any]) -> str:
        if not standing:
            return ""
        oldest, newest = r.get(OLDEST_NIGHT), r.get(NEWEST_NIGHT)
        span = oldest if oldest == newest else f"{oldest} – {newest}"
        return f"<td>{html.escape(str(span))}</td>"

    rows = "".join(
        f"<tr><td>{r['rank']}</td><td>{r['rank_low']}–{r['rank_high']}</td>"
        f"<td>{r['rank_ub'] or '-'}</td><td>{html.escape(r[Col.MODEL])}</td>"
        f"<td>{r[SCORE]:.3f}</td><td>{interval(r['ci_low'], r['ci_high'])}</td>"
        f"<td>{fmt(r['score_by_category'])}</td>"
        f"<td>{interval(r['ci_low_by_category'], r['ci_high_by_category'])}</td>"
        f"<td>{r['rank_by_category'] or '-'}</td>"
        f"<td>{among(r)}</td><td>{r['n_tasks']}</td><td>{r['n_episodes']}</td>{nights_of(r)}</tr>"
        for r in board.iter_rows(named=True)
    )
    table = (
        f"<table><thead><tr><th>rank</th><th>{share} rank interval</th><th>rank (UB)</th>"
        f"<th>model</th><th>score</th><th>{share} interval</th><th>score by category</th>"
        f"<th>{share} interval</th><th>rank by category</th>"
        "<th>ranked among models covering</th><th>tasks</th>"
        f"<th>episodes scored</th>{'<th>results from</th>' * standing}</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    what = (
        f"The benchmark as it stands as of {html.escape(night)}: each model's latest result on "
        "every task, whenever it ran (table <code>standings</code>; <i>results from</i>: the "
        "nights they come from, task by task in <code>task_standings</code>). "
        if standing
        else f"The night {html.escape(night)}'s own episodes alone (table "
        "<code>model_scores</code>): a model that did not run that night is not on it. "
    )
    return Section(
        "leaderboard",
        "Leaderboard",
        what + "Each model's overall score is the mean of its task scores, each task weighing the "
        "same (the benchmark's own overall score; its published leaderboard ranks by it); "
        "the score by category weighs each category the same. Intervals follow the "
        "two-level sampling design: the tasks a sample of the ability, the episodes a sample "
        'within each task (README "Comparisons and statistics"; "-" where no spread can be '
        "measured). "
        "Models are ranked among those covering the same categories, never beside models of "
        "another coverage. Rank (UB) is 1 + the models significantly better (the "
        "Holm-corrected paired comparisons, table <code>model_comparisons</code>); the rank "
        "interval runs from there to the last place the same tests leave the model, and "
        "holds for every model at once.",
        [fig],
        table,
    )


def cost_section(
    costs: pl.DataFrame, colours: dict[str, str], night: str, level: float, standing: bool = True
) -> Section:
    """Score against cost per model (contract 1.3's usage: ``shape.score_and_cost``), where
    some model's episodes record a cost; "no data" otherwise."""
    of = f"as of {night}" if standing else f"of the night {night} alone"
    if costs.is_empty():
        return Section(
            "cost",
            "Score against cost",
            f"No data: no model's episodes {html.escape(of)} record what their model calls "
            "cost (contract 1.3's usage: <code>cost_usd</code> on the replies; a dump without "
            "it, or an imported score table, has none).",
        )
    per_episode = COST_USD + PER_EPISODE
    fig = go.Figure()
    for r in costs.iter_rows(named=True):
        model = r[Col.MODEL]
        fig.add_trace(
            go.Scatter(
                x=[r[per_episode]],
                y=[r[SCORE]],
                mode="markers+text",
                name=label(model),
                text=[label(model)],
                textposition="top center",
                marker={"color": colours.get(model), "size": 11},
                error_y=error_bars(
                    costs.filter(pl.col(Col.MODEL) == model), SCORE, "ci_low", "ci_high"
                ),
                hovertemplate=f"{label(model)}<br>$%{{x:.3g}} an episode: %{{y:.3f}}"
                "<extra></extra>",
            )
        )
    layout(
        fig,
        f"Overall score against cost per episode, {of} ({level:.0%} interval)",
        "cost per episode (US dollars, log scale)",
        "overall score (0-1)",
        showlegend=False,
    )
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[0, 1.05])

    def partial(r: dict[str, Any]) -> str:
        episodes = f"{r[USAGE_EPISODES]} of {r[N_EPISODES]}"
        return episodes + (f" ({r[USAGE_INCOMPLETE]} incomplete)" if r[USAGE_INCOMPLETE] else "")

    def seconds(milliseconds: float | None) -> str:
        return fmt(None if milliseconds is None else milliseconds / 1000, ",.1f")

    rows = "".join(
        f"<tr><td>{html.escape(r[Col.MODEL])}</td><td>{r[SCORE]:.3f}</td>"
        f"<td>{fmt(r[per_episode], '.3g')}</td><td>{fmt(r[COST_USD], '.4g')}</td>"
        f"<td>{fmt(r[INPUT_TOKENS + PER_EPISODE], ',.0f')}</td>"
        f"<td>{fmt(r[OUTPUT_TOKENS + PER_EPISODE], ',.0f')}</td>"
        f"<td>{seconds(r[LATENCY_MS + PER_EPISODE])}</td><td>{partial(r)}</td></tr>"
        for r in costs.iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>model</th><th>score</th><th>$ per episode</th><th>$ total</th>"
        "<th>input tokens per episode</th><th>output tokens per episode</th>"
        "<th>seconds of calls per episode</th><th>episodes with usage (of scored)</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "cost",
        "Score against cost",
        "What each model's score cost: the model calls behind its episodes, as the harness "
        "recorded them (contract 1.3's usage, totalled in the tables' <code>cost_usd</code>, "
        "<code>input_tokens</code>, <code>output_tokens</code>, <code>latency_ms</code> over "
        "<code>usage_episodes</code>), per episode that records usage. The models up and to "
        "the left score more for less; one whose episodes or calls record usage only in part "
        "(<i>incomplete</i>) cost more than shown. Models without a recorded cost are not "
        "drawn.",
        [fig],
        table,
    )


VERDICT_MARK: Final = {"a_better": "▲", "b_better": "▼", "unresolved": "≈"}


def comparisons_section(
    pairs: pl.DataFrame, board: pl.DataFrame, night: str, level: float
) -> Section:
    """The pairwise matrix of the overall scope: row model minus column model."""
    order = [m for m in board[Col.MODEL].to_list() if m in set(pairs["model_a"])]
    cell = {(r["model_a"], r["model_b"]): r for r in pairs.iter_rows(named=True)}
    z = [[cell[(a, b)]["diff"] if (a, b) in cell else None for b in order] for a in order]
    text = [
        [
            f"{VERDICT_MARK[cell[(a, b)]['verdict']]} {cell[(a, b)]['diff']:+.3f}"
            if (a, b) in cell
            else ""
            for b in order
        ]
        for a in order
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[label(m) for m in order],
            y=[label(m) for m in order],
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu",
            zmid=0,
            hovertemplate="%{y} − %{x}: %{z:.3f}<extra></extra>",
        )
    )
    layout(fig, f"Row model minus column model, overall score, {night}", "model b", "model a")
    fig.update_yaxes(autorange="reversed")

    header = "".join(f"<th>{html.escape(b)}</th>" for b in order)
    rows = "".join(
        f"<tr><th>{html.escape(a)}</th>"
        + "".join(
            (
                f"<td title='{level:.0%} [{fmt(cell[(a, b)]['ci_low'])}, "
                f"{fmt(cell[(a, b)]['ci_high'])}], Holm p {fmt(cell[(a, b)]['p_holm'], '.3g')},"
                f" Wilcoxon p {fmt(cell[(a, b)]['p_wilcoxon'], '.3g')}, tasks won "
                f"{cell[(a, b)]['n_tasks_a_better']}-{cell[(a, b)]['n_tasks_b_better']}, "
                f"{cell[(a, b)]['design']}, {cell[(a, b)]['paired']}'>"
                f"{VERDICT_MARK[cell[(a, b)]['verdict']]} {cell[(a, b)]['diff']:+.3f}</td>"
            )
            if (a, b) in cell
            else "<td>-</td>"
            for b in order
        )
        + "</tr>"
        for a in order
    )
    table = f"<table><thead><tr><th>a \\ b</th>{header}</tr></thead><tbody>{rows}</tbody></table>"
    return Section(
        "comparisons",
        "Which model is better: paired comparisons",
        "Each cell is the row model's overall score minus the column model's (table "
        "<code>model_comparisons</code>, scope <code>overall</code>): ▲ the row model is "
        "better, ▼ worse, ≈ not resolved, at α = 0.05 after Holm's correction over every pair "
        "of the night. Paired over the tasks both models ran and over the instances they "
        "shared; the standard error follows the two-level design (the tasks a sample of the "
        "ability, the episodes within them). Each cell's tooltip gives the interval, the "
        "Wilcoxon signed-rank p-value over the tasks and the tasks each model won. Only "
        "models covering the same categories are compared overall; every category (and the "
        "score by category) is compared in the table.",
        [fig] if order else [],
        table if order else "<p>No two models cover the same categories.</p>",
    )


def regressions_section(
    flagged: pl.DataFrame, night: str, level: float, standing: bool = False
) -> Section:
    """The night's alerts, watches and changes that are not comparable (beside a standing,
    the latter only counted: a harness that re-runs some tasks a night makes most nights
    not comparable with the one before, and the standing's changes say what moved)."""
    hidden = 0
    if standing:
        comparable = flagged.filter(pl.col("level") != "not_comparable")
        hidden, flagged = flagged.height - comparable.height, comparable
    rows = "".join(
        f"<tr><td>{html.escape(r['level'])}</td><td>{html.escape(r[Col.MODEL])}</td>"
        f"<td>{html.escape(SHORT.get(r['scope'], r['scope']))}</td>"
        f"<td>{fmt(r['baseline_score'])} → {fmt(r[SCORE])}</td>"
        f"<td>{fmt(r['change'], '+.3f')} [{fmt(r['ci_low'], '+.3f')}, "
        f"{fmt(r['ci_high'], '+.3f')}]</td><td>{fmt(r['q_bh'], '.3g')}</td>"
        f"<td>{html.escape(r['baseline_dates'])}</td>"
        f"<td>{html.escape(r['reason'] or '')}</td></tr>"
        for r in flagged.iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>level</th><th>model</th><th>scope</th><th>baseline → night</th>"
        f"<th>change [{level:.0%}]</th><th>BH q</th><th>baseline nights</th>"
        "<th>why not comparable</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "regressions",
        f"Regressions on {night}",
        "Table <code>regressions</code>: each model's score in each scope against its "
        "baseline night(s). <b>alert</b>: a drop with a Benjamini-Hochberg q-value under "
        "0.05 and larger than the margin (default: the minimum detectable effect); "
        "<b>watch</b>: a drop with a raw p-value under 0.05; <b>not_comparable</b>: the "
        "formula versions, the coverage or the harness errors changed, so the change is not "
        "the model's. "
        + (
            f"{hidden} row(s) not comparable (their tasks or formulas differ from the night "
            "before: the standing's changes above say what moved), not listed here. "
            if hidden
            else ""
        )
        + ("Nothing to report." if flagged.is_empty() else ""),
        [],
        table if not flagged.is_empty() else "",
    )


def over_time_section(
    history: pl.DataFrame,
    colours: dict[str, str],
    levels: Mapping[str | None, float],
    off_set: dict[str, str] | None = None,
    standing: bool = False,
) -> Section:
    """Each model's overall score per night (``standing``: as the benchmark stood as of each
    night, table ``standings``; else the night's own episodes, ``model_scores``), nights in
    date order; a line never joins nights scored with other formula versions (each set of
    versions is a line of its own), and the nights scored with versions other than the
    output's set are marked (x) and named. ``levels``: each night's interval level
    (``flows.store.output.night_levels``)."""
    key, title = (
        ("standings", "Standings across nights") if standing else ("nights", "Across nights")
    )
    n = history[DUMP_DATE].n_unique()
    if n < 2:
        return Section(key, title, f"The tables hold {n} night: nothing to show over time yet.")
    off_set = off_set or {}
    fig = go.Figure()
    lines = history.partition_by(Col.MODEL, FORMULA_VERSIONS, maintain_order=True)
    for rows in sorted(lines, key=lambda r: (r[Col.MODEL][0], r[DUMP_DATE].min())):
        rows = rows.sort(DUMP_DATE)
        model, versions = rows[Col.MODEL][0], rows[FORMULA_VERSIONS][0]
        marked = [night in off_set for night in rows[DUMP_DATE].to_list()]
        name = label(model) if not any(marked) else f"{label(model)} ({label(versions)})"
        fig.add_trace(
            go.Scatter(
                mode="lines+markers",
                name=name,
                x=[label(v) for v in rows[DUMP_DATE].to_list()],
                y=rows[SCORE].to_list(),
                error_y=error_bars(rows, SCORE, "ci_low", "ci_high"),
                marker={
                    "color": colours[model],
                    "symbol": ["x" if m else "circle" for m in marked],
                    "size": [11 if m else 7 for m in marked],
                },
                hovertemplate=f"{label(model)}<br>%{{x}}: %{{y:.3f}}<br>"
                f"{label(versions)}<extra></extra>",
            )
        )
    shares = sorted({f"{levels.get(n, DEFAULT_LEVEL):.0%}" for n in history[DUMP_DATE].unique()})
    what = "standing as of each night" if standing else "score on each night's episodes"
    layout(
        fig,
        f"Overall {what} per model ({', '.join(shares)} intervals, two-level design)",
        "as of night" if standing else "night (dump_date)",
        "overall score (0-1)",
    )
    # The nights in date order, whichever model's line came first.
    order = sorted({label(v) for v in history[DUMP_DATE].to_list()})
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    text = (
        f"Each model's overall standing as of each of the {n} nights of <code>standings</code>: "
        "its latest result on every task by then (a night it did not run keeps its results)."
        if standing
        else f"Each model's overall score in each of the {n} nights of <code>model_scores</code>"
        " (that night's episodes alone)."
    )
    if off_set:
        text += (
            " Nights scored with formula versions other than the output's set (marked x, "
            "each version set a line of its own): "
            + "; ".join(f"{html.escape(n)}: {html.escape(v)}" for n, v in off_set.items())
            + "."
        )
    return Section(key, title, text, [fig])
