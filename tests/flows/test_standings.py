"""Standings end to end: each model's latest result on every task as of each night, made by
the runs that touch the nights, incrementally, with the night's own estimators.

Expected standings are found here by looking through every night's input (the latest night
of each model and task), never read back from what cogscore wrote."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from flows import runs
from flows.importers.scores import import_scores
from flows.options import RegressionOptions
from flows.standings import Standings
from flows.standings_between import Standing
from flows.store.output import Output
from tests.learningbench import LEADERBOARD, TASKS
from tests.queries import polars_queries
from tests.tables import read_table
from transforms.aggregate import Bootstrap

N1, N2, N3 = "2026-04-01", "2026-04-02", "2026-04-03"
CATEGORIES = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}


def _night(night: str, cells: dict[tuple[str, str], float]) -> list[dict[str, object]]:
    return [
        {"dump_date": night, "model": m, "task": t, "category": CATEGORIES[t], "score": s}
        for (m, t), s in sorted(cells.items())
    ]


FIRST = {
    (m, t): 0.1 * i + 0.05 * j for i, m in enumerate(("m1", "m2")) for j, t in enumerate(CATEGORIES)
}
SECOND = {("m1", "t1"): 0.95, ("m3", "t1"): 0.4, ("m3", "t2"): 0.6, ("m3", "t3"): 0.2}
THIRD = {("m2", "t3"): 0.0, ("m2", "t2"): 0.75}


def _import(tmp: Path, dump: Path, rows: list[dict[str, object]], name: str) -> None:
    table = tmp / f"{name}.csv"
    pl.DataFrame(rows).write_csv(table)
    done = import_scores(table, dump)
    assert not done.rejected


def _expected(nights: list[tuple[str, dict[tuple[str, str], float]]]) -> dict:
    """Per as_of: each (model, task)'s latest score and the night it comes from."""
    standing: dict[tuple[str, str], tuple[str, float]] = {}
    out = {}
    for night, cells in nights:
        standing |= {key: (night, score) for key, score in cells.items()}
        out[night] = dict(standing)
    return out


def _task_standings(out: Path) -> dict[str, dict[tuple[str, str], tuple[str, float]]]:
    rows = read_table(out, "task_standings")
    found: dict[str, dict[tuple[str, str], tuple[str, float]]] = {}
    for as_of, model, task, night, score in rows.select(
        "as_of", "model", "task", "dump_date", "score"
    ).rows():
        found.setdefault(as_of, {})[(model, task)] = (night, score)
    return found


def _assert_same_rows(mine: pl.DataFrame, theirs: pl.DataFrame) -> None:
    """The same columns and rows, in any order."""
    columns = sorted(theirs.columns)
    assert sorted(mine.columns) == columns
    keys = [c for c in columns if theirs[c].dtype == pl.String]
    assert_frame_equal(mine.select(columns).sort(keys), theirs.select(columns).sort(keys))


def _written_as_of(out: Path, table: str) -> list[str]:
    """The as_of nights the latest commit of ``table`` replaced."""
    last = DeltaTable(str(out / table)).history(1)[0]
    return sorted(str(last["nights"]).split(","))


