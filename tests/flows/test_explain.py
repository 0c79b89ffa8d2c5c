"""``cogscore explain`` on the 13 real LearningBench runs: every scored episode explained
from its transcript gives the score ``episode_scores`` holds (scored again from its turns),
its graded items where its category grades items (each verdict the one its counts hold),
and the harness's recorded verdicts beside them; a transcript changed since it was scored is
refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.explain import ExplainError, Which, explain
from flows.importers.kaggle import import_runs
from flows.output import Output
from flows.storage.location import Location
from tests.learningbench import LEARNINGBENCH, TASKS
from tests.tables import read_table

GRADED = ("associative_learning", "concept_formation", "language_learning",
          "observational_learning")  # fmt: skip


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("explain")
    import_runs(
        Location.parse(str(LEARNINGBENCH / "kaggle_runs")),
        TASKS,
        Location.parse(str(root / "dump")),
    )
    runs.nightly(root / "dump", root / "out")
    return root


def test_every_scored_episode_explains_its_score_and_items(scored: Path) -> None:
    episodes = read_table(scored / "out", "episode_scores")
    assert episodes.height == 12
    output = Output.at(scored / "out")
    for row in episodes.iter_rows(named=True):
        found = explain(output, Which(row["episode_id"]))
        assert found["score"] == row["score"] and found["recomputed_equal"]
        assert found["recomputed_score"] == row["score"]
        assert found["turns"] and found["turns"][0]["kind"] == "episode_start"
        if row["category"] in GRADED:
            assert len(found["items"]) == row["n_items"]
            assert sum(item["right"] for item in found["items"]) == row["correct_count"]
            differs = sum(item["differs"] for item in found["items"])
            assert differs == (row["verdict_mismatches"] or 0)
        else:
            assert found["items"] == []
        by_cell = explain(output, Which(model=row["model"], task=row["task"]))
        assert by_cell["episode_id"] == row["episode_id"]  # the standing's cell: this one


def test_the_json_names_what_a_reader_needs(scored: Path) -> None:
    episodes = read_table(scored / "out", "episode_scores").filter(
        pl.col("category") == "observational_learning"
    )
    model, task = episodes.row(0, named=True)["model"], episodes.row(0, named=True)["task"]
    result = CliRunner().invoke(
        app, ["explain", str(scored / "out"), "--model", model, "--task", task, "--json"]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    for key in ("episode_id", "model", "task", "category", "score", "formula_version",
                "components", "turns", "items"):  # fmt: skip
        assert key in found
    assert set(found["items"][0]) >= {"item_id", "expected", "answer", "match", "right"}
    text = CliRunner().invoke(
        app, ["explain", str(scored / "out"), "--model", model, "--task", task]
    )
    assert "scored again from these turns" in text.stdout and "items:" in text.stdout


def test_a_transcript_changed_since_it_was_scored_is_refused(scored: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(scored / "out", out)
    row = read_table(out, "episode_scores").row(0, named=True)
    file = scored / "dump" / row["file"]
    saved = file.read_bytes()
    try:
        file.write_bytes(saved + b"\0")
        with pytest.raises(ExplainError, match="changed since it was scored"):
            explain(Output.at(out), Which(row["episode_id"]))
        result = CliRunner().invoke(app, ["explain", str(out), "--episode", row["episode_id"]])
        assert result.exit_code == 2 and "changed since it was scored" in result.output
    finally:
        file.write_bytes(saved)


def test_an_unknown_episode_is_named(scored: Path) -> None:
    result = CliRunner().invoke(app, ["explain", str(scored / "out"), "--episode", "nope"])
    assert result.exit_code == 2 and "no scored episode of episode 'nope'" in result.output
