"""The ``cogscore`` command line: the app, its global options, and how a command starts
and ends (``run``). The commands themselves are in ``flows.cli.scoring`` (score, nightly,
rescore), ``flows.cli.reading`` (what an output holds: report, sql, status, history,
compare, leaderboard, vacuum, unlock, formulas) and ``flows.cli.making`` (simulate; the
importers)."""

from __future__ import annotations

import errno
import gc
import importlib
import inspect
import os
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console

# typer's own click (uv.lock pins it)
from typer._click.exceptions import BadParameter, ClickException, NoSuchOption, UsageError
from typer.core import TyperGroup

from flows.logs import configure, log
from flows.present.native import NativeStderr
from schemas.exits import ExitCode
from schemas.version import COGSCORE_VERSION


class OneLineErrors(TyperGroup):
    """The app's command group: a usage error is one ``error: …`` line on stderr and exit 2
    (README "Exit codes"), where typer draws a box of 5-7 lines; Ctrl-C outside a run is
    ``error: interrupted`` and exit 130 (typer: silence); a reader of stdout gone (``| head``,
    a ``| less`` quit early) ends any command quietly, exit 141 (typer: exit 1, or an
    internal error where a command was printing). Every command's help is its docstring's
    ``paragraphs``."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for command in (self, *self.commands.values()):
            command.help = paragraphs(command.help)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        given = (args, prog_name, complete_var, False, windows_expand_args)
        if not standalone_mode:
            return super().main(*given, **extra)
        try:
            code = super().main(*given, **extra)
        except ClickException as error:
            if type(error).__name__ != "NoArgsIsHelpError":  # the help, printed already
                say(usage_line(error), error=True)
            sys.exit(error.exit_code)
        sys.exit(code if isinstance(code, int) else 0)

    def make_context(self, *args: Any, **extra: Any) -> Any:
        try:  # ``cogscore --help`` is printed here
            return super().make_context(*args, **extra)
        except BrokenPipeError:
            reader_gone()
            raise typer.Exit(ExitCode.CLOSED_PIPE) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            say("interrupted", error=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:  # stdout's reader is gone (``| head``): no error, 141
            reader_gone()
            raise typer.Exit(ExitCode.CLOSED_PIPE) from None
        except (ClickException, typer.Exit, typer.Abort):
            raise
        except Exception as bug:  # a bug in any command: one line, exit 1 (README)
            if os.environ.get("COGSCORE_DEBUG"):
                raise
            say(internal_error(bug), error=True)
            raise typer.Exit(1) from None


def reader_gone(stream: TextIO | None = None) -> None:
    """What follows for stdout (or ``stream``: stderr) goes nowhere: its reader went away
    (``cogscore … | head``), and the lines it no longer wants are dropped without a word
    (Python's documented recipe: ``os.devnull`` over its descriptor, so that no later write
    or the interpreter's last flush fails again)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, (stream or sys.stdout).fileno())
    except (OSError, ValueError):  # no descriptor (a test's capture): nothing to redirect
        pass
    finally:
        os.close(devnull)


def _rich_reader_gone(console: Any) -> None:
    """rich's ``Console.on_broken_pipe`` (its default ends the process with exit 1, where
    typer prints a command's help): the pipe's end handled as every command's is."""
    console.quiet = True
    raise BrokenPipeError(errno.EPIPE, "stdout's reader went away")


# A class attribute (mypy refuses an assignment to a method): rich's own consoles and typer's.
setattr(Console, "on_broken_pipe", _rich_reader_gone)  # noqa: B010


def echo(line: str) -> None:
    """``typer.echo(line)``, or nothing once stdout's reader went away: for the lines a
    command prints after its work is done and recorded (a run's summary), whose exit code
    must stay the one the runs table holds."""
    try:
        typer.echo(line)
    except BrokenPipeError:
        reader_gone()


def paragraphs(text: str | None) -> str | None:
    r"""A command's docstring as its help shows it: each paragraph (they are separated by a
    blank line) one line, which the terminal folds at its width. typer keeps a docstring's
    line breaks (all of them past the first paragraph; in the first too in the commands'
    list), which cut sentences wherever the source wrapped them, at any width.

    >>> paragraphs("One sentence,\n    folded here.\n\n    Details\n    follow.")
    'One sentence, folded here.\n\nDetails follow.'
    """
    if text is None:
        return None
    return "\n\n".join(" ".join(part.split()) for part in inspect.cleandoc(text).split("\n\n"))


def internal_error(bug: Exception) -> str:
    """The one line of an internal error (a bug): its kind and first line.

    >>> internal_error(RuntimeError("an invariant broke\\nsecond line"))
    'internal error: RuntimeError: an invariant broke (COGSCORE_DEBUG=1 shows where)'
    """
    first = (str(bug).strip().splitlines() or [""])[0]
    return f"internal error: {type(bug).__name__}: {first} (COGSCORE_DEBUG=1 shows where)"


def usage_line(error: ClickException) -> str:
    """A click error as one line: its message (an unknown option with the names click
    finds close to it, best first), and where an unknown name's command lists its own."""
    message = error.message if isinstance(error, NoSuchOption) else error.format_message()
    if isinstance(error, NoSuchOption) and error.possibilities:
        message += f" (did you mean {' or '.join(error.possibilities)}?)"
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]
    message = " ".join(message.split()).rstrip(".")  # one line
    context = getattr(error, "ctx", None)
    if not isinstance(error, BadParameter) and isinstance(error, UsageError) and context:
        message += f"; see {context.command_path} --help"
    return message


