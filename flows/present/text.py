"""Text for a terminal: a value made printable (no escape sequence reaches it), the width
lines are folded to, and rich tables rendered to plain lines."""

from __future__ import annotations

import io
import shutil
import sys

from rich import box
from rich.console import Console
from rich.table import Table


def printable(text: object) -> str:
    r"""``text`` safe for a terminal: control characters (ANSI escapes, newlines, NUL) are
    shown as escapes instead of acting on the terminal.

    >>> printable("m\x1b[2Jx\n")
    'm\\x1b[2Jx\\n'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


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
