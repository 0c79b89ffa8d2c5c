"""The commands that score: ``score``, ``nightly`` and ``rescore`` (``flows.runs``, or
their Prefect flows), their checks before any work, and their ending (summary, run record,
exit code)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flows.cli import LAST_WORDS, TYPED, app, command_line, echo, internal_error, say
from flows.cli.options import (
    DaskOpt,
    Engine,
    EngineOpt,
    FormulaOpt,
    InputArg,
    JsonRecordOpt,
    NamesOpt,
    OutOpt,
    QuietOpt,
    StorageOpt,
    TaskMemoryOpt,
    ViewOpt,
    engine_of,
    replay_timeout,
    use_storage_options,
    with_run_options,
    writable,
)
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.options import RunOptions, run_options
from flows.records import RunFailed, ended, error_line, exit_code_of, run_record
from flows.store import prehash
from flows.store.errors import ServiceUnreachable, StorageError
from schemas.exits import ExitCode
from schemas.views import View
from transforms.names import NameError_, read_names

if TYPE_CHECKING:
    from flows.importers.kaggle_nightly import Harvest


def _check(
    input_root: str,
    out: str,
    formula: list[str] | None,
    input_changed: bool,
    pinned: bool = True,
    imported: bool = False,
) -> None:
    """``flows.plan.preflight``: a formula choice it refuses is a usage error of
    ``--formula``."""
    from flows.plan import FormulaChoiceError, preflight

    try:
        preflight(input_root, out, formula or [], input_changed, pinned, imported)
    except FormulaChoiceError as error:
        raise typer.BadParameter(str(error), param_hint="--formula") from None


def _options(
    json_output: bool, engine: Engine, storage_option: list[str] | None, run: dict[str, Any]
) -> RunOptions:
    """The run's options (``run``: ``flows.options.RUN_OPTIONS`` as typer read them, from
    their flags or environment variables), built once, its storage options made the
    process's: a bad one is a usage error (exit 2, its run record printed all the same
    with ``--json``)."""
    with _usage_recorded(json_output, engine):
        use_storage_options(storage_option)
        try:
            return run_options(**run)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None


def _check_prefect_api() -> None:
    """Where ``PREFECT_API_URL`` names a server, that it answers (else one line, exit 4,
    before any work): Prefect's own error is a traceback of its client."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return  # Prefect starts its temporary server in this process
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        first = (str(problem).strip().splitlines() or [type(problem).__name__])[0]
        raise ServiceUnreachable(
            f"the Prefect API at {url} does not answer ({first}): start it, correct "
            "PREFECT_API_URL, or run in this process with --engine local"
        )


@contextmanager
def _usage_recorded(json_output: bool, engine: Engine) -> Iterator[None]:
    """A usage error (exit 2) of score, nightly or rescore: with ``--json`` its run record
    (status refused) is printed all the same, as every outcome's is."""
    from datetime import UTC
    from datetime import datetime as clock

    started = clock.now(UTC)
    try:
        yield
    except typer.BadParameter as error:
        if json_output:
            record = run_record(
                None,
                command=command_line(),
                engine=str(engine_of(engine)),
                started=started,
                exit_code=ExitCode.USAGE,
                error=error.format_message(),
            )
            echo(json.dumps(record, default=str))
        raise


