"""The ``cogscore`` command line: score, nightly, rescore (and simulate)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from flows.options import RegressionOptions, RunOptions

DEFAULT = RegressionOptions()  # the regression options' defaults, declared there once

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Score learning-benchmark dumps."
)


class Engine(StrEnum):
    AUTO = "auto"
    LOCAL = "local"
    PREFECT = "prefect"


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
        help="CATEGORY=VERSION, e.g. procedural_learning=v1 (repeatable; the variable: "
        "space-separated).",
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


def _version(value: bool) -> None:
    if value:
        from flows.version import COGSCORE_VERSION

        typer.echo(f"cogscore {COGSCORE_VERSION}")
        raise typer.Exit()


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


_LOG_FORMAT = [LogFormat.TEXT]  # as chosen for this command


def _say(message: str, error: bool = False) -> None:
    """A line for stderr: as a log record where logs are JSON lines, else as it is."""
    if _LOG_FORMAT[0] is LogFormat.JSON:
        from flows.logs import log

        (log().error if error else log().warning)(message)
    else:
        typer.echo(f"error: {message}" if error else message, err=True)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print cogscore's version."
        ),
    ] = False,
    log_level: Annotated[
        str,
        typer.Option(envvar="COGSCORE_LOG_LEVEL", help="debug, info, warning or error (stderr)."),
    ] = "warning",
    log_format: Annotated[
        LogFormat,
        typer.Option(
            envvar="COGSCORE_LOG_FORMAT",
            help="text, or json: one JSON object per line with the run id (for log "
            "shippers; the progress display is then off).",
        ),
    ] = LogFormat.TEXT,
) -> None:
    """cogscore: validate transcript dumps and score every episode exactly."""
    from flows import logs

    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise typer.BadParameter(f"{log_level!r}: debug, info, warning or error")
    logs.configure(log_level, log_format.value)
    _LOG_FORMAT[0] = log_format
    if log_format is LogFormat.JSON:
        os.environ["COGSCORE_QUIET"] = "1"  # no progress bar between JSON lines
    if log_level.lower() == "debug":
        os.environ.setdefault("COGSCORE_DEBUG", "1")


@app.command()
def formulas() -> None:
    """List every formula version of every category, and the newest (what a new output
    pins unless --formula says otherwise)."""
    from schemas.formulas import DEFAULTS, DESCRIPTIONS, VERSIONS

    for category, versions in VERSIONS.items():
        for version in versions:
            newest = " (newest)" if DEFAULTS[category] == version else ""
            typer.echo(f"{category}={version}{newest}: {DESCRIPTIONS[category, version]}")


def _engine(engine: Engine) -> Engine:
    if engine is Engine.AUTO:
        return Engine.PREFECT if os.environ.get("PREFECT_API_URL") else Engine.LOCAL
    return engine


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


def _refused(error: Exception) -> typer.Exit:
    """Report ``error`` in one line; the exit with its code (README "Exit codes")."""
    from flows.records import exit_code_of

    typer.echo(f"error: {error}", err=True)
    return typer.Exit(int(exit_code_of(error)))


def _check(
    input_root: str,
    out: str,
    formula: list[str] | None,
    input_changed: bool,
    pinned: bool = True,
) -> None:
    """Fail fast, before any flow starts, on what the user can fix (``InputError``,
    ``StorageError``). ``pinned``: the formula versions asked for must be the output's own
    (score, nightly)."""
    from flows.io import check_writable, discover, dump_root, one_layout
    from flows.output import Output
    from flows.plan import check_places, formulas_for
    from schemas.formulas import resolve

    try:
        resolve(formula or [])
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--formula") from None
    root, output = dump_root(input_root), Output.at(out)  # a bad URL: BadLocation, exit 2
    one_layout(root, discover(root))
    check_places(root, output, output.state(), input_changed)
    if output.location.is_local:
        check_writable(Path(output.location.uri))
    if pinned:
        formulas_for(output, formula or [])


StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        envvar="COGSCORE_STRICT",
        help="Exit 1 when any file or episode was not scored (Prefect: the flow run ends "
        "Failed); the tables are written all the same.",
    ),
]
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


def _storage_options(pairs: list[str] | None) -> None:
    """Make ``--storage-option`` pairs this process's storage options (every reader and
    writer of a location merges ``COGSCORE_STORAGE_OPTIONS``; Dask workers need their own)."""
    from flows.storage.location import ENV_OPTIONS, parse_storage_options

    if not pairs:
        return
    try:
        parse_storage_options(pairs)
    except Exception as error:
        raise typer.BadParameter(str(error), param_hint="--storage-option") from None
    os.environ[ENV_OPTIONS] = ",".join(pairs)


BaselineOpt = Annotated[
    str,
    typer.Option(
        "--baseline",
        envvar="COGSCORE_BASELINE",
        help="Regressions: compare each night with the previous night ('previous') or with "
        "the mean of the last --baseline-nights nights ('mean').",
    ),
]
BaselineNightsOpt = Annotated[
    int,
    typer.Option(
        "--baseline-nights",
        min=1,
        envvar="COGSCORE_BASELINE_NIGHTS",
        help="Regressions: nights in the 'mean' baseline.",
    ),
]
MarginOpt = Annotated[
    float | None,
    typer.Option(
        "--regression-margin",
        min=0.0,
        envvar="COGSCORE_REGRESSION_MARGIN",
        help="Regressions: the drop an alert needs beyond significance (default: the "
        "row's minimum detectable effect).",
    ),
]
HarnessToleranceOpt = Annotated[
    float,
    typer.Option(
        "--harness-error-tolerance",
        min=0.0,
        max=1.0,
        envvar="COGSCORE_HARNESS_ERROR_TOLERANCE",
        help="Regressions: a model whose share of harness errors moved by more than this "
        "from its baseline is reported 'not_comparable', never as a regression.",
    ),
]
FailOnRegressionOpt = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression",
        envvar="COGSCORE_FAIL_ON_REGRESSION",
        help="Exit 6 (Prefect: the flow run ends Failed) when a regression alert fires on "
        "a night this run scored; the tables are written all the same.",
    ),
]


def _options(
    baseline: str,
    baseline_nights: int,
    margin: float | None,
    tolerance: float,
    **flags: bool,
) -> RunOptions:
    """The run's options, built once from the command line (typer has read their
    environment variables): a bad one is a usage error."""
    try:
        regression = RegressionOptions(baseline, baseline_nights, margin, tolerance)  # type: ignore[arg-type]
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--baseline") from None
    return RunOptions(**flags, regression=regression)


def _flow_parameters(options: RunOptions) -> dict[str, Any]:
    """The options as a Prefect flow's parameters (``flows.prefect_flows``)."""
    regression = options.regression
    return {
        "strict": options.strict,
        "require_marker": options.require_marker,
        "input_root_changed": options.input_changed,
        "baseline": regression.baseline,
        "baseline_nights": regression.baseline_nights,
        "regression_margin": regression.margin,
        "harness_error_tolerance": regression.harness_error_tolerance,
        **({"fail_on_regression": True} if options.fail_on_regression else {}),
    }


