"""``cogscore report``: one self-contained HTML page built from the warehouse tables.

Reading and shaping the tables are small pure functions of polars frames (one per chart);
the figures are Plotly's, drawn in the browser by plotly.js, which the page carries inline
with the data of every figure, so it opens with no network.

Every name that comes from a dump (models, tasks, rules, nights) is escaped where it enters
the page: ``html.escape`` in the HTML, ``&lt;`` entities in Plotly labels (plotly.js reads a
few HTML-like tags in its text and decodes entities, so an escaped name is drawn as written),
and the JSON of the figures cannot close its ``<script>`` element (``<``, ``>`` and ``&`` are
written as ``\\u003c``, ``\\u003e``, ``\\u0026``).
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from statistics import NormalDist
from typing import Any, Final

import plotly
import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative
from plotly.offline import get_plotlyjs

from flows.io import DumpFile, scan
from flows.output import TABLES, Output, night_levels
from flows.plan import nights_off_set
from schemas.comparisons import (
    ALERT_LEVEL,
    DEFAULT_LEVEL,
    DIFF_LEVEL,
    DIFF_LEVEL_MODEL,
    FORMULA_VERSIONS,
    LEVEL_ALERT,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    OVERALL,
)
from schemas.contract import DUMP_DATE, REPORTED_SCORE, Category, Col, Kind
from schemas.tables import (
    INPUT_FINGERPRINT,
    RULES,
    SCORE,
    SCORE_MISMATCH,
    STATUS,
    VERDICT_MISMATCHES,
    EpisodeStatus,
)

SHORT: Final = {
    c: c.removesuffix("_learning").removesuffix("_formation").replace("_", " ") for c in Category
}
UNKNOWN: Final = "(unknown)"


class ReportError(Exception):
    """OUT holds no tables to report on."""


# --- reading -------------------------------------------------------------------------------


@dataclass
class Warehouse:
    """The tables of one output folder (``dump_date`` as a string), and its manifest."""

    out: Output
    manifest: dict[str, Any]  # what the output holds (``Output.state``)
    tables: dict[str, pl.DataFrame]

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]


def read_warehouse(out: Output | Path | str, as_of: str | None = None) -> Warehouse:
    """The tables of ``out`` as its latest finished run (or run ``as_of``) left them."""
    out = Output.at(out)
    state = out.state(as_of)
    if not state or out.read("model_scores", as_of).is_empty():
        raise ReportError(f"{out} holds no scores: run cogscore score or nightly into it first")
    return Warehouse(out, state, {name: out.read(name, as_of) for name in TABLES})


def round_rows(manifest: dict[str, Any], night: str | None) -> tuple[pl.DataFrame | None, str]:
    """The ``round_end`` rows (episode_id, round, value) of the night's input files, read from
    the dump named in the manifest, and where they came from; ``None`` and why not when a
    file is gone or changed since it was scored (its size or modification time differ)."""
    entry = (
        manifest.get("nights", {}).get(night, {})
        if night is not None
        else manifest.get("undated", {})
    )
    root = str(entry.get("input") or manifest.get("input") or "")
    entries = [e for e in entry.get("files", []) if e.get("status") == "scored"]
    if not entries:
        return None, "the manifest lists no scored input file for this night"
    files = [_input_file(root, e["file"]) for e in entries]
    for dump_file, recorded in zip(files, entries, strict=True):
        if not dump_file.is_local:
            continue  # an object is read as it is now; its ETag was not kept to compare
        try:
            stat = Path(dump_file.path).stat()
        except OSError:
            return None, f"the input file {dump_file.path} is no longer there"
        if stat.st_size != recorded.get("bytes") or stat.st_mtime_ns != recorded.get("mtime_ns"):
            return None, f"the input file {dump_file.path} changed since it was scored"
    frames = [
        scan(dump_file)
        .filter(pl.col(Col.KIND) == Kind.ROUND_END)
        .select(
            pl.col(Col.EPISODE_ID).cast(pl.String),
            pl.col(Col.ROUND).cast(pl.Int64),
            pl.col(Col.VALUE).cast(pl.Float64),
        )
        for dump_file in files
    ]
    where = f"the round_end rows of {len(entries)} input file(s) under {root}"
    return pl.concat(frames).collect(), where


def _input_file(root: str, relative: str) -> DumpFile:
    """An input file named by the runs table: below a local root, or an object's URL."""
    if "://" in root:
        return DumpFile(f"{root.rstrip('/')}/{relative}", relative)
    return DumpFile(Path(root) / relative, relative)