def _run(
    engine: Engine,
    dask_address: str | None,
    kind: str,
    options: RunOptions,
    *,
    json_output: bool = False,
    check: Callable[[], None] | None = None,
    quiet: bool = False,
    view: View = View.STANDING,
    report: Path | None = None,
    **kwargs: Any,
) -> None:
    """Run ``kind`` with ``flows.runs`` or as its flow of ``flows.prefect_flows`` (imported
    only then: importing Prefect alone costs about 2 s), print the summary (and, with
    ``--json``, the run record last), and exit with the code of README "Exit codes"."""
    from datetime import UTC
    from datetime import datetime as clock

    from flows.present.summary import outcome_lines
    from flows.present.terminal import printable
    from flows.store.dumps import InputError

    started, t0 = clock.now(UTC), time.perf_counter()
    chosen = engine_of(engine)
    outcome, code, error = None, ExitCode.SUCCESS, None
    try:
        if check is not None:
            check()
        if chosen is Engine.PREFECT:
            os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
            # Prefect's temporary server needs 15-25 s here on a cold start (default 20 s).
            os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
            _check_prefect_api()
            from flows import prefect_flows

            flow = getattr(prefect_flows, f"{kind}_flow")
            if "harvest" in kwargs:  # a flow's parameters are plain values
                kwargs |= prefect_flows.harvest_parameters(kwargs.pop("harvest"))
            if dask_address:
                from prefect_dask import DaskTaskRunner

                flow = flow.with_options(task_runner=DaskTaskRunner(address=dask_address))
            outcome = flow(**kwargs, **options.parameters(kind))
        else:
            from flows import runs
            from flows.mappers import dask_mapper
            from flows.present.terminal import progress_for
            from flows.records import RunContext

            progress = progress_for(quiet or bool(os.environ.get("COGSCORE_QUIET")))
            # None: here, telling ``progress`` of each file (``flows.job.score_nights``).
            mapper = dask_mapper(dask_address) if dask_address else None
            context = RunContext(
                command=command_line(), engine="local", progress=progress, options=options
            )
            run = getattr(runs, kind)
            with progress:
                result = run(**kwargs, mapper=mapper, context=context)
            outcome = ended(result)
    except RunFailed as failed:  # its tables written: a night failed, an alert, --strict
        outcome, code, error = failed.outcome, failed.code, printable(str(failed))
    except (InputError, StorageError) as refused:
        code, error = exit_code_of(refused), str(refused)
    except KeyboardInterrupt as stop:  # Ctrl-C: one line, exit 130, as the runs table says
        code, error = ExitCode.INTERRUPTED, error_line(stop)
    except typer.Exit:
        raise
    except typer.BadParameter as usage:  # the command line's own: exit 2, recorded
        with _usage_recorded(json_output, engine):
            raise usage from None
    except Exception as bug:  # a bug: one line, the traceback only where asked for
        if os.environ.get("COGSCORE_DEBUG"):
            raise
        code, error = ExitCode.INTERNAL, internal_error(bug)
    if outcome is not None:
        if lines := outcome_lines(outcome, view):
            echo("\n".join(lines))  # one write: a closed pipe is met once
        if report is not None and error is None:
            from flows.present.report import ReportError, write_report

            try:
                echo(f"report: {write_report(outcome.out, report, view=view)}")
            except (ReportError, OSError) as failed:
                code, error = ExitCode.USAGE, f"the report could not be written: {failed}"
    if error is not None and TYPED:  # the command: said last (``run``)
        LAST_WORDS.append(error)
    elif error is not None:
        say(error, error=True)  # one line: the last thing on stderr
    else:
        say(f"done in {time.perf_counter() - t0:.1f} s")
    if json_output:
        record = run_record(
            outcome,
            command=command_line(),
            engine=str(chosen),
            started=started,
            exit_code=code,
            error=error,
            output=str(kwargs.get("out")),
        )
        echo(json.dumps(record, default=str))
    if code is not ExitCode.SUCCESS:
        raise typer.Exit(int(code))


@app.command()
@with_run_options("score")
def score(
    input_root: InputArg,
    *,
    out: OutOpt,
    formula: FormulaOpt = None,
    engine: EngineOpt = Engine.AUTO,
    dask_address: DaskOpt = None,
    storage_option: StorageOpt = None,
    json_output: JsonRecordOpt = False,
    quiet: QuietOpt = False,
    view: ViewOpt = View.STANDING,
    **run: Any,
) -> None:
    """Score a whole dump into OUT (every table, its nights replaced atomically).

    Into an existing OUT the run uses OUT's formula set (see rescore to change it)."""
    prehash.start(input_root)  # the dump hashed while the run's code is imported
    options = _options(json_output, engine, storage_option, run)
    _run(
        engine,
        dask_address,
        "score",
        options,
        check=lambda: _check(input_root, out, formula, options.input_root_changed),
        json_output=json_output,
        quiet=quiet,
        view=view,
        input_root=input_root,
        out=out,
        formulas=formula or [],
    )


