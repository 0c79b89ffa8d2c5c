"""``cogscore import-scores``: a table of scores (LearningBench's published leaderboard as it
is, or a table with the contract's own names) becomes contract rows, every row it cannot
import reported with every reason; importing the same table again writes nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.importers.scores import import_scores
from flows.store.dumps import discover
from schemas.contract import REPORTED_SCORE, UNCATEGORISED
from tests.learningbench import LEADERBOARD, TASKS

FLAT = LEADERBOARD / "leaderboard_flat.csv"


def dump_rows(root: Path) -> pl.DataFrame:
    return pl.concat(
        pl.read_parquet(f).with_columns(pl.lit(f.parent.name.split("=")[1]).alias("night"))
        for f in sorted(root.rglob("*.parquet"))
    )


def test_the_published_leaderboard_is_imported_as_it_is(tmp_path: Path) -> None:
    """Its 1,890 scores with its own categories: the three tasks it calls `unknown` are
    uncategorised (contract 1.4), though their task files' folder is associative learning,
    which the import says; two rows an episode (start and end), the score as the reported
    score, the task's name as the instance every model faced."""
    flat = pl.read_csv(FLAT)
    done = import_scores(FLAT, tmp_path / "dump", "2026-04-16", TASKS)
    assert (done.rows_read, done.rows_imported, done.rejected) == (1890, 1890, [])
    unknown = sorted(flat.filter(category="unknown")["task_slug"].cast(pl.String).unique())
    assert done.disagreements == [
        {"task": t, "table": UNCATEGORISED, "task_files": "associative_learning"} for t in unknown
    ]
    rows = dump_rows(tmp_path / "dump")
    assert set(rows["night"]) == {"2026-04-16"} and rows.height == 2 * 1890
    assert (
        rows.group_by("episode_id")
        .agg(pl.col("kind").sort())
        .filter(pl.col("kind") != ["episode_end", "episode_start"])
        .is_empty()
    )
    ends = rows.filter(kind="episode_end").sort("model", "task")
    # A model by its published name, a task by its slug with - as _ (the harness's form).
    flat = flat.with_columns(pl.col("task_slug").str.replace_all("-", "_").alias("task"))
    published = flat.sort("model_name", "task")
    assert ends["model"].to_list() == published["model_name"].to_list()
    assert ends["task"].to_list() == published["task"].to_list()
    assert ends[REPORTED_SCORE].to_list() == published["score"].to_list()  # the same floats
    assert set(ends["status"]) == {"completed"}
    starts = rows.filter(kind="episode_start")
    assert (starts["instance_id"] == starts["task"]).all()
    # What the table wrote is kept, each row's own (contract 1.5): its names, date and row.
    kept = starts.sort("model", "task")["source_names"].str.json_decode().struct.unnest()
    assert kept.drop("row").rows() == published.drop("score", "task").rows()
    assert kept["row"].sort().to_list() == list(range(1, 1891))
    assert set(rows["kind"]) == {"episode_start", "episode_end"}  # no formula input
    categories = dict(zip(ends["task"], ends["category"], strict=False))
    assert categories["blocking_effect_assoc_learning"] == "associative_learning"
    assert {categories[t] for t in unknown} == {UNCATEGORISED}
    assert {categories[t] for t in published.filter(category="rf-learning")["task"]} == {
        "runtime_rl"
    }
    again = import_scores(FLAT, tmp_path / "dump", "2026-04-16", TASKS)
    assert again.written == {} and list(again.unchanged) == ["2026-04-16"]
    assert len(discover(tmp_path / "dump")) == 1


def test_without_task_files_the_table_is_imported_the_same(tmp_path: Path) -> None:
    """The task files only check the table's categories: without them the same rows, the
    `unknown` tasks uncategorised, nothing to say."""
    done = import_scores(FLAT, tmp_path / "dump", "2026-04-16")
    assert (done.rows_imported, done.rejected, done.disagreements) == (1890, [], [])
    checked = import_scores(FLAT, tmp_path / "checked", "2026-04-16", TASKS)
    assert dump_rows(tmp_path / "dump").equals(dump_rows(tmp_path / "checked"))
    assert len(checked.disagreements) == 3


