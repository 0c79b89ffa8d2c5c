"""The page: the sections of the shown night from the tables read, the attention and
provenance notes, and one self-contained HTML string (plotly.js and the figures' JSON
inline), written atomically."""

from __future__ import annotations

import html
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import plotly
import polars as pl
from plotly.offline import get_plotlyjs

from flows.overview import failed_nights, runs_not_imported
from flows.plan import nights_off_set
from flows.present.report.categories import (
    category_leaderboards_section,
    examples_section,
    procedural_section,
    profile_section,
    runtime_rl_section,
)
from flows.present.report.changes import changes_section
from flows.present.report.figures import Section, palette, script_json
from flows.present.report.hypotheses import hypotheses_section
from flows.present.report.nights import over_time_section
from flows.present.report.quality import (
    diff_section,
    health_section,
    quality_section,
    reported_section,
)
from flows.present.report.read import ReportError, Warehouse, read_warehouse, round_rows
from flows.present.report.results import MATRIX_JS, results_section
from flows.present.report.results import STYLE as RESULTS_STYLE
from flows.present.report.sections import (
    comparisons_section,
    cost_section,
    leaderboard_section,
    regressions_section,
)
from flows.present.report.shape import (
    accuracy_by_examples,
    category_profile,
    diff_rows,
    episode_values,
    flagged_regressions,
    harness_errors,
    leaderboard,
    learning_curve,
    nights,
    of_night,
    over_time,
    pairwise,
    procedural_components,
    reject_reasons,
    score_and_cost,
    solve_rates,
)
from flows.store.output import Output, night_levels
from schemas.columns import AS_OF, INPUT_FINGERPRINT, STATUS
from schemas.comparisons import CHANGE_KIND, DEFAULT_LEVEL, ChangeKind
from schemas.contract import DUMP_DATE, Category, Col
from schemas.health import HEALTH_TABLES
from schemas.hypotheses import HYPOTHESES_TABLE
from schemas.tables import (
    STANDING_CHANGES_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDINGS_TABLE,
    TASK_CHANGES_TABLE,
)
from schemas.views import VIEWS, View


def build_sections(
    wh: Warehouse, night: str | None, view: View = View.STANDING
) -> tuple[str, list[Section]]:
    """The sections of the page of ``night`` (default: the latest): its leaderboard,
    comparisons and category profile as the benchmark stands as of it (``view`` night: the
    night's own), then the night's own regressions and episodes, each model's standing and
    score across nights, data quality, a rescore's diff. An output with no standing yet
    (written by an earlier cogscore) shows the night's own tables."""
    models = wh["model_scores"]
    all_nights = nights(models)
    if night is None:
        night = all_nights[-1]
    elif night not in all_nights:
        raise ReportError(
            f"no night {night!r} in {wh.out} (nights: {', '.join(map(str, all_nights))})"
        )
    shown = night or "undated"
    if view is View.STANDING and wh.night(STANDINGS_TABLE.name, night, AS_OF).is_empty():
        view = View.NIGHT  # an output written before standings
    tables = VIEWS[view]
    standing = view is View.STANDING
    model_rows = wh.night(tables.models.name, night, tables.night)
    board = leaderboard(model_rows)
    colours = palette(board[Col.MODEL].to_list())
    # Models of other nights get colours too (for the charts across nights).
    for m in sorted(set(models[Col.MODEL].to_list()) - set(colours)):
        colours[m] = palette([*colours, m])[m]
    episodes = wh.night("episode_scores", night)
    rounds, where = round_rows(wh.manifest, night)
    levels = night_levels(wh.manifest)
    level = levels.get(night, DEFAULT_LEVEL)  # the level of the run that scored the night
    comparisons = pairwise(wh.night(tables.comparisons.name, night, tables.night))
    category_rows = wh.night(tables.categories.name, night, tables.night)
    profile = category_profile(category_rows)
    off_set = nights_off_set(wh.manifest)
    sections = [
        leaderboard_section(board, colours, shown, level, standing),
        category_leaderboards_section(category_rows, shown, level, standing),
        results_section(wh, night, shown, view, board[Col.MODEL].to_list()),
        comparisons_section(comparisons, board, shown, level, standing),
        *(_planned(wh, night, shown) if standing else []),
        *([changes_section(*_changes(wh, night), shown)] if standing else []),
        *([_health(wh, night, shown)] if standing else []),
        regressions_section(
            flagged_regressions(wh.night("regressions", night)), shown, level, standing
        ),
        profile_section(profile, colours, shown, level, standing),
        cost_section(score_and_cost(model_rows), colours, shown, level, standing),
        *_episode_sections(episodes, rounds, where, colours, shown, level),
        *(
            [over_time_section(over_time(wh["standings"], AS_OF), colours, levels, off_set, True)]
            if standing
            else []
        ),
        over_time_section(over_time(models), colours, levels, off_set),
    ]
    # Harness errors of every night (a trend), the other reasons of the night shown.
    errors = harness_errors(wh.scan("rejects").select(Col.MODEL, DUMP_DATE, STATUS)).collect()
    rejects = wh.night("rejects", night)
    if errors.is_empty() and rejects.is_empty():
        quality = Section("quality", "Data quality", "Every episode was scored.")
    else:
        quality = quality_section(reject_reasons(rejects), errors, colours, shown)

    sections.append(_with_runs_not_imported(quality, runs_not_imported(wh.out)))
    reported = reported_section(episodes)
    if reported is not None:
        sections.append(reported)
    if not wh["rescore_diff"].is_empty():
        sections.append(diff_section(diff_rows(wh["rescore_diff"]), colours))
    return shown, sections


