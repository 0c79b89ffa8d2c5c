"""The report's sections on what to trust: the data's quality (rows read, rejected and why,
harness errors), a rescore's diff, the episodes scored other than the harness reported, and
the benchmark's health (rank stability, tasks at ceiling or floor, each category's spread)."""

from __future__ import annotations

import html
from typing import Final

import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative

from flows.present.report.figures import (
    SHORT,
    Section,
    fmt,
    label,
    layout,
    per_model_traces,
)
from flows.present.report.shape import UNKNOWN
from schemas.columns import SCORE, SCORE_MISMATCH, VERDICT_MISMATCHES
from schemas.contract import (
    DUMP_DATE,
    REPORTED_SCORE,
    Col,
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
        per_model_traces(fig, reasons, models, "rule", "episodes", hover=" episodes")
        layout(
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
        layout(
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
        per_model_traces(
            fig,
            rows,
            colours,
            "what",
            "delta",
            hover=" change",
            x_label=lambda w: label(SHORT.get(w, w)),
        )
        layout(
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


def _drawn_again(r: dict[str, object]) -> str:
    """The task bootstrap beside leaving one task out: that no task decides is not that
    the ranking is settled."""
    if r.get("boot_spearman_mean") is None or r.get("boot_rank_changed") is None:
        return ""
    return (
        f"That is not a settled ranking: drawing {r['n_tasks']} tasks again from these (a "
        f"bootstrap of the tasks), the Spearman correlation is {r['boot_spearman_mean']:.4f} "
        f"on average, some model changes rank in {r['boot_rank_changed']:.0%} of the draws "
        f"and one moves up to {r['boot_max_rank_change']} place(s); the leaderboard's rank "
        "intervals say which orders the comparisons support."
    )


def health_section(
    stable: pl.DataFrame,
    tasks: pl.DataFrame,
    categories: pl.DataFrame,
    signals: pl.DataFrame,
    night: str,
) -> Section:
    """The benchmark's health as it stands (``transforms.health``), each figure with a
    sentence on what it means."""
    notes: list[str] = []
    widest = stable.sort("n_models", "n_tasks", descending=True).head(1)
    if widest.height and widest["loo_spearman_mean"][0] is not None:
        r = widest.row(0, named=True)
        notes.append(
            f"<b>Stability.</b> Leaving any one of the {r['n_tasks']} tasks out, the ranking of "
            f"the {r['n_models']} models that ran them all keeps a Spearman correlation of "
            f"{r['loo_spearman_mean']:.4f} on average with the full ranking (at least "
            f"{r['loo_spearman_min']:.4f}), and no model moves more than "
            f"{r['loo_max_rank_change']} place(s): no single task decides the leaderboard. "
            + _drawn_again(r)
        )
    else:
        notes.append(
            "<b>Stability.</b> No three models ran the same tasks yet: leaving one task out "
            "says nothing."
        )
    stuck = tasks.filter(pl.col("at_ceiling") | pl.col("at_floor"))
    named = ", ".join(
        f"{html.escape(t)} ({'every model 1' if c else 'every model 0'})"
        for t, c in stuck.select(Col.TASK, "at_ceiling").rows()
    )
    notes.append(
        f"<b>Tasks at ceiling or floor</b> (they cannot tell models apart): {named or 'none'}."
    )
    weakest = tasks.filter(pl.col("discrimination").is_not_null()).sort("discrimination").head(5)
    if weakest.height:
        notes.append(
            "<b>Least discriminating tasks</b> (Spearman correlation, over the models, of the "
            "task's score with their score on the other tasks; near 0 or below, the task ranks "
            "models unlike the rest of the benchmark): "
            + ", ".join(
                f"{html.escape(t)} ({d:+.2f})"
                for t, d in weakest.select(Col.TASK, "discrimination").rows()
            )
            + "."
        )
    meaning = {
        "examples_requested_vs_score": "do the models that ask for fewer examples score "
        "higher? (LearningBench's H1: the best learners need the least evidence)",
        "tokens_spent_vs_score": "do the runs that spend more tokens score lower? "
        "(LearningBench's H2: token spend is a failure signal)",
    }
    for row in signals.iter_rows(named=True):
        rho = "-" if row["spearman"] is None else f"{row['spearman']:+.3f}"
        p = "-" if row["p_value"] is None else f"{row['p_value']:.3g}"
        notes.append(
            f"<b>{html.escape(row['signal'])}</b>: Spearman {rho} (p {p}, {row['n_results']} "
            f"results): {meaning.get(row['signal'], '')}."
        )
    if signals.is_empty():
        notes.append(
            "<b>Behavioural signals</b>: no data (no result records the examples it requested "
            "or the tokens it spent)."
        )
    rows = "".join(
        f"<tr><td>{html.escape(SHORT.get(r[Col.CATEGORY], r[Col.CATEGORY]))}</td>"
        f"<td>{html.escape(r['best_model'])}</td><td>{r['best_score']:.3f}</td>"
        f"<td>{html.escape(r['worst_model'])}</td><td>{r['worst_score']:.3f}</td></tr>"
        for r in categories.iter_rows(named=True)
    )
    table = (
        "<table><thead><tr><th>category</th><th>best model</th><th>score</th>"
        f"<th>worst model</th><th>score</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return Section(
        "health",
        "Benchmark health",
        f"The benchmark as it stands as of {html.escape(night)} (tables <code>stability</code>, "
        "<code>task_health</code>, <code>category_health</code>, <code>signals</code>).<br>"
        + "<br>".join(notes),
        after=table,
    )
