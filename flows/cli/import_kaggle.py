"""The ``cogscore import-kaggle`` command (registered in ``flows/cli/making.py``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.options import NamesOpt, TaskMemoryOpt, replay_timeout
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.store.errors import StorageError
from flows.store.location import ENV_OPTIONS, Location, parse_storage_options
from transforms.names import NameError_

RunsArg = Annotated[
    str,
    typer.Argument(
        metavar="RUNS",
        help="Folder (or s3:// URL) holding the harness's .run.json files, at any depth.",
    ),
]
TasksOpt = Annotated[
    Path,
    typer.Option(
        "--tasks",
        help="Local folder of LearningBench task files (<category folder>/<task>.py). "
        "THEY ARE CODE AND ARE RUN: each run is replayed through its task file.",
    ),
]
DumpOpt = Annotated[
    str,
    typer.Option("--out", help="DUMP_ROOT to write the rows to (a folder or an s3:// URL)."),
]


def import_kaggle(
    runs: RunsArg,
    tasks: TasksOpt,
    out: DumpOpt,
    *,
    date: Annotated[
        str | None,
        typer.Option(
            "--date",
            metavar="YYYY-MM-DD",
            help="Put every run in this night (default: each run's start date, UTC).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the import's summary as one JSON object, last.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when any run was not imported.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    timeout: Annotated[float, replay_timeout("--timeout")] = DEFAULT_TIMEOUT,
    task_memory: TaskMemoryOpt = DEFAULT_TASK_MEMORY,
    names: NamesOpt = None,
    storage_option: Annotated[
        list[str] | None,
        typer.Option(
            "--storage-option",
            metavar="KEY=VALUE",
            help="An option of the object store (repeatable); also COGSCORE_STORAGE_OPTIONS "
            "and the AWS_* variables.",
        ),
    ] = None,
) -> None:
    """Import LearningBench harness runs (kaggle-benchmarks .run.json files) as dump rows.

    Each run is replayed through its task file (found in --tasks by the task's registered
    name) under the real harness (needs the extra: uv sync --extra kaggle), with a
    scripted model that gives the recorded replies: the task files are code and this
    command RUNS them (each in a forked process group of its own, with a time, memory and
    output limit); nothing in a run file is run. Rows go to DUMP_ROOT/dump_date=<night>/,
    one Parquet file per run, and each night that received runs is marked complete
    (_SUCCESS) when the import ends; importing the same runs again writes nothing. Every run
    not imported is reported with its reason, and one bad run never stops the others. A
    run's model is named by --names, the dump's names (DUMP_ROOT/_cogscore_names.csv) or
    the rule (its vendor prefix off, @ as -), its task by its task file's name."""
    from flows.importers.kaggle import import_runs
    from flows.present.imports import ImportProgress, print_report
    from flows.store.dumps import is_night

    if date is not None and not is_night(date):
        raise typer.BadParameter(f"{date!r} is not a date YYYY-MM-DD", param_hint="--date")
    if not tasks.is_dir():
        typer.echo(f"error: --tasks {tasks}: no such folder", err=True)
        raise typer.Exit(2)
    if storage_option:
        parse_storage_options(storage_option)
        os.environ[ENV_OPTIONS] = ",".join(storage_option)
    try:
        source, target = Location.parse(runs), Location.parse(out)
    except StorageError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    if source.is_local and not Path(source.uri).is_dir():
        typer.echo(f"error: RUNS {source.uri}: no such folder", err=True)
        raise typer.Exit(2)
    progress = ImportProgress(enabled=not quiet and not json_output)
    try:
        with progress:
            report = import_runs(
                source,
                tasks.resolve(),
                target,
                date=date,
                timeout=timeout,
                task_memory=task_memory,
                on_start=progress.begin,
                on_run=progress.done,
                names=names,
            )
    except NameError_ as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    except StorageError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(4) from None
    except RuntimeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    if json_output:
        sys.stdout.write(json.dumps(report.as_json()) + "\n")
    else:
        print_report(report)
    if strict and report.rejected:
        raise typer.Exit(3)