InputChangedOpt = Annotated[
    bool,
    typer.Option(
        "--input-root-changed",
        envvar="COGSCORE_INPUT_ROOT_CHANGED",
        help="The dump moved: score from this DUMP_ROOT into an output scored from another "
        "(refused otherwise, so that a second dump never replaces the first's nights).",
    ),
]
MarkerOpt = Annotated[
    bool,
    typer.Option(
        "--require-marker",
        envvar="COGSCORE_REQUIRE_MARKER",
        help="Score a night only once its dump_date folder holds _SUCCESS (the harness's "
        "'complete' marker); nights without it are reported as waiting.",
    ),
]


_TYPED: list[list[str]] = []  # the arguments as typed, where ``run`` started the command
GLOBAL_OPTIONS: tuple[str, ...] = ("--log-level", "--log-format")
SECRET_OPTIONS: tuple[str, ...] = ("--storage-option",)


def hoisted(args: list[str]) -> list[str]:
    """``args`` with the options of every command (``--log-level``, ``--log-format``) moved
    before the command, wherever they were typed.

    >>> hoisted(["nightly", "d", "--log-format", "json", "--log-level=debug"])
    ['--log-format', 'json', '--log-level=debug', 'nightly', 'd']
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        name = args[i].split("=", 1)[0]
        width = 1 if "=" in args[i] or name not in GLOBAL_OPTIONS else 2
        (front if name in GLOBAL_OPTIONS else rest).extend(args[i : i + width])
        i += width
    return front + rest


def masked(args: list[str]) -> list[str]:
    """``args`` with the values of ``--storage-option`` hidden (they may hold secrets).

    >>> masked(["--storage-option", "aws_secret_access_key=x", "--storage-option=k=v"])
    ['--storage-option', 'aws_secret_access_key=***', '--storage-option=k=***']
    """
    out: list[str] = []
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in SECRET_OPTIONS and eq:
            out.append(f"{name}={value.split('=', 1)[0]}=***")
        elif i and args[i - 1] in SECRET_OPTIONS:
            out.append(f"{arg.split('=', 1)[0]}=***")
        else:
            out.append(arg)
    return out


_LAST_WORDS: list[str] = []  # the error line, printed once everything else has been


def run(args: list[str] | None = None) -> None:
    """The ``cogscore`` command. The arguments as typed are kept for the run record; what
    native libraries print on stderr passes through ``flows.native``'s filter (no Rust panic
    text); a temporary Prefect server is stopped before the error line, so that the error
    line is the last thing on stderr."""
    from flows.native import NativeStderr

    typed = list(sys.argv[1:] if args is None else args)
    _TYPED[:] = [typed]
    try:
        with NativeStderr():
            try:
                app(args=hoisted(typed), prog_name="cogscore")
            finally:
                _stop_temporary_prefect()
    finally:
        for line in _LAST_WORDS:
            _say(line, error=True)


def _stop_temporary_prefect() -> None:
    """Stop the temporary Prefect servers this process started (Prefect stops them when the
    process exits, and says so on stderr: after the command's last line)."""
    server = sys.modules.get("prefect.server.api.server")
    if server is None:
        return
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=5)  # the run's logs reach the server before it stops
    for instance in list(server.SubprocessASGIServer._instances.values()):
        instance.stop()


