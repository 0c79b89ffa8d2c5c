"""``cogscore explain`` on the 13 real LearningBench runs: every scored episode explained
from its transcript gives the score ``episode_scores`` holds (scored again from its turns),
its graded items where its category grades items (each verdict the one its counts hold),
and the harness's recorded verdicts beside them; a transcript changed since it was scored is
refused. Many episodes read at once (``read_transcripts``, the report's) are read file by
file, each file once, and give each episode what ``explain`` gives it."""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import flows.present.explain
from flows import runs
from flows.cli import app
from flows.importers.scores import import_scores
from flows.present.explain import (
    INDENT,
    ExplainError,
    Which,
    explain,
    explanation_lines,
    read_transcripts,
)
from flows.present.terminal import printable
from flows.store.output import Output
from tests.learningbench import scored_real_runs
from tests.tables import read_table

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"
GRADED = ("associative_learning", "concept_formation", "language_learning",
          "observational_learning")  # fmt: skip


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scored_real_runs(tmp_path_factory.mktemp("explain"))


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
    assert result.exit_code == 2 and "no episode 'nope' on any night" in result.output
    assert "neither scored (episode_scores) nor rejected (rejects)" in result.output


def test_an_episode_not_scored_names_its_night_and_its_reject(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)]).exit_code == 0
    rejected = read_table(out, "rejects").drop_nulls("episode_id").row(0, named=True)
    night = rejected["dump_date"]
    for which in (
        ["--episode", rejected["episode_id"], "--night", night],
        ["--episode", rejected["episode_id"]],
    ):
        result = CliRunner().invoke(app, ["explain", str(out), *which])
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert "rejected, not scored" in said and "'FROM rejects'" in said, said
        assert f"{rejected['episode_id']} ({rejected['status']} on {night}: " in said
    for which in (
        ["--episode", rejected["episode_id"], "--night", "2020-01-01"],
        ["--model", rejected["model"], "--task", rejected["task"], "--night", "2020-01-01"],
    ):
        result = CliRunner().invoke(app, ["explain", str(out), *which])
        assert result.exit_code == 2 and "on 2020-01-01" in result.output, result.output
        assert "neither scored (episode_scores) nor rejected (rejects)" in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "m", "--task", "t", "--night", "yesterday"], "'yesterday' is not a date"),
        (["--episode", "e", "--night", "2026-02-30"], "'2026-02-30' is not a date"),
        (["--episode", "e", "--model", "m"], "give --episode alone, or --model and --task"),
        (["--episode", "e", "--task", "t"], "give --episode alone, or --model and --task"),
    ],
)
def test_explain_refuses_what_it_cannot_honour(scored: Path, args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["explain", str(scored / "out"), *args])
    assert result.exit_code == 2 and said in result.output, result.output


def test_every_value_is_shown_whole(scored: Path) -> None:
    output = Output.at(scored / "out")
    longest = 0
    for row in read_table(scored / "out", "episode_scores").iter_rows(named=True):
        found = explain(output, Which(row["episode_id"]))
        text = "\n".join(explanation_lines(found)) + "\n"
        for turn in found["turns"]:
            content = turn["content"]
            if content and "\n" in content:  # its lines below it, each whole
                block = "\n".join(INDENT + printable(line) for line in content.split("\n"))
                assert f":\n{block}\n" in text
            elif content:
                assert f": {printable(content)}\n" in text
            longest = max(longest, len(content or ""))
        for item in found["items"]:
            assert f"expected {printable(item['expected'])}, answered " in text
            assert f"answered {printable(item['answer'])}" in text
    assert longest > 100_000  # the real runs' 114 kB turn, whole


def test_every_float_is_shown_as_read_without_binary_noise(scored: Path) -> None:
    output = Output.at(scored / "out")
    scores = read_table(scored / "out", "episode_scores")
    noisy = [s for s in scores["score"] if len(repr(s).replace(".", "").lstrip("0")) > 12]
    assert noisy  # 0.43500000000000005 among the real runs' scores
    for row in scores.iter_rows(named=True):
        found = explain(output, Which(row["episode_id"]))
        head = "\n".join(explanation_lines(found)).split("\nturns (")[0]
        # No float printed with the binary noise of its arithmetic (17 significant digits):
        for shown in re.findall(r"\d+\.\d+(?:e-?\d+)?", head):
            assert len(shown.split("e")[0].replace(".", "").lstrip("0")) <= 12, shown
        # (the line after the episode's, and after what its source called it where kept)
        (score,) = re.findall(r"^score (\S+) ", head, re.MULTILINE)[:1]
        assert math.isclose(float(score), row["score"], rel_tol=1e-12, abs_tol=1e-15)


