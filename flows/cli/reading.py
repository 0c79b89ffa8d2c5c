"""The commands that read an output (and ``vacuum``, ``unlock`` and ``repair``, which keep
it): report, sql, status, history, compare, leaderboard, vacuum, unlock, repair, and
formulas. None imports pandera or Prefect: they answer in well under a second."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Annotated

import typer

from flows.cli import app
from flows.cli.options import (
    AsOfOpt,
    FormatOpt,
    JsonOpt,
    OutArg,
    StorageOpt,
    ViewOpt,
    format_of,
    refused,
    use_storage_options,
    writable,
)
from flows.store.errors import BrokenLog, StorageError
from schemas.views import VIEWS, View


@app.command()
def formulas() -> None:
    """List every formula version and the defaults.

    Every version of every category, and its default (what a new output pins unless
    --formula says otherwise); then the tasks with a default of their own."""
    from transforms.registry import listing

    for key, default, description in listing():
        typer.echo(f"{key}{' (default)' if default else ''}: {description}")


@app.command()
def report(
    out: OutArg,
    html_file: Annotated[
        Path, typer.Option("--html", envvar="COGSCORE_HTML", help="The HTML file to write.")
    ],
    night: Annotated[
        str | None,
        typer.Option(
            envvar="COGSCORE_NIGHT",
            help="The night to show, YYYY-MM-DD (default: the latest night).",
        ),
    ] = None,
    view: ViewOpt = View.STANDING,
    as_of: AsOfOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Write one self-contained HTML page (charts, data and plotly.js inline) of OUT's tables."""
    from flows.present.report import ReportError, write_report
    from flows.store.output import Output

    use_storage_options(storage_option)
    writable(html_file, "--html", folder=False)
    t0 = time.perf_counter()
    try:
        output = Output.at(out).require()
        output.check_as_of(as_of)
        path = write_report(output, html_file, night=night, as_of=as_of, view=view)
    except (ReportError, StorageError) as error:
        raise refused(error) from None
    typer.echo(str(path))
    size = path.stat().st_size
    typer.echo(f"report of {size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", err=True)


