"""The report's sections of one category each: each category's leaderboard, the models'
profile across categories, procedural learning's steps and rounds, runtime RL's efficiency,
and accuracy against the examples used (concept formation, language learning)."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import polars as pl

from flows.present.report.figures import (
    SHORT,
    Section,
    fmt,
    label,
    layout,
    per_model_traces,
    tables_of,
)
from schemas.columns import N_EPISODES, RANK, SCORE
from schemas.comparisons import CI_HIGH, CI_LOW, N_TASKS, RANK_HIGH, RANK_LOW
from schemas.contract import (
    Category,
    Col,
)


def profile_section(
    profile: pl.DataFrame, colours: dict[str, str], night: str, level: float, standing: bool = True
) -> Section:
    """The category scores of each model: of the standing as of ``night`` (``standing``
    False: of the night's own episodes)."""
    table = tables_of(standing).categories.name
    of = f"as of {night}" if standing else f"of the night {night} alone"
    fig = go.Figure()
    per_model_traces(
        fig,
        profile,
        colours,
        Col.CATEGORY,
        SCORE,
        low="ci_low",
        high="ci_high",
        x_label=lambda c: label(SHORT.get(c, c)),
    )
    layout(
        fig,
        f"Category scores per model, {of} ({level:.0%} interval, two-level design)",
        "category",
        "category score (0-1)",
        barmode="group",
    )
    fig.update_yaxes(range=[0, 1.05])
    return Section(
        "profile",
        "Category profile",
        "Mean of the model's task scores in each category (table "
        f"<code>{html.escape(table)}</code>).",
        [fig],
    )


def category_leaderboards_section(
    categories: pl.DataFrame, night: str, level: float, standing: bool = True
) -> Section:
    """Each category's own leaderboard (``category_standings``, or ``category_scores`` of
    the night alone): its models in rank order, ranked among every model with a score in
    it, with the rank's interval, the score and its interval, the tasks and episodes behind
    it. A night scored before categories were ranked shows ``-`` for the ranks."""
    share = f"{level:.0%}"
    tables = []
    for category in Category:
        rows = categories.filter(pl.col(Col.CATEGORY) == category)
        if rows.is_empty():
            continue
        ranked = RANK in rows.columns and rows[RANK].null_count() == 0
        order = [RANK, Col.MODEL] if ranked else [SCORE, Col.MODEL]
        rows = rows.sort(order, descending=[False, False] if ranked else [True, False])
        body = "".join(
            f"<tr><td>{fmt(r.get(RANK), 'd')}</td>"
            f"<td>{fmt(r.get(RANK_LOW), 'd')}–{fmt(r.get(RANK_HIGH), 'd')}</td>"
            f"<td>{html.escape(r[Col.MODEL])}</td><td>{r[SCORE]:.3f}</td>"
            f"<td>{_interval(r.get(CI_LOW), r.get(CI_HIGH))}</td>"
            f"<td>{r[N_TASKS]}</td><td>{r[N_EPISODES]}</td></tr>"
            for r in rows.iter_rows(named=True)
        )
        tables.append(
            f"<h3>{html.escape(category.replace('_', ' '))}</h3>"
            f"<table><thead><tr><th>rank</th><th>{share} rank interval</th><th>model</th>"
            f"<th>score</th><th>{share} interval</th><th>tasks</th><th>episodes scored</th>"
            f"</tr></thead><tbody>{body}</tbody></table>"
        )
    source = "category_standings" if standing else "category_scores"
    of = f"as of {html.escape(night)}" if standing else f"of the night {html.escape(night)} alone"
    return Section(
        "category-leaderboards",
        "Leaderboard per category",
        f"Each category's own leaderboard {of} (table <code>{source}</code>), as the "
        "benchmark's sub-benchmarks are ranked: a model's category score is the mean of its "
        "task scores in the category, and it is ranked among every model with a score in it. "
        "The rank interval runs from 1 + the models significantly better to the last place "
        "the category's Holm-corrected paired comparisons leave it, and holds for every "
        "model of the category at once. A task its benchmark puts in no category (contract "
        "1.4) counts in the overall score alone, in none of these.",
        [],
        "".join(tables),
    )


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def procedural_section(
    curve: pl.DataFrame | None,
    where: str,
    components: pl.DataFrame,
    transfer: pl.DataFrame,
    colours: dict[str, str],
    *,
    night: str,
    level: float,
) -> Section:
    figures = []
    if curve is not None and not curve.is_empty():
        fig = go.Figure()
        per_model_traces(
            fig, curve, colours, Col.ROUND, "mean", kind="line", low="low", high="high"
        )
        layout(
            fig,
            f"Learning curve: mean round score by practice round, {night}",
            "practice round",
            f"mean round score (0-1, {level:.0%} interval)",
        )
        fig.update_xaxes(dtick=1)
        text = (
            "Round scores are not in the warehouse tables: they are "
            f"{html.escape(where)} (<code>kind = round_end</code>: episode_id, round, value), "
            "joined to <code>episode_scores</code> for the model; only scored episodes count."
        )
    else:
        fig = go.Figure()
        per_model_traces(fig, components, colours, "component", "mean", low="low", high="high")
        layout(
            fig,
            f"Procedural learning components per model, {night}",
            "component",
            f"mean component (0-1, {level:.0%} interval)",
            barmode="group",
        )
        text = (
            f"No learning curve: {html.escape(where)}. Shown instead: the mean of each "
            "procedural component of <code>episode_scores</code>."
        )
    figures.append(fig)
    box = go.Figure()
    for model in colours:
        rows = transfer.filter(pl.col(Col.MODEL) == model)
        if not rows.is_empty():
            box.add_trace(
                go.Box(
                    y=rows["transfer"].to_list(),
                    name=label(model),
                    marker={"color": colours[model]},
                    boxmean=True,
                )
            )
    layout(
        box,
        f"Transfer test score per episode, {night}",
        "model",
        "transfer score (0-1)",
        showlegend=False,
    )
    figures.append(box)
    return Section(
        "procedural",
        "Procedural learning",
        text + " The transfer score is the episode's test score (dashed line: mean).",
        figures,
    )


def runtime_rl_section(
    rates: pl.DataFrame, steps: pl.DataFrame, colours: dict[str, str], night: str, level: float
) -> Section:
    solve = go.Figure()
    per_model_traces(
        solve, rates, colours, Col.TASK, "rate", low="low", high="high", hover=" solved"
    )
    layout(
        solve,
        f"Runtime RL solve rate per model and task, {night}",
        "task",
        f"episodes solved (fraction, {level:.0%} Wilson interval)",
        barmode="group",
    )
    solve.update_yaxes(range=[0, 1.05])
    box = go.Figure()
    for model in colours:
        rows = steps.filter(pl.col(Col.MODEL) == model)
        if not rows.is_empty():
            box.add_trace(
                go.Box(
                    x=[label(t) for t in rows[Col.TASK].to_list()],
                    y=rows["steps"].to_list(),
                    name=label(model),
                    marker={"color": colours[model]},
                )
            )
    layout(
        box,
        f"Steps to solve, solved episodes, {night}",
        "task",
        "actions before the solving feedback (steps)",
        boxmode="group",
    )
    return Section(
        "runtime-rl",
        "Runtime RL",
        "Solve rate: share of episodes with a solving feedback; steps: <code>steps</code> of "
        "<code>episode_scores</code> (solved episodes only).",
        [solve, box],
    )


def examples_section(
    curves: dict[Category, pl.DataFrame], colours: dict[str, str], night: str, level: float
) -> Section:
    figures = []
    for category, frame in curves.items():
        fig = go.Figure()
        per_model_traces(
            fig,
            frame,
            colours,
            "examples_used",
            "mean",
            kind="line",
            low="low",
            high="high",
            x_label=lambda v: v,
        )
        layout(
            fig,
            f"{SHORT[category].capitalize()}: accuracy against examples used, {night}",
            "examples used (count)",
            f"mean test accuracy (0-1, {level:.0%} interval)",
        )
        fig.update_yaxes(range=[-0.05, 1.05])
        figures.append(fig)
    return Section(
        "examples",
        "Concept formation and language learning",
        "Mean test accuracy of the episodes that used the same number of examples "
        "(<code>examples_used</code>, <code>accuracy</code> of <code>episode_scores</code>).",
        figures,
    )
