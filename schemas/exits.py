"""The exit codes of every command (README "Exit codes"): an error carries its own
(``code``), and a run's verdict names one."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a command's exit status means (README "Exit codes")."""

    SUCCESS = 0  # done (input that was not scored is reported; --strict makes it UNSCORED)
    INTERNAL = 1  # a bug: an unexpected error (traceback with COGSCORE_DEBUG=1)
    USAGE = 2  # a bad option, or input or output refused before any work
    UNSCORED = 3  # --strict with input that was not scored, or a night that failed
    STORAGE = 4  # the store: unreachable, credentials refused, permission, missing bucket
    BUSY = 5  # another run holds the output's lease
    REGRESSION = 6  # --fail-on-regression and a regression alert fired
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells report a command it stopped: 128 + 2
    # stdout's reader went away (``| head``): the rest of the output is dropped, without a
    # word, and the status is the one shells report for a tool a closed pipe stopped (SIGPIPE:
    # 128 + 13). A scoring command's run ends as it would and exits with its own code.
    CLOSED_PIPE = 141
