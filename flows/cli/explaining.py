"""``cogscore explain``: from a score down to the turns that earned it
(``flows.present.explain``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from flows.cli import app
from flows.cli.options import AsOfOpt, OutArg, StorageOpt, refused, use_storage_options
from flows.store.errors import StorageError


@app.command()
def explain(
    out: OutArg,
    *,
    episode: Annotated[
        str | None,
        typer.Option("--episode", metavar="EPISODE_ID", help="The episode to explain."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="With --task (not with --episode): the model's episode of that task (see --night)."
        ),
    ] = None,
    task: Annotated[str | None, typer.Option(help="With --model: the task.")] = None,
    night: Annotated[
        str | None,
        typer.Option(
            metavar="YYYY-MM-DD",
            help="The night's own episode (default, with --model and --task: the night the "
            "model's standing on the task comes from, as of the latest night).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object instead of text.")
    ] = False,
    as_of: AsOfOpt = None,
    storage_option: StorageOpt = None,
) -> None:
    """Why an episode scored what it did.

    Its turns in order (each whole), each graded item (expected, answer, match kind, right
    or wrong, the harness's verdict), the formula and its components, the score found again
    from the transcript and the harness's reported score. The transcript is read from the
    dump the output was scored from (refused if that file changed since). An imported score
    (formula version reported) has none: the table gave the score alone."""
    from flows.present.explain import ExplainError, Which, explanation_lines
    from flows.present.explain import explain as explain_episode
    from flows.store.output import Output

    use_storage_options(storage_option)
    if episode is None and (model is None or task is None):
        raise typer.BadParameter("name --episode, or --model and --task", param_hint="--episode")
    if episode is not None and (model is not None or task is not None):
        raise typer.BadParameter(
            "an episode id names the episode: give --episode alone, or --model and --task",
            param_hint="--episode",
        )
    try:
        which = Which(episode, model, task, night)  # --night a date, before OUT is read
        output = Output.at(out).require()
        output.check_as_of(as_of)
        found = explain_episode(output, which, as_of)
    except (ExplainError, StorageError) as error:
        raise refused(error) from None
    if json_output:
        typer.echo(json.dumps(found, default=str))
    else:
        for line in explanation_lines(found, out):
            typer.echo(line)
