"""The ``cogscore import-scores`` command (registered in ``flows/cli.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.options import NamesOpt
from flows.importers.scores import ImportError_, import_scores
from flows.present.imports import new_model_lines
from transforms.names import NameError_


def import_scores_command(
    table: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="A table of scores, CSV or Parquet: one row per model and task (the "
            "contract's column names, or LearningBench's leaderboard_flat.csv as published).",
        ),
    ],
    *,
    out: Annotated[Path, typer.Option("--out", help="DUMP_ROOT to write the rows to.")],
    date: Annotated[
        str | None,
        typer.Option(
            "--date",
            metavar="YYYY-MM-DD",
            help="Put every row in this night: a snapshot (default: each row's own date "
            "column, UTC).",
        ),
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="Folder of LearningBench task files (<category folder>/<task>.py): says "
            "where a task's folder puts it in another category than the table does (the "
            "table's category is kept; only the folder names are read, nothing is run).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the import's summary as one JSON object, last.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when any row was not imported.")
    ] = False,
    names: NamesOpt = None,
) -> None:
    """Import a table of scores (CSV or Parquet) as dump rows.

    The scores a harness or a leaderboard already computed: per row one episode whose
    episode_end carries the score as reported_score, with no formula inputs. Scored, such
    an episode's score is its reported score (formula version 'reported'); a rescore leaves
    it as it is. A table's categories are kept as it publishes them: a task it calls
    'unknown' is uncategorised (it counts in the overall score, in no category). Rows go to
    DUMP_ROOT/dump_date=<night>/scores-<FILE's name>-<path key>.parquet, a file per table;
    importing the same table again writes nothing, a copy of one imported is reported.
    Scores lie in [0, 1]: a table mostly above 1 (0-100) is refused. Every row not imported
    is reported with every reason. A row's model is named by every model column the table
    has (LearningBench's model_slug and model_name), resolved to one model by --names, the
    dump's names and the rule; its task by the rule (- as _)."""
    from flows.store.dumps import is_night

    if date is not None and not is_night(date):
        raise typer.BadParameter(f"{date!r} is not a date YYYY-MM-DD", param_hint="--date")
    try:
        done = import_scores(table, out, date, tasks, names)
    except (ImportError_, NameError_) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    unchanged = (
        f"; {done.rows_unchanged} unchanged (their runs, with these scores, are in the dump "
        "already: not imported again)"
        if done.rows_unchanged
        else ""
    )
    lines = [
        f"{done.rows_imported} of {done.rows_read} rows of {table} imported into {out}" + unchanged,
        *(f"  night {n}: {f}" for n, f in sorted(done.written.items())),
        *(f"  night {n}: unchanged ({f})" for n, f in sorted(done.unchanged.items())),
        *(
            f"  night {n}: the same table was imported already ({f}): not imported again"
            for n, f in sorted(done.copies.items())
        ),
    ]
    lines += new_model_lines(done.new_models)
    for d in done.disagreements:
        lines.append(
            f"category of {d['task']}: the table's {d['table']} kept; its task file is in "
            f"{d['task_files']}"
        )
    for row in done.rejected[:20]:
        reasons = "; ".join(str(r) for r in row["reasons"])  # type: ignore[attr-defined]
        lines.append(f"not imported: row {row['row']} ({row['model']}, {row['task']}): {reasons}")
    if len(done.rejected) > 20:
        lines.append(f"… and {len(done.rejected) - 20} more rows not imported (--json: all)")
    for line in lines:
        typer.echo(line, err=json_output)
    if json_output:
        typer.echo(json.dumps(done.summary(), default=str, sort_keys=True))
    if strict and done.rejected:
        raise typer.Exit(3)
