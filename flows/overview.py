"""What an output holds and what the next nightly would do, as data: its runs (``history``),
its nights failed, off the formula set or unscored (``status``), the harness runs its latest
import refused, and the pairwise comparisons ``compare`` shows. The engine gathers; the
face (``flows.present.status``) prints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from flows.options import RegressionOptions
from flows.plan import nights_off_set, plan_nightly
from flows.standings import standing_of
from flows.standings_between import changes_between, read_reruns
from flows.store.dumps import is_night
from flows.store.lease import lease_holder
from flows.store.output import Output, night_levels
from flows.store.state import OutputState
from schemas.columns import AS_OF, PROVENANCE, RunStatus
from schemas.comparisons import (
    DEFAULT_LEVEL,
    MODEL_A,
    MODEL_B,
    NEW_RANK,
    OLD_RANK,
    OVERALL,
    OVERALL_SCOPES,
    PREVIOUS_AS_OF,
    SCOPE,
)
from schemas.contract import Category, Col
from schemas.tables import IMPORTS_TABLE, TASK_STANDINGS_TABLE
from schemas.views import VIEWS, View
from transforms.aggregate import Bootstrap
from transforms.compare import model_comparisons
from transforms.compare.night import nothing_scored
from transforms.standings import every_model


def history(output: Output) -> pl.DataFrame:
    """One row per run, newest first: id, kind, status, start, end, nights, counts, engine."""
    rows = output.runs()
    if rows.is_empty():
        return pl.DataFrame()
    runs = rows.group_by("run_id", maintain_order=True).agg(
        pl.col("kind").first(),
        pl.col("status").first().alias("row_status"),
        pl.col("started").min(),
        pl.col("finished").max(),
        pl.col("night").drop_nulls().sort().alias("nights"),
        *[pl.col(c).sum() for c in ("rows_read", "episodes_scored", "episodes_rejected")],
        pl.col("details").last(),
    )
    failed = [sorted(json.loads(d or "{}").get("nights_failed", {})) for d in runs["details"]]
    runs = runs.with_columns(pl.Series("nights_failed", failed, dtype=pl.List(pl.String)))
    runs = runs.with_columns(pl.col("nights").list.set_difference("nights_failed").list.sort())
    detail = pl.col("details").str.json_path_match
    # The run's own outcome (recorded since issue 27; before, each row's status said it).
    status = pl.coalesce(detail("$.status"), pl.col("row_status")).alias("status")
    code = detail("$.exit_code").cast(pl.Int64).alias("exit_code")
    return (
        runs.with_columns(
            status,
            code,
            detail("$.error").alias("error"),
            detail("$.engine").alias("engine"),
            detail("$.command").alias("command"),
        )
        .drop("details", "row_status")
        .sort("finished", descending=True)
    )


def failed_nights(output: Output, state: OutputState | None = None) -> dict[str, str]:
    """The nights that failed, with why: those whose latest attempt failed unwritten (a
    file vanished while it was read: the next run scores them again), and those written
    with no episode scored (every one a harness error or rejected: their rejects are in
    the tables, they have no scores)."""
    state = output.state() if state is None else state
    out = {
        night: nothing_scored(
            counts.get("episodes_harness_error", 0), counts.get("episodes_rejected", 0)
        )
        + f" (run {entry.run_id})"
        for night, entry in state.nights.items()
        if not (counts := entry.counts).get("episodes_scored", 1)
    }
    rows = output.runs().filter(pl.col("night").is_not_null())
    if not rows.is_empty():
        latest = rows.group_by("night").agg(pl.all().sort_by("finished").last())
        failed = latest.filter(pl.col("status") == RunStatus.FAILED)
        for row in failed.iter_rows(named=True):
            details = json.loads(row["details"] or "{}")
            why = details.get("nights_failed", {}).get(row["night"]) or details.get("error")
            out[row["night"]] = f"{why or 'failed'} (run {row['run_id']})"
    return dict(sorted(out.items()))


def status(output: Output, dump_root: str | Path | None = None) -> dict[str, Any]:
    """What the output holds (nights, formula set, nights off it, unscored counts, last
    runs, table versions, lease holder); with ``dump_root``, its nights new, changed,
    unchanged or without their _SUCCESS marker."""
    state = output.state()
    nights = state.nights
    report: dict[str, Any] = {
        "output": output.display,
        # An output no run finished in: what a killed (or failed) first run left.
        "unfinished": None if output.runs_version() is not None else output.unfinished(),
        "nights": sorted(nights),
        "formula_set": dict(state.formula_set),
        "nights_off_set": nights_off_set(state),
        "unscored": {
            night: {
                c: entry.counts.get(c)
                for c in ("episodes_rejected", "episodes_harness_error", "files_rejected")
            }
            for night, entry in nights.items()
        },
        "nights_failed": failed_nights(output, state),
        "models_unscored": {
            night: dict(entry.models_unscored)
            for night, entry in nights.items()
            if entry.models_unscored
        },
        # Contract 1.2: per night, episodes scored other than the harness reported, and
        # with verdicts other than the harness's (null: scored before cogscore counted them).
        "mismatches": {
            night: {
                c: entry.counts.get(c)
                for c in ("episodes_score_mismatch", "episodes_verdict_mismatch")
            }
            for night, entry in nights.items()
        },
        # Contract 1.4: per night, episodes scored whose usage was refused (null: scored
        # before cogscore bounded usage).
        "usage_refused": {
            night: entry.counts.get("episodes_usage_refused") for night, entry in nights.items()
        },
        # Contract 1.4: per night, episodes scored and replaced by a later run of their model
        # and task (replaced_episodes; null: scored before cogscore set them apart).
        "replaced": {
            night: entry.counts.get("episodes_replaced") for night, entry in nights.items()
        },
        "table_versions": output.versions(),
        "last_runs": [
            {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in run.items()}
            for run in history(output).head(3).iter_rows(named=True)
        ],
        "lease": lease_holder(output.location),
        "runs_not_imported": runs_not_imported(output),
    }
    if dump_root is not None:
        plan = plan_nightly(dump_root, output)
        marked = plan_nightly(dump_root, output, require_marker=True)
        report["dump"] = {
            "new": plan.new,
            "changed": plan.changed,
            "unchanged": plan.unchanged,
            "without_success_marker": marked.waiting,
            "input_gone": plan.gone,
        }
    return report


def runs_not_imported(output: Output) -> list[dict[str, Any]]:
    """The harness runs the latest import (``nightly --runs``) did not import, each with
    every reason (table ``imports``; none where nothing was imported that way)."""
    imports = output.scan(IMPORTS_TABLE.name)
    latest = imports.select(pl.col("imported").max()).collect().item()
    if latest is None:
        return []
    missed = imports.filter((pl.col("imported") == latest) & (pl.col("outcome") == "rejected"))
    chosen = missed.select("run_file", "reasons", "detail", "run_id").sort("run_file")
    return list(chosen.collect().to_dicts())


def comparisons(
    output: Output,
    night: str | None = None,
    scope: str = "overall",
    models: list[str] | None = None,
    as_of: str | None = None,
    view: View = View.STANDING,
) -> pl.DataFrame:
    """The pairwise comparisons of the models in a scope (a category, ``overall``: each task
    weighs the same, or ``overall_by_category``) as the benchmark stood as of a night
    (default: the latest; ``standing_comparisons``), or with ``view`` night of the night's
    own episodes (``model_comparisons``): the table as the latest finished run (or run
    ``as_of``) left it. Holm's correction is over every pair of the night and scope,
    whichever ``models`` are shown. A night scored before ``model_comparisons`` existed is
    compared from its episode scores (``transforms.compare.model_comparisons``, the same
    function). A scope, night or model the output does not hold is ``CompareChoiceError``."""

    scopes = [*OVERALL_SCOPES, *Category]
    if scope not in scopes:
        raise CompareChoiceError("--scope", f"{scope!r}: one of {', '.join(scopes)}")
    if night is not None and not is_night(night):
        raise CompareChoiceError("--date", f"{night!r} is not a date YYYY-MM-DD")
    tables = VIEWS[view]
    column = pl.col(tables.night)
    published = output.scan(tables.comparisons.name, as_of)
    scored = output.scan(tables.models.name, as_of).select(column.unique().sort())
    nights = scored.collect().to_series().drop_nulls().to_list()
    if night is None:
        night = nights[-1] if nights else None
    elif night not in nights:
        held = f"its nights: {nights[0]} .. {nights[-1]}" if nights else "no night"
        raise CompareChoiceError("--date", f"{output} has no scores of {night} ({held})")
    table = published.filter(column == night).collect()
    if table.is_empty() and view is View.NIGHT:
        episodes = output.scan("episode_scores", as_of).filter(pl.col("dump_date") == night)
        table = model_comparisons(episodes.collect(), level=night_level(output, night, as_of))
    table = table.filter(pl.col(SCOPE) == scope).drop(*PROVENANCE, strict=False)
    if models:
        present = set(table[MODEL_A]) | set(table[MODEL_B])
        if unknown := [m for m in models if m not in present]:
            raise CompareChoiceError(
                "--models",
                f"no comparison of {', '.join(map(repr, unknown))} on {night} in {scope} "
                f"(its models: {', '.join(sorted(present)) or 'none'})",
            )
        table = table.filter(pl.col(MODEL_A).is_in(models) & pl.col(MODEL_B).is_in(models))
    return table.sort(MODEL_A, MODEL_B)


class CompareChoiceError(ValueError):
    """A night, scope or model ``compare`` was asked for that the output does not hold: a
    usage error of ``option``."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def night_level(output: Output, night: str | None, as_of: str | None = None) -> float:
    """The level of ``night``'s intervals: the one the run that scored it used."""

    return night_levels(output.state(as_of)).get(night, DEFAULT_LEVEL)