def test_each_rows_own_date_makes_its_night_without_date(tmp_path: Path) -> None:
    flat = pl.read_csv(FLAT)
    done = import_scores(FLAT, tmp_path / "dump", tasks=TASKS)
    nights = sorted(flat["eval_date"].str.slice(0, 10).unique().to_list())
    assert sorted(done.written) == nights
    rows = dump_rows(tmp_path / "dump").filter(kind="episode_end")
    assert (rows["ts"].dt.date().cast(pl.String) == rows["night"]).all()


def test_every_row_that_cannot_be_imported_is_reported_with_every_reason(tmp_path: Path) -> None:
    table = tmp_path / "scores.csv"
    table.write_text(
        "model,task,category,score,dump_date\n"
        "m1,t1,associative_learning,0.5,2026-12-01\n"  # fine
        "m1,t2,concept-learning,NaN,2026-12-01\n"  # not finite
        "m1,t3,cooking,0.2,2026-12-01\n"  # unknown category name
        ",t4,runtime_rl,,someday\n"  # no model, no score, a date that is not one
        "m2,t1,associative_learning,0.7,2026-12-01\n"  # a copy of the next (the same time)
        "m2,t1,associative_learning,0.8,2026-12-01\n"
        "m3,t9,unknown,0.4,2026-12-01\n"  # in no category: imported so
        "m4,t1,associative_learning,1,2026-12-02\n"  # fine, another night
        "m5,t2,runtime_rl,0.1,2026-12-01\n"  # its task file says concept: kept, said
    )
    tasks = tmp_path / "tasks" / "concept_learning"
    tasks.mkdir(parents=True)
    (tasks / "t2.py").write_text("# a task file: only its folder is read\n")
    done = import_scores(table, tmp_path / "dump", tasks=tmp_path / "tasks")
    reasons = {r["row"]: r["reasons"] for r in done.rejected}
    assert reasons == {
        2: ["score NaN is not a finite number"],
        3: [
            "category cooking is none of "
            + ", ".join(
                sorted(
                    [
                        "assoc-learning",
                        "associative_learning",
                        "concept-learning",
                        "concept_formation",
                        "concept_learning",
                        "lang-learning",
                        "language_learning",
                        "obs-learning",
                        "observational_learning",
                        "proc-learning",
                        "procedural_learning",
                        "reinforcement_learning",
                        "rf-learning",
                        "runtime_rl",
                        "uncategorised",
                        "unknown",
                    ]
                )
            )
        ],
        4: ["no model", "no score", "date someday is not a date"],
        5: ["the table has another row for this model, task and night, at the same time"],
        6: ["the table has another row for this model, task and night, at the same time"],
    }
    assert done.rows_imported == 4 and sorted(done.written) == ["2026-12-01", "2026-12-02"]
    categories = dict(zip(*dump_rows(tmp_path / "dump").select("model", "category"), strict=False))
    assert (categories["m3"], categories["m5"]) == (UNCATEGORISED, "runtime_rl")
    assert done.disagreements == [
        {"task": "t2", "table": "runtime_rl", "task_files": "concept_formation"}
    ]


def test_a_parquet_table_with_the_contracts_names(tmp_path: Path) -> None:
    table = tmp_path / "nightly.parquet"
    pl.DataFrame(
        {
            "model": ["a", "b"],
            "task": ["t", "t"],
            "category": ["runtime_rl", "runtime_rl"],
            "score": [0.25, 1.0],
            "instance_id": ["seed-7", "seed-7"],
        }
    ).write_parquet(table)
    done = import_scores(table, tmp_path / "dump", "2026-12-03")
    assert done.rows_imported == 2
    rows = dump_rows(tmp_path / "dump")
    assert set(rows.filter(kind="episode_start")["instance_id"]) == {"seed-7"}
    assert rows["ts"].null_count() == rows.height  # no date column: no time
    assert math.fsum(rows[REPORTED_SCORE].drop_nulls()) == 1.25


