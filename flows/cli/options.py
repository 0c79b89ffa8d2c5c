"""The options and arguments the commands share (typer's ``Annotated`` types), and what
the commands do with them before anything else."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from flows.importers.kaggle_limits import (
    MIN_TASK_MEMORY,
    MIN_TIMEOUT,
    TASK_MEMORY_HELP,
    TIMEOUT_HELP,
)
from flows.importers.names import NAMES_ENV
from flows.options import RUN_OPTIONS
from flows.records import exit_code_of
from flows.store.location import ENV_OPTIONS, parse_storage_options
from schemas.columns import SqlFormat
from schemas.views import View

F = TypeVar("F", bound=Callable[..., Any])


def with_run_options(command: str) -> Callable[[F], F]:
    """Give ``command``'s function the run options it takes (``flows.options.RUN_OPTIONS``,
    where each is declared once) as typer options, each read from its flag or its
    environment variable: the function receives them in its ``**run``."""

    def add(function: F) -> F:
        signature = inspect.signature(function, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        for option in RUN_OPTIONS:
            if command not in option.commands:
                continue
            kind: Any = option.kind if option.default is not None else option.kind | None
            typed = typer.Option(
                option.flag, envvar=option.env, help=option.help, min=option.low, max=option.high
            )
            own.append(
                inspect.Parameter(
                    option.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=option.default,
                    annotation=Annotated[kind, typed],
                )
            )
        function.__signature__ = signature.replace(parameters=own)  # type: ignore[attr-defined]
        return function

    return add


class Engine(StrEnum):
    AUTO = "auto"
    LOCAL = "local"
    PREFECT = "prefect"


def engine_of(engine: Engine) -> Engine:
    if engine is Engine.AUTO:
        return Engine.PREFECT if os.environ.get("PREFECT_API_URL") else Engine.LOCAL
    return engine


# Strings, not Paths: a Path would fold "s3://b/x" into "s3:/b/x" before a message names it.
InputArg = Annotated[
    str,
    typer.Argument(
        metavar="DUMP_ROOT",
        envvar="COGSCORE_DUMP_ROOT",
        help="Folder of Parquet files (or one file), or an s3:// URL.",
    ),
]


OutOpt = Annotated[
    str,
    typer.Option("--out", envvar="COGSCORE_OUT", help="Output folder or URL for the tables."),
]


FormulaOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--formula",
        envvar="COGSCORE_FORMULA",
        help="CATEGORY=VERSION, e.g. procedural_learning=v1; CATEGORY/TASK=VERSION for one "
        "task, CATEGORY/*=VERSION for a category and all its tasks (repeatable; the "
        "variable: space-separated). cogscore formulas lists the versions.",
    ),
]


EngineOpt = Annotated[
    Engine,
    typer.Option(
        envvar="COGSCORE_ENGINE",
        help="local: in this process; prefect: as a Prefect flow (the configured "
        "PREFECT_API_URL, else Prefect's temporary server, +15-25 s); auto: prefect when "
        "PREFECT_API_URL is set, else local.",
    ),
]


DaskOpt = Annotated[
    str | None,
    typer.Option(
        "--dask-address",
        envvar="COGSCORE_DASK_ADDRESS",
        help="Run the per-file work on this Dask cluster (tcp://HOST:PORT).",
    ),
]


OutArg = Annotated[
    str,
    typer.Argument(metavar="OUT", envvar="COGSCORE_OUT", help="The output (folder or URL)."),
]


AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="RUN_ID",
        envvar="COGSCORE_AS_OF",
        help="The tables as run RUN_ID left them (default: the latest finished run).",
    ),
]

ViewOpt = Annotated[
    View,
    typer.Option(
        "--view",
        envvar="COGSCORE_VIEW",
        help="standing: the benchmark as it stands as of the night (each model's latest "
        "result on every task, whenever it ran); night: the night's own episodes alone.",
    ),
]


FormatOpt = Annotated[
    SqlFormat | None,
    typer.Option(
        "--format",
        envvar="COGSCORE_FORMAT",
        help="table (the default on a terminal: every column, long values folded), csv "
        "(the default elsewhere: a pipe, a file, a cron log; lists and structs as JSON) "
        "or json (one array of objects). No value is ever cut.",
    ),
]


def format_of(chosen: SqlFormat | None) -> SqlFormat:
    """``--format`` as given; by default a table on a terminal, CSV elsewhere (a pipe, a
    file, a cron log: whole values, one row a line)."""
    if chosen is not None:
        return chosen
    return SqlFormat.TABLE if sys.stdout.isatty() else SqlFormat.CSV


StorageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--storage-option",
        metavar="KEY=VALUE",
        help="An option of the object store (repeatable), e.g. aws_endpoint_url=http://…; "
        "also COGSCORE_STORAGE_OPTIONS=KEY=VALUE,KEY=VALUE, and the standard AWS_* "
        "variables for credentials. Never printed or recorded.",
    ),
]


QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        envvar="COGSCORE_QUIET",
        help="No progress display (it is off anyway when stderr is not a terminal).",
    ),
]


JsonRecordOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        envvar="COGSCORE_JSON",
        help="Print the run record (README 'Run records') as one JSON object, last.",
    ),
]


JsonOpt = Annotated[
    bool, typer.Option("--json", envvar="COGSCORE_JSON", help="Print JSON instead of a table.")
]


def replay_timeout(flag: str) -> Any:
    """The seconds a harness run's replay may take: ``import-kaggle --timeout``, ``nightly
    --task-timeout`` (beside the nightly's own options, a plain ``--timeout`` would read as
    the run's)."""
    return typer.Option(flag, min=MIN_TIMEOUT, envvar="COGSCORE_TASK_TIMEOUT", help=TIMEOUT_HELP)


TaskMemoryOpt = Annotated[
    int,
    typer.Option(
        "--task-memory",
        metavar="MIB",
        min=MIN_TASK_MEMORY,
        envvar="COGSCORE_TASK_MEMORY",
        help=TASK_MEMORY_HELP,
    ),
]


NamesOpt = Annotated[
    Path | None,
    typer.Option(
        "--names",
        metavar="FILE",
        envvar=NAMES_ENV,
        help="A names file (CSV, header alias,model): each row maps a name a source gives a "
        "model (a harness slug, a table's slug or display name) to the model cogscore shows. "
        "Names that follow the rule (the vendor prefix off, @ as -) join without it; the "
        "dump keeps what each name resolved to (DUMP_ROOT/_cogscore_names.csv).",
    ),
]


def refused(error: Exception) -> typer.Exit:
    """Report ``error`` in one line; the exit with its code (README "Exit codes")."""

    typer.echo(f"error: {error}", err=True)
    return typer.Exit(int(exit_code_of(error)))


def writable(path: str | Path, option: str, *, folder: bool) -> None:
    """Refuse, as a usage error before any work, a local ``path`` a command will write that
    cannot be what it must be (a ``folder``, else a file): a folder that is a file, a file
    that is a folder, or either below a file. A URL passes: its store answers for it."""
    if "://" in str(path):
        return
    target = Path(path).expanduser()
    if target.exists() and target.is_dir() != folder:
        what = "a file, not a folder" if folder else "a folder: give the file to write"
        raise typer.BadParameter(f"{target} is {what}", param_hint=option)
    for above in target.parents:
        if above.exists():
            if not above.is_dir():
                raise typer.BadParameter(f"{above} is a file, not a folder", param_hint=option)
            return


def use_storage_options(pairs: list[str] | None) -> None:
    """Make ``--storage-option`` pairs this process's storage options (every reader and
    writer of a location merges ``COGSCORE_STORAGE_OPTIONS``; Dask workers need their own)."""

    if not pairs:
        return
    try:
        parse_storage_options(pairs)
    except Exception as error:
        raise typer.BadParameter(str(error), param_hint="--storage-option") from None
    os.environ[ENV_OPTIONS] = ",".join(pairs)