def test_a_rerun_replaces_exactly_its_cells_night_after_night(tmp_path: Path) -> None:
    """Three nightly runs, each adding a night: each makes the standing of its night only;
    every standing holds each model's latest result on every task; a re-run moves its
    model's standing, a new model is new, an untouched model has no change row."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    nights = [(N1, FIRST), (N2, SECOND), (N3, THIRD)]
    for night, cells in nights:
        _import(tmp_path, dump, _night(night, cells), night)
        runs.nightly(dump, out)
        assert _written_as_of(out, "task_standings") == [night]
    expected = _expected(nights)
    found = _task_standings(out)
    assert found == {night: {k: (n, pytest.approx(s)) for k, (n, s) in cells.items()}
                     for night, cells in expected.items()}  # fmt: skip
    standings = read_table(out, "standings")
    for night, cells in expected.items():
        for model in {m for m, _ in cells}:
            scores = [s for (m, _), (_, s) in cells.items() if m == model]
            row = standings.filter(as_of=night, model=model).row(0, named=True)
            assert row["score"] == pytest.approx(sum(scores) / len(scores))
            assert row["n_tasks"] == len(scores)
            nights_of = [n for (m, _), (n, _) in cells.items() if m == model]
            assert (row["oldest_night"], row["newest_night"]) == (min(nights_of), max(nights_of))
    changes = read_table(out, "standing_changes").filter(scope="overall")
    kinds = {(a, m): k for a, m, k in changes.select("as_of", "model", "kind").rows()}
    changed = {(N2, "m1"): "rerun", (N2, "m3"): "new_model", (N3, "m2"): "rerun"}
    # Every other model whose rank moved between the standings has a reranked row.
    ranks = {(a, m): r for a, m, r in standings.select("as_of", "model", "rank").rows()}
    reranked = {
        (now, model): "reranked"
        for before, now in ((N1, N2), (N2, N3))
        for model in ("m1", "m2", "m3")
        if (now, model) not in changed
        and (before, model) in ranks
        and ranks[(before, model)] != ranks[(now, model)]
    }
    assert reranked  # m3, new, passes a model that did not run
    assert kinds == changed | reranked
    m1 = changes.filter(as_of=N2, model="m1").row(0, named=True)
    assert m1["tasks_rerun"] == 1 and m1["moved_by"].startswith("t1 ")
    # Each result that changed between two standings is a row of task_changes, every one.
    cells = {}
    for before, now in ((N1, N2), (N2, N3)):
        for key in sorted(set(expected[before]) | set(expected[now])):
            old, new = expected[before].get(key), expected[now].get(key)
            if old == new:
                continue
            kind = "coverage" if old is None or new is None else "rerun"
            cells[(now, before, *key, CATEGORIES[key[1]], kind)] = (old or (None, None), new)
    found_cells = read_table(out, "task_changes")
    assert {
        (a, p, m, t, c, k): ((on, os and pytest.approx(os)), (nn, pytest.approx(ns)))
        for a, p, m, t, c, k, on, os, nn, ns in found_cells.select(
            "as_of", "previous_as_of", "model", "task", "category", "kind",
            "old_night", "old_score", "new_night", "new_score",
        ).rows()
    } == cells  # fmt: skip
    assert (found_cells["change"] == found_cells["new_score"] - found_cells["old_score"]).all()
    before, after = expected[N1], expected[N2]
    m1_before = [s for (m, _), (_, s) in before.items() if m == "m1"]
    m1_after = [s for (m, _), (_, s) in after.items() if m == "m1"]
    assert m1["change"] == pytest.approx(sum(m1_after) / 3 - sum(m1_before) / 3)


def test_a_changed_earlier_night_changes_every_later_standing(tmp_path: Path) -> None:
    """A night's input changed after later nights were scored: the nightly scores it again
    and makes its standing and every later one again (a result never re-run since is the
    changed one in all of them)."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    nights = [(N1, FIRST), (N2, SECOND), (N3, THIRD)]
    _import(tmp_path, dump, [r for n, c in nights for r in _night(n, c)], "all")
    runs.nightly(dump, out)
    # m2's t1 on the first night, never re-run, now 0.9: rewritten in the dump.
    (file,) = (dump / f"dump_date={N1}").glob("*.parquet")
    rows = pl.read_parquet(file)
    changed = (
        (pl.col("model") == "m2")
        & (pl.col("task") == "t1")
        & pl.col("reported_score").is_not_null()
    )
    new_score = pl.when(changed).then(0.9).otherwise(pl.col("reported_score"))
    rows.with_columns(new_score.alias("reported_score")).write_parquet(file)
    runs.nightly(dump, out)
    assert _written_as_of(out, "task_standings") == [N1, N2, N3]
    expected = _expected([(N1, FIRST | {("m2", "t1"): 0.9}), (N2, SECOND), (N3, THIRD)])
    found = _task_standings(out)
    for night in (N1, N2, N3):
        assert found[night][("m2", "t1")] == (N1, pytest.approx(0.9))
        assert found[night] == {k: (n, pytest.approx(s)) for k, (n, s) in expected[night].items()}
    # Each standing holding the changed result says it was scored anew, against itself.
    anew = read_table(out, "standing_changes").filter(kind="rescored", scope="overall")
    assert sorted(anew.select("as_of", "previous_as_of", "model").rows()) == [
        (night, night, "m2") for night in (N1, N2, N3)
    ]
    old = FIRST[("m2", "t1")]
    assert all(by.startswith(f"t1 +{0.9 - old:.3g}") for by in anew["moved_by"])
    cells = read_table(out, "task_changes").filter(kind="rescored")
    assert sorted(cells.select("as_of", "previous_as_of", "model", "task", "old_night").rows()) == [
        (night, night, "m2", "t1", N1) for night in (N1, N2, N3)
    ]
    assert cells["old_score"].to_list() == [pytest.approx(old)] * 3
    assert cells["new_score"].to_list() == [pytest.approx(0.9)] * 3