def test_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "dump"
    lenient = runner.invoke(
        app, ["import-scores", str(FLAT), "--out", str(out), "--date", "2026-04-16"]
    )
    assert lenient.exit_code == 0, lenient.output
    assert "1890 of 1890 rows" in lenient.output and "category of" not in lenient.output
    whole = runner.invoke(
        app,
        ["import-scores", str(FLAT), "--out", str(out), "--tasks", str(TASKS), "--json"],
    )
    assert whole.exit_code == 0, whole.output
    summary = json.loads(whole.stdout.strip().splitlines()[-1])
    assert (summary["rows_imported"], summary["rows_not_imported"]) == (1890, 0)
    assert [d["task"] for d in summary["category_disagreements"]] == ["10000", "10001", "10002"]
    assert (
        "category of 10000: the table's uncategorised kept; its task file is in "
        "associative_learning" in whole.stderr
    )
    bad_row = tmp_path / "bad-row.csv"
    bad_row.write_text("model,task,category,score\nm,t,cooking,0.5\nm,u,runtime_rl,0.5\n")
    strict = runner.invoke(
        app, ["import-scores", str(bad_row), "--out", str(out), "--date", "2026-04-16", "--strict"]
    )
    assert strict.exit_code == 3 and "not imported: row 1" in strict.output
    bad = tmp_path / "bad.csv"
    bad.write_text("model,score\nm,1\n")
    refused = runner.invoke(app, ["import-scores", str(bad), "--out", str(out)])
    assert refused.exit_code == 2 and "lacks a column" in refused.output
    wrong_date = runner.invoke(app, ["import-scores", str(FLAT), "--out", str(out), "--date", "x"])
    assert wrong_date.exit_code == 2