# --- shaping: one pure function per chart ----------------------------------------------------


def nights(models: pl.DataFrame) -> list[str | None]:
    return sorted(models[DUMP_DATE].unique().to_list(), key=lambda n: (n is not None, n or ""))


def of_night(frame: pl.DataFrame, night: str | None) -> pl.DataFrame:
    if frame.is_empty() or DUMP_DATE not in frame:
        return frame
    return frame.filter(
        pl.col(DUMP_DATE).is_null() if night is None else pl.col(DUMP_DATE) == night
    )


def leaderboard(models: pl.DataFrame) -> pl.DataFrame:
    """The night's models, widest coverage first, each coverage group in rank order."""
    return models.select(
        "rank",
        "rank_low",
        "rank_high",
        "tier",
        "ranked_among",
        "n_ranked",
        Col.MODEL,
        SCORE,
        "ci_low",
        "ci_high",
        "score_by_category",
        "ci_low_by_category",
        "ci_high_by_category",
        "rank_by_category",
        "categories_covered",
        "n_episodes",
    ).sort(
        ["categories_covered", "ranked_among", "rank", Col.MODEL],
        descending=[True, False, False, False],
    )


def pairwise(comparisons: pl.DataFrame, scope: str = "overall") -> pl.DataFrame:
    """The night's comparisons in ``scope``: one row per ordered pair."""
    return comparisons.filter(pl.col("scope") == scope).select(
        "model_a",
        "model_b",
        "diff",
        "ci_low",
        "ci_high",
        "p_holm",
        "verdict",
        "paired",
        "design",
        "p_wilcoxon",
        "n_tasks_a_better",
        "n_tasks_b_better",
    )


def flagged_regressions(regressions: pl.DataFrame) -> pl.DataFrame:
    """The night's regression rows that are not quiet: alerts, watches, not comparable."""
    order = {LEVEL_ALERT: 0, LEVEL_WATCH: 1, LEVEL_NOT_COMPARABLE: 2}
    return (
        regressions.filter(pl.col(ALERT_LEVEL).is_in(list(order)))
        .with_columns(pl.col(ALERT_LEVEL).replace_strict(order, return_dtype=pl.Int64).alias("_o"))
        .sort("_o", Col.MODEL, "scope")
        .drop("_o")
    )


def category_profile(categories: pl.DataFrame) -> pl.DataFrame:
    order = {c: i for i, c in enumerate(Category)}
    return categories.select(
        Col.MODEL,
        Col.CATEGORY,
        SCORE,
        "ci_low",
        "ci_high",
        "n_episodes",
        pl.col(Col.CATEGORY).replace_strict(order, default=len(order)).alias("order"),
    ).sort("order", Col.MODEL)


def z_of(level: float) -> float:
    """The standard normal quantile of a two-sided ``level`` interval.

    >>> round(z_of(0.95), 4), round(z_of(0.90), 4)
    (1.96, 1.6449)
    """
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def mean_interval(value: str, level: float) -> list[pl.Expr]:
    """Mean, count and normal-approximation ``level`` interval of ``value`` (per group)."""
    half = z_of(level) * pl.col(value).std() / pl.col(value).count().sqrt()
    return [
        pl.col(value).mean().alias("mean"),
        pl.col(value).count().alias("n"),
        (pl.col(value).mean() - half).alias("low"),
        (pl.col(value).mean() + half).alias("high"),
    ]


