"""The commands that make dumps: ``simulate`` (simulated models on the benchmark's tasks)
and the importers (``import-kaggle``: LearningBench harness runs; ``import-scores``: tables
of scores)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli import app
from flows.cli.import_kaggle import import_kaggle
from flows.cli.import_scores import import_scores_command
from flows.cli.options import writable


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the dump into.")],
    *,
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
    usage: Annotated[
        bool,
        typer.Option(
            "--usage/--no-usage",
            help="Write contract 1.3's usage (tokens, cost, latency) on the assistant rows; "
            "--no-usage: a dump without it.",
        ),
    ] = True,
) -> None:
    """Write a simulated dump (real tasks, simulated models) for tests, demos, benchmarks.

    Earlier part-*.parquet files in OUT/dump_date=DATE (or OUT) are replaced.
    """
    from datetime import UTC
    from datetime import datetime as clock

    from simulator.dump import DEFAULT_REJECTS, simulate_dump

    writable(out, "--out", folder=True)
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
            usage=usage,
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


def _into_a_folder(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` (an importer's), its ``--out`` refused as a usage error before any work
    where it cannot be a folder (``writable``)."""

    @functools.wraps(command)  # typer reads the options from the wrapped signature
    def checked(**options: Any) -> None:
        writable(options["out"], "--out", folder=True)
        command(**options)

    return checked


app.command("import-kaggle")(_into_a_folder(import_kaggle))
app.command("import-scores")(_into_a_folder(import_scores_command))
