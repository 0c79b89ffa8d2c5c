"""The ``cogscore`` command line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Score learning-benchmark dumps."
)


@app.callback()
def main() -> None:
    """cogscore: validate transcript dumps and score every episode exactly."""


@app.command()
def score(
    input_root: Annotated[Path, typer.Argument(metavar="INPUT", help="Folder of Parquet files.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder for the tables.")],
    formula: Annotated[
        list[str] | None,
        typer.Option(
            "--formula", help="CATEGORY=VERSION, e.g. procedural_learning=v1 (repeatable)."
        ),
    ] = None,
) -> None:
    """Score a dump: episode_scores/, rejects/ and manifest.json under OUT."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Prefect's temporary server needs 15-25 s here on a cold start; 20 s is its default.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from flows.io import InputError, check_writable, discover
    from flows.score_flow import score_flow
    from flows.summary import leaderboard_lines, run_lines
    from schemas.formulas import resolve

    try:
        resolve(formula or [])
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--formula") from None
    t0 = time.perf_counter()
    try:  # fail fast, before any flow starts, on what the user can fix
        discover(input_root)
        check_writable(out)
    except InputError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    result = score_flow(input_root, out, formula or [])
    for line in [*leaderboard_lines(out), "", *run_lines(result, out)]:
        typer.echo(line)
    typer.echo(f"done in {time.perf_counter() - t0:.1f} s", err=True)


if __name__ == "__main__":
    sys.exit(app())
