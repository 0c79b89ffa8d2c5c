"""``cogscore report``: one self-contained HTML page built from the warehouse tables.

The package, along its seams: ``read`` (what the report reads of the output), ``shape``
(the frames it draws, pure), ``figures`` (Plotly building blocks), ``sections`` (each part
of the page) and ``page`` (the HTML, written atomically).

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

from flows.present.report.figures import SHORT, Section, fmt, label, palette
from flows.present.report.page import (
    attention_html,
    build_sections,
    provenance_html,
    render,
    script_json,
    write_report,
)
from flows.present.report.quality import reported_section
from flows.present.report.read import ReportError, Warehouse, read_warehouse, round_rows
from flows.present.report.shape import UNKNOWN

__all__ = [
    "SHORT",
    "UNKNOWN",
    "ReportError",
    "Section",
    "Warehouse",
    "attention_html",
    "build_sections",
    "fmt",
    "label",
    "palette",
    "provenance_html",
    "read_warehouse",
    "render",
    "reported_section",
    "round_rows",
    "script_json",
    "write_report",
]