@pytest.mark.parametrize("name", ["leaderboard_flat.csv"])
def test_a_missing_file_is_refused(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(
        app, ["import-scores", str(tmp_path / name), "--out", str(tmp_path / "d")]
    )
    assert result.exit_code == 2 and "no such file" in result.output


def _table(path: Path, rows: list[tuple[str, str, object]]) -> Path:
    """A score table with the contract's names: (model, task, score) rows of associative
    learning (CSV, or Parquet by the name's suffix)."""
    frame = pl.DataFrame(
        {
            "model": [r[0] for r in rows],
            "task": [r[1] for r in rows],
            "category": ["associative_learning"] * len(rows),
            "score": [str(r[2]) for r in rows],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        frame.with_columns(pl.col("score").cast(pl.Float64)).write_parquet(path)
    else:
        frame.write_csv(path)
    return path


def test_a_score_outside_0_1_is_a_row_not_imported_with_its_reason(tmp_path: Path) -> None:
    """1.5, -0.2 and 100 among scores of [0, 1] (its bounds included) are rows reported,
    never ranked: the model they would have put first is scored by its other rows."""
    from flows import runs

    rows = [("big", "t1", 25.3), ("big", "t2", 0.4), ("m", "t1", 1.5), ("m", "t2", 0.6)]
    rows += [("n", "t1", -0.2), ("n", "t2", 1), ("o", "t1", 100), ("o", "t2", 0)]
    table = _table(tmp_path / "scores.csv", rows)
    done = import_scores(table, tmp_path / "dump", "2026-12-01")
    reasons = {r["row"]: r["reasons"] for r in done.rejected}
    outside = {i + 1: s for i, (_, _, s) in enumerate(rows) if not 0 <= float(str(s)) <= 1}
    assert reasons == {row: [f"score {s} lies outside [0, 1]"] for row, s in outside.items()}
    assert done.rows_imported == len(rows) - len(outside)
    runs.score(tmp_path / "dump", tmp_path / "out")
    from tests.tables import read_table

    board = dict(read_table(tmp_path / "out", "model_scores").select("model", "score").rows())
    kept = {m: float(str(s)) for m, _, s in rows if 0 <= float(str(s)) <= 1}
    assert board == kept  # one task each: its score


def test_a_table_on_another_scale_is_refused_whole(tmp_path: Path) -> None:
    """A 0-100 table (most scores above 1): refused, exit 2, saying so; nothing written."""
    table = _table(tmp_path / "percent.csv", [("a", "t1", 75), ("a", "t2", 100), ("b", "t1", 0.5)])
    out = tmp_path / "dump"
    result = CliRunner().invoke(
        app, ["import-scores", str(table), "--out", str(out), "--date", "2026-12-01"]
    )
    assert result.exit_code == 2, result.output
    assert "2 of its 3 scores lie above 1" in result.output
    assert "divide its scores by 100" in result.output and result.output.count("\n") == 1
    assert not out.exists()


def test_tables_of_one_name_or_stem_never_share_a_file(tmp_path: Path) -> None:
    """``x/scores.csv`` then ``y/scores.csv``, ``x.csv`` then ``x.parquet`` (and ``s*.csv``,
    a name, not a pattern): each table its own file, none replacing another's rows;
    importing one again writes nothing, a copy of one is reported, not imported twice, and
    a model, task and night another table gave is a row reported."""
    from flows.score import score_dump

    dump, night = tmp_path / "dump", "2026-12-01"
    tables = [
        _table(tmp_path / "x" / "scores.csv", [("a", "t1", 0.1)]),
        _table(tmp_path / "y" / "scores.csv", [("b", "t1", 0.2)]),
        _table(tmp_path / "x.csv", [("c", "t1", 0.3)]),
        _table(tmp_path / "x.parquet", [("d", "t1", 0.4)]),
        _table(tmp_path / "s1.csv", [("e", "t1", 0.5)]),
        _table(tmp_path / "s*.csv", [("f", "t1", 0.6)]),
    ]
    for table in tables:
        done = import_scores(table, dump, night)
        assert (done.rows_imported, list(done.written), done.rejected) == (1, [night], [])
    scores = score_dump(dump).scores
    assert dict(scores.select("model", "score").rows()) == {
        m: s for m, s in zip("abcdef", (0.1, 0.2, 0.3, 0.4, 0.5, 0.6), strict=True)
    }
    files = sorted(p.name for p in (dump / f"dump_date={night}").glob("*.parquet"))
    assert len(files) == len(tables)

    again = import_scores(tables[0], dump, night)
    assert (again.written, list(again.unchanged)) == ({}, [night])
    copy = tmp_path / "z" / "copy.csv"
    copy.parent.mkdir()
    copy.write_bytes(tables[0].read_bytes())
    copied = import_scores(copy, dump, night)
    assert copied.rows_imported == 0 and copied.written == {}
    assert copied.copies == {night: again.unchanged[night]}
    other = import_scores(_table(tmp_path / "w" / "scores.csv", [("a", "t1", 0.9)]), dump, night)
    assert other.rows_imported == 0 and other.written == {}
    (reason,) = other.rejected[0]["reasons"]  # type: ignore[misc]
    assert "from another table already" in reason and Path(again.unchanged[night]).name in reason
    assert score_dump(dump).scores.height == len(tables)  # nothing twice, nothing replaced


def test_a_table_an_earlier_cogscore_imported_is_taken_over_not_doubled(tmp_path: Path) -> None:
    """An earlier cogscore named a table's file after its name alone
    (``scores-<stem>.parquet``): importing the same table again moves its rows to the
    table's own file, rather than writing them a second time beside the old one."""
    dump, night = tmp_path / "dump", "2026-12-01"
    table = _table(tmp_path / "scores.csv", [("a", "t1", 0.1), ("b", "t1", 0.2)])
    done = import_scores(table, dump, night)
    new = Path(done.written[night])
    old = new.with_name("scores-scores.parquet")
    pl.read_parquet(new).write_parquet(old)  # as that cogscore wrote it: no metadata
    new.unlink()
    again = import_scores(table, dump, night)
    assert (again.rows_imported, again.rejected, again.written) == (2, [], {night: str(new)})
    assert not old.exists() and len(discover(dump)) == 1
