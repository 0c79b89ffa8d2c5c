"""What ``cogscore`` prints after a run: what it scored and did not, its regressions and
standing changes, the nights scored with other formula versions, then the leaderboard
(``flows.present.leaderboard``); as lines for the terminal or Markdown for Prefect."""

from __future__ import annotations

import polars as pl
from rich.markup import escape

from flows.outcome import FLAGGED, Outcome, RunSummary
from flows.present.changes import result_moved, scores, told
from flows.present.imports import new_model_lines
from flows.present.leaderboard import leaderboard_lines
from flows.present.terminal import printable, render, table_of_columns
from flows.records import unscored_line
from flows.store.catalog import CORE_TABLES, MODEL_SCORES
from flows.store.output import Output
from schemas.columns import AS_OF, SCORE, USAGE_REFUSED
from schemas.comparisons import (
    ALERT_LEVEL,
    CHANGE,
    CHANGE_KIND,
    CI_HIGH,
    CI_LOW,
    DIFF_LEVEL,
    DIFF_LEVEL_MODEL,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    MOVED_BY,
    NEW_RANK,
    Q_BH,
    REASON,
    SCOPE,
    ChangeKind,
)
from schemas.contract import DUMP_DATE, REPORTED_SCORE, Col
from schemas.rules import USAGE_INVALID
from schemas.views import View

FENCE = "`" * 3


# Lines of a per-night list a run prints (a rescore of a year of nights has hundreds); the
# rest are counted on one line, and are in the run's --json record and its tables.
MOST_NIGHT_LINES = 10


def run_lines(summary: RunSummary, out: Output, run_id: str) -> list[str]:
    """Episodes scored and not scored per category, the top reasons, the accounting, where."""
    lines = [f"{'category':<24}{'scored':>8}{'not scored':>12}"]
    for category in sorted(set(summary.scored) | set(summary.unscored)):  # a few categories
        lines.append(
            f"{printable(category):<24}{summary.scored[category]:>8}"
            f"{summary.unscored[category]:>12}"
        )
    if summary.reasons:
        top = sorted(summary.reasons.items(), key=lambda r: (-r[1], r[0]))[:5]
        lines.append("top reasons: " + ", ".join(f"{r} ({n})" for r, n in top))
    for file, problems in summary.rejected_files[:5]:  # the files, named (the rest counted)
        lines.append(f"file not scored: {printable(file)}: {printable('; '.join(problems))}")
    if len(summary.rejected_files) > 5:
        lines.append(f"… and {len(summary.rejected_files) - 5} more file(s) (cogscore status)")
    counts = summary.counts
    replaced = counts.get("episodes_replaced") or 0  # contract 1.4
    also = (
        f" (and {replaced} replaced by a later run, or by a table's record of the same run: "
        "replaced_episodes)"
        if replaced
        else ""
    )
    lines.append(
        f"{counts['episodes_scored']} episodes scored{also}, "
        f"{counts['episodes_rejected']} rejected, "
        f"{counts['episodes_harness_error']} harness errors; "
        f"{counts['rows_read']} rows read = {counts['rows_scored']} scored"
        f" + {counts['rows_rejected']} rejected"
    )
    lines += mismatch_lines(summary)
    lines += usage_lines(summary)
    tables = ", ".join(CORE_TABLES)
    lines.append(f"Delta tables in {out} ({tables}); run {run_id} recorded in its runs table")
    return lines


def mismatch_lines(summary: RunSummary) -> list[str]:
    """Contract 1.2: the episodes whose score differs from the harness's reported one (the
    first few named), and those whose verdicts differ from the harness's recorded ones."""
    counts = summary.counts
    scores, verdicts = counts["episodes_score_mismatch"], counts["episodes_verdict_mismatch"]
    if not (scores or verdicts):
        return []
    lines = [
        f"{scores} episode(s) scored other than the harness reported, "
        f"{verdicts} with item verdicts other than the harness's (episode_scores: "
        "score_mismatch, verdict_mismatches)"
    ]
    for row in summary.mismatched[:5]:
        lines.append(
            f"score differs: {printable(row[Col.EPISODE_ID])} ({printable(row[Col.TASK])}, "
            f"{printable(row[Col.MODEL])}): {row[SCORE]!r} against reported "
            f"{row[REPORTED_SCORE]!r}"
        )
    return lines


