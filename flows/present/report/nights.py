"""The report's charts across nights: each model's standing (or its night's own score)
night by night, one line per model on a date axis."""

from __future__ import annotations

import html
from collections.abc import Mapping

import plotly.graph_objects as go
import polars as pl

from flows.present.report.figures import Section, label, layout
from schemas.columns import SCORE
from schemas.comparisons import DEFAULT_LEVEL, FORMULA_VERSIONS
from schemas.contract import DUMP_DATE, Col


def over_time_section(
    history: pl.DataFrame,
    colours: dict[str, str],
    levels: Mapping[str | None, float],
    off_set: dict[str, str] | None = None,
    standing: bool = False,
) -> Section:
    """Each model's overall score per night (``standing``: as the benchmark stood as of each
    night, table ``standings``; else the night's own episodes, ``model_scores``): one line
    (one legend entry) per model on a date axis; a line never joins two nights that score
    a category with different formula versions (``_model_line``), and the nights scored
    with versions other than the output's set are marked (x) and named. ``levels``: each
    night's interval level (``flows.store.output.night_levels``)."""
    key, title = (
        ("standings", "Standings across nights") if standing else ("nights", "Across nights")
    )
    n = history[DUMP_DATE].n_unique()
    if n < 2:
        return Section(key, title, f"The tables hold {n} night: nothing to show over time yet.")
    off_set = off_set or {}
    fig = go.Figure()
    lines = history.sort(Col.MODEL, DUMP_DATE).group_by(Col.MODEL, maintain_order=True)
    for (model,), rows in lines:
        fig.add_trace(_model_line(str(model), rows, colours[str(model)], off_set))
    shares = sorted({f"{levels.get(n, DEFAULT_LEVEL):.0%}" for n in history[DUMP_DATE].unique()})
    what = "standing as of each night" if standing else "score on each night's episodes"
    layout(
        fig,
        f"Overall {what} per model ({', '.join(shares)} intervals, two-level design)",
        "as of night" if standing else "night (dump_date)",
        "overall score (0-1)",
    )
    # A date axis: the nights in date order, the days between them to scale.
    fig.update_xaxes(type="date", tickformat="%Y-%m-%d", hoverformat="%Y-%m-%d")
    text = (
        f"Each model's overall standing as of each of the {n} nights of <code>standings</code>: "
        "its latest result on every task by then (a night it did not run keeps its results)."
        if standing
        else f"Each model's overall score in each of the {n} nights of <code>model_scores</code>"
        " (that night's episodes alone)."
    )
    text += (
        " One line per model, the days between nights to scale; a line is broken where a "
        "category's formula version changes from one night to the next (a rescore of some "
        "nights), never where the model only covers other categories."
    )
    if off_set:
        text += (
            " Nights scored with formula versions other than the output's set (marked x): "
            + "; ".join(f"{html.escape(n)}: {html.escape(v)}" for n, v in off_set.items())
            + "."
        )
    return Section(key, title, text, [fig])


def _model_line(
    model: str, rows: pl.DataFrame, colour: str, off_set: Mapping[str, str]
) -> go.Scatter:
    """One model's line across nights (``rows`` in date order): broken (a gap) between two
    nights that score some category with different formula versions, its nights scored off
    the output's set marked x."""
    x: list[str | None] = []
    y: list[float | None] = []
    plus: list[float | None] = []
    minus: list[float | None] = []
    versions: list[str] = []
    marked: list[bool] = []
    before = None
    for r in rows.iter_rows(named=True):
        if before is not None and versions_differ(before, r[FORMULA_VERSIONS]):
            x.append(None)
            y.append(None)
            plus.append(None)
            minus.append(None)
            versions.append("")
            marked.append(False)
        before = r[FORMULA_VERSIONS]
        x.append(r[DUMP_DATE])
        y.append(r[SCORE])
        plus.append(None if r["ci_high"] is None else r["ci_high"] - r[SCORE])
        minus.append(None if r["ci_low"] is None else r[SCORE] - r["ci_low"])
        versions.append(label(r[FORMULA_VERSIONS]))
        marked.append(r[DUMP_DATE] in off_set)
    return go.Scatter(
        mode="lines+markers",
        name=label(model),
        legendgroup=label(model),
        x=x,
        y=y,
        text=versions,
        error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
        marker={
            "color": colour,
            "symbol": ["x" if m else "circle" for m in marked],
            "size": [11 if m else 7 for m in marked],
        },
        connectgaps=False,
        hovertemplate=f"{label(model)}<br>%{{x}}: %{{y:.3f}}<br>%{{text}}<extra></extra>",
    )


def versions_differ(before: str | None, after: str | None) -> bool:
    """Whether two nights' formula versions (``category=version``, comma-joined) score some
    category they both cover with different versions (one covering more categories than
    the other is no difference).

    >>> versions_differ("a=v1,b=v2", "a=v1,c=v3"), versions_differ("a=v1", "a=v2,b=v1")
    (False, True)
    """

    def parsed(text: str | None) -> dict[str, str]:
        pairs = (part.partition("=") for part in (text or "").split(",") if part)
        return {name.strip(): version.strip() for name, _, version in pairs}

    one, two = parsed(before), parsed(after)
    return any(one[name] != two[name] for name in one.keys() & two.keys())