def learning_curve(rounds: pl.DataFrame, episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Mean round score by practice round and model, over the night's scored procedural
    episodes (the rounds of rejected episodes are left out by the join)."""
    scored = episodes.filter(pl.col(Col.CATEGORY) == Category.PROCEDURAL_LEARNING).select(
        Col.EPISODE_ID, Col.MODEL
    )
    return (
        rounds.join(scored, on=Col.EPISODE_ID, how="inner")
        .group_by(Col.MODEL, Col.ROUND)
        .agg(mean_interval(Col.VALUE, level))
        .sort(Col.MODEL, Col.ROUND)
    )


PROCEDURAL_COMPONENTS: Final = ("asymptote", "trajectory", "consistency", "transfer")


def procedural_components(episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Per model and component: the mean of the procedural episodes' component."""
    return (
        episodes.filter(pl.col(Col.CATEGORY) == Category.PROCEDURAL_LEARNING)
        .unpivot(PROCEDURAL_COMPONENTS, index=Col.MODEL, variable_name="component")
        .group_by(Col.MODEL, "component")
        .agg(mean_interval("value", level))
        .sort(Col.MODEL, "component")
    )


def episode_values(episodes: pl.DataFrame, category: Category, value: str) -> pl.DataFrame:
    """``value`` of every scored episode of ``category`` that has one."""
    return (
        episodes.filter((pl.col(Col.CATEGORY) == category) & pl.col(value).is_not_null())
        .select(Col.MODEL, Col.TASK, value)
        .sort(Col.MODEL, Col.TASK)
    )


def solve_rates(episodes: pl.DataFrame, level: float) -> pl.DataFrame:
    """Runtime RL solve rate per model and task with its ``level`` Wilson interval."""
    z = z_of(level)
    z2 = z * z
    n, p = pl.col("n"), pl.col("rate")
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * ((p * (1 - p) / n + z2 / (4 * n * n)).sqrt()) / (1 + z2 / n)
    return (
        episodes.filter(pl.col(Col.CATEGORY) == Category.RUNTIME_RL)
        .group_by(Col.MODEL, Col.TASK)
        .agg(pl.col("success").cast(pl.Float64).mean().alias("rate"), pl.len().alias("n"))
        .with_columns((centre - half).alias("low"), (centre + half).alias("high"))
        .sort(Col.TASK, Col.MODEL)
    )


def accuracy_by_examples(episodes: pl.DataFrame, category: Category, level: float) -> pl.DataFrame:
    """Mean accuracy per model and number of examples used (with its interval)."""
    return (
        episodes.filter((pl.col(Col.CATEGORY) == category) & pl.col("examples_used").is_not_null())
        .group_by(Col.MODEL, "examples_used")
        .agg(mean_interval("accuracy", level))
        .sort(Col.MODEL, "examples_used")
    )


def over_time(models: pl.DataFrame) -> pl.DataFrame:
    return (
        models.filter(pl.col(DUMP_DATE).is_not_null())
        .select(DUMP_DATE, Col.MODEL, SCORE, "ci_low", "ci_high", "rank", FORMULA_VERSIONS)
        .sort(DUMP_DATE, Col.MODEL)
    )


def reject_reasons(rejects: pl.DataFrame) -> pl.DataFrame:
    """Rejected episodes (not harness errors) per rule broken and model: an episode that
    broke two rules counts under both."""
    return (
        rejects.filter(pl.col(STATUS) == EpisodeStatus.REJECTED)
        .select(pl.col(Col.MODEL).fill_null(UNKNOWN), pl.col(RULES).alias("rule"))
        .explode("rule")
        .group_by("rule", Col.MODEL)
        .agg(pl.len().alias("episodes"))
        .sort("rule", Col.MODEL)
    )


def harness_errors(rejects: pl.DataFrame) -> pl.DataFrame:
    return (
        rejects.filter(pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR)
        .group_by(pl.col(Col.MODEL).fill_null(UNKNOWN), pl.col(DUMP_DATE).fill_null("undated"))
        .agg(pl.len().alias("episodes"))
        .sort(DUMP_DATE, Col.MODEL)
    )


def diff_rows(diff: pl.DataFrame) -> pl.DataFrame:
    """The rescore diff, one row per night, model and level, ``what`` = overall or the
    category."""
    return diff.select(
        DUMP_DATE,
        Col.MODEL,
        pl.when(pl.col(DIFF_LEVEL) == DIFF_LEVEL_MODEL)
        .then(pl.lit(OVERALL))
        .otherwise(pl.col(Col.CATEGORY))
        .alias("what"),
        "old_score",
        "new_score",
        "delta",
        "old_rank",
        "new_rank",
        "old_formula",
        "new_formula",
        (pl.col(DIFF_LEVEL) == DIFF_LEVEL_MODEL).alias("overall"),
    ).sort(DUMP_DATE, pl.col("overall").not_(), "what", Col.MODEL)


# --- figures --------------------------------------------------------------------------------


def fmt(value: float | None, spec: str = ".3f") -> str:
    """A number for a table cell; "-" where there is none."""
    return "-" if value is None else format(value, spec)


def label(text: object) -> str:
    """A name as plotly.js text: drawn as written, never read as one of its tags."""
    return html.escape(str(text), quote=False)


def palette(models: list[str]) -> dict[str, str]:
    colours = qualitative.Plotly + qualitative.D3
    return {m: colours[i % len(colours)] for i, m in enumerate(models)}


def _layout(fig: go.Figure, title: str, x: str, y: str, **more: Any) -> go.Figure:
    more.setdefault("legend_title_text", "model")
    fig.update_layout(
        title={"text": label(title)},
        xaxis_title={"text": label(x)},
        yaxis_title={"text": label(y)},
        template="plotly_white",
        height=420,
        margin={"t": 60, "l": 70, "r": 20, "b": 70},
        **more,
    )
    return fig


def _errors(frame: pl.DataFrame, value: str, low: str, high: str) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": (frame[high] - frame[value]).to_list(),
        "arrayminus": (frame[value] - frame[low]).to_list(),
    }