def test_a_standing_of_mixed_nights_is_scored_as_a_night_of_its_results(tmp_path: Path) -> None:
    """The standing as of the last night, whose results come from three nights, has the
    intervals, ranks, tiers and comparisons of one night holding exactly those results:
    the same estimators."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    nights = [(N1, FIRST), (N2, SECOND), (N3, THIRD)]
    _import(tmp_path, dump, [r for n, c in nights for r in _night(n, c)], "all")
    runs.score(dump, out)
    latest = _expected(nights)[N3]
    alone_dump, alone_out = tmp_path / "alone-dump", tmp_path / "alone-out"
    rows = _night(N3, {key: score for key, (_, score) in latest.items()})
    _import(tmp_path, alone_dump, rows, "alone")
    runs.score(alone_dump, alone_out)
    for standing, night in (
        ("standings", "model_scores"),
        ("category_standings", "category_scores"),
        ("standing_comparisons", "model_comparisons"),
    ):
        mine = read_table(out, standing).filter(as_of=N3).drop("as_of", "input_fingerprint")
        theirs = (
            read_table(alone_out, night)
            .rename({"dump_date": "as_of"})
            .drop("as_of", "input_fingerprint")
        )
        mine = mine.drop("oldest_night", "newest_night", strict=False)
        _assert_same_rows(mine, theirs)


def test_where_every_model_runs_every_task_the_standing_is_the_night(tmp_path: Path) -> None:
    """A simulated nightly harness (everything every night): each standing's tables are the
    night's, value for value."""
    from simulator import simulate

    dump, out = tmp_path / "dump", tmp_path / "out"
    simulate(dump, episodes=300, seed=3, date="2026-12-01")
    simulate(dump, episodes=300, seed=4, date="2026-12-02")
    runs.score(dump, out)
    for standing, night in (
        ("standings", "model_scores"),
        ("category_standings", "category_scores"),
        ("standing_comparisons", "model_comparisons"),
    ):
        mine = read_table(out, standing).drop("oldest_night", "newest_night", strict=False)
        theirs = read_table(out, night).rename({"dump_date": "as_of"})
        _assert_same_rows(mine, theirs)


def test_an_output_without_standings_gets_them_all_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output an earlier cogscore wrote (no standings): the next nightly makes the
    standing of every night it holds, then of its own."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    _import(tmp_path, dump, _night(N1, FIRST) + _night(N2, SECOND), "old")
    with monkeypatch.context() as patched:
        patched.setattr(Standings, "nights_to_make", lambda self, held, scored: [])
        runs.nightly(dump, out)
    assert read_table(out, "task_standings").is_empty()
    _import(tmp_path, dump, _night(N3, THIRD), "new")
    runs.nightly(dump, out)
    assert _written_as_of(out, "task_standings") == [N1, N2, N3]
    expected = _expected([(N1, FIRST), (N2, SECOND), (N3, THIRD)])
    assert set(_task_standings(out)) == set(expected)