@app.command()
@with_run_options("nightly")
def nightly(
    dump_root: InputArg,
    *,
    out: OutOpt,
    formula: FormulaOpt = None,
    engine: EngineOpt = Engine.AUTO,
    dask_address: DaskOpt = None,
    verify: Annotated[
        bool,
        typer.Option(
            envvar="COGSCORE_VERIFY",
            help="Hash every file, even those whose size and time are unchanged.",
        ),
    ] = False,
    storage_option: StorageOpt = None,
    json_output: JsonRecordOpt = False,
    quiet: QuietOpt = False,
    view: ViewOpt = View.STANDING,
    runs: Annotated[
        str | None,
        typer.Option(
            "--runs",
            metavar="RUNS",
            envvar="COGSCORE_RUNS",
            help="First import the harness runs (.run.json, at any depth) of this folder or "
            "s3:// URL into DUMP_ROOT, as import-kaggle does; each run's outcome goes to OUT's "
            "imports table. Needs --tasks.",
        ),
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            envvar="COGSCORE_TASKS",
            help="With --runs: the task files to replay them through (THEY ARE CODE AND ARE "
            "RUN, as import-kaggle runs them).",
        ),
    ] = None,
    task_timeout: Annotated[float, replay_timeout("--task-timeout")] = DEFAULT_TIMEOUT,
    task_memory: TaskMemoryOpt = DEFAULT_TASK_MEMORY,
    names: NamesOpt = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="FILE",
            envvar="COGSCORE_REPORT",
            help="Also write the report (cogscore report) of OUT to FILE after the run.",
        ),
    ] = None,
    **run: Any,
) -> None:
    """Score the nights that are new or changed since the last run.

    Only the dump_date partitions whose input (the content digest of every file) differs from what
    the runs table recorded are scored, with OUT's formula set; with --runs, the harness
    runs that arrived are imported first."""
    options = _options(json_output, engine, storage_option, run)
    _run(
        engine,
        dask_address,
        "nightly",
        options,
        check=lambda: _check(
            dump_root, out, formula, options.input_root_changed, imported=bool(runs)
        ),
        json_output=json_output,
        quiet=quiet,
        view=view,
        dump_root=dump_root,
        out=out,
        formulas=formula or [],
        verify=verify,
        report=report,
        harvest=_harvest(runs, tasks, (task_timeout, task_memory), names, json_output, engine),
    )


def _harvest(
    runs: str | None,
    tasks: Path | None,
    limits: tuple[float, int],
    names: Path | None,
    json_output: bool,
    engine: Engine,
) -> Harvest | None:
    """The harness runs a nightly imports first (``--runs``, ``--tasks``): both or none;
    ``--names`` with them (a names file read before any work)."""
    from flows.importers.kaggle_nightly import Harvest

    with _usage_recorded(json_output, engine):
        if names is not None and runs is None:
            raise typer.BadParameter("it names --runs' models: give --runs", param_hint="--names")
        if names is not None:
            try:
                read_names(names.read_text(encoding="utf-8"), str(names))
            except (OSError, UnicodeDecodeError, NameError_) as error:
                raise typer.BadParameter(str(error), param_hint="--names") from None
        if runs is None and tasks is None:
            return None
        if runs is None or tasks is None:
            given, missing = ("--runs", "--tasks") if tasks is None else ("--tasks", "--runs")
            raise typer.BadParameter(f"{given} needs {missing} too", param_hint=missing)
        if not tasks.is_dir():
            raise typer.BadParameter(f"{tasks}: no such folder", param_hint="--tasks")
        timeout, memory = limits
        return Harvest(runs, tasks.resolve(), timeout, memory, names and names.resolve())


def _day(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a date YYYY-MM-DD") from None


@app.command()
@with_run_options("rescore")
def rescore(
    dump_root: InputArg,
    *,
    out: OutOpt,
    formula: FormulaOpt = None,
    since: Annotated[
        str | None, typer.Option(envvar="COGSCORE_SINCE", help="First night, YYYY-MM-DD.")
    ] = None,
    until: Annotated[
        str | None, typer.Option(envvar="COGSCORE_UNTIL", help="Last night, YYYY-MM-DD.")
    ] = None,
    engine: EngineOpt = Engine.AUTO,
    dask_address: DaskOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            envvar="COGSCORE_DRY_RUN",
            help="Compute and print what would move; change nothing in OUT.",
        ),
    ] = False,
    diff_out: Annotated[
        Path | None,
        typer.Option(
            "--diff-out",
            envvar="COGSCORE_DIFF_OUT",
            help="Also write the diff to this Parquet file.",
        ),
    ] = None,
    storage_option: StorageOpt = None,
    json_output: JsonRecordOpt = False,
    quiet: QuietOpt = False,
    view: ViewOpt = View.STANDING,
    **run: Any,
) -> None:
    """Rescore a range of nights with chosen formula versions; show and write what moved.

    Over every night OUT holds, the versions become OUT's formula set; over part of its
    history the set stays, and those nights are named as scored with other versions."""
    options = _options(json_output, engine, storage_option, run)
    with _usage_recorded(json_output, engine):
        if not formula:
            raise typer.BadParameter("name at least one CATEGORY=VERSION", param_hint="--formula")
        first, last = _day(since), _day(until)
        if diff_out is not None:
            writable(diff_out, "--diff-out", folder=False)
    _run(
        engine,
        dask_address,
        "rescore",
        options,
        check=lambda: _check(dump_root, out, formula, options.input_root_changed, pinned=False),
        json_output=json_output,
        quiet=quiet,
        view=view,
        dump_root=dump_root,
        out=out,
        formulas=formula,
        since=first,
        until=last,
        dry_run=dry_run,
        diff_out=diff_out,
    )
