"""What a terminal is shown (rich): the progress of a run (nights and files done of total,
rows per second, time left, and what a long step beyond files is doing; off when stderr is
not a terminal or the user asked for quiet) and of an import (``progress_bar``); text made
printable (no escape sequence reaches the terminal), the width lines are folded to, and
rich tables rendered to plain lines."""

from __future__ import annotations

import io
import math
import shutil
import sys
import time
from types import TracebackType
from typing import Self

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from flows.reading import FileReport
from flows.records import NoProgress
from flows.records import Progress as RunProgress


class TerminalProgress:
    """A ``flows.records.Progress`` drawn on stderr; use as a context manager."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.bar = progress_bar("rate", self.console)
        self.files = self.bar.add_task("files", total=None, rate="", start=False)
        self.nights = self.bar.add_task("nights", total=None, rate="", start=False)
        self.rows, self.began = 0, time.perf_counter()

    def begin(self, nights: int, files: int) -> None:
        self.began = time.perf_counter()
        self.bar.update(self.nights, total=nights)
        self.bar.update(self.files, total=files)
        self.bar.start_task(self.nights)
        self.bar.start_task(self.files)

    def file_done(self, report: FileReport) -> None:
        self.rows += report.rows
        per_second = self.rows / max(time.perf_counter() - self.began, 1e-9)
        self.bar.update(self.files, advance=1, rate=f"{per_second / 1e6:.2f} M rows/s")

    def step(self, what: str) -> None:
        # Drawn at once: a step may end before the next timed refresh would show it.
        self.bar.update(self.nights, description=f"nights ({what})", refresh=True)

    def night_done(self, night: str | None) -> None:
        self.bar.update(self.nights, advance=1, description="nights", refresh=True)

    def __enter__(self) -> Self:
        self.bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.bar.stop()


def progress_for(quiet: bool) -> TerminalProgress | NoProgress:
    """The terminal's progress where a person watches (``watched_console``)."""
    console = watched_console(quiet)
    return NoProgress() if console is None else TerminalProgress(console)


def watched_console(quiet: bool) -> Console | None:
    """stderr, where a person watches it: a terminal that can redraw (rich's "interactive":
    not a pipe, a file or ``TERM=dumb``) and quiet not asked for; None elsewhere."""
    console = Console(stderr=True)
    return None if quiet or not console.is_interactive else console


def progress_bar(field: str, console: Console) -> Progress:
    """The progress bar every command draws: what it does, the bar, done of total, the
    task's ``field`` (a rate, the last done), time spent and time left."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(f"{{task.fields[{field}]}}"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
    )


def printable(text: object) -> str:
    r"""``text`` safe for a terminal: control characters (ANSI escapes, newlines, NUL) are
    shown as escapes instead of acting on the terminal.

    >>> printable("m\x1b[2Jx\n")
    'm\\x1b[2Jx\\n'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def number(value: object) -> str:
    """A value as a person reads it: a float to 12 significant digits, short of the binary
    noise of its arithmetic (a score the tables keep as 0.43500000000000005 reads 0.435; one
    a formula rounds to 4 decimals, 0.1562, stays as it is; --json and the tables have every
    bit), anything else as ``str``.

    >>> number(0.43500000000000005), number(0.1562), number(1.0), number(1 / 3), number(7)
    ('0.435', '0.1562', '1.0', '0.333333333333', '7')
    >>> number(2.5e-17), number(float("nan"))
    ('2.5e-17', 'nan')
    """
    if isinstance(value, float) and math.isfinite(value):
        return repr(float(f"{value:.12g}"))
    return str(value)


WIDTH = 100


# Off a terminal a table has no width to keep to: each row on one line, whatever it holds.
UNLIMITED = 1_000_000


def line_width(width: int | None = None) -> int:
    """The width tables are drawn at: ``width`` (at least 100); by default, on a terminal at
    least 100 columns, or its width where wider; elsewhere (a pipe, a file, a cron log)
    unlimited, so that nothing folds or is cut."""
    if width is None and not sys.stdout.isatty():
        return UNLIMITED
    return max(WIDTH, width or shutil.get_terminal_size((WIDTH, 24)).columns)


def render(table: Table, width: int | None = None) -> list[str]:
    """``table`` as plain text lines (no colour codes) at ``line_width(width)`` columns:
    on a terminal long cells fold, never cut; elsewhere every row is one line."""
    width = line_width(width)
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    return [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]


def table_of_columns() -> Table:
    # A header rule and one space between columns: six categories fit in 100 columns.
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 0, 0, 1))


__all__ = [
    "RunProgress",
    "TerminalProgress",
    "line_width",
    "number",
    "printable",
    "progress_bar",
    "progress_for",
    "render",
    "table_of_columns",
    "watched_console",
]