def _command_line() -> str:
    """This command and its arguments as typed, for the run record, with the values of
    --storage-option hidden. Run in-process (tests), where no argv was kept: the options
    given on the command line, each under the name the user types."""
    import shlex

    if _TYPED:
        return shlex.join(["cogscore", *masked(_TYPED[0])])
    from typer._click.core import ParameterSource  # typer's own click (uv.lock pins it)
    from typer._click.globals import get_current_context

    context = get_current_context(silent=True)
    if context is None:
        return "cogscore"
    words = ["cogscore", str(context.info_name)]
    for param in context.command.params:
        name = param.name or ""
        if context.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value = context.params.get(name)
        if param.param_type_name != "option":
            words += [str(v) for v in (value if isinstance(value, list) else [value])]
            continue
        secondary = getattr(param, "secondary_opts", [])
        if isinstance(value, bool):
            words.append(param.opts[0] if value or not secondary else secondary[0])
            continue
        for item in value if isinstance(value, list) else [value]:
            words += [param.opts[0], str(item)]
    return shlex.join(masked(words))


def _check_prefect_api() -> None:
    """Where ``PREFECT_API_URL`` names a server, that it answers (else one line, exit 4,
    before any work): Prefect's own error is a traceback of its client."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return  # Prefect starts its temporary server in this process
    from prefect.client.orchestration import get_client

    from flows.storage.errors import ServiceUnreachable

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

    from flows.records import ExitCode, run_record

    started = clock.now(UTC)
    try:
        yield
    except typer.BadParameter as error:
        if json_output:
            record = run_record(
                None,
                command=_command_line(),
                engine=str(_engine(engine)),
                started=started,
                exit_code=ExitCode.USAGE,
                error=error.format_message(),
            )
            typer.echo(json.dumps(record, default=str))
        raise


def _run(
    engine: Engine,
    dask_address: str | None,
    kind: str,
    options: RunOptions,
    json_output: bool = False,
    check: Callable[[], None] | None = None,
    quiet: bool = False,
    **kwargs: Any,
) -> None:
    """Run ``kind`` with ``flows.runs`` or as its flow of ``flows.prefect_flows`` (imported
    only then: importing Prefect alone costs about 2 s), print the summary (and, with
    ``--json``, the run record last), and exit with the code of README "Exit codes"."""
    from datetime import UTC
    from datetime import datetime as clock

    from flows.io import InputError
    from flows.records import ExitCode, exit_code_of, run_record
    from flows.storage.errors import StorageError
    from flows.summary import RegressionAlert, StrictFailure, enforce_strict, outcome_lines

    started, t0 = clock.now(UTC), time.perf_counter()
    chosen = _engine(engine)
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
            if dask_address:
                from prefect_dask import DaskTaskRunner

                flow = flow.with_options(task_runner=DaskTaskRunner(address=dask_address))
            outcome = flow(**kwargs, **_flow_parameters(options))
        else:
            from flows import runs
            from flows.terminal import progress_for

            progress = progress_for(quiet or bool(os.environ.get("COGSCORE_QUIET")))
            mapper = (
                runs.dask_mapper(dask_address) if dask_address else runs.local_mapper_with(progress)
            )
            context = runs.RunContext(
                command=_command_line(), engine="local", progress=progress, options=options
            )
            run = getattr(runs, kind)
            with progress:
                result = run(**kwargs, mapper=mapper, context=context)
            outcome = enforce_strict(result)
    except RegressionAlert as alert:
        outcome, code, error = alert.outcome, ExitCode.REGRESSION, str(alert)
    except StrictFailure as failure:
        outcome, code, error = failure.outcome, ExitCode.UNSCORED, str(failure)
    except (InputError, StorageError) as refused:
        code, error = exit_code_of(refused), str(refused)
    except typer.Exit:
        raise
    except typer.BadParameter as usage:  # the command line's own: exit 2, recorded
        with _usage_recorded(json_output, engine):
            raise usage from None
    except Exception as bug:  # a bug: one line, the traceback only where asked for
        if os.environ.get("COGSCORE_DEBUG"):
            raise
        first = (str(bug).strip().splitlines() or [""])[0]
        code = ExitCode.INTERNAL
        error = f"internal error: {type(bug).__name__}: {first} (COGSCORE_DEBUG=1 shows where)"
    if outcome is not None:
        for line in outcome_lines(outcome):
            typer.echo(line)
    if error is not None and _TYPED:  # the command: said last (``run``)
        _LAST_WORDS.append(error)
    elif error is not None:
        _say(error, error=True)  # one line: the last thing on stderr
    else:
        _say(f"done in {time.perf_counter() - t0:.1f} s")
    if json_output:
        record = run_record(
            outcome,
            command=_command_line(),
            engine=str(chosen),
            started=started,
            exit_code=code,
            error=error,
            output=str(kwargs.get("out")),
        )
        typer.echo(json.dumps(record, default=str))
    if code is not ExitCode.SUCCESS:
        raise typer.Exit(int(code))


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


@app.command()
def score(
    input_root: InputArg,
    out: OutOpt,
    formula: FormulaOpt = None,
    engine: EngineOpt = Engine.AUTO,
    dask_address: DaskOpt = None,
    strict: StrictOpt = False,
    require_marker: MarkerOpt = False,
    input_root_changed: InputChangedOpt = False,
    storage_option: StorageOpt = None,
    json_output: JsonRecordOpt = False,
    quiet: QuietOpt = False,
    baseline: BaselineOpt = DEFAULT.baseline,
    baseline_nights: BaselineNightsOpt = DEFAULT.baseline_nights,
    regression_margin: MarginOpt = DEFAULT.margin,
    harness_error_tolerance: HarnessToleranceOpt = DEFAULT.harness_error_tolerance,
    fail_on_regression: FailOnRegressionOpt = False,
) -> None:
    """Score a whole dump into OUT (every table, its nights replaced atomically).

    Into an existing OUT the run uses OUT's formula set (see rescore to change it)."""
    with _usage_recorded(json_output, engine):
        _storage_options(storage_option)
        options = _options(
            baseline,
            baseline_nights,
            regression_margin,
            harness_error_tolerance,
            strict=strict,
            require_marker=require_marker,
            input_changed=input_root_changed,
            fail_on_regression=fail_on_regression,
        )
    _run(
        engine,
        dask_address,
        "score",
        options,
        check=lambda: _check(input_root, out, formula, input_root_changed),
        json_output=json_output,
        quiet=quiet,
        input_root=input_root,
        out=out,
        formulas=formula or [],
    )


