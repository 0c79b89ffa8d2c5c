"""The published table and the 13 real runs, one standing (issue 47): ``import-scores`` of
LearningBench's ``leaderboard_flat.csv`` then ``nightly --runs --tasks --names`` into the same
dump give one standing of its 14 models, every published cell its published score, each run
explained beside the cell it is; ``export --format learningbench`` writes the published
files back byte for byte. Every expected value is read from the published files."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.learningbench import LEADERBOARD, LEARNINGBENCH, RUNS, TASKS
from tests.tables import read_table

NAMES = Path(__file__).resolve().parents[2] / "examples" / "learningbench-names.csv"
FILES = ("leaderboard_flat.csv", "leaderboard_model_ranks.csv", "leaderboard_score_matrix.csv")


@pytest.fixture(scope="module")
def together(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("together")
    dump, out = root / "dump", root / "out"
    flat = str(LEADERBOARD / "leaderboard_flat.csv")
    common = ["--names", str(NAMES)]
    scores = ["import-scores", flat, "--out", str(dump), "--tasks", str(TASKS)]
    done = CliRunner().invoke(app, [*scores, *common])
    assert done.exit_code == 0, done.output
    nightly = ["nightly", str(dump), "--out", str(out), "--quiet", "--runs", str(RUNS)]
    done = CliRunner().invoke(app, [*nightly, "--tasks", str(TASKS), *common])
    assert done.exit_code == 0, done.output
    (root / "nightly.txt").write_text(done.output)
    return root


def test_the_table_and_the_runs_are_one_standing_of_the_published_models(
    together: Path,
) -> None:
    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv")
    ranks = pl.read_csv(LEADERBOARD / "leaderboard_model_ranks.csv")
    standing = read_table(together / "out", "standings").filter(
        pl.col("as_of") == pl.col("as_of").max()
    )
    assert set(standing["model"]) == set(ranks["model_name"])
    assert standing["model"].n_unique() == ranks.height == 14
    scores = read_table(together / "out", "episode_scores")
    assert set(scores["model"]) == set(ranks["model_name"])  # no second row for a run's model
    # Each cell's latest result (GPT-5.4's codon run of 2026-04-12 was run again on 04-15).
    latest = pl.col("dump_date") == pl.col("dump_date").max().over("model", "task")
    cells = scores.filter(latest).select("model", "task", "score")
    published = flat.select(
        pl.col("model_name").alias("model"),
        pl.col("task_slug").str.replace_all("-", "_").alias("task"),
        pl.col("score").alias("published"),
    )
    joined = published.join(cells, on=["model", "task"], how="left")
    assert joined.height == flat.height
    assert (joined["score"] == joined["published"]).all()  # the published floats, each


def test_each_run_is_explained_beside_the_published_cell(together: Path) -> None:
    out, of_a_run = together / "out", pl.col("source_names").str.contains("task_file")
    replaced = read_table(out, "replaced_episodes").filter(of_a_run)
    runs = read_table(out, "episode_scores").filter(of_a_run)
    assert runs.height + replaced.height == 12  # the 13 runs but GLM-5's (no task file)
    # A run the table publishes too (the same start) is replaced by the table's row: the
    # published score stands, the run is kept beside it to explain it.
    assert set(replaced["replaced_by"]).isdisjoint(replaced["episode_id"])
    run = runs.filter(pl.col("model") == "GPT-5.4", pl.col("task").str.contains("codon"))
    assert run.height == 1 and run["dump_date"][0] == "2026-04-12"
    which = ["--model", "GPT-5.4", "--task", run["task"][0], "--night", run["dump_date"][0]]
    said = CliRunner().invoke(app, ["explain", str(together / "out"), *which])
    assert said.exit_code == 0, said.output
    assert "openai/gpt-5.4-2026-03-05" in said.output and "turns (" in said.output


def test_export_gives_the_published_files_byte_for_byte(together: Path) -> None:
    folder = together / "published"
    done = CliRunner().invoke(
        app, ["export", str(together / "out"), "--format", "learningbench", "--out", str(folder)]
    )
    assert done.exit_code == 0, done.output
    for name in FILES:
        assert (folder / name).read_bytes() == (LEADERBOARD / name).read_bytes(), name
    with (folder / "leaderboard_model_ranks.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 14


def test_the_run_without_a_task_file_is_accounted() -> None:
    glm = list((RUNS / "zai_glm-5").glob("*.run.json"))
    assert glm and LEARNINGBENCH.is_dir()


def test_a_full_re_export_imported_again_is_unchanged_not_refused(
    together: Path, tmp_path: Path
) -> None:
    """Its rows are the runs the dump holds (another file than the table imported, rows in
    another order): counted as unchanged, none listed, no exit 3 with --strict."""
    lines = (LEADERBOARD / "leaderboard_flat.csv").read_bytes().split(b"\r\n")
    again = tmp_path / "leaderboard_flat.csv"
    again.write_bytes(b"\r\n".join([lines[0], *sorted(filter(None, lines[1:])), b""]))
    dump = str(together / "dump")
    done = CliRunner().invoke(
        app, ["import-scores", str(again), "--out", dump, "--tasks", str(TASKS), "--strict"]
    )
    assert done.exit_code == 0, done.output
    first = done.output.splitlines()[0]
    rows = len(lines) - 2  # the header and the last line's end
    assert first.startswith(f"0 of {rows} rows") and f"; {rows} unchanged (" in first
    assert "not imported:" not in done.output


def test_models_covering_other_tasks_are_one_line_a_night(together: Path) -> None:
    """The table's tasks arrive over 10 nights: each night's standing covers other tasks for
    most models, said in a line a night (not one a model: 95 lines), each model's change."""
    said = (together / "nightly.txt").read_text().splitlines()
    lines = [line for line in said if line.startswith("  not_comparable ")]
    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv")
    nights = flat["eval_date"].str.slice(0, 10).n_unique()
    assert 0 < len(lines) < nights
    models = flat["model_name"].n_unique()
    assert any(f": {models} models cover other tasks (" in line for line in lines)