def _with_runs_not_imported(quality: Section, missed: list[dict[str, object]]) -> Section:
    """The data quality section, with the harness runs the latest import (``nightly
    --runs``) did not import, each with every reason: never only a line in a log."""
    if not missed:
        return quality
    rows = "".join(
        f"<tr><td>{html.escape(str(run['run_file']))}</td>"
        f"<td>{html.escape(', '.join(run['reasons']))}</td>"  # type: ignore[arg-type]
        f"<td>{html.escape(str(run['detail'] or ''))}</td></tr>"
        for run in missed
    )
    text = (
        ("Every episode was scored, but" if quality.text.startswith("Every") else quality.text)
        + f" {len(missed)} harness run(s) were not imported by the latest import (table "
        "<code>imports</code>): they are in no table but that one."
    )
    table = (
        "<table><thead><tr><th>run file</th><th>reasons</th><th>detail</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return Section(quality.key, quality.title, text, quality.figures, quality.after + table)


def _health(wh: Warehouse, night: str | None, shown: str) -> Section:
    stable, tasks, categories, signals = (
        wh.night(table.name, night, AS_OF) for table in HEALTH_TABLES
    )
    return health_section(stable, tasks, categories, signals, shown)


def _planned(wh: Warehouse, night: str | None, shown: str) -> list[Section]:
    """The planned hypotheses of the standing as of ``night`` (none declared: no section)."""
    planned = wh.night(HYPOTHESES_TABLE.name, night, AS_OF)
    if planned.is_empty():
        return []
    pairs = wh.night(STANDING_COMPARISONS_TABLE.name, night, AS_OF)
    return [hypotheses_section(planned, pairs, shown)]


def _changes(wh: Warehouse, night: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The standing's changes as of ``night`` and the results re-run in it."""
    cells = wh.night(TASK_CHANGES_TABLE.name, night, AS_OF)
    reran = cells.filter(pl.col(CHANGE_KIND) == ChangeKind.RERUN)
    return wh.night(STANDING_CHANGES_TABLE.name, night, AS_OF), reran


def _episode_sections(
    episodes: pl.DataFrame,
    rounds: pl.DataFrame | None,
    where: str,
    colours: dict[str, str],
    shown: str,
    level: float,
) -> list[Section]:
    """The sections of the night's own episodes, each category's; a category with no
    episode that night, or none with what its charts draw (a reported score has no
    components), says so: no empty chart."""
    drawn = {
        Category.PROCEDURAL_LEARNING: "transfer",
        Category.RUNTIME_RL: "success",
        Category.CONCEPT_FORMATION: "accuracy",
        Category.LANGUAGE_LEARNING: "accuracy",
    }
    present = {
        category
        for category, value in drawn.items()
        if not episodes.filter(
            (pl.col(Col.CATEGORY) == category) & pl.col(value).is_not_null()
        ).is_empty()
    }

    def no_data(key: str, title: str, *categories: Category) -> Section:
        names = " or ".join(c.replace("_", " ") for c in categories)
        return Section(
            key,
            title,
            f"No data: no {names} episode with its components was scored on {shown} (an "
            "imported reported score has none).",
        )

    sections = []
    if Category.PROCEDURAL_LEARNING in present:
        sections.append(
            procedural_section(
                None if rounds is None else learning_curve(rounds, episodes, level),
                where,
                procedural_components(episodes, level),
                episode_values(episodes, Category.PROCEDURAL_LEARNING, "transfer"),
                colours,
                night=shown,
                level=level,
            )
        )
    else:
        sections.append(no_data("procedural", "Procedural learning", Category.PROCEDURAL_LEARNING))
    if Category.RUNTIME_RL in present:
        sections.append(
            runtime_rl_section(
                solve_rates(episodes, level),
                episode_values(episodes, Category.RUNTIME_RL, "steps"),
                colours,
                shown,
                level,
            )
        )
    else:
        sections.append(no_data("runtime-rl", "Runtime RL", Category.RUNTIME_RL))
    learned = [c for c in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING) if c in present]
    title = "Concept formation and language learning"
    if learned:
        curves: dict[Category, pl.DataFrame] = {
            c: accuracy_by_examples(episodes, c, level) for c in learned
        }
        sections.append(examples_section(curves, colours, shown, level))
    else:
        sections.append(
            no_data("examples", title, Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING)
        )
    return sections


def attention_html(wh: Warehouse, night: str | None) -> str:
    """What must not pass silently: nights whose latest attempt failed (not written), and
    the shown night's models with episodes but none scored (absent from its leaderboard)."""
    items = [
        f"<li>night <b>{html.escape(n)}</b> failed: {html.escape(why)}</li>"
        for n, why in failed_nights(wh.out, wh.manifest).items()
    ]
    entry = wh.manifest.nights.get(night) if night is not None else None
    items += [
        f"<li>model <b>{html.escape(model)}</b> has no score on {html.escape(str(night))}: "
        f"{html.escape(why)} (not ranked)</li>"
        for model, why in (entry.models_unscored if entry is not None else {}).items()
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
    boot = m.bootstrap or {}
    finished = "?" if m.finished is None else m.finished.isoformat()
    commit = "?" if m.cogscore_commit is None else m.cogscore_commit
    return (
        "<table class='prov'><thead><tr><th>night</th><th>input fingerprint</th>"
        f"<th>formula versions</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<p>Tables in <code>{html.escape(str(wh.out))}</code>, last run finished "
        f"{html.escape(finished)} (scorer {html.escape(str(m.scorer_version))}, commit "
        f"<code>{html.escape(commit)[:12]}</code>), input "
        f"<code>{html.escape(str(m.input))}</code>. Intervals: "
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
table.board td:not(.name), .whole { white-space: nowrap; } tr.group th { background: #eef; }
table.pairs { font-size: 0.8em; }
table.pairs td, table.pairs thead th { white-space: nowrap; padding: 0.2em 0.3em;
                                       text-align: right; font-variant-numeric: tabular-nums; }
.attention { border: 2px solid #c0392b; background: #fdecea; padding: 0.2em 1em; }
"""

DRAW: Final = """
(function () {
  var figures = JSON.parse(document.getElementById("cogscore-figures").textContent);
  var config = {displaylogo: false, responsive: true};
  Promise.all(Object.keys(figures).map(function (id) {
    return Plotly.newPlot(id, figures[id].data, figures[id].layout, config);
  })).then(function () { window.cogscoreChartsMs = performance.now();
                         document.body.setAttribute("data-charts", "drawn"); },
           function (error) { document.body.setAttribute("data-charts", "failed");
                              console.error("a chart failed to draw", error); });
})();
"""


def render(wh: Warehouse, night: str | None = None, view: View = View.STANDING) -> str:
    """The page, as one string of HTML."""
    shown, sections = build_sections(wh, night, view)
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
        f"<style>{STYLE}{RESULTS_STYLE}</style></head><body data-charts='pending'>"
        f"<h1>cogscore report</h1><p>Night shown: <b>{html.escape(shown)}</b>; "
        f"generated {generated} from the warehouse tables; "
        f"{len(figures)} charts (plotly.js {html.escape(plotly.__version__)} "
        "(Python), inline: the page needs no network).</p>"
        f"{attention_html(wh, None if shown == 'undated' else shown)}"
        f"{provenance_html(wh, None if shown == 'undated' else shown)}<nav>{nav}</nav>"
        f"{''.join(body)}"
        f"<script>{get_plotlyjs()}</script>"
        f"<script type='application/json' id='cogscore-figures'>{script_json(blob)}</script>"
        f"<script>{DRAW}</script><script>{MATRIX_JS}</script></body></html>\n"
    )


def write_report(
    out: Output | Path | str,
    path: Path,
    night: str | None = None,
    as_of: str | None = None,
    view: View = View.STANDING,
) -> Path:
    """Write the report of ``out`` (as run ``as_of`` left it: by default the latest
    finished run) to ``path`` (atomically: a reader never sees half)."""
    page = render(read_warehouse(Output.at(out), as_of), night, view)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)  # a page not written leaves no 5 MB behind
    return path