@app.command()
def nightly(
    dump_root: InputArg,
    out: OutOpt,
    formula: FormulaOpt = None,
    engine: EngineOpt = Engine.AUTO,
    dask_address: DaskOpt = None,
    strict: StrictOpt = False,
    require_marker: MarkerOpt = False,
    input_root_changed: InputChangedOpt = False,
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
    baseline: BaselineOpt = DEFAULT.baseline,
    baseline_nights: BaselineNightsOpt = DEFAULT.baseline_nights,
    regression_margin: MarginOpt = DEFAULT.margin,
    harness_error_tolerance: HarnessToleranceOpt = DEFAULT.harness_error_tolerance,
    fail_on_regression: FailOnRegressionOpt = False,
) -> None:
    """Score only the dump_date partitions that are new or changed since the last run,
    with OUT's formula set."""
    with _usage_recorded(json_output, engine):
        _storage_options(storage_option)
        options = _options(
            baseline,
            baseline_nights,
            regression_margin,
            harness_error_tolerance,
            strict=strict,
            require_marker=require_marker,
            input_changed=input_root_changed,
            fail_on_regression=fail_on_regression,
        )
    _run(
        engine,
        dask_address,
        "nightly",
        options,
        check=lambda: _check(dump_root, out, formula, input_root_changed),
        json_output=json_output,
        quiet=quiet,
        dump_root=dump_root,
        out=out,
        formulas=formula or [],
        verify=verify,
    )