@dataclass
class Section:
    key: str
    title: str
    text: str  # HTML, already escaped
    figures: list[go.Figure] = field(default_factory=list)
    after: str = ""  # HTML after the charts (a table), already escaped


def _per_model_traces(
    fig: go.Figure,
    frame: pl.DataFrame,
    colours: dict[str, str],
    x: str,
    y: str,
    kind: str = "bar",
    low: str | None = None,
    high: str | None = None,
    hover: str = "",
    x_label: Any = label,
) -> None:
    for model in colours:
        rows = frame.filter(pl.col(Col.MODEL) == model)
        if rows.is_empty():
            continue
        common: dict[str, Any] = {
            "name": label(model),
            "x": [x_label(v) for v in rows[x].to_list()],
            "y": rows[y].to_list(),
            "marker": {"color": colours[model]},
            "hovertemplate": f"{label(model)}<br>%{{x}}: %{{y:.3f}}{hover}<extra></extra>",
        }
        if low and high:
            errors = _errors(rows, y, low, high)
            common["error_y"] = errors
        if kind == "bar":
            fig.add_trace(go.Bar(**common))
        else:
            fig.add_trace(go.Scatter(mode="lines+markers", **common))


def leaderboard_section(
    board: pl.DataFrame, colours: dict[str, str], night: str, level: float
) -> Section:
    share = f"{level:.0%}"
    fig = go.Figure(
        go.Bar(
            x=board[SCORE].to_list(),
            y=[label(m) for m in board[Col.MODEL].to_list()],
            orientation="h",
            marker={"color": [colours[m] for m in board[Col.MODEL].to_list()]},
            error_x=_errors(board, SCORE, "ci_low", "ci_high"),
            text=[f"{c}/6 categories" for c in board["categories_covered"].to_list()],
            textposition="inside",
            insidetextanchor="start",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    _layout(
        fig,
        f"Overall score per model, {night} ({share} interval)",
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

    rows = "".join(
        f"<tr><td>{r['rank']}</td><td>{r['rank_low']}–{r['rank_high']}</td>"
        f"<td>{r['tier'] or '-'}</td><td>{html.escape(r[Col.MODEL])}</td>"
        f"<td>{r[SCORE]:.3f}</td><td>{interval(r['ci_low'], r['ci_high'])}</td>"
        f"<td>{fmt(r['score_by_category'])}</td>"
        f"<td>{interval(r['ci_low_by_category'], r['ci_high_by_category'])}</td>"
        f"<td>{r['rank_by_category'] or '-'}</td>"
        f"<td>{among(r)}</td><td>{r['n_episodes']}</td></tr>"
        for r in board.iter_rows(named=True)
    )
    table = (
        f"<table><thead><tr><th>rank</th><th>{share} rank interval</th><th>tier</th>"
        f"<th>model</th><th>score</th><th>{share} interval</th><th>score by category</th>"
        f"<th>{share} interval</th><th>rank by category</th>"
        "<th>ranked among models covering</th>"
        f"<th>episodes scored</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "leaderboard",
        "Leaderboard",
        "Each model's overall score is the mean of its task scores, each task weighing the "
        "same (the benchmark's own overall score; its published leaderboard ranks by it); "
        "the score by category weighs each category the same. Intervals follow the "
        "two-level sampling design: the tasks a sample of the ability, the episodes a sample "
        'within each task (README "Comparisons"; "-" where no spread can be measured). '
        "Models are ranked among those covering the same categories, never beside models of "
        "another coverage. The rank interval comes from a bootstrap that draws the same "
        "tasks for every model; a tier holds the best remaining model and every model not "
        "significantly worse than it (Holm-corrected paired comparisons, table "
        "<code>model_comparisons</code>).",
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
    _layout(fig, f"Row model minus column model, overall score, {night}", "model b", "model a")
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


def regressions_section(flagged: pl.DataFrame, night: str, level: float) -> Section:
    """The night's alerts, watches and changes that are not comparable."""

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
        "the model's. " + ("Nothing to report." if flagged.is_empty() else ""),
        [],
        table if not flagged.is_empty() else "",
    )


def profile_section(
    profile: pl.DataFrame, colours: dict[str, str], night: str, level: float
) -> Section:
    fig = go.Figure()
    _per_model_traces(
        fig,
        profile,
        colours,
        Col.CATEGORY,
        SCORE,
        low="ci_low",
        high="ci_high",
        x_label=lambda c: label(SHORT.get(c, c)),
    )
    _layout(
        fig,
        f"Category scores per model, {night} ({level:.0%} interval, two-level design)",
        "category",
        "category score (0-1)",
        barmode="group",
    )
    fig.update_yaxes(range=[0, 1.05])
    return Section(
        "profile",
        "Category profile",
        "Mean of the model's task scores in each category (table <code>category_scores</code>).",
        [fig],
    )


def procedural_section(
    curve: pl.DataFrame | None,
    where: str,
    components: pl.DataFrame,
    transfer: pl.DataFrame,
    colours: dict[str, str],
    night: str,
    level: float,
) -> Section:
    figures = []
    if curve is not None and not curve.is_empty():
        fig = go.Figure()
        _per_model_traces(
            fig, curve, colours, Col.ROUND, "mean", kind="line", low="low", high="high"
        )
        _layout(
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
        _per_model_traces(fig, components, colours, "component", "mean", low="low", high="high")
        _layout(
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
    _layout(
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
    _per_model_traces(
        solve, rates, colours, Col.TASK, "rate", low="low", high="high", hover=" solved"
    )
    _layout(
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
    _layout(
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
        _per_model_traces(
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
        _layout(
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


def over_time_section(
    history: pl.DataFrame,
    colours: dict[str, str],
    levels: Mapping[str | None, float],
    off_set: dict[str, str] | None = None,
) -> Section:
    """Each model's overall score per night; a line never joins nights scored with other
    formula versions (each set of versions is a line of its own), and the nights scored
    with versions other than the output's set are marked (x) and named. ``levels``: each
    night's interval level (``flows.output.night_levels``)."""
    n = history[DUMP_DATE].n_unique()
    if n < 2:
        return Section(
            "nights",
            "Across nights",
            f"The tables hold {n} night: nothing to show over time yet.",
        )
    off_set = off_set or {}
    fig = go.Figure()
    lines = history.partition_by(Col.MODEL, FORMULA_VERSIONS, maintain_order=True)
    for rows in sorted(lines, key=lambda r: (r[Col.MODEL][0], r[DUMP_DATE].min())):
        model, versions = rows[Col.MODEL][0], rows[FORMULA_VERSIONS][0]
        marked = [night in off_set for night in rows[DUMP_DATE].to_list()]
        name = label(model) if not any(marked) else f"{label(model)} ({label(versions)})"
        fig.add_trace(
            go.Scatter(
                mode="lines+markers",
                name=name,
                x=[label(v) for v in rows[DUMP_DATE].to_list()],
                y=rows[SCORE].to_list(),
                error_y=_errors(rows, SCORE, "ci_low", "ci_high"),
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
    _layout(
        fig,
        f"Overall score per model over nights ({', '.join(shares)} intervals, two-level design)",
        "night (dump_date)",
        "overall score (0-1)",
    )
    fig.update_xaxes(type="category")
    return Section(
        "nights",
        "Across nights",
        f"Each model's overall score in each of the {n} nights of <code>model_scores</code>."
        + (
            " Nights scored with formula versions other than the output's set (marked x, "
            "each version set a line of its own): "
            + "; ".join(f"{html.escape(n)}: {html.escape(v)}" for n, v in off_set.items())
            + "."
            if off_set
            else ""
        ),
        [fig],
    )


def count_step(counts: pl.DataFrame, by: str) -> int:
    """A whole-number tick step for stacked counts of ``episodes`` per ``by`` (about 8 ticks)."""
    most = counts.group_by(by).agg(pl.col("episodes").sum()).select(pl.col("episodes").max())
    return max(1, -(-int(most.item() or 0) // 8))


def quality_section(
    reasons: pl.DataFrame, errors: pl.DataFrame, colours: dict[str, str], night: str
) -> Section:
    figures, notes = [], []
    models = {**colours, UNKNOWN: "#888888"}
    if reasons.is_empty():
        notes.append("no episode was rejected")
    else:
        fig = go.Figure()
        _per_model_traces(fig, reasons, models, "rule", "episodes", hover=" episodes")
        _layout(
            fig,
            f"Rejected episodes by rule broken and model, {night}",
            "rule (schemas/rules.py)",
            "rejected episodes (count)",
            barmode="stack",
        )
        fig.update_yaxes(dtick=count_step(reasons, "rule"))
        figures.append(fig)
    if errors.is_empty():
        notes.append("no harness error")
    else:
        fig = go.Figure()
        for i, (day,) in enumerate(errors.select(DUMP_DATE).unique(maintain_order=True).rows()):
            rows = errors.filter(pl.col(DUMP_DATE) == day)
            fig.add_trace(
                go.Bar(
                    x=[label(m) for m in rows[Col.MODEL].to_list()],
                    y=rows["episodes"].to_list(),
                    name=label(day),
                    marker={"color": qualitative.Pastel[i % len(qualitative.Pastel)]},
                )
            )
        _layout(
            fig,
            "Harness errors by model and night",
            "model",
            "episodes ended by a harness error (count)",
            barmode="stack",
            legend_title_text="night",
        )
        fig.update_yaxes(dtick=count_step(errors, Col.MODEL))
        figures.append(fig)
    return Section(
        "quality",
        "Data quality",
        "Episodes not scored (table <code>rejects</code>): rejected for breaking contract rules "
        "(an episode counts under every rule it broke), or ended by a harness error"
        + (f"; {', '.join(notes)}" if notes else "")
        + ".",
        figures,
    )


def diff_section(diff: pl.DataFrame, colours: dict[str, str]) -> Section:
    figures = []
    for (day,) in diff.select(DUMP_DATE).unique(maintain_order=True).rows():
        rows = diff.filter(pl.col(DUMP_DATE) == day)
        changed = rows.filter(pl.col("old_formula") != pl.col("new_formula"))
        formulas = ", ".join(
            f"{SHORT.get(w, w)} {o} → {n}"
            for w, o, n in changed.filter(~pl.col("overall"))
            .select("what", "old_formula", "new_formula")
            .unique()
            .sort("what")
            .rows()
        )
        fig = go.Figure()
        _per_model_traces(
            fig,
            rows,
            colours,
            "what",
            "delta",
            hover=" change",
            x_label=lambda w: label(SHORT.get(w, w)),
        )
        _layout(
            fig,
            f"Rescore of {day}: new minus old score ({formulas or 'same formulas'})",
            "overall score and category",
            "score change (new - old, points of 0-1)",
            barmode="group",
        )
        figures.append(fig)
    overall = diff.filter(pl.col("overall")).sort(DUMP_DATE, "new_rank", Col.MODEL)

    table_rows = "".join(
        f"<tr><td>{html.escape(str(r[DUMP_DATE]))}</td><td>{html.escape(r[Col.MODEL])}</td>"
        f"<td>{fmt(r['old_score'])}</td><td>{fmt(r['new_score'])}</td>"
        f"<td>{fmt(r['delta'], '+.3f')}</td>"
        f"<td>{r['old_rank'] or '-'} → {r['new_rank'] or '-'}</td></tr>"
        for r in overall.iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>night</th><th>model</th><th>old score</th><th>new score</th>"
        f"<th>change</th><th>rank</th></tr></thead><tbody>{table_rows}</tbody></table>"
    )
    return Section(
        "rescore",
        "What the last rescore changed",
        "Table <code>rescore_diff</code>: the change of each model's overall score and of "
        "each category score, new formula minus old.",
        figures,
        table,
    )


# --- the page -------------------------------------------------------------------------------


def build_sections(wh: Warehouse, night: str | None) -> tuple[str, list[Section]]:
    models = wh["model_scores"]
    all_nights = nights(models)
    if night is None:
        night = all_nights[-1]
    elif night not in all_nights:
        raise ReportError(
            f"no night {night!r} in {wh.out} (nights: {', '.join(map(str, all_nights))})"
        )
    shown = night or "undated"
    board = leaderboard(of_night(models, night))
    colours = palette(board[Col.MODEL].to_list())
    # Models of other nights get colours too (for the chart across nights).
    for m in sorted(set(models[Col.MODEL].to_list()) - set(colours)):
        colours[m] = palette([*colours, m])[m]
    episodes = of_night(wh["episode_scores"], night)
    rounds, where = round_rows(wh.manifest, night)
    levels = night_levels(wh.manifest)
    level = levels.get(night, DEFAULT_LEVEL)  # the level of the run that scored the night
    comparisons = pairwise(of_night(wh["model_comparisons"], night))
    profile = category_profile(of_night(wh["category_scores"], night))
    sections = [
        leaderboard_section(board, colours, shown, level),
        comparisons_section(comparisons, board, shown, level),
        regressions_section(flagged_regressions(of_night(wh["regressions"], night)), shown, level),
        profile_section(profile, colours, shown, level),
        procedural_section(
            None if rounds is None else learning_curve(rounds, episodes, level),
            where,
            procedural_components(episodes, level),
            episode_values(episodes, Category.PROCEDURAL_LEARNING, "transfer"),
            colours,
            shown,
            level,
        ),
        runtime_rl_section(
            solve_rates(episodes, level),
            episode_values(episodes, Category.RUNTIME_RL, "steps"),
            colours,
            shown,
            level,
        ),
        examples_section(
            {
                c: accuracy_by_examples(episodes, c, level)
                for c in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING)
            },
            colours,
            shown,
            level,
        ),
        over_time_section(over_time(models), colours, levels, nights_off_set(wh.manifest)),
    ]
    rejects = wh["rejects"]
    if rejects.is_empty():
        sections.append(Section("quality", "Data quality", "Every episode was scored."))
    else:
        reasons = reject_reasons(of_night(rejects, night))
        sections.append(quality_section(reasons, harness_errors(rejects), colours, shown))
    reported = reported_section(episodes)
    if reported is not None:
        sections.append(reported)
    if not wh["rescore_diff"].is_empty():
        sections.append(diff_section(diff_rows(wh["rescore_diff"]), colours))
    return shown, sections


REPORTED_LISTED: Final = 20


def reported_section(episodes: pl.DataFrame) -> Section | None:
    """Contract 1.2: the night's episodes scored other than the harness reported (counted,
    the first ones listed) and those whose item verdicts differ from the harness's. None
    where the night has no reported score and no recorded verdict."""
    if SCORE_MISMATCH not in episodes.columns:
        return None  # scored before contract 1.2
    reported = episodes.filter(pl.col(REPORTED_SCORE).is_not_null())
    judged = episodes.filter(pl.col(VERDICT_MISMATCHES).is_not_null())
    if reported.is_empty() and judged.is_empty():
        return None
    differ = reported.filter(pl.col(SCORE_MISMATCH)).sort(Col.EPISODE_ID)
    verdicts = judged.filter(pl.col(VERDICT_MISMATCHES) > 0).height
    text = (
        f"<p>{differ.height} of {reported.height} episode(s) with a reported score were scored "
        "otherwise (float64 inequality; column <code>score_mismatch</code>); "
        f"{verdicts} of {judged.height} episode(s) with recorded verdicts have items whose "
        "verdict differs from the harness's (<code>verdict_mismatches</code>).</p>"
    )
    rows = "".join(
        f"<tr><td>{html.escape(str(r[Col.EPISODE_ID]))}</td><td>{html.escape(str(r[Col.TASK]))}"
        f"</td><td>{html.escape(str(r[Col.MODEL]))}</td><td>{r[SCORE]!r}</td>"
        f"<td>{r[REPORTED_SCORE]!r}</td></tr>"
        for r in differ.head(REPORTED_LISTED).iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>episode</th><th>task</th><th>model</th><th>score</th>"
        f"<th>reported</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    return Section("reported", "Reported scores", text, after=table)


def script_json(text: str) -> str:
    """JSON that is safe inside ``<script>``: no ``<``, ``>`` or ``&`` is left to close
    the element or start a comment (in JSON they occur only inside strings)."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def attention_html(wh: Warehouse, night: str | None) -> str:
    """What must not pass silently: nights whose latest attempt failed (not written), and
    the shown night's models with episodes but none scored (absent from its leaderboard)."""
    from flows.status import failed_nights

    items = [
        f"<li>night <b>{html.escape(n)}</b> failed: {html.escape(why)}</li>"
        for n, why in failed_nights(wh.out, wh.manifest).items()
    ]
    entry = wh.manifest.get("nights", {}).get(night, {}) if night is not None else {}
    items += [
        f"<li>model <b>{html.escape(model)}</b> has no score on {html.escape(str(night))}: "
        f"{html.escape(why)} (not ranked)</li>"
        for model, why in entry.get("models_unscored", {}).items()
    ]
    if not items:
        return ""
    return f"<div class='attention' id='attention'><ul>{''.join(items)}</ul></div>"


def provenance_html(wh: Warehouse, night: str | None) -> str:
    models = wh["model_scores"]
    rows = []
    for n in nights(models):
        these = of_night(models, n)
        fingerprints = ", ".join(sorted(set(these[INPUT_FINGERPRINT].drop_nulls().to_list())))
        versions = ", ".join(sorted(set(these["formula_versions"].drop_nulls().to_list())))
        mark = " (shown)" if n == night else ""
        rows.append(
            f"<tr><td>{html.escape(str(n or 'undated'))}{mark}</td>"
            f"<td><code>{html.escape(fingerprints)}</code></td>"
            f"<td><code>{html.escape(versions)}</code></td></tr>"
        )
    m = wh.manifest
    boot = m.get("bootstrap", {})
    return (
        "<table class='prov'><thead><tr><th>night</th><th>input fingerprint</th>"
        f"<th>formula versions</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<p>Tables in <code>{html.escape(str(wh.out))}</code>, last run finished "
        f"{html.escape(str(m.get('finished', '?')))} (scorer "
        f"{html.escape(str(m.get('scorer_version', '?')))}, commit "
        f"<code>{html.escape(str(m.get('cogscore_commit', '?')))[:12]}</code>), input "
        f"<code>{html.escape(str(m.get('input', '?')))}</code>. Intervals: "
        f"{html.escape(_share(boot.get('level')))} intervals, sampling design "
        f"{html.escape(str(boot.get('design', 'within_tasks (before issue 29)')))}, "
        f"{html.escape(str(boot.get('resamples', '?')))} bootstrap resamples, seed "
        f"{html.escape(str(boot.get('seed', '?')))}.</p>"
    )


def _share(level: object) -> str:
    """A level as a percentage ("95%"); "?" where the run recorded none.

    >>> _share(0.95), _share(None)
    ('95%', '?')
    """
    return f"{level:.0%}" if isinstance(level, float) else "?"


STYLE: Final = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em;
       color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-top: 0.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
th { background: #f4f4f4; } code { font-size: 0.85em; word-break: break-all; }
.chart { width: 100%; min-height: 420px; margin: 0.5em 0 1.5em 0; }
nav a { margin-right: 1em; } .note { color: #555; }
.attention { border: 2px solid #c0392b; background: #fdecea; padding: 0.2em 1em; }
"""

DRAW: Final = """
(function () {
  var figures = JSON.parse(document.getElementById("cogscore-figures").textContent);
  var config = {displaylogo: false, responsive: true};
  Promise.all(Object.keys(figures).map(function (id) {
    return Plotly.newPlot(id, figures[id].data, figures[id].layout, config);
  })).then(function () { document.body.setAttribute("data-charts", "drawn"); },
           function (error) { document.body.setAttribute("data-charts", "failed");
                              console.error("a chart failed to draw", error); });
})();
"""


def render(wh: Warehouse, night: str | None = None) -> str:
    """The page, as one string of HTML."""
    shown, sections = build_sections(wh, night)
    figures: dict[str, str] = {}
    body = []
    for section in sections:
        charts = []
        for fig in section.figures:
            chart_id = f"chart-{len(figures) + 1}"
            figures[chart_id] = fig.to_json()
            charts.append(f"<div class='chart' id='{chart_id}'></div>")
        body.append(
            f"<section id='{section.key}'><h2>{html.escape(section.title)}</h2>"
            f"<p class='note'>{section.text}</p>{''.join(charts)}{section.after}</section>"
        )
    nav = "".join(f"<a href='#{s.key}'>{html.escape(s.title)}</a>" for s in sections)
    blob = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in figures.items()) + "}"
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>cogscore report, {html.escape(shown)}</title>"
        f"<style>{STYLE}</style></head><body data-charts='pending'>"
        f"<h1>cogscore report</h1><p>Night shown: <b>{html.escape(shown)}</b>; "
        f"generated {generated} from the warehouse tables; "
        f"{len(figures)} charts (plotly.js {html.escape(plotly.__version__)} "
        "(Python), inline: the page needs no network).</p>"
        f"{attention_html(wh, None if shown == 'undated' else shown)}"
        f"{provenance_html(wh, None if shown == 'undated' else shown)}<nav>{nav}</nav>"
        f"{''.join(body)}"
        f"<script>{get_plotlyjs()}</script>"
        f"<script type='application/json' id='cogscore-figures'>{script_json(blob)}</script>"
        f"<script>{DRAW}</script></body></html>\n"
    )


def write_report(
    out: Output | Path | str, path: Path, night: str | None = None, as_of: str | None = None
) -> Path:
    """Write the report of ``out`` (as run ``as_of`` left it: by default the latest
    finished run) to ``path`` (atomically: a reader never sees half)."""
    page = render(read_warehouse(Output.at(out), as_of), night)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return path