app = typer.Typer(
    cls=OneLineErrors,
    no_args_is_help=True,
    add_completion=False,
    help="Score learning-benchmark dumps.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cogscore {COGSCORE_VERSION}")
        raise typer.Exit()


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


_LOG_FORMAT = [LogFormat.TEXT]  # as chosen for this command


def say(message: str, error: bool = False) -> None:
    """A line for stderr: as a log record where logs are JSON lines, else as it is; nothing
    where stderr's reader went away (``2>&1 | head``: a run ends all the same, with the
    code its runs row records)."""
    if _LOG_FORMAT[0] is LogFormat.JSON:
        (log().error if error else log().warning)(message)
        return
    try:
        typer.echo(f"error: {message}" if error else message, err=True)
    except BrokenPipeError:
        reader_gone(sys.stderr)


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
    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise typer.BadParameter(
            f"{log_level!r}: debug, info, warning or error", param_hint="--log-level"
        )
    configure(log_level, log_format.value)
    _LOG_FORMAT[0] = log_format
    if log_format is LogFormat.JSON:
        os.environ["COGSCORE_QUIET"] = "1"  # no progress bar between JSON lines
    if log_level.lower() == "debug":
        os.environ.setdefault("COGSCORE_DEBUG", "1")


TYPED: list[list[str]] = []  # the arguments as typed, where ``run`` started the command


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


LAST_WORDS: list[str] = []  # the error line, printed once everything else has been


def run(args: list[str] | None = None) -> None:
    """The ``cogscore`` command. The arguments as typed are kept for the run record; what
    native libraries print on stderr passes through ``flows.present.native``'s filter (no Rust panic
    text); a temporary Prefect server is stopped before the error line, so that the error
    line is the last thing on stderr. A reader of stdout that went away (``| head``) ends
    the command quietly, exit 141 (``ExitCode.CLOSED_PIPE``). The process ends with the
    command: what it made is not garbage-collected on the way out (``gc.freeze``: the final
    collection took 0.1-0.2 s after a night's last line; the interpreter still runs every
    exit handler)."""

    typed = list(sys.argv[1:] if args is None else args)
    TYPED[:] = [typed]
    try:
        with NativeStderr():
            try:
                app(args=hoisted(typed), prog_name="cogscore")
            finally:
                _stop_temporary_prefect()
                _flush_stdout()
    finally:
        for line in LAST_WORDS:
            say(line, error=True)
        gc.freeze()


def _flush_stdout() -> None:
    """What is left for stdout, written before the process ends (where its reader went away,
    the command ends as ``OneLineErrors.invoke`` ends it then: quietly, exit 141)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        reader_gone()
        raise SystemExit(ExitCode.CLOSED_PIPE) from None


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


def command_line() -> str:
    """This command and its arguments as typed, for the run record, with the values of
    --storage-option hidden. Run in-process (tests), where no argv was kept: the options
    given on the command line, each under the name the user types."""
    import shlex

    if TYPED:
        return shlex.join(["cogscore", *masked(TYPED[0])])
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


# The commands register themselves on ``app`` when their modules are imported, in the
# order ``--help`` lists them.
for _module in ("scoring", "reading", "making", "explaining", "exporting"):
    importlib.import_module(f"flows.cli.{_module}")
