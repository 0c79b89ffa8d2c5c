"""The report's sections on the standing and how it moved (leaderboard, cost, comparisons,
regressions, over time), one function each: the figures of a shaped frame, the text
that says what they show, and a table where one helps. Every interval is labelled with the
level it was made at (``level``: the shown night's, ``flows.store.output.night_levels``)."""

from __future__ import annotations

import html
from typing import Any, Final

import plotly.graph_objects as go
import polars as pl

from flows.present.formats import signed
from flows.present.report.figures import (
    SHORT,
    Section,
    breakable,
    error_bars,
    fmt,
    label,
    layout,
    tables_of,
)
from flows.present.report.shape import PER_EPISODE
from schemas.columns import (
    CALLS,
    N_EPISODES,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    SCORE,
    USAGE_EPISODES,
    USAGE_INCOMPLETE,
    WALL_MS,
)
from schemas.comparisons import (
    HOLM_FAMILY_NOTE,
    N_RANKED,
    RANK_UB,
)
from schemas.contract import (
    COST_USD,
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
        oldest, newest = (
            f"<span class='whole'>{html.escape(str(r.get(n)))}</span>"
            for n in (OLDEST_NIGHT, NEWEST_NIGHT)
        )
        span = oldest if oldest == newest else f"{oldest} – {newest}"
        return f"<td class='name'>{span}</td>"  # a line may break at the dash, not in a date

    columns = 13 if standing else 12
    groups = board["ranked_among"].n_unique()
    rows, group = [], None
    for r in board.iter_rows(named=True):
        if groups > 1 and r["ranked_among"] != group:
            group = r["ranked_among"]
            rows.append(
                f"<tr class='group'><th colspan='{columns}'>coverage group: {among(r)}; "
                "ranks count within it</th></tr>"
            )
        rows.append(
            f"<tr><td>{r['rank']}</td><td>{r['rank_low']}–{r['rank_high']}</td>"
            f"<td>{r['rank_ub'] or '-'}</td><td class='name'>{breakable(r[Col.MODEL])}</td>"
            f"<td>{r[SCORE]:.3f}</td><td>{interval(r['ci_low'], r['ci_high'])}</td>"
            f"<td>{fmt(r['score_by_category'])}</td>"
            f"<td>{interval(r['ci_low_by_category'], r['ci_high_by_category'])}</td>"
            f"<td>{r['rank_by_category'] or '-'}</td>"
            f"<td class='name'>{among(r)}</td><td>{r['n_tasks']}</td><td>{r['n_episodes']}</td>"
            f"{nights_of(r)}</tr>"
        )
    table = (
        "<table class='board'><thead><tr><th>rank</th>"
        f"<th>{share} rank interval</th><th>rank (UB)</th><th>model</th>"
        f"<th>score</th><th>{share} interval</th><th>score by category</th>"
        f"<th>{share} interval</th><th>rank by category</th>"
        "<th>ranked among models covering</th><th>tasks</th>"
        f"<th>episodes scored</th>{'<th>results from</th>' * standing}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
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
        "measured). " + ranks_text(board, level, standing),
        [fig],
        table,
    )


def ranks_text(board: pl.DataFrame, level: float, standing: bool = True) -> str:
    """What the leaderboard's ranks are: within a coverage group, the rank (UB) of the
    verdicts and the rank interval of ``level``, and (where it is so) that no verdict
    separates any two models."""
    share = f"{level:.0%}"
    text = (
        "A <b>coverage group</b> is the models with results in the same categories "
        "(<i>ranked among</i>): models are ranked within their group only, never beside "
        "models of another coverage, so each group has its own rank 1"
        + (
            f" (here {board['ranked_among'].n_unique()} groups, each under a row that names it). "
            if board["ranked_among"].n_unique() > 1
            else ". "
        )
        + "Rank (UB) is 1 + the models of its group the verdicts call better (the "
        "Holm-corrected paired comparisons at α = 0.05, table "
        f"<code>{tables_of(standing).comparisons.name}</code>: the ▼ of the pairwise matrix); "
        f"the {share} rank interval runs from 1 + the models better at Holm p under "
        f"{1 - level:.2g} to the last place those tests leave the model, and holds for every "
        "model at once (at the default level, 0.95, its first place is rank (UB); at "
        "another level the two differ)."
    )
    crowded = board.filter(pl.col(N_RANKED) > 1)
    if not crowded.is_empty() and (crowded[RANK_UB].fill_null(1) == 1).all():
        text += (
            " No verdict tells any two models of a group apart (rank (UB) 1 everywhere): "
            "their results do not vary enough to test (one task each, say) or differ too "
            "little."
        )
    return text


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
                mode="markers",  # named in the legend: labels on the points overlap
                name=label(model),
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
    )
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[-0.05, 1.05])  # a point at 0 drawn whole

    def partial(r: dict[str, Any]) -> str:
        episodes = f"{r[USAGE_EPISODES]} of {r[N_EPISODES]}"
        return episodes + (f" ({r[USAGE_INCOMPLETE]} incomplete)" if r[USAGE_INCOMPLETE] else "")

    def seconds(milliseconds: float | None) -> str:
        return fmt(None if milliseconds is None else milliseconds / 1000, ",.1f")

    rows = "".join(
        f"<tr><td>{breakable(r[Col.MODEL])}</td><td>{r[SCORE]:.3f}</td>"
        f"<td>{fmt(r[per_episode], '.3g')}</td><td>{fmt(r[COST_USD], '.4g')}</td>"
        f"<td>{fmt(r[INPUT_TOKENS + PER_EPISODE], ',.0f')}</td>"
        f"<td>{fmt(r[OUTPUT_TOKENS + PER_EPISODE], ',.0f')}</td>"
        f"<td>{fmt(r[CALLS + PER_EPISODE], ',.1f')}</td>"
        f"<td>{seconds(r[LATENCY_MS + PER_EPISODE])}</td>"
        f"<td>{seconds(r[WALL_MS + PER_EPISODE])}</td><td>{partial(r)}</td></tr>"
        for r in costs.iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>model</th><th>score</th><th>$ per episode</th><th>$ total</th>"
        "<th>input tokens per episode</th><th>output tokens per episode</th>"
        "<th>model calls per episode</th><th>seconds of calls per episode</th>"
        "<th>wall seconds per episode</th>"
        "<th>episodes with usage (of scored)</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "cost",
        "Score against cost",
        "What each model's score cost: the model calls behind its episodes, as the harness "
        "recorded them (contract 1.3's usage, totalled in the tables' <code>cost_usd</code>, "
        "<code>input_tokens</code>, <code>output_tokens</code>, <code>latency_ms</code> and "
        "<code>calls</code> over <code>usage_episodes</code>), per episode that records "
        "usage (the seconds of calls are the calls' own, their latency; the wall seconds, "
        "<code>wall_ms</code>, the harness's, from each episode's start to its end). "
        "The models up and to "
        "the left score more for less (each model named in the legend and on hovering its "
        "point); one whose episodes or calls record usage only in part "
        "(<i>incomplete</i>) cost more than shown. Models without a recorded cost are not "
        "drawn.",
        [fig],
        table,
    )


