"""The progress of a run on a terminal (rich): nights and files done of total, rows per
second, time left, and what a long step beyond files is doing. Off when stderr is not a
terminal or the user asked for quiet."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from flows.mappers import NoProgress
from flows.mappers import Progress as RunProgress
from flows.reading import FileReport


class TerminalProgress:
    """A ``flows.mappers.Progress`` drawn on stderr; use as a context manager."""

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


__all__ = ["RunProgress", "TerminalProgress", "progress_bar", "progress_for", "watched_console"]