def standings_compared(
    output: Output,
    night: str | None,
    against: str,
    *,
    scope: str = OVERALL,
    models: list[str] | None = None,
    as_of: str | None = None,
) -> TwoStandings:
    """The standing as of ``night`` (default: the latest) against the one as of
    ``against``, any earlier night's: each model's score and rank in both, the change, its
    interval and what the statistics call it (``standing_changes``' columns, made by the
    function that makes that table, ``flows.standings_between.changes_between``: the results re-run
    between them tested against those they replaced; a model whose results and rank did not
    change has a row with ``kind`` null), in ``scope`` (``overall`` or a category); and every
    result that changed between them (``task_changes``' columns). The tables as the latest
    finished run (or run ``as_of``) left them; intervals at the level of the run that scored
    ``night``, the default design and margin. A night or scope the output does not hold is
    ``CompareChoiceError``."""
    if scope not in (OVERALL, *Category):
        raise CompareChoiceError("--scope", f"{scope!r}: with --against, overall or a category")
    for option, value in (("--date", night), ("--against", against)):
        if value is not None and not is_night(value):
            raise CompareChoiceError(option, f"{value!r} is not a date YYYY-MM-DD")
    held = output.scan(TASK_STANDINGS_TABLE.name, as_of).select(pl.col(AS_OF).unique().sort())
    nights = held.collect().to_series().drop_nulls().to_list()
    night = night if night is not None else (nights[-1] if nights else None)
    for option, value in (("--date", night), ("--against", against)):
        if value not in nights:
            have = f"its standings: {nights[0]} .. {nights[-1]}" if nights else "no standing"
            raise CompareChoiceError(option, f"{output} has no standing as of {value} ({have})")
    assert night is not None
    if against >= night:
        raise CompareChoiceError("--against", f"{against} is not earlier than {night}")
    before, after = standing_of(output, against, as_of), standing_of(output, night, as_of)
    read_reruns(output, before, after, as_of)
    bootstrap = Bootstrap(level=night_level(output, night, as_of))
    moved, cells = changes_between(before, after, bootstrap=bootstrap, options=RegressionOptions())
    sides = (
        (before.models.lazy(), before.categories.lazy()),
        (after.models.lazy(), after.categories.lazy()),
    )
    rows = every_model(moved.lazy(), *sides).collect().filter(pl.col(SCOPE) == scope)
    if models:
        if unknown := [m for m in models if m not in set(rows[Col.MODEL])]:
            raise CompareChoiceError(
                "--models",
                f"no standing of {', '.join(map(repr, unknown))} in {scope} as of {against} or "
                f"{night} (its models: {', '.join(sorted(rows[Col.MODEL])) or 'none'})",
            )
        rows = rows.filter(pl.col(Col.MODEL).is_in(models))
        cells = cells.filter(pl.col(Col.MODEL).is_in(models))
    if scope != OVERALL:
        cells = cells.filter(pl.col(Col.CATEGORY) == scope)
    rows = rows.with_columns(
        pl.lit(night).alias(AS_OF), pl.lit(against).alias(PREVIOUS_AS_OF)
    ).select(c for c in moved.columns)  # a row of each model whose standing held still too
    order = rows.sort(NEW_RANK, OLD_RANK, Col.MODEL, nulls_last=True)
    return TwoStandings(night, against, order, cells.drop(PROVENANCE, strict=False))


@dataclass(frozen=True)
class TwoStandings:
    """Two standings compared (``standings_compared``): the nights they are as of, each
    model's row and each result that changed between them."""

    night: str
    against: str
    models: pl.DataFrame
    tasks: pl.DataFrame