def usage_lines(summary: RunSummary) -> list[str]:
    """Contract 1.4: the episodes scored whose usage was refused (a value no call can have)."""
    refused = summary.counts["episodes_usage_refused"]
    if not refused:
        return []
    return [
        f"{refused} episode(s) scored with their usage refused ({USAGE_INVALID}: a usage value "
        "beyond the contract's bounds; their scores count, their usage is left out of the "
        f"totals): episode_scores.{USAGE_REFUSED} says why"
    ]


def diff_lines(diff: pl.DataFrame) -> list[str]:
    """What a rescore moved: each model's overall score and rank, old and new."""
    overall = diff.filter(pl.col(DIFF_LEVEL) == DIFF_LEVEL_MODEL)
    overall = overall.sort(DUMP_DATE, NEW_RANK, Col.MODEL)
    table = table_of_columns()
    table.add_column("night", no_wrap=True)
    table.add_column("model", overflow="fold", min_width=12)
    for name in ("old", "new", "delta", "rank"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in overall.iter_rows(named=True):  # one line per model and night
        table.add_row(
            escape(printable(row[DUMP_DATE] or "")),
            escape(printable(row[Col.MODEL])),
            "-" if row["old_score"] is None else f"{row['old_score']:.3f}",
            "-" if row["new_score"] is None else f"{row['new_score']:.3f}",
            "-" if row["delta"] is None else f"{row['delta']:+.3f}",
            f"{row['old_rank'] or '-'} -> {row['new_rank'] or '-'}",
        )
    return render(table)


def unscored_input(outcome: Outcome) -> str | None:
    """The "completed with rejected input" line, where a file or an episode was not scored."""
    return None if outcome.result is None else unscored_line(outcome.result.counts)


def regression_lines(outcome: Outcome) -> list[str]:
    """The regressions of the nights the run scored: alerts, then watches (a drop with a
    raw p-value under 0.05 that did not survive Benjamini-Hochberg or the margin)."""
    flagged = outcome.regressions
    if flagged is None or flagged.is_empty():
        return []
    # Each night's at the level of the run that scored it (this run's, or for a night whose
    # regressions only were made again, its own).
    levels = {outcome.levels.get(n, outcome.level) for n in flagged[DUMP_DATE].unique()}
    shares = ", ".join(f"{level:.0%}" for level in sorted(levels))
    lines = [f"regressions (change from the baseline, {shares} interval, BH q-value):"]
    order = flagged.sort(ALERT_LEVEL, DUMP_DATE, Col.MODEL, SCOPE)  # alert before watch
    for row in order.iter_rows(named=True):
        change = "" if row["ci_low"] is None else f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
        q = "-" if row["q_bh"] is None else f"{row['q_bh']:.3g}"
        lines.append(
            f"  {row['level']:<5} {printable(row[DUMP_DATE])} {printable(row[Col.MODEL])}"
            f" {row['scope']}: {row['change']:+.3f}{change} q={q}"
            f" (baseline {row['baseline_dates']})"
        )
    return lines


def import_lines(outcome: Outcome) -> list[str]:
    """A nightly that imported harness runs first: how many, each run not imported with
    every reason (OUT's ``imports`` table keeps them all), and the models new to the dump."""
    report = outcome.imports
    if report is None:
        return []
    written = sum(1 for r in report.runs if r.written)
    lines = [
        f"imported {report.imported} of {len(report.runs)} harness run(s) ({written} new or "
        f"changed), {report.rejected} not imported (table imports)"
    ]
    for run in report.runs:
        if str(run.outcome) != "imported":
            why = ", ".join(run.reasons) + (f": {run.detail}" if run.detail else "")
            lines.append(f"  not imported: {printable(run.run)}: {printable(why)}")
    lines += [f"  {printable(line)}" for line in new_model_lines(report.new_models)]
    lines += [f"  {printable(warning)}" for warning in report.warnings]
    return lines


def standing_lines(outcome: Outcome) -> list[str]:
    """What moved the standings the run made, and how far, significant or not: per night
    the models new in its standing and those whose rank others moved, on a line each; each
    model's overall change (a re-run, tested against the results it replaced, its interval
    scaled to the standing; a model gone or covering other tasks, not comparable, said why;
    a standing a rescore moved), its rank before and now and whether the statistics call it
    beyond noise; then every result re-run, its score and night before and now. Of a run of
    many nights, every alert and not comparable change, the latest watches, rescored
    standings and re-runs (the rest counted: the tables and the run record hold them all);
    the models that cover other tasks on one night, on one line (each model's change)."""
    moved = outcome.standing_changes
    if moved is None or moved.is_empty():
        return []
    lines = [
        "standing changes (against the night's previous standing, a rescored one against itself "
        "before the run; the tasks that moved it; the rank among its coverage group and "
        "whether the statistics call the change beyond noise: BH q < 0.05):"
    ]
    kind = pl.col(CHANGE_KIND)
    # One line a night: the models new in its standing; those whose rank others moved (of
    # a year's rescore, the latest nights': the rest counted).
    for label, which in (("new in", ChangeKind.NEW_MODEL), ("reranked in", ChangeKind.RERANKED)):
        rows = moved.filter(kind == which).sort(AS_OF, Col.MODEL)
        nights = rows[AS_OF].unique(maintain_order=True).to_list()
        if which == ChangeKind.RERANKED and len(nights) > MOST_NIGHT_LINES:
            lines.append(
                f"  and {len(nights) - MOST_NIGHT_LINES} earlier standing(s) in which others' "
                "changes moved a model's rank more: table standing_changes (kind reranked)"
            )
            rows = rows.filter(pl.col(AS_OF).is_in(nights[-MOST_NIGHT_LINES:]))
        for (night,), group in rows.group_by(AS_OF, maintain_order=True):
            names = ", ".join(
                printable(r[Col.MODEL]) + ("" if which == ChangeKind.NEW_MODEL else f" {told(r)}")
                for r in group.iter_rows(named=True)
            )
            lines.append(f"  {label} the standing as of {printable(night)}: {names}")
    order = moved.filter(~kind.is_in([ChangeKind.NEW_MODEL, ChangeKind.RERANKED]))
    # Every alert and not comparable change; the latest watches, rescored standings and
    # re-runs (a year's rescore, a backfill of a harness that runs everything, have many).
    watch = pl.col(ALERT_LEVEL) == LEVEL_WATCH
    latest = {
        "earlier watch(es)": watch,
        "earlier rescored standing(s)": (kind == ChangeKind.RESCORED) & ~watch,
        "earlier or smaller re-run(s)": (kind == ChangeKind.RERUN)
        & ~pl.col(ALERT_LEVEL).is_in(FLAGGED),
    }
    hidden = {}
    shown = [order.filter(~pl.any_horizontal(*latest.values()))]
    for what, picked in latest.items():
        rows = order.filter(picked).sort(AS_OF, pl.col(CHANGE).abs(), nulls_last=False)
        shown.append(rows.tail(MOST_NIGHT_LINES))
        hidden[what] = rows.height - shown[-1].height
    rows = pl.concat(shown).sort(AS_OF, ALERT_LEVEL, Col.MODEL, SCOPE)
    covered = (pl.col(CHANGE_KIND) == ChangeKind.COVERAGE) & (
        pl.col(ALERT_LEVEL) == LEVEL_NOT_COMPARABLE
    )
    # A night on which several models cover other tasks (a table whose tasks arrive over
    # nights): one line, each model's change (the tasks: the table and the record).
    folded = covered & (pl.len().over(AS_OF, covered) > 1)
    for row in rows.filter(~folded).iter_rows(named=True):
        lines.append(_change_line(row))
    for (night,), group in rows.filter(folded).group_by(AS_OF, maintain_order=True):
        each = ", ".join(
            printable(r[Col.MODEL]) + ("" if r[CHANGE] is None else f" {r[CHANGE]:+.3f}")
            for r in group.iter_rows(named=True)
        )
        lines.append(
            f"  {LEVEL_NOT_COMPARABLE} {printable(night)}: {group.height} models cover other "
            f"tasks (the score averages other tasks: not compared; which tasks: table "
            f"standing_changes, --json): {each}"
        )
    # Counted, not cut: the re-runs' count does not read as a value shown in part.
    lines += [
        f"  … and {n} {what} (table standing_changes; --json)"
        if what in FOLDED
        else f"  and {n} {what} more: table standing_changes, --json"
        for what, n in hidden.items()
        if n
    ]
    return lines + rerun_lines(outcome)


# The counts of standing changes said as before re-runs were told ("… and 3 earlier
# watch(es)").
FOLDED = ("earlier watch(es)", "earlier rescored standing(s)")


def _change_line(row: dict[str, object]) -> str:
    """One standing change: level, night, model, scope and kind; the score before and now,
    the change with its interval and q-value; the tasks that moved it; its rank and noise."""
    change = "" if row[CHANGE] is None else f" {row[CHANGE]:+.3f}"
    if row[CI_LOW] is not None and row[ALERT_LEVEL] != LEVEL_NOT_COMPARABLE:
        change += f" [{row[CI_LOW]:+.3f}, {row[CI_HIGH]:+.3f}]"
    q = "" if row[Q_BH] is None else f" q={row[Q_BH]:.3g}"
    why = f" ({printable(row[MOVED_BY])})" if row[MOVED_BY] else ""
    reason = f"; {printable(row[REASON])}" if row[ALERT_LEVEL] == LEVEL_NOT_COMPARABLE else ""
    return (
        f"  {row[ALERT_LEVEL]} {printable(row[AS_OF])} {printable(row[Col.MODEL])} "
        f"{row[SCOPE]} {row[CHANGE_KIND]}: {scores(row)}{change}{q}{why}; {told(row)}{reason}"
    )


# Re-run results a run prints (a backfill of a harness that runs every task every night
# re-runs them all): the latest nights' largest moves; the rest counted.
MOST_RERUN_LINES = 20


def rerun_lines(outcome: Outcome) -> list[str]:
    """Every result re-run in the standings the run made (``task_changes``): model and task,
    the score before and now with the nights they come from (of many, the latest nights'
    largest moves, the rest counted)."""
    cells = outcome.reruns
    if cells is None or cells.is_empty():
        return []
    ordered = cells.sort(AS_OF, pl.col(CHANGE).abs(), descending=True, nulls_last=True)
    shown = ordered.head(MOST_RERUN_LINES).sort(AS_OF, Col.MODEL, Col.CATEGORY, Col.TASK)
    lines = [
        f"re-run results (a newer night's result of a model on a task; {cells.height} in all; "
        "their models' lines above say how far they moved the standing):"
    ]
    lines += [
        f"  as of {printable(r[AS_OF])}: {result_moved(r)}" for r in shown.iter_rows(named=True)
    ]
    if cells.height > shown.height:
        lines.append(
            f"  and {cells.height - shown.height} earlier or smaller re-run result(s) more: "
            "table task_changes, --json (reruns)"
        )
    return lines


def formula_lines(outcome: Outcome) -> list[str]:
    """The nights waiting for their marker, and those scored with other formula versions
    than the output's set (every run names them)."""
    lines = [
        f"night {printable(night)} FAILED: {printable(why)}"
        for night, why in outcome.nights_failed.items()
    ]
    lines += [
        f"model {printable(model)} has no score on {printable(night)}: {printable(why)} (not "
        "ranked; a not_comparable row in regressions where the night has a baseline)"
        for night, models in outcome.models_unscored.items()
        for model, why in models.items()
    ]
    absent = [
        f"ran nothing on {printable(night)} (but on the night before; not compared that night, "
        f"their standings keep their results): {', '.join(printable(m) for m in models)}"
        for night, models in sorted(outcome.models_absent.items())
    ]
    if len(absent) > MOST_NIGHT_LINES:
        earlier = len(absent) - MOST_NIGHT_LINES
        absent = [
            f"… {earlier} earlier night(s) where a model ran nothing (table regressions, "
            "level not_comparable; --json)",
            *absent[-MOST_NIGHT_LINES:],
        ]
    lines += absent
    if outcome.regressions_refreshed:
        lines.append(
            "regressions made again against the nights scored before them: "
            + ", ".join(outcome.regressions_refreshed)
        )
    if outcome.nights_input_gone:
        lines.append(
            f"nights in {outcome.out} whose input is gone from the dump (kept as scored): "
            + ", ".join(outcome.nights_input_gone)
        )
    if outcome.nights_waiting:
        lines.append(
            f"waiting for the _SUCCESS marker (not scored): {', '.join(outcome.nights_waiting)}"
        )
    if outcome.nights_off_set:
        pinned = ",".join(f"{c}={v}" for c, v in outcome.formula_set.items())
        lines.append(f"formula set of {outcome.out}: {pinned}")
        scored = "would be scored" if outcome.dry_run else "scored"
        lines += [
            f"  night {printable(night)} {scored} with other versions: {differ}"
            for night, differ in outcome.nights_off_set.items()
        ]
    return lines


def nightly_line(outcome: Outcome) -> str:
    """What a nightly run did with the dump's nights: scored, failed, waiting for their
    marker, unchanged. "Nothing new" only where every night is unchanged: a night that
    failed or waits is news.

    >>> from types import SimpleNamespace as Run
    >>> nightly_line(Run(nights_scored=[], nights_failed={}, nights_waiting=[],
    ...     nights_unchanged=["2026-12-01"]))
    'nightly: 0 night(s) scored (nothing new), 1 unchanged'
    >>> nightly_line(Run(nights_scored=[], nights_failed={"2026-12-02": "why"},
    ...     nights_waiting=["2026-12-03"], nights_unchanged=[]))  # doctest: +NORMALIZE_WHITESPACE
    'nightly: no night scored, 1 failed (2026-12-02), 1 waiting for _SUCCESS (2026-12-03),
    0 unchanged'
    """
    scored, failed = outcome.nights_scored, sorted(outcome.nights_failed)
    waiting, unchanged = outcome.nights_waiting, len(outcome.nights_unchanged)
    if not (scored or failed or waiting):
        return f"nightly: 0 night(s) scored (nothing new), {unchanged} unchanged"
    parts = [
        f"{len(scored)} night(s) scored ({', '.join(scored)})" if scored else "no night scored"
    ]
    if failed:
        parts.append(f"{len(failed)} failed ({', '.join(map(printable, failed))})")
    if waiting:
        parts.append(f"{len(waiting)} waiting for _SUCCESS ({', '.join(waiting)})")
    return f"nightly: {', '.join(parts)}, {unchanged} unchanged"


def outcome_lines(outcome: Outcome, view: View = View.STANDING) -> list[str]:
    """The terminal summary of a run, its leaderboard the standing (or with ``view`` night,
    the latest night's own)."""
    lines = import_lines(outcome)
    if outcome.dry_run:
        lines.append(f"dry run: nothing in {outcome.out} was changed")
    if outcome.kind == "nightly":
        lines.append(nightly_line(outcome))
    if outcome.result is not None and outcome.dry_run:
        # no tables were written
        lines += run_lines(outcome.result, outcome.out, outcome.run_id)[:-1]
    elif outcome.result is not None:
        lines += [
            *leaderboard_lines(outcome.out, outcome.levels, view),
            "",
            *run_lines(outcome.result, outcome.out, outcome.run_id),
        ]
    elif not outcome.out.read(MODEL_SCORES).is_empty():  # nothing new: what the tables hold
        lines += [
            *leaderboard_lines(outcome.out, outcome.levels, view),
            "",
            f"tables unchanged in {outcome.out}",
        ]
    if outcome.diff is not None:
        lines += [
            "",
            "what the rescore "
            + ("would move" if outcome.dry_run else "moved")
            + " (overall score per model):",
            *diff_lines(outcome.diff),
        ]
        if outcome.not_rescored:
            lines.append(
                f"{outcome.not_rescored} episode(s) could not be rescored: their score is a "
                "reported score with no formula input (imported; formula version 'reported'), "
                "kept as it is"
            )
    lines += regression_lines(outcome)
    lines += standing_lines(outcome)
    lines += formula_lines(outcome)
    if (status := unscored_input(outcome)) is not None:
        lines.append(status)
    return lines


def outcome_markdown(outcome: Outcome) -> str:
    """The Prefect artifact of a run: the same summary as the terminal, as markdown."""
    # Inside a code fence: a name holding a fence must not close it.
    body = "\n".join(outcome_lines(outcome)).replace(FENCE, "'" * 3) or "nothing to do"
    return f"# cogscore {outcome.kind} run {outcome.run_id}\n\n```\n{body}\n```\n"
