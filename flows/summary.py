"""What ``cogscore`` prints after a run: the leaderboard and the category table of the
latest night, read back from the tables it wrote (so the terminal shows what a dashboard
will show)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from flows.runs import Outcome, RunSummary
from schemas.contract import DUMP_DATE, Category, Col
from schemas.tables import SCORE


def printable(text: object) -> str:
    r"""``text`` safe for a terminal: control characters (ANSI escapes, newlines, NUL) are
    shown as escapes instead of acting on the terminal.

    >>> printable("m\x1b[2Jx\n")
    'm\\x1b[2Jx\\n'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


FENCE = "`" * 3

SHORT = {
    c: c.removesuffix("_learning").removesuffix("_formation").replace("_", " ") for c in Category
}


def _table(out: Path, name: str) -> pl.DataFrame:
    frame = pl.scan_parquet(out / name, hive_partitioning=True).collect()
    return frame.with_columns(pl.col(DUMP_DATE).cast(pl.String)) if DUMP_DATE in frame else frame


def leaderboard_lines(out: Path) -> list[str]:
    """Rank, model, score with its 95% interval and categories covered, then each model's
    category scores, for the latest night in ``out``."""
    models, categories = _table(out, "model_scores"), _table(out, "category_scores")
    if models.is_empty():
        return ["no episode was scored"]
    night: str | None = models[DUMP_DATE].max()  # type: ignore[assignment]
    models = models.filter(pl.col(DUMP_DATE) == night) if night is not None else models
    categories = categories.filter(pl.col(DUMP_DATE) == night) if night is not None else categories
    present = [c for c in Category if c in set(categories[Col.CATEGORY])]
    by_model = {
        (m, c): s for m, c, s in categories.select(Col.MODEL, Col.CATEGORY, SCORE).iter_rows()
    }
    lines = [f"leaderboard{f' of {printable(night)}' if night else ''} (score, 95% interval):"]
    header = f"{'rank':>4}  {'model':<20}{'score':>7}  {'interval':<15}{'cats':>5}"
    lines.append(header + "".join(f"{SHORT[c]:>14}" for c in present))
    for row in models.sort("rank", Col.MODEL).iter_rows(named=True):  # one line per model
        interval = f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        cells = "".join(
            f"{by_model[(row[Col.MODEL], c)]:>14.3f}"
            if (row[Col.MODEL], c) in by_model
            else f"{'-':>14}"
            for c in present
        )
        lines.append(
            f"{row['rank']:>4}  {printable(row[Col.MODEL])[:19]:<20}{row[SCORE]:>7.3f}  "
            f"{interval:<15}"
            f"{row['categories_covered']:>5}{cells}"
        )
    return lines


def run_lines(summary: RunSummary, out: Path) -> list[str]:
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
    counts = summary.counts
    lines.append(
        f"{counts['episodes_scored']} episodes scored, {counts['episodes_rejected']} rejected, "
        f"{counts['episodes_harness_error']} harness errors; "
        f"{counts['rows_read']} rows read = {counts['rows_scored']} scored"
        f" + {counts['rows_rejected']} rejected"
    )
    tables = "episode_scores, rejects, task_scores, category_scores, model_scores"
    lines.append(f"tables in {out}/ ({tables}); manifest {out}/manifest.json")
    return lines


def diff_lines(diff: pl.DataFrame) -> list[str]:
    """What a rescore moved: each model's overall score and rank, old and new."""
    overall = diff.filter(pl.col("level") == "model").sort(DUMP_DATE, "new_rank", Col.MODEL)
    lines = [f"{'night':<12}{'model':<20}{'old':>8}{'new':>8}{'delta':>9}{'rank':>10}"]
    for row in overall.iter_rows(named=True):  # one line per model and night
        old = "-" if row["old_score"] is None else f"{row['old_score']:.3f}"
        new = "-" if row["new_score"] is None else f"{row['new_score']:.3f}"
        delta = "-" if row["delta"] is None else f"{row['delta']:+.3f}"
        ranks = f"{row['old_rank'] or '-'} -> {row['new_rank'] or '-'}"
        lines.append(
            f"{printable(row[DUMP_DATE] or ''):<12}{printable(row[Col.MODEL])[:19]:<20}"
            f"{old:>8}{new:>8}{delta:>9}"
            f"{ranks:>10}"
        )
    return lines


