"""Plotly building blocks of the report: labels that plotly.js draws as written, the
models' colours, error bars, one trace per model, and ``Section`` (a part of the page: its
text, figures and table)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Final

import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative

from schemas.contract import Category, Col
from schemas.views import VIEWS, View, ViewTables

# The categories' names, short enough for an axis.
SHORT: Final = {
    c: c.removesuffix("_learning").removesuffix("_formation").replace("_", " ") for c in Category
}


def tables_of(standing: bool) -> ViewTables:
    """The tables a section of the standing (``standing`` False: of the night's own
    episodes) draws, for its caption."""
    return VIEWS[View.STANDING if standing else View.NIGHT]


def fmt(value: float | None, spec: str = ".3f") -> str:
    """A number for a table cell; "-" where there is none."""
    return "-" if value is None else format(value, spec)


def script_json(text: str) -> str:
    """JSON that is safe inside ``<script>``: no ``<``, ``>`` or ``&`` is left to close
    the element or start a comment (in JSON they occur only inside strings)."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def breakable(name: object) -> str:
    """A name as HTML text that a line may break after a "/" or before a "@" (a model's
    slug, ``openai/gpt-5.4-2026-03-05``, has no other place to break but inside a word).

    >>> breakable("anthropic/claude-haiku-4-5@20251001"), breakable("<b> x")
    ('anthropic/<wbr>claude-haiku-4-5<wbr>@20251001', '&lt;b&gt; x')
    """
    return html.escape(str(name)).replace("/", "/<wbr>").replace("@", "<wbr>@")


def label(text: object) -> str:
    """A name as plotly.js text: drawn as written, never read as one of its tags."""
    return html.escape(str(text), quote=False)


def palette(models: list[str]) -> dict[str, str]:
    colours = qualitative.Plotly + qualitative.D3
    return {m: colours[i % len(colours)] for i, m in enumerate(models)}


def layout(fig: go.Figure, title: str, x: str, y: str, **more: Any) -> go.Figure:
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


def error_bars(frame: pl.DataFrame, value: str, low: str, high: str) -> dict[str, Any]:
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


def per_model_traces(
    fig: go.Figure,
    frame: pl.DataFrame,
    colours: dict[str, str],
    x: str,
    y: str,
    *,
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
            errors = error_bars(rows, y, low, high)
            common["error_y"] = errors
        if kind == "bar":
            fig.add_trace(go.Bar(**common))
        else:
            fig.add_trace(go.Scatter(mode="lines+markers", **common))