def _day(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a date YYYY-MM-DD") from None


@app.command()
def rescore(
    dump_root: InputArg,
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
    strict: StrictOpt = False,
    require_marker: MarkerOpt = False,
    input_root_changed: InputChangedOpt = False,
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
    baseline: BaselineOpt = DEFAULT.baseline,
    baseline_nights: BaselineNightsOpt = DEFAULT.baseline_nights,
    regression_margin: MarginOpt = DEFAULT.margin,
    harness_error_tolerance: HarnessToleranceOpt = DEFAULT.harness_error_tolerance,
) -> None:
    """Rescore a range of nights with chosen formula versions; show and write what moved.

    Over every night OUT holds, the versions become OUT's formula set; over part of its
    history the set stays, and those nights are named as scored with other versions."""
    with _usage_recorded(json_output, engine):
        _storage_options(storage_option)
        if not formula:
            raise typer.BadParameter("name at least one CATEGORY=VERSION", param_hint="--formula")
        options = _options(
            baseline,
            baseline_nights,
            regression_margin,
            harness_error_tolerance,
            strict=strict,
            require_marker=require_marker,
            input_changed=input_root_changed,
        )
        first, last = _day(since), _day(until)
    _run(
        engine,
        dask_address,
        "rescore",
        options,
        check=lambda: _check(dump_root, out, formula, input_root_changed, pinned=False),
        json_output=json_output,
        quiet=quiet,
        dump_root=dump_root,
        out=out,
        formulas=formula,
        since=first,
        until=last,
        dry_run=dry_run,
        diff_out=diff_out,
    )


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the dump into.")],
    day: Annotated[
        str | None,
        typer.Option("--date", help="The dump_date folder, YYYY-MM-DD (default: today, UTC)."),
    ] = None,
    no_date: Annotated[
        bool, typer.Option("--no-date", help="No dump_date folder: files straight under OUT.")
    ] = False,
    episodes: Annotated[int, typer.Option(min=0, help="Episodes to write.")] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="The same seed gives the same bytes.")] = 0,
    episodes_per_file: Annotated[
        int, typer.Option(min=1, help="Episodes per Parquet file.")
    ] = 10_000,
    rejects: Annotated[
        bool,
        typer.Option(
            "--rejects/--clean",
            help="Spoil ~1% of the episodes with harness bugs and ~0.5% with crashes, as a "
            "real dump has them (--clean: none).",
        ),
    ] = True,
    instance_ids: Annotated[
        bool,
        typer.Option(
            "--instance-ids/--no-instance-ids",
            help="Write contract 1.1's instance_id on episode_start rows (every model faces "
            "the same instances of each task, every night); --no-instance-ids: a contract "
            "1.0 dump.",
        ),
    ] = True,
) -> None:
    """Write a simulated dump (real tasks, simulated models) for tests, demos, benchmarks.

    Earlier part-*.parquet files in OUT/dump_date=DATE (or OUT) are replaced.
    """
    from datetime import UTC
    from datetime import datetime as clock

    from simulator.dump import DEFAULT_REJECTS, simulate_dump

    if no_date and day is not None:
        raise typer.BadParameter("give --date or --no-date, not both", param_hint="--date")
    if not no_date and day is None:
        day = clock.now(UTC).strftime("%Y-%m-%d")

    def written(path: Path, n_episodes: int, n_rows: int) -> None:
        size = path.stat().st_size
        typer.echo(f"  {path}: {n_episodes:,} episodes, {n_rows:,} rows, {size:,} bytes")

    try:
        result = simulate_dump(
            out,
            date=None if no_date else day,
            episodes=episodes,
            seed=seed,
            episodes_per_file=episodes_per_file,
            rejects=DEFAULT_REJECTS if rejects else 0.0,
            on_file=written,
            instance_ids=instance_ids,
        )
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--date") from None
    statuses = [e.status for e in result.expected.values()]
    files = f"{len(result.paths)} file{'' if len(result.paths) == 1 else 's'}"
    typer.echo(
        f"wrote {files}, {result.episodes:,} episodes, {result.rows:,} rows, "
        f"{result.bytes:,} bytes in {result.seconds:.1f} s under {out}"
    )
    if result.episodes > result.pool_episodes:
        typer.echo(f"{result.pool_episodes:,} distinct episodes played, tiled to the rest")
    typer.echo(
        f"not scorable on purpose: {statuses.count('rejected')} rejected, "
        f"{statuses.count('harness_error')} harness errors (listed in _simulation.json)"
        if rejects
        else "clean: every episode is scorable"
    )


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
    as_of: AsOfOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Write one self-contained HTML page (charts, data and plotly.js inline) of OUT's tables."""
    from flows.output import Output
    from flows.report import ReportError, write_report
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    t0 = time.perf_counter()
    try:
        output = Output.at(out).require()
        output.check_as_of(as_of)
        path = write_report(output, html_file, night=night, as_of=as_of)
    except (ReportError, StorageError) as error:
        raise _refused(error) from None
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
    """Delete data files no table version of the last --retain needs, and the files of
    killed runs never committed. Never run by any other command; --as-of to runs older than
    --retain stops working. Only Parquet data files are deleted."""
    from flows.output import Output
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    hours = _retention(retain)
    try:
        count = Output.at(out).require().vacuum(retain_hours=hours, dry_run=dry_run)
    except StorageError as error:
        raise _refused(error) from None
    verb = "would delete" if dry_run else "deleted"
    typer.echo(f"vacuum of {Output.at(out)}: {verb} {count} data file(s) older than {retain}")


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
    """Break the lease of a run that is gone (killed, or its host down): it blocks the output
    until its lease expires (6 h). Check first that the run is not going. Refused when
    another run holds the lease or the run is alive on this host. The next run repairs what
    the killed run left."""
    from flows.output import Output
    from flows.storage.errors import StorageError
    from flows.storage.lease import break_lease

    _storage_options(storage_option)
    try:
        holder = break_lease(Output.at(out).require().location, run_id)
    except StorageError as error:
        raise _refused(error) from None
    typer.echo(f"unlocked {Output.at(out)}: broke the lease of {holder.describe()}")