def unscored_input(outcome: Outcome) -> str | None:
    """The "completed with rejected input" line, where a file or an episode was not scored."""
    if outcome.result is None:
        return None
    counts = outcome.result.counts
    if not (counts["files_rejected"] or counts["rows_rejected"]):
        return None
    return (
        f"completed with rejected input: {counts['files_rejected']} file(s), "
        f"{counts['episodes_rejected']} rejected episode(s), "
        f"{counts['episodes_harness_error']} harness error(s), "
        f"{counts['rows_rejected']} row(s) not scored (see rejects/)"
    )


class StrictFailure(Exception):
    """A strict run with input that was not scored: it fails (exit 1; Prefect: Failed)
    after its tables are written, so the scores of the rest stay published."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


def enforce_strict(outcome: Outcome, strict: bool) -> Outcome:
    """``outcome``, or ``StrictFailure`` when ``strict`` and some input was not scored."""
    if strict and (status := unscored_input(outcome)) is not None:
        raise StrictFailure(outcome, f"strict run failed: {status}")
    return outcome


def formula_lines(outcome: Outcome) -> list[str]:
    """The nights waiting for their marker, and those scored with other formula versions
    than the output's set (every run names them)."""
    lines = []
    if outcome.nights_waiting:
        lines.append(
            f"waiting for the _SUCCESS marker (not scored): {', '.join(outcome.nights_waiting)}"
        )
    if outcome.nights_off_set:
        pinned = ",".join(f"{c}={v}" for c, v in outcome.formula_set.items())
        lines.append(f"formula set of {outcome.out}: {pinned}")
        lines += [
            f"  night {printable(night)} scored with other versions: {differ}"
            for night, differ in outcome.nights_off_set.items()
        ]
    return lines


def outcome_lines(outcome: Outcome) -> list[str]:
    """The terminal summary of a run."""
    lines = []
    if outcome.dry_run:
        lines.append(f"dry run: nothing in {outcome.out} was changed")
    if outcome.kind == "nightly":
        lines.append(
            f"nightly: {len(outcome.nights_scored)} night(s) scored "
            f"({', '.join(outcome.nights_scored) or 'nothing new'}), "
            f"{len(outcome.nights_unchanged)} unchanged"
        )
    if outcome.result is not None and outcome.dry_run:
        lines += run_lines(outcome.result, outcome.out)[:-1]  # no tables were written
    elif outcome.result is not None:
        lines += [*leaderboard_lines(outcome.out), "", *run_lines(outcome.result, outcome.out)]
    elif (outcome.out / "model_scores").exists():  # nothing new: what the tables hold
        lines += [*leaderboard_lines(outcome.out), "", f"tables unchanged in {outcome.out}/"]
    if outcome.diff is not None:
        lines += [
            "",
            "what the rescore "
            + ("would move" if outcome.dry_run else "moved")
            + " (overall score per model):",
            *diff_lines(outcome.diff),
        ]
    lines += formula_lines(outcome)
    if (status := unscored_input(outcome)) is not None:
        lines.append(status)
    return lines


def outcome_markdown(outcome: Outcome) -> str:
    """The Prefect artifact of a run: the same summary as the terminal, as markdown."""
    # Inside a code fence: a name holding a fence must not close it.
    body = "\n".join(outcome_lines(outcome)).replace(FENCE, "'" * 3) or "nothing to do"
    return f"# cogscore {outcome.kind} run {outcome.run_id}\n\n```\n{body}\n```\n"