def test_the_published_table_as_it_is_stands_as_published(tmp_path: Path) -> None:
    """LearningBench's 1,890 scores as published, each on the day it was run (ten nights,
    no ``--date``): the standing as of the last day is the published leaderboard, every
    model's mean over its 135 tasks and its rank."""
    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv")
    done = import_scores(LEADERBOARD / "leaderboard_flat.csv", tmp_path / "dump", None, TASKS)
    assert done.rows_imported == flat.height and not done.rejected
    outcome = runs.score(tmp_path / "dump", tmp_path / "out")
    assert outcome.verdict.code == 0 and not outcome.nights_failed
    standings = read_table(tmp_path / "out", "standings")
    nights = sorted(set(flat["eval_date"].str.slice(0, 10)))
    assert sorted(set(standings["as_of"])) == nights
    last = standings.filter(as_of=nights[-1])
    published = pl.read_csv(LEADERBOARD / "leaderboard_model_ranks.csv")
    joined = last.join(published, left_on="model", right_on="model_name", how="full")
    assert joined.height == published.height == last.height
    assert (joined["score"] - joined["mean_score"]).abs().max() < 1e-12  # type: ignore[operator]
    assert joined["rank"].to_list() == joined["rank_right"].to_list()
    assert set(last["n_tasks"]) == {135}


