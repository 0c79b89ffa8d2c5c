"""``python -m flows.cli``: the command line, as the ``cogscore`` script runs it."""

from flows.cli import run

run()
