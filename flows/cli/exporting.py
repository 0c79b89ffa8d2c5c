"""``cogscore export``: the standing as the benchmark's authors publish it
(``flows.present.published``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli import app
from flows.cli.options import AsOfOpt, OutArg, StorageOpt, refused, use_storage_options, writable
from flows.store.errors import StorageError
from schemas.published import ExportFormat


@app.command()
def export(
    out: OutArg,
    *,
    publication_format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            envvar="COGSCORE_EXPORT_FORMAT",
            help="learningbench: LearningBench's leaderboard_flat.csv, "
            "leaderboard_model_ranks.csv and leaderboard_score_matrix.csv, with their "
            "columns, names and number formats.",
        ),
    ] = ExportFormat.LEARNINGBENCH,
    folder: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="DIR",
            envvar="COGSCORE_EXPORT_DIR",
            help="The folder to write the files into (made where missing; not inside OUT).",
        ),
    ],
    as_of: AsOfOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Write the standing as the benchmark's authors publish their leaderboard.

    The standing as of the latest night (or as run --as-of left it), each model's latest
    result on every task, as LearningBench's three files: names, slugs, categories and
    dates as the published table gave them (a result of the harness only: the published
    names of its model, its task's slug, its run's start), scores as Python writes them,
    models ranked by their mean over their tasks. Importing the published table and
    exporting it gives its files byte for byte. Reads OUT alone and writes nothing there."""
    from flows.present.published import ExportError, published_at, write_publication

    use_storage_options(storage_option)
    writable(folder, "--out", folder=True)
    if _inside(folder, out):
        raise typer.BadParameter(
            f"{folder} lies in OUT {out}: give a folder outside it", param_hint="--out"
        )
    try:
        publication = published_at(out, as_of)
    except (ExportError, StorageError) as error:
        raise refused(error) from None
    for path in write_publication(publication, folder):
        typer.echo(str(path))
    typer.echo(
        f"the standing as of {publication.as_of}, as {publication_format} publishes it", err=True
    )
    for note in publication.notes:
        typer.echo(f"note: {note}", err=True)


def _inside(folder: Path, out: str) -> bool:
    """Whether ``folder`` is OUT or lies in it (a URL OUT: never a local folder)."""
    if "://" in out:
        return False
    mine, theirs = folder.expanduser().resolve(), Path(out).expanduser().resolve()
    return mine == theirs or theirs in mine.parents