def test_the_terminal_the_record_and_the_views_show_the_standing(tmp_path: Path) -> None:
    """A nightly that adds a night where a model re-ran a task, a model is new and another
    ran nothing: the leaderboard printed is the standing (every model, the absent one
    included), each change and the absent model have a line and a key in the run record,
    and the SQL views read the standings."""
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.present.sql import connect
    from flows.store.output import Output

    dump, out = tmp_path / "dump", tmp_path / "out"
    _import(tmp_path, dump, _night(N1, FIRST), "first")
    runs.nightly(dump, out)
    _import(tmp_path, dump, _night(N2, SECOND), "second")  # m2 runs nothing on N2
    result = CliRunner().invoke(app, ["nightly", str(dump), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    text, record = result.stdout.rsplit("\n{", 1)
    assert f"standing as of {N2}" in text
    board = text[text.index("standing as of") : text.index("category ")]
    assert all(model in board for model in ("m1", "m2", "m3"))
    assert f"ran nothing on {N2} (but on the night before" in text and ": m2" in text
    assert f"new in the standing as of {N2}: m3" in text
    parsed = json.loads("{" + record)
    assert parsed["models_absent"] == {N2: ["m2"]}
    # Every model's overall change is in the record, whatever moved it (m1 re-ran t1).
    overall = read_table(out, "standing_changes").filter(as_of=N2, scope="overall")
    said = {(r["model"], r["kind"]) for r in parsed["standing_changes"]}
    assert said == set(overall.select("model", "kind").rows())
    assert ("m1", "rerun") in said and ("m3", "new_model") in said
    regressions = read_table(out, "regressions").filter(model="m2", dump_date=N2)
    assert regressions["level"].to_list() == ["not_comparable"]
    con = connect(Output.at(out))
    standings = read_table(out, "standings").filter(as_of=N2).sort("rank", "model")
    assert con.execute("SELECT model FROM leaderboard ORDER BY rank, model").fetchall() == [
        (m,) for m in standings["model"]
    ]
    night = con.execute("SELECT model FROM night_leaderboard ORDER BY model").fetchall()
    assert night == [("m1",), ("m3",)]  # the night alone: m2 did not run
    alerts = con.execute("SELECT model, kind FROM standing_alerts").fetchall()
    assert alerts == [("m3", "new_model")]
    pairs = read_table(out, "standing_comparisons").filter(as_of=N2, scope="overall")
    assert con.execute("SELECT count(*) FROM pairwise").fetchall() == [(pairs.height,)]


def test_a_rescore_that_moves_the_standings_says_rescored_for_each(tmp_path: Path) -> None:
    """A rescore of every night with another procedural_learning formula: each standing row
    it moved has a ``rescored`` row (the standing against itself before the run: its old
    and new score, the tasks that moved it), each category it moved too, and the run record
    and the terminal name every moved standing."""
    import shutil

    from typer.testing import CliRunner

    from flows.cli import app

    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "dump", dump)
    runs.nightly(dump, out)
    before = {
        name: read_table(out, name)
        for name in ("standings", "category_standings", "task_standings")
    }
    result = CliRunner().invoke(
        app,
        ["rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1", "--json"],
    )
    assert result.exit_code == 0, result.output
    text, record = result.stdout.rsplit("\n{", 1)
    key = ["as_of", "model"]
    old = before["standings"].select(*key, pl.col("score").alias("old"))
    moved = (
        read_table(out, "standings")
        .select(*key, pl.col("score").alias("new"))
        .join(old, on=key)
        .filter(pl.col("new") != pl.col("old"))
    )
    assert moved.height >= 2  # the formula moved standings
    changes = read_table(out, "standing_changes").filter(pl.col("kind") == "rescored")
    overall = changes.filter(scope="overall")
    assert sorted(overall.select(key).rows()) == sorted(moved.select(key).rows())
    assert (overall["previous_as_of"] == overall["as_of"]).all()
    for row in moved.iter_rows(named=True):
        mine = overall.filter(as_of=row["as_of"], model=row["model"]).row(0, named=True)
        assert mine["baseline_score"] == pytest.approx(row["old"], abs=1e-12)
        assert mine["score"] == pytest.approx(row["new"], abs=1e-12)
        assert mine["change"] == pytest.approx(row["new"] - row["old"], abs=1e-12)
        assert mine["level"] == "not_comparable" and "scored anew" in mine["reason"]
    # Each rescored cell (a task whose same night's score moved) is named by its row.
    cells = (
        read_table(out, "task_standings")
        .select("as_of", "model", "task", "dump_date", pl.col("score").alias("new"))
        .join(
            before["task_standings"].select(
                "as_of", "model", "task", "dump_date", pl.col("score").alias("old")
            ),
            on=["as_of", "model", "task", "dump_date"],
        )
        .filter(pl.col("new") != pl.col("old"))
    )
    counted = cells.group_by(key).agg(pl.len().alias("n"))
    for as_of, model, n in counted.rows():
        mine = overall.filter(as_of=as_of, model=model).row(0, named=True)
        assert mine["tasks_rescored"] == n
        named = cells.filter(as_of=as_of, model=model)["task"]
        assert all(task in mine["moved_by"] for task in named)
    categories = (
        read_table(out, "category_standings")
        .select("as_of", "model", "category", pl.col("score").alias("new"))
        .join(
            before["category_standings"].select(
                "as_of", "model", "category", pl.col("score").alias("old")
            ),
            on=["as_of", "model", "category"],
        )
        .filter(pl.col("new") != pl.col("old"))
    )
    scoped = changes.filter(pl.col("scope") != "overall").select(*key, "scope")
    assert sorted(scoped.rows()) == sorted(categories.select(*key, "category").rows())
    parsed = json.loads("{" + record)
    said = [(r["as_of"], r["model"]) for r in parsed["standing_changes"] if r["kind"] == "rescored"]
    assert sorted(said) == sorted(moved.select(key).rows())
    assert all(f"{a} {m} overall rescored" in text for a, m in moved.select(key).rows())


def test_whether_a_standing_keeps_the_pairs_before_is_one_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48: a standing keeps the pairs of the one before where it has its models and
    the same tasks; the four sets of keys compared (models and tasks, before and now) are
    one query (eight before: a select and a unique each, a standing of every night)."""
    cells = [("m1", "runtime_rl", "t1"), ("m2", "runtime_rl", "t1")]
    before = pl.DataFrame(cells, schema=["model", "category", "task"], orient="row")
    now = pl.concat(
        [before, pl.DataFrame([("m1", "runtime_rl", "t2")], before.schema, orient="row")]
    )
    standing = Standing("2026-03-01", before, pl.DataFrame(), pl.DataFrame())
    standings = Standings(Output.at(tmp_path / "out"), Bootstrap(), RegressionOptions())
    known = [None]

    def asked() -> None:
        known[0] = standings._known(standing, now, now.tail(1))

    assert polars_queries(monkeypatch, asked) == 1
    assert known[0] is None  # a task added: every pair compared again