VERDICT_MARK: Final = {"a_better": "▲", "b_better": "▼", "unresolved": "≈"}


def _family() -> str:
    """What Holm's family covers, as a sentence of the report."""
    note = HOLM_FAMILY_NOTE.removeprefix("verdicts: ")
    return note[0].upper() + note[1:] + "."


def comparisons_section(
    pairs: pl.DataFrame, board: pl.DataFrame, night: str, level: float, standing: bool = True
) -> Section:
    """The pairwise matrix of the overall scope: row model minus column model, of the
    standing as of ``night`` (``standing`` False: of the night's own episodes). The table's
    columns are numbered as its rows (the leaderboard's order; the name in each number's
    tooltip), so it keeps to the page's width however long the names."""
    what = "standing" if standing else "night"
    order = [m for m in board[Col.MODEL].to_list() if m in set(pairs["model_a"])]
    cell = {(r["model_a"], r["model_b"]): r for r in pairs.iter_rows(named=True)}

    def mark(a: str, b: str) -> str:
        return f"{VERDICT_MARK[cell[(a, b)]['verdict']]} {signed(cell[(a, b)]['diff'])}"

    z = [[cell[(a, b)]["diff"] if (a, b) in cell else None for b in order] for a in order]
    text = [[mark(a, b) if (a, b) in cell else "" for b in order] for a in order]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[label(m) for m in order],
            y=[label(m) for m in order],
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu",
            zmid=0,
            hovertemplate="%{y} − %{x}: %{text}<extra></extra>",
        )
    )
    of = f"as of {night}" if standing else f"of the night {night} alone"
    layout(fig, f"Row model minus column model, overall score, {of}", "model b", "model a")
    fig.update_yaxes(autorange="reversed")

    def tooltip(r: dict[str, Any]) -> str:
        return html.escape(
            f"{r['model_a']} − {r['model_b']}: {level:.0%} [{fmt(r['ci_low'])}, "
            f"{fmt(r['ci_high'])}], Holm p {fmt(r['p_holm'], '.3g')}, Wilcoxon p "
            f"{fmt(r['p_wilcoxon'], '.3g')}, tasks won {r['n_tasks_a_better']}-"
            f"{r['n_tasks_b_better']}, {r['design']}, {r['paired']}"
            + (f". {r['reason']}" if r.get("reason") else ""),
            quote=True,
        )

    header = "".join(
        f"<th title='{html.escape(b, quote=True)}'>{n}</th>" for n, b in enumerate(order, 1)
    )
    rows = "".join(
        f"<tr><th>{n}. {breakable(a)}</th>"
        + "".join(
            f"<td title='{tooltip(cell[(a, b)])}'>{mark(a, b)}</td>"
            if (a, b) in cell
            else "<td>-</td>"
            for b in order
        )
        + "</tr>"
        for n, a in enumerate(order, 1)
    )
    table = (
        "<table class='pairs'><thead><tr><th>a \\ b</th>"
        f"{header}</tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "comparisons",
        "Which model is better: paired comparisons",
        "Each cell is the row model's overall score minus the column model's (table "
        f"<code>{tables_of(standing).comparisons.name}</code>, scope <code>overall</code>): ▲ "
        "the row model is better, ▼ worse, ≈ not resolved, at α = 0.05 after Holm's correction "
        f"over every pair of the {what}. Paired over the tasks both models ran and over the "
        "instances they shared; the standard error follows the two-level design (the tasks a "
        "sample of the ability, the episodes within them). In the table the columns are "
        "numbered as the rows (the leaderboard's order); each cell's tooltip names the pair "
        "and gives the interval, the Holm and Wilcoxon signed-rank p-values over the tasks and "
        "the tasks each model won, and why a cell is unresolved for want of an estimate (a "
        "difference the same on every task, a spread of 0, is not evidence) or its interval "
        "approximate (few tasks). Only models covering the same categories are compared "
        "overall; every category (and the score by category) is compared in the table "
        f"<code>{tables_of(standing).comparisons.name}</code>. " + html.escape(_family()),
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
