"""``cogscore import-kaggle`` on a terminal: a progress bar while runs are replayed (rich, on
stderr; off when stderr is not a terminal, ``TERM=dumb``, ``--quiet`` or ``--json``), then
the report: counts, every run not imported with its reason, the runs imported with a note."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from flows.importers.kaggle_report import ImportReport, RunReport
from flows.present.terminal import UNLIMITED, progress_bar, watched_console
from schemas.kaggle import Outcome


class ImportProgress:
    """Runs replayed of their total, the last run's task, time left; a no-op where no person
    watches (``flows.present.terminal.watched_console``)."""

    def __init__(self, enabled: bool) -> None:
        console = watched_console(quiet=not enabled)
        self.bar = None if console is None else progress_bar("last", console)
        if self.bar is not None:
            self.task = self.bar.add_task("replaying runs", total=None, last="")

    def begin(self, runs: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=runs)

    def done(self, report: RunReport) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, last=(report.task or report.run)[:40])

    def __enter__(self) -> Self:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.bar is not None:
            self.bar.stop()


def report_console() -> Console:
    """Where the report goes: stdout. On a terminal, rich's width (a long value folds onto
    the next line, whole); elsewhere (a pipe, a file, a cron log, ``TERM=dumb``) no width at
    all: each line as long as its values, none cut or wrapped (``print_report``)."""
    if sys.stdout.isatty() and os.environ.get("TERM", "") != "dumb":
        return Console(highlight=False)
    return Console(highlight=False, width=UNLIMITED, color_system=None, soft_wrap=True)


def print_report(report: ImportReport, console: Console | None = None) -> None:
    """The import's report on stdout: every value whole (``report_console``)."""
    console = console or report_console()
    written = sum(1 for r in report.runs if r.written)
    console.print(
        f"{len(report.runs)} runs: {report.imported} imported ({written} files written, "
        f"{report.imported - written} already there), {report.rejected} not imported; "
        f"{len(report.marked)} nights marked complete; {report.seconds:.1f} s"
    )
    noted = [r for r in report.runs if r.reasons]
    if noted:
        table = Table(show_lines=False)
        for name in ("run", "outcome", "reason", "detail"):
            table.add_column(name, overflow="fold")
        for run in noted:
            table.add_row(
                escape(run.run),
                str(run.outcome),
                ", ".join(run.reasons),
                escape(run.detail or ""),
                style="red" if run.outcome is Outcome.REJECTED else None,
            )
        console.print(table)
    for line in new_model_lines(report.new_models):
        console.print(escape(line))
    for warning in report.warnings:
        console.print(f"warning: {escape(warning)}")


def new_model_lines(new: Mapping[str, Sequence[str]]) -> list[str]:
    """The models an import found new (no name of a known model: the names file, the dump's
    names and the rule matched none), each with the names it came from, on one line.

    >>> new_model_lines({"gemma-4-26b-a4b": ["google/gemma-4-26b-a4b"]})[0][-51:]
    'one): gemma-4-26b-a4b (from google/gemma-4-26b-a4b)'
    """
    if not new:
        return []

    def came_from(model: str, names: Sequence[str]) -> str:
        others = [n for n in names if n != model]
        return model + (f" (from {', '.join(others)})" if others else "")

    said = ", ".join(came_from(m, names) for m, names in sorted(new.items()))
    head = "new model(s), named by no known model (a names file, --names, maps a name to one)"
    return [f"{head}: {said}"]