JsonOpt = Annotated[
    bool, typer.Option("--json", envvar="COGSCORE_JSON", help="Print JSON instead of a table.")
]


@app.command()
def history(
    out: OutArg,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
) -> None:
    """The runs recorded in OUT, newest first."""
    from flows.output import Output
    from flows.status import as_json, history_lines
    from flows.status import history as runs_of
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    try:
        output = Output.at(out).require()
        if json_output:
            typer.echo(as_json(runs_of(output).to_dicts()))
        else:
            for line in history_lines(output):
                typer.echo(line)
    except StorageError as error:
        raise _refused(error) from None


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
    """What OUT holds: nights, formula set (and nights off it), unscored counts, last runs,
    table versions, the lease; with DUMP_ROOT, its nights new, changed or waiting."""
    from flows.io import InputError
    from flows.output import Output
    from flows.status import as_json, status_lines
    from flows.status import status as status_of
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    try:
        report = status_of(Output.at(out).require(), dump_root)
    except (StorageError, InputError) as error:
        raise _refused(error) from None
    if json_output:
        typer.echo(as_json(report))
    else:
        for line in status_lines(report):
            typer.echo(line)


@app.command()
def compare(
    out: OutArg,
    night: Annotated[
        str | None,
        typer.Option(
            "--date",
            envvar="COGSCORE_NIGHT",
            help="The night, YYYY-MM-DD (default: the latest night).",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(envvar="COGSCORE_SCOPE", help="A category, or overall."),
    ] = "overall",
    models: Annotated[
        list[str] | None,
        typer.Option("--models", envvar="COGSCORE_MODELS", help="Only these models."),
    ] = None,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
) -> None:
    """Every pair of models of a night in a scope: the difference a - b, its 95% interval,
    the Holm-corrected p-value, the verdict and the minimum detectable effect."""
    from flows.output import Output
    from flows.status import as_json, comparison_lines, comparisons
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    try:
        output = Output.at(out).require()
        output.check_as_of(as_of)
        table = comparisons(output, night, scope, models, as_of)
    except StorageError as error:
        raise _refused(error) from None
    if json_output:
        typer.echo(as_json(table.to_dicts()))
    else:
        for line in comparison_lines(table):
            typer.echo(line)


@app.command()
def sql(
    out: OutArg,
    query: Annotated[str, typer.Argument(help="A DuckDB query, e.g. 'FROM leaderboard'.")],
    as_of: AsOfOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Run a DuckDB query over OUT: every table (as the latest finished run left it) and the
    views of sql/views.sql (leaderboard, model_trend, formula_set, ...) are registered."""
    from flows.output import Output
    from flows.sql import connect
    from flows.storage.errors import StorageError

    _storage_options(storage_option)
    try:
        output = Output.at(out).require()
        output.check_as_of(as_of)
        con = connect(output, as_of)
        relation = con.sql(query)
    except StorageError as error:
        raise _refused(error) from None
    except Exception as error:  # a DuckDB error in the query: the user's to fix
        typer.echo(f"error: {str(error).splitlines()[0]}", err=True)
        raise typer.Exit(2) from None
    if relation is not None:
        typer.echo(str(relation))


from flows.importers.kaggle_command import import_kaggle  # noqa: E402

app.command("import-kaggle")(import_kaggle)


if __name__ == "__main__":
    run()
