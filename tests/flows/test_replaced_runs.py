"""Runs that replace one another (contract 1.4, ``single_run_started``): of one model's
single runs of one task on one night, the latest started stands, the others are kept as
replaced (``replaced_episodes``, naming the run that replaced each), never averaged with it
and never dropped; repeated episodes (no ``single_run_started``) are averaged as before.

Held both where the night's episode scores are staged (a run into OUT) and where they are
not (``score_dump``); for a score table with two rows of one model and task on one night;
and by ``explain``, which shows the run that stands and the one it replaced."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from examples.dumpkit import answer, episode, episode_end, episode_start, item, write_dump
from flows import runs
from flows.cli import app
from flows.importers.scores import import_scores
from flows.score import ScoreResult, score_dump
from schemas.contract import Category, Status
from tests.tables import last_run, read_table

NIGHT = "2026-04-12"
FOLDER = f"dump_date={NIGHT}"


def at(hour: int) -> datetime:
    return datetime(2026, 4, 12, hour, tzinfo=UTC)


ITEMS = 4
# Each episode's items answered right (an associative episode scores right / items).
RIGHT = {"m1-second": 4, "m1-first": 3, "m2-one": 2, "m2-two": 4, "m3-x": 1, "m3-y": 2,
         "m4-ran": 2, "m4-failed": 4, "m5-ran": 3, "m5-copied": 4}  # fmt: skip


def run(
    episode_id: str,
    model: str,
    file: str,
    started: datetime | None = None,
    status: Status = Status.COMPLETED,
) -> list[dict[str, Any]]:
    """One associative episode of task ``t`` with ``RIGHT[episode_id]`` of its items right;
    a single run started at ``started`` (None: a repeated episode)."""
    start = {} if started is None else {"single_run_started": started}
    turns = [episode_start({}, **start)]
    for n in range(ITEMS):
        said = "YES" if n < RIGHT[episode_id] else "NO"
        turns += [item(f"q{n}", "YES"), answer(f"q{n}", said)]
    return episode(
        Category.ASSOCIATIVE_LEARNING,
        episode_id=episode_id,
        model=model,
        task="t",
        start=False,
        file=f"{FOLDER}/{file}",
        turns=[*turns, episode_end(status)],
    )


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replaced_dump(tmp_path_factory.mktemp("replaced") / "dump")


def replaced_dump(root: Path) -> Path:
    """m1 ran t twice (the earlier run in the later file), m2 has two repeated episodes, m3
    two runs that started at the same instant, m4 a run and a later one a harness error, m5
    a run and a later one whose episode id is in two files (both copies rejected)."""
    write_dump(
        [
            *run("m1-second", "m1", "a.parquet", at(10)),
            *run("m1-first", "m1", "b.parquet", at(9)),
            *run("m2-one", "m2", "a.parquet"),
            *run("m2-two", "m2", "b.parquet"),
            *run("m3-x", "m3", "a.parquet", at(8)),
            *run("m3-y", "m3", "b.parquet", at(8)),
            *run("m4-ran", "m4", "a.parquet", at(7)),
            *run("m4-failed", "m4", "b.parquet", at(11), Status.ERROR),
            *run("m5-ran", "m5", "a.parquet", at(6)),
            *run("m5-copied", "m5", "a.parquet", at(12)),  # one id in two files: rejected
            *run("m5-copied", "m5", "b.parquet", at(12)),
        ],
        root,
    )
    return root


@pytest.fixture(scope="module")
def scored(dump: Path) -> Path:
    """The dump scored into OUT (its episode scores staged by the workers)."""
    out = dump.parent / "out"
    runs.score(dump, out)
    return out


def _ids(frame: pl.DataFrame) -> list[str]:
    return sorted(frame["episode_id"].to_list())


def test_the_latest_run_stands_and_the_earlier_one_is_kept_as_replaced(scored: Path) -> None:
    tasks = read_table(scored, "task_scores").sort("model")
    assert tasks.filter(model="m1")["n_episodes"].item() == 1  # never averaged (0.875)
    assert tasks.filter(model="m2")["n_episodes"].item() == 2  # repeated: averaged
    episodes = read_table(scored, "episode_scores")
    assert _ids(episodes) == ["m1-second", "m2-one", "m2-two", "m3-y", "m4-ran", "m5-ran"]
    for model, cell in zip(tasks["model"], tasks.iter_rows(named=True), strict=True):
        own = episodes.filter(model=model)["score"]
        assert cell["n_episodes"] == own.len() and cell["score"] == own.mean(), model
    replaced = read_table(scored, "replaced_episodes").sort("episode_id")
    assert replaced.select("episode_id", "replaced_by").rows() == [
        ("m1-first", "m1-second"),  # started at 9, the other at 10
        ("m3-x", "m3-y"),  # the same instant: the greater id stands
    ]
    kept = [RIGHT[e] / ITEMS for e in replaced["episode_id"]]
    assert replaced["score"].to_list() == kept  # kept with its own score
    run = last_run(scored)
    assert replaced["scorer_version"].unique().to_list() == [run["scorer_version"]]
    nights = run["nights"]
    assert isinstance(nights, dict)
    fingerprint = nights[NIGHT]["input_fingerprint"]
    assert replaced["input_fingerprint"].unique().to_list() == [fingerprint]
    counts = run["counts"]
    assert isinstance(counts, dict) and counts["episodes_replaced"] == 2


def test_a_later_run_not_scored_replaces_nothing(scored: Path) -> None:
    """A harness error is not the model's result, a rejected copy no result at all: the
    earlier run stands (as a night of harness errors leaves the earlier standing)."""
    rejects = read_table(scored, "rejects")
    assert rejects.filter(episode_id="m4-failed")["status"].to_list() == ["harness_error"]
    assert (
        rejects.filter(episode_id="m5-copied")["rules"].to_list()
        == [["duplicate_episode_across_files"]] * 2
    )
    for earlier in ("m4-ran", "m5-ran"):
        assert earlier in _ids(read_table(scored, "episode_scores"))
        assert earlier not in _ids(read_table(scored, "replaced_episodes"))


def test_scoring_without_staging_sets_apart_the_same_runs(dump: Path, scored: Path) -> None:
    result: ScoreResult = score_dump(dump)
    assert _ids(result.scores) == _ids(read_table(scored, "episode_scores"))
    stored = read_table(scored, "replaced_episodes").drop("scorer_version", "input_fingerprint")
    key = ["file", "episode_id"]
    assert result.replaced.sort(key).equals(stored.select(result.replaced.columns).sort(key))
    assert result.counts["episodes_replaced"] == 2
    assert result.counts["rows_scored"] + result.counts["rows_rejected"] == sum(
        f.rows for f in result.files
    )


def test_status_tells_the_episodes_replaced_each_night(scored: Path) -> None:
    replaced = read_table(scored, "replaced_episodes")
    done = CliRunner().invoke(app, ["status", str(scored), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["replaced"] == {NIGHT: replaced.height}
    text = CliRunner().invoke(app, ["status", str(scored)]).output
    assert f"night {NIGHT}: {replaced.height} episode(s) scored and replaced by a later" in text


def _explain(out: Path, *args: str) -> dict[str, Any]:
    done = CliRunner().invoke(app, ["explain", str(out), *args, "--json"])
    assert done.exit_code == 0, done.output
    return dict(json.loads(done.output))


def test_explain_shows_the_run_that_stands_and_the_run_it_replaced(scored: Path) -> None:
    """Before contract 1.4 the cell held two scored episodes and ``explain --model --task``
    refused it; it now explains the standing run and names the one it replaced."""
    standing = _explain(scored, "--model", "m1", "--task", "t")
    assert standing["episode_id"] == "m1-second" and standing["replaced_by"] is None
    [earlier] = standing["replaced"]
    assert earlier["episode_id"] == "m1-first" and earlier["score"] == RIGHT["m1-first"] / ITEMS
    text = CliRunner().invoke(app, ["explain", str(scored), "--model", "m1", "--task", "t"])
    assert "it replaced episode m1-first" in text.output
    gone = _explain(scored, "--episode", "m1-first")
    assert gone["replaced_by"] == "m1-second" and gone["recomputed_equal"]
    text = CliRunner().invoke(app, ["explain", str(scored), "--episode", "m1-first"])
    assert "REPLACED by episode m1-second" in text.output


def test_a_score_table_with_two_rows_of_one_cell_and_night_keeps_the_later(
    tmp_path: Path,
) -> None:
    """Two rows of one model and task on one night (two evaluations): both imported, the
    later stands, the earlier is kept as replaced; the same time in both is refused."""
    table = tmp_path / "scores.csv"
    table.write_text(
        "model_name,task_slug,category,score,eval_date\n"
        "m1,t1,assoc-learning,0.75,2026-04-12T09:00:00Z\n"
        "m1,t1,assoc-learning,1.0,2026-04-12T10:00:00Z\n"
        "m2,t1,assoc-learning,0.5,2026-04-12T09:30:00Z\n"
    )
    done = import_scores(table, tmp_path / "dump")
    assert done.rows_imported == 3 and done.rejected == []
    scored = CliRunner().invoke(
        app, ["score", str(tmp_path / "dump"), "--out", str(tmp_path / "out"), "--engine", "local"]
    )
    assert scored.exit_code == 0, scored.output
    assert "2 episodes scored (and 1 replaced by a later run" in scored.output
    rows = pl.read_csv(table)
    later = rows.filter(model_name="m1").sort("eval_date")[-1]
    cell = read_table(tmp_path / "out", "task_scores").filter(model="m1")
    assert cell["n_episodes"].item() == 1 and cell["score"].item() == later["score"].item()
    [replaced] = read_table(tmp_path / "out", "replaced_episodes").iter_rows(named=True)
    earlier = rows.filter(model_name="m1").sort("eval_date")[0]
    assert replaced["score"] == earlier["score"].item() and replaced["model"] == "m1"