def _retention(text: str) -> float:
    """``30d``, ``12h`` or ``0h`` as hours."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dh])\s*", text)
    if match is None:
        raise typer.BadParameter(
            f"{text!r}: give days or hours, e.g. 30d or 12h", param_hint="--retain"
        )
    value = float(match.group(1))
    return value * 24 if match.group(2) == "d" else value


@app.command()
def vacuum(
    out: OutArg,
    retain: Annotated[
        str,
        typer.Option(
            envvar="COGSCORE_RETAIN",
            help="Keep what the table versions of this period need (30d, 12h, 0h).",
        ),
    ] = "30d",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            envvar="COGSCORE_DRY_RUN",
            help="Count what would be deleted; delete nothing.",
        ),
    ] = False,
    storage_option: StorageOpt = None,
) -> None:
    """Delete the data files that no table version needs any more.

    Those no table version of the last --retain needs, and the files of killed runs never
    committed. Never run by any other command; --as-of to runs older than --retain stops
    working. Only Parquet data files are deleted."""
    from flows.store.output import Output

    use_storage_options(storage_option)
    hours = _retention(retain)
    try:
        count = Output.at(out).require(unfinished=True).vacuum(retain_hours=hours, dry_run=dry_run)
    except StorageError as error:
        raise refused(error) from None
    verb = "would delete" if dry_run else "deleted"
    typer.echo(
        f"vacuum of {Output.at(out)}: {verb} {count} data file(s) (those no table version of "
        f"the last {retain} needs, and those of killed runs never committed)"
    )


@app.command()
def unlock(
    out: OutArg,
    run_id: Annotated[
        str,
        typer.Option(
            "--run",
            metavar="RUN_ID",
            help="The run whose lease to break: the one the busy message (exit 5) names.",
        ),
    ],
    storage_option: StorageOpt = None,
) -> None:
    """Break the lease of a run that is gone (killed, or its host down).

    Such a lease blocks the output until it expires (6 h; a run on the host it names takes
    it over once its process is gone, which status tells). Check first that the run is not
    going. Refused when another run holds the lease or the run is alive on this host. The
    next run repairs what the killed run left."""
    from flows.store.output import Output

    use_storage_options(storage_option)
    try:
        holder = Output.at(out).require(unfinished=True).unlock(run_id)
    except StorageError as error:
        raise refused(error) from None
    typer.echo(f"unlocked {Output.at(out)}: broke the lease of {holder.describe()}")


@app.command()
def repair(out: OutArg, storage_option: StorageOpt = None) -> None:
    """Make OUT readable and consistent again without a run.

    Rewrites the Delta commits whose statistics are not JSON (Infinity, which cogscore
    wrote before contract 1.4 and no reader parses: every command then refused OUT), then
    brings every table back to the state of the latest succeeded run, as a run does before
    it writes. Only those statistics change; no data file is touched. Refused while a run
    holds the lease."""
    from flows.store.output import Output

    use_storage_options(storage_option)
    output = Output.at(out)
    try:
        with contextlib.suppress(BrokenLog):  # an output all the same: what this repairs
            output.require(unfinished=True)
        healed, restored = output.repair()
    except StorageError as error:
        raise refused(error) from None
    for table, commits in healed.items():
        for commit in commits:
            typer.echo(f"rewrote {table}/{commit}: statistics that were not JSON left out")
    for table, version in restored.items():
        typer.echo(
            f"brought {table} back to the state the latest succeeded run left (version "
            f"{version}; empty where no run succeeded)"
        )
    if not (healed or restored):
        typer.echo(f"repair of {output}: nothing to repair")
    else:
        typer.echo(f"repair of {output}: done; the next nightly scores the nights left failed")


@app.command()
def history(
    out: OutArg,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
) -> None:
    """The runs recorded in OUT, newest first."""
    from flows.overview import history as runs_of
    from flows.present.status import as_json, history_lines
    from flows.store.output import Output

    use_storage_options(storage_option)
    try:
        output = Output.at(out).require(unfinished=True)
        if json_output:
            typer.echo(as_json(runs_of(output).to_dicts()))
        else:
            for line in history_lines(output):
                typer.echo(line)
    except StorageError as error:
        raise refused(error) from None


@app.command()
def status(
    out: OutArg,
    dump_root: Annotated[
        str | None,
        typer.Argument(
            metavar="[DUMP_ROOT]",
            envvar="COGSCORE_DUMP_ROOT",
            help="Also say which of its nights are new.",
        ),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
) -> None:
    """What OUT holds, and which nights of DUMP_ROOT are new.

    Its nights, formula set (and the nights off it), unscored counts, last runs, table
    versions and the lease (stale where it names a process of this host that is gone); with
    DUMP_ROOT, which of its nights are new, changed or waiting."""
    from flows.overview import status as status_of
    from flows.present.status import as_json, status_lines
    from flows.store.dumps import InputError
    from flows.store.output import Output

    use_storage_options(storage_option)
    try:
        report = status_of(Output.at(out).require(unfinished=True), dump_root)
    except (StorageError, InputError) as error:
        raise refused(error) from None
    if json_output:
        typer.echo(as_json(report))
    else:
        for line in status_lines(report):
            typer.echo(line)


@app.command()
def compare(
    out: OutArg,
    *,
    night: Annotated[
        str | None,
        typer.Option(
            "--date",
            envvar="COGSCORE_NIGHT",
            help="The night, YYYY-MM-DD (default: the latest night): the standing as of it, or "
            "with --view night its own episodes.",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(
            envvar="COGSCORE_SCOPE",
            help="A category, overall (each task weighs the same: the benchmark's own) or "
            "overall_by_category (each category weighs the same).",
        ),
    ] = "overall",
    models: Annotated[
        list[str] | None,
        typer.Option("--models", envvar="COGSCORE_MODELS", help="Only these models."),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            envvar="COGSCORE_AGAINST",
            help="An earlier night, YYYY-MM-DD: compare the standing as of --date with the "
            "standing as of it instead of the pairs of models (each model's score and rank "
            "in both, the change, its interval and whether it is beyond noise; every result "
            "that changed between them).",
        ),
    ] = None,
    view: ViewOpt = View.STANDING,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
) -> None:
    """Compare every pair of models as the benchmark stands as of a night, or two standings.

    In a scope (--view night: the night's own episodes), each pair once, a placed before b
    on the leaderboard: the difference a - b, its interval (at the level of the run that
    scored the night), the Holm-corrected p-value, the verdict, the minimum detectable
    effect and why a statistic is missing (--json: both orders). With --against: the
    standing as of --date against the one as of an earlier night, model by model (the
    statistics of standing_changes)."""
    from flows.overview import CompareChoiceError, comparisons, night_level, standings_compared
    from flows.present.status import (
        as_json,
        comparison_lines,
        leaderboard_order,
        standing_comparison_lines,
    )
    from flows.store.output import Output

    use_storage_options(storage_option)
    if against is not None and view is View.NIGHT:
        raise typer.BadParameter(
            "compares two standings: not with --view night", param_hint="--against"
        )
    try:
        output = Output.at(out).require()
        output.check_as_of(as_of)
        if against is not None:
            two = standings_compared(
                output, night, against, scope=scope, models=models, as_of=as_of
            )
        else:
            table = comparisons(output, night, scope, models, as_of, view)
    except StorageError as error:
        raise refused(error) from None
    except CompareChoiceError as error:
        raise typer.BadParameter(str(error), param_hint=error.option) from None
    if against is not None:
        if json_output:
            typer.echo(as_json({"models": two.models.to_dicts(), "tasks": two.tasks.to_dicts()}))
            return
        typer.echo(f"the standing as of {two.night} against the one as of {two.against}, {scope}:")
        level = night_level(output, two.night, as_of)
        for line in standing_comparison_lines(two, level):
            typer.echo(line)
        return
    if json_output:
        typer.echo(as_json(table.to_dicts()))
    else:
        shown = table[VIEWS[view].night][0] if table.height else None
        if shown is not None:
            what = "as the benchmark stands as of" if view is View.STANDING else "the night"
            typer.echo(f"{what} {shown}, {scope}:")
        order = leaderboard_order(output, shown, as_of, view)
        for line in comparison_lines(table, night_level(output, shown, as_of), order):
            typer.echo(line)


@app.command()
def sql(
    out: OutArg,
    query: Annotated[str, typer.Argument(help="A DuckDB query, e.g. 'FROM leaderboard'.")],
    as_of: AsOfOpt = None,
    output_format: FormatOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Run one DuckDB query that reads OUT's tables and views.

    Every table (as the latest finished run left it, or --as-of) and the views of
    sql/views.sql (leaderboard, model_trend, formula_set, ...) are registered, and nothing
    else can be read or written: no file, URL or extension; one statement, a SELECT."""
    from flows.present.sql import RefusedQuery, answer, connect, reading
    from flows.store.output import Output

    use_storage_options(storage_option)
    how = format_of(output_format)
    try:
        reading(query)  # refused before OUT is opened
        output = Output.at(out).require()
        output.check_as_of(as_of)
        shown = answer(connect(output, as_of), query, how)
    except (StorageError, RefusedQuery) as error:
        raise refused(error) from None
    except Exception as error:  # a DuckDB error in the query: the user's to fix
        typer.echo(f"error: {str(error).splitlines()[0]}", err=True)
        raise typer.Exit(2) from None
    typer.echo(shown)


@app.command()
def leaderboard(
    out: OutArg,
    scope: Annotated[
        str,
        typer.Option(
            envvar="COGSCORE_SCOPE",
            help="overall (each task weighs the same: the benchmark's own) or a category "
            "(its own leaderboard: ranked among every model with a score in it).",
        ),
    ] = "overall",
    as_of: AsOfOpt = None,
    output_format: FormatOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Print OUT's leaderboard, overall or of one category, without scoring.

    As it stands as of its latest night (or --as-of): rank, rank interval, score and
    interval, as the score command prints it (csv, json: the rows of standings or
    category_standings). Reads OUT alone."""
    from flows.present.ranking import ScopeError, leaderboard_of

    use_storage_options(storage_option)
    try:
        shown = leaderboard_of(out, scope, format_of(output_format), as_of)
    except ScopeError as error:
        raise typer.BadParameter(str(error), param_hint="--scope") from None
    except StorageError as error:
        raise refused(error) from None
    typer.echo(shown)