def test_a_score_that_differs_below_what_is_shown_is_shown_in_full(scored: Path) -> None:
    row = (
        read_table(scored / "out", "episode_scores").filter(pl.col("score") > 0).row(0, named=True)
    )
    found = explain(Output.at(scored / "out"), Which(row["episode_id"]))
    off = math.nextafter(found["score"], 2.0)  # one ulp: no formula's difference, a bug's
    said = explanation_lines({**found, "recomputed_score": off, "recomputed_equal": False})
    (line,) = [line for line in said if line.startswith("score ")]
    assert f"score {found['score']!r} " in line
    assert f"scored again from these turns: {off!r} (DIFFERENT)" in line


def test_an_imported_score_is_said_to_have_no_transcript(tmp_path: Path) -> None:
    table = tmp_path / "scores.csv"
    table.write_text(
        "model,task,category,score,dump_date\nm1,t1,concept_formation,0.5,2026-12-01\n"
    )
    import_scores(table, tmp_path / "dump")
    runs.nightly(tmp_path / "dump", tmp_path / "out")
    args = ["explain", str(tmp_path / "out"), "--model", "m1", "--task", "t1"]
    found = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert found["formula_version"] == "reported" and found["score"] == 0.5
    assert found["recomputed_equal"] is None and found["recomputed_score"] is None
    assert found["turns"] == [] and found["items"] == []
    text = CliRunner().invoke(app, args).stdout
    assert "score 0.5: an imported score (formula version reported)" in text
    assert "no transcript" in text and "scored again" not in text and "turns" not in text


def test_many_episodes_read_at_once_are_each_what_explain_shows(
    scored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    episodes = read_table(scored / "out", "episode_scores")
    output = Output.at(scored / "out")
    files: list[str] = []
    read_one = flows.present.explain._transcripts

    def counted(dump_file, ids):  # type: ignore[no-untyped-def]
        files.append(dump_file.relative)
        return read_one(dump_file, ids)

    monkeypatch.setattr(flows.present.explain, "_transcripts", counted)
    read = read_transcripts(output, episodes, output.state())
    assert sorted(files) == sorted(set(episodes["file"].to_list()))  # each file once
    assert read.unreadable == {} and read.rows is None
    monkeypatch.setattr(flows.present.explain, "_transcripts", read_one)
    for episode_id in episodes["episode_id"].to_list():
        alone = explain(output, Which(episode_id))
        of = pl.col("episode_id") == episode_id
        assert read.turns.filter(of).drop("episode_id").to_dicts() == alone["turns"]
        assert read.items.filter(of).drop("episode_id").to_dicts() == alone["items"]


def test_a_changed_file_leaves_its_episodes_unread_and_reads_the_others(
    scored: Path, tmp_path: Path
) -> None:
    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(scored / "dump", dump)
    shutil.copytree(scored / "out", out)
    output = Output.at(out)
    state = output.state()
    nights = {n: replace(e, input=str(dump)) for n, e in state.nights.items()}
    state = replace(state, input=str(dump), nights=nights)
    episodes = read_table(out, "episode_scores").sort("episode_id")
    changed, gone = episodes.row(0, named=True), episodes.row(1, named=True)
    with (dump / changed["file"]).open("ab") as file:
        file.write(b"\0")
    (dump / gone["file"]).unlink()
    read = read_transcripts(output, episodes, state)
    assert set(read.unreadable) == {changed["episode_id"], gone["episode_id"]}
    assert "changed since it was scored" in read.unreadable[changed["episode_id"]]
    assert "cannot be read" in read.unreadable[gone["episode_id"]]
    assert set(read.turns["episode_id"]) == set(episodes["episode_id"][2:])
    nothing = read_transcripts(output, episodes.head(2), state)
    assert nothing.turns.is_empty() and nothing.items.is_empty()
    assert nothing.items.columns[1:] == list(flows.present.explain.ITEM_COLUMNS)
