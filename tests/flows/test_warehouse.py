"""Warehouse tables: aggregates against plain Python, provenance, reruns, kills, DuckDB."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from statistics import fmean, stdev

import blake3
import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

from flows import runs
from flows.night import aggregate
from flows.options import run_options
from flows.present.sql import connect
from flows.records import RunContext
from flows.runs import score as run
from flows.score import score_dump
from flows.store.catalog import CORE_TABLES, PAUSE_AT, PAUSE_FLAG
from flows.store.output import TABLES, Output
from tests.tables import data_files, last_run, latest_versions, read_table, referenced
from transforms.aggregate import Bootstrap, group_seed
from transforms.registry import DEFAULTS as _DEFAULTS

# A new output pins the registry's default (the task files' rounding, v3, since issue 28).
DEFAULT_PROCEDURAL = _DEFAULTS["procedural_learning"]  # type: ignore[index]  # a str key

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
SMALL = Bootstrap(resamples=200)


@pytest.fixture(scope="module")
def scores() -> pl.DataFrame:
    return score_dump(EXAMPLE_DUMP).scores


def read(out: Path, table: str) -> pl.DataFrame:
    frame = read_table(out, table)
    order = [c for c in ("dump_date", *TABLES[table].sort) if c in frame.columns]
    return frame.select(sorted(frame.columns)).sort(order, nulls_last=True)


def plain_aggregates(scores: pl.DataFrame, bootstrap: Bootstrap) -> dict[str, dict]:
    """Task, category and model aggregates in plain Python, from the README's definitions:
    a task's interval the percentile bootstrap of its episodes (null where they do not
    vary); a category's and a model's the two-level interval of a bounded mean (README
    "Comparisons and statistics")."""
    tasks: dict[tuple, list[tuple[str, float]]] = defaultdict(list)
    for r in scores.iter_rows(named=True):
        key = (r["dump_date"], r["model"], r["category"], r["task"])
        tasks[key].append((r["episode_id"], r["score"]))
    out: dict[str, dict] = {"task": {}, "category": {}, "model": {}}
    for key, rows in tasks.items():
        values = np.array([s for _, s in sorted(rows)])
        replicates = resample_means(values, key, bootstrap)
        std = stdev(values) if len(values) > 1 else None
        ci = _ci(replicates, bootstrap) if len(set(replicates)) > 1 else (None, None)
        out["task"][key] = (fmean(values), len(values), std, *ci)
    categories: dict[tuple, list[tuple]] = defaultdict(list)
    for key in tasks:
        categories[key[:3]].append(key)
    # Per category: the variance of its score and its degrees of freedom (tasks a sample;
    # a category of one task: that task's episodes, each its own instance here).
    spread: dict[tuple, tuple[float | None, float | None]] = {}
    for key, members in categories.items():
        means = [out["task"][m][0] for m in members]
        score = fmean(means)
        n_episodes = sum(out["task"][m][1] for m in members)
        if len(members) > 1:
            spread[key] = (stdev(means) ** 2 / len(means), len(means) - 1.0)
        else:
            episodes = [s for _, s in tasks[members[0]]]
            n = len(episodes)
            spread[key] = (stdev(episodes) ** 2 / n, n - 1.0) if n > 1 else (None, None)
        out["category"][key] = (score, len(members), n_episodes, *_t_ci(score, [spread[key]]))
    models: dict[tuple, list[tuple]] = defaultdict(list)
    for key in categories:
        models[key[:2]].append(key)
    for key, members in models.items():
        every_task = [t for m in members for t in categories[m]]
        means = [out["task"][t][0] for t in every_task]
        score = fmean(means)
        by_category = fmean(out["category"][m][0] for m in members)
        # each task weighs the same: the tasks one pool (a model of one task: its episodes)
        pooled = (
            [(stdev(means) ** 2 / len(means), len(means) - 1.0)]
            if len(means) > 1
            else [spread[members[0]]]
        )
        even = [_scaled(spread[m], 1 / len(members)) for m in members]
        out["model"][key] = (
            score,
            len(members),
            *_t_ci(score, pooled),
            by_category,
            *_t_ci(by_category, even),
        )
    return out


def _scaled(part: tuple[float | None, float | None], weight: float) -> tuple:
    variance, df = part
    return (None if variance is None else variance * weight**2, df)


def _t_ci(score: float, parts: list[tuple]) -> tuple[float | None, float | None]:
    """Korn and Graubard's interval of a mean of scores in [0, 1] (every score here lies in
    it: README "Comparisons and statistics"): statsmodels' Clopper-Pearson interval of the
    effective sample ``p(1 - p) / variance`` (where the variance is 0, rounding aside, the
    ``df + 1`` values behind it), shrunk by ``(z / t_df)²``, the variance the sum of the
    parts', Satterthwaite's degrees of freedom; null where a part is unknown."""
    if any(v is None for v, _ in parts):
        return None, None
    variance = sum(v for v, _ in parts)
    spread = variance > 1e-24
    df = variance**2 / sum(v**2 / d for v, d in parts) if spread else sum(d for _, d in parts)
    n = score * (1 - score) / variance if spread else df + 1
    n *= (scipy_stats.norm.ppf(0.975) / scipy_stats.t.ppf(0.975, df)) ** 2
    low, high = proportion_confint(score * n, n, 0.05, method="beta")
    return float(low), float(high)


def resample_means(values: np.ndarray, key: tuple, bootstrap: Bootstrap) -> np.ndarray:
    """The README's resampling: with replacement from the group's own stream; where the
    scores take at most 1/16 as many distinct values as there are episodes, the draw is the
    multinomial count of each distinct value (ascending), else n indices per resample."""
    rng = group_seed(bootstrap.seed, key)
    n = len(values)
    distinct = sorted(set(values.tolist()))
    if len(distinct) * 16 <= n:
        counts = [int((values == v).sum()) for v in distinct]
        drawn = rng.multinomial(n, [c / n for c in counts], size=bootstrap.resamples)
        return np.array(
            [sum(k * v for k, v in zip(row, distinct, strict=True)) / n for row in drawn]
        )
    picks = rng.integers(0, n, size=(bootstrap.resamples, n))
    return values[picks].mean(axis=1)


def _ci(replicates: np.ndarray, bootstrap: Bootstrap) -> tuple[float, float]:
    low, high = bootstrap.quantiles
    return float(np.quantile(replicates, low)), float(np.quantile(replicates, high))


def _copies(scores: pl.DataFrame, copies: int) -> pl.DataFrame:
    """The scores with every episode repeated under new ids: large groups whose scores
    repeat a few values, which the bootstrap resamples by counting draws of each value."""
    return pl.concat(
        scores.with_columns(pl.format("{}-copy{}", "episode_id", pl.lit(i)).alias("episode_id"))
        for i in range(copies)
    )


@pytest.mark.parametrize("copies", [1, 40], ids=["as-scored", "repeated-values"])
def test_aggregates_match_plain_python(scores: pl.DataFrame, copies: int) -> None:
    scores = _copies(scores, copies)
    want = plain_aggregates(scores, SMALL)
    got = aggregate(scores, SMALL)
    tasks = {
        (r["dump_date"], r["model"], r["category"], r["task"]): (
            r["score"],
            r["n_episodes"],
            r["std"],
            r["ci_low"],
            r["ci_high"],
        )
        for r in got["task_scores"].iter_rows(named=True)
    }
    categories = {
        (r["dump_date"], r["model"], r["category"]): (
            r["score"],
            r["n_tasks"],
            r["n_episodes"],
            r["ci_low"],
            r["ci_high"],
        )
        for r in got["category_scores"].iter_rows(named=True)
    }
    models = {
        (r["dump_date"], r["model"]): (
            r["score"],
            r["categories_covered"],
            r["ci_low"],
            r["ci_high"],
            r["score_by_category"],
            r["ci_low_by_category"],
            r["ci_high_by_category"],
        )
        for r in got["model_scores"].iter_rows(named=True)
    }
    for name, table in (("task", tasks), ("category", categories), ("model", models)):
        assert table.keys() == want[name].keys()
        for key, values in table.items():
            expected = want[name][key]
            assert [v is None for v in values] == [e is None for e in expected], (name, key)
            numbers = [(v, e) for v, e in zip(values, expected, strict=True) if v is not None]
            assert [v for v, _ in numbers] == pytest.approx(
                [e for _, e in numbers], rel=1e-12, abs=1e-12
            ), (name, key)
    ranks = {(r["dump_date"], r["model"]): r["rank"] for r in got["model_scores"].to_dicts()}
    for (night, model), (score, *_) in want["model"].items():
        better = sum(s > score for (n, _), (s, *_) in want["model"].items() if n == night)
        assert ranks[(night, model)] == better + 1


def test_both_resampling_ways_draw_the_same_distribution() -> None:
    """Counting draws of each distinct value (few values, many episodes) and drawing
    indices are one distribution: their percentile intervals agree within sampling error."""
    values = np.repeat([0.0, 0.25, 0.5, 1.0], [300, 100, 50, 350])
    big = Bootstrap(resamples=20_000)
    counted = resample_means(values, ("night", "m", "c", "t"), big)
    picks = np.random.default_rng(0).integers(0, len(values), size=(big.resamples, len(values)))
    indexed = values[picks].mean(axis=1)
    sd = values.std() / np.sqrt(len(values))  # of a resample mean
    for q in (0.025, 0.5, 0.975):
        # Each quantile of 20,000 resamples is off by about 0.02 sd: 0.1 sd is 4 sigma.
        assert abs(np.quantile(counted, q) - np.quantile(indexed, q)) < 0.1 * sd
    assert abs(counted.std() - indexed.std()) < 0.03 * sd


def test_intervals_are_seeded(scores: pl.DataFrame) -> None:
    first, again = (
        aggregate(scores, SMALL),
        aggregate(scores.sample(fraction=1.0, shuffle=True, seed=1), SMALL),
    )
    other = aggregate(scores, Bootstrap(resamples=200, seed=7))
    for name in first:
        keys = [
            c
            for c in first[name].columns
            if c not in ("ci_low", "ci_high") and first[name][c].dtype == pl.String
        ]
        assert_frame_equal(first[name].sort(keys), again[name].sort(keys))
    assert not first["model_scores"]["ci_low"].equals(other["model_scores"]["ci_low"])


# A planned hypothesis of the example dump's models: its table has rows to check too.
PLANNED = """
[[hypothesis]]
id = "H1"
claim = "learner-medium outperforms random-small"
test = "wilcoxon"
scope = "overall"
a = "learner-medium"
b = "random-small"
"""


@pytest.fixture(scope="module")
def scored_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    planned = out.parent / "planned.toml"
    planned.write_text(PLANNED)
    run(EXAMPLE_DUMP, out, context=RunContext(options=run_options(hypotheses=str(planned))))
    return out


def test_every_table_row_carries_provenance(scored_out: Path) -> None:
    manifest = last_run(scored_out)
    for table in CORE_TABLES:
        frame = read(scored_out, table)
        if table == "replaced_episodes" and frame.is_empty():
            continue  # no run of the example dump replaces another (test_replaced_runs.py)
        assert frame["scorer_version"].unique().to_list() == [manifest["scorer_version"]]
        for i, (night, info) in enumerate(sorted(manifest["nights"].items())):
            # (a standing's rows carry the fingerprint of the night it is as of)
            rows = frame.filter(pl.col(TABLES[table].night).cast(pl.String) == night)
            # The first night has no baseline night: no regression, no change to check.
            first = table in ("regressions", "standing_changes", "task_changes") and i == 0
            expected = [] if first else [info["input_fingerprint"]]
            assert rows["input_fingerprint"].unique().to_list() == expected


def test_manifest_records_inputs_versions_and_accounting(scored_out: Path) -> None:
    manifest = last_run(scored_out)
    for entry in manifest["files"]:
        path = EXAMPLE_DUMP / entry["file"]
        assert entry["bytes"] == path.stat().st_size
        assert entry["digest"] == "blake3:" + blake3.blake3(path.read_bytes()).hexdigest()
        assert entry["rows"] == pl.scan_parquet(path).select(pl.len()).collect().item()
    counts = manifest["counts"]
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]
    nights = manifest["nights"].values()
    for field in ("rows_read", "rows_scored", "rows_rejected", "episodes_scored"):
        assert sum(n["counts"][field] for n in nights) == counts[field]
    assert {"polars", "pyarrow", "pandera", "prefect", "python"} <= set(manifest["libraries"])
    assert manifest["formula_versions"]["procedural_learning"] == DEFAULT_PROCEDURAL
    assert manifest["bootstrap"]["resamples"] == 1000
    assert {"files_s", "assemble_s", "aggregate_s", "stage_s"} <= set(manifest["timings"])
    assert manifest["cogscore_commit"]


def test_from_a_score_to_its_rows(scored_out: Path) -> None:
    score = read(scored_out, "episode_scores").row(0, named=True)
    rows = pl.read_parquet(EXAMPLE_DUMP / score["file"]).filter(
        pl.col("episode_id") == score["episode_id"]
    )
    assert rows.height == score["n_rows"]


def test_rerun_gives_the_same_tables_as_a_new_version(tmp_path: Path) -> None:
    run(EXAMPLE_DUMP, tmp_path)
    first = {t: read(tmp_path, t) for t in CORE_TABLES}
    versions = latest_versions(tmp_path)
    run(EXAMPLE_DUMP, tmp_path)
    for table in CORE_TABLES:
        assert_frame_equal(read(tmp_path, table), first[table])  # replaced, not duplicated
        assert latest_versions(tmp_path)[table] > versions[table]


def test_rerunning_one_night_replaces_only_its_partitions(tmp_path: Path) -> None:
    one_night = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", one_night / "dump_date=2026-12-01")
    out = tmp_path / "out"
    run(EXAMPLE_DUMP, out)
    both = {t: read(out, t) for t in CORE_TABLES}
    moved = RunContext(options=run_options(input_root_changed=True))  # the night, elsewhere
    runs.rescore(one_night, out, ["procedural_learning=v1"], context=moved)  # that night only
    for table in CORE_TABLES:
        after = read(out, table)
        if table in ("standing_changes", "task_changes"):  # the rescore's moves, added
            after = after.filter(pl.col("kind") != "rescored")
        night = pl.col(TABLES[table].night).cast(pl.String) == "2026-11-30"
        assert_frame_equal(after.filter(night), both[table].filter(night))  # kept as it was
        assert after.height == both[table].height  # replaced, not duplicated
    versions = read(out, "episode_scores").filter(category="procedural_learning")
    by_night = versions.group_by(pl.col("dump_date").cast(pl.String)).agg(
        pl.col("formula_version").unique()
    )
    assert dict(by_night.iter_rows()) == {"2026-11-30": [DEFAULT_PROCEDURAL], "2026-12-01": ["v1"]}
    manifest = last_run(out)
    assert set(manifest["nights"]) == {"2026-11-30", "2026-12-01"}


KILL_POINTS = ["scored", "wrote-episode_scores", "wrote-task_scores", "before-commit"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_9_leaves_the_previous_output_and_the_next_run_completes(
    tmp_path: Path, point: str
) -> None:
    out = tmp_path / "out"
    run(EXAMPLE_DUMP, out)
    before = {t: read(out, t) for t in CORE_TABLES}
    flag = tmp_path / "paused"
    env = {**os.environ, PAUSE_AT: point, PAUSE_FLAG: str(flag)}
    script = (
        "from pathlib import Path; from flows.runs import rescore; "
        f"rescore(Path({str(EXAMPLE_DUMP)!r}), Path({str(out)!r}), ['procedural_learning=v1'])"
    )
    victim = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env)
    deadline = time.monotonic() + 120
    while not flag.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists(), "the run never reached the fault point"
    # At ``scored`` the night's episode scores are written on the run's stager thread, which
    # the pause does not stop: killed before they are, nothing would be left to see.
    while point == "scored" and not data_files(out) - referenced(out):
        assert time.monotonic() < deadline, "paused at scored, and nothing staged"
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    for table, frame in before.items():  # the previous output, complete and readable
        assert_frame_equal(read(out, table), frame)
    if point == "scored":  # the workers' episode rows are written, never committed: unseen
        assert data_files(out) - referenced(out)
    runs.rescore(EXAMPLE_DUMP, out, ["procedural_learning=v1"])
    procedural = read(out, "episode_scores").filter(category="procedural_learning")
    assert set(procedural["formula_version"]) == {"v1"}
    assert Output.at(out).vacuum(retain_hours=0) > 0
    assert data_files(out) == referenced(out, latest_only=True)  # only the latest state's
    for table, frame in before.items():  # replaced, not duplicated (the moved standings
        after = read(out, table)  # say so: rescored rows, added)
        if table in ("standing_changes", "task_changes"):
            after = after.filter(pl.col("kind") != "rescored")
        assert after.height == frame.height


def test_vacuum_removes_uncommitted_files_and_nothing_of_anyone_elses(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(EXAMPLE_DUMP, out)
    night = out / "episode_scores" / "dump_date=2026-12-01" / "category=runtime_rl"
    # Not named as cogscore's writers name files: only the retention can tell it is unused.
    leftover = night / "part-00000-killed-run.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(leftover)
    note = out / "episode_scores" / "notes.txt"
    note.write_text("checked by hand")
    output = Output.at(out)
    before = read(out, "episode_scores")
    assert output.vacuum(dry_run=True) == 0  # the default keeps 30 days: it is too new
    assert output.vacuum(retain_hours=0, dry_run=True) == 1 and leftover.exists()
    assert output.vacuum(retain_hours=0) == 1
    assert not leftover.exists() and note.read_text() == "checked by hand"
    assert_frame_equal(read(out, "episode_scores"), before)


def test_vacuum_deletes_a_killed_run_s_files_written_before_it_took_the_lease(
    tmp_path: Path,
) -> None:
    """A staged file no commit names goes at the default retention, if it was written
    before vacuum took the lease (by a run that no longer holds it); one written since is
    no killed run's to judge, and stays."""
    import uuid

    out = tmp_path / "out"
    run(EXAMPLE_DUMP, out)
    night = out / "episode_scores" / "dump_date=2026-12-01" / "category=runtime_rl"
    killed, later = (night / f"part-{uuid.uuid4()}.parquet" for _ in range(2))
    for path in (killed, later):
        pl.DataFrame({"x": [1]}).write_parquet(path)
    hour_on = time.time() + 3600
    os.utime(later, (hour_on, hour_on))
    before = read(out, "episode_scores")
    assert Output.at(out).vacuum() == 1
    assert not killed.exists() and later.exists()
    assert_frame_equal(read(out, "episode_scores"), before)


def _delta_scan_views(out: Path) -> duckdb.DuckDBPyConnection:
    """DuckDB's own delta extension (from the duckdb-extension-delta wheel, offline) over
    sql/tables.sql, then the views: a reader that is not cogscore's."""
    import duckdb_extension_delta

    extension = next(Path(duckdb_extension_delta.__path__[0]).rglob("delta.duckdb_extension"))
    con = duckdb.connect()
    con.execute(f"LOAD '{extension}'")
    con.execute(f"SET VARIABLE cogscore_out = '{out}'")
    con.execute((ROOT / "sql" / "tables.sql").read_text())
    con.execute((ROOT / "sql" / "views.sql").read_text())
    return con


@pytest.mark.parametrize("reader", ["cogscore sql", "delta_scan"])
def test_duckdb_reads_every_table_and_the_views(scored_out: Path, reader: str) -> None:
    con = _views(scored_out) if reader == "cogscore sql" else _delta_scan_views(scored_out)
    for table in CORE_TABLES:
        count = con.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert count == (read(scored_out, table).height,)
    for view, table, night in (
        ("leaderboard", "standings", "as_of"),
        ("night_leaderboard", "model_scores", "dump_date"),
    ):
        board = con.execute(f"SELECT model, rank FROM {view} ORDER BY rank, model").fetchall()
        models = read(scored_out, table).filter(pl.col(night).cast(pl.String) == "2026-12-01")
        assert board == sorted(
            zip(models["model"], models["rank"], strict=True), key=lambda r: (r[1], r[0])
        )


def test_category_leaderboard_view_is_each_categorys_ranks(scored_out: Path) -> None:
    """Each category's own leaderboard as of the latest night: its ``category_standings``
    rows in rank order, the ranks and their intervals as written."""
    got = (
        _views(scored_out)
        .execute("SELECT category, model, rank, rank_low, rank_high FROM category_leaderboard")
        .fetchall()
    )
    rows = read(scored_out, "category_standings")
    latest = rows.filter(pl.col("as_of").cast(pl.String) == rows["as_of"].cast(pl.String).max())
    want = latest.sort("category", "rank", "model").select(
        "category", "model", "rank", "rank_low", "rank_high"
    )
    assert got == list(want.rows()) and want["rank"].null_count() == 0
    assert len(set(want["category"])) > 1


def _night(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("dump_date").cast(pl.String))


def _views(out: Path) -> duckdb.DuckDBPyConnection:
    return connect(Output.at(out))  # type: ignore[no-any-return]


def test_model_trend_view_is_model_scores_night_by_night(scored_out: Path) -> None:
    got = (
        _views(scored_out)
        .execute("SELECT model, dump_date, score, ci_low, ci_high, rank FROM model_trend")
        .fetchall()
    )
    models = _night(read(scored_out, "model_scores")).sort("model", "dump_date")
    want = list(models.select("model", "dump_date", "score", "ci_low", "ci_high", "rank").rows())
    assert got == want and len({r[1] for r in want}) == 2  # both nights, in order


def test_night_category_profile_view_is_one_column_per_category(scored_out: Path) -> None:
    con = _views(scored_out)
    result = con.execute("SELECT * FROM night_category_profile")
    names = [d[0] for d in result.description]
    got = {
        (str(r["dump_date"]), r["model"]): {c: r[c] for c in names[2:]}
        for r in (dict(zip(names, row, strict=True)) for row in result.fetchall())
    }
    categories = _night(read(scored_out, "category_scores"))
    want: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in categories.iter_rows(named=True):
        cells = want.setdefault((r["dump_date"], r["model"]), dict.fromkeys(names[2:]))
        cells[r["category"]] = r["score"]
    assert names[:2] == ["dump_date", "model"]
    assert set(names[2:]) == set(categories["category"])  # every category has a column
    assert got == want


def test_reject_reasons_view_counts_what_the_dump_builder_spoiled(scored_out: Path) -> None:
    rows = (
        _views(scored_out)
        .execute(
            "SELECT CAST(dump_date AS VARCHAR), model, status, rule, episodes, rows "
            "FROM reject_reasons"
        )
        .fetchall()
    )
    got = {(d, m, s, rule): (n, r) for d, m, s, rule, n, r in rows}
    # From the rejects table, exploded by rule in polars ...
    rejects = _night(read(scored_out, "rejects")).explode("rules")
    grouped = rejects.group_by("dump_date", "model", "status", "rules").agg(
        pl.len().alias("episodes"), pl.col("rows").sum()
    )
    assert got == {
        (r["dump_date"], r["model"], r["status"], r["rules"]): (r["episodes"], r["rows"])
        for r in grouped.iter_rows(named=True)
    }
    # ... and from the example dump's own record of the episodes it spoiled.
    from examples.make_example_dump import build_rows

    built_rows, expected = build_rows()
    size: dict[tuple[str | None, str], int] = defaultdict(int)
    model: dict[tuple[str | None, str], str] = {}
    for r in built_rows:
        size[(r["episode_id"], r["file"])] += 1
        model[(r["episode_id"], r["file"])] = r["model"]
    spoiled: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for key, rules in expected.items():
        night = key[1].split("/")[0].removeprefix("dump_date=")
        for rule in rules:
            spoiled[(night, model[key], rule)][0] += 1
            spoiled[(night, model[key], rule)][1] += size[key]
    assert {(d, m, rule): [n, r] for (d, m, _, rule), (n, r) in got.items()} == dict(spoiled)
    statuses = {rule: status for (_, _, status, rule) in got}
    assert statuses.pop("harness_error") == "harness_error"
    assert set(statuses.values()) == {"rejected"}


@pytest.mark.parametrize("reader", ["cogscore sql", "delta_scan"])
def test_pairwise_view_is_the_latest_nights_overall_comparisons(
    scored_out: Path, reader: str
) -> None:
    con = _views(scored_out) if reader == "cogscore sql" else _delta_scan_views(scored_out)
    got = con.execute("SELECT model_a, model_b, diff, verdict FROM pairwise").fetchall()
    table = _night(read(scored_out, "model_comparisons"))
    latest = table.filter(
        (pl.col("scope") == "overall") & (pl.col("dump_date") == table["dump_date"].max())
    ).sort("model_a", "model_b")
    assert got == list(latest.select("model_a", "model_b", "diff", "verdict").rows())
    assert latest.height > 0


def test_regression_alerts_view_is_the_alerts_and_watches(scored_out: Path) -> None:
    got = (
        _views(scored_out)
        .execute("SELECT dump_date, level, model, scope, change FROM regression_alerts")
        .fetchall()
    )
    table = _night(read(scored_out, "regressions"))
    flagged = table.filter(pl.col("level").is_in(["alert", "watch"]))
    want = sorted(flagged.select("dump_date", "level", "model", "scope", "change").rows())
    assert sorted(got) == want
    assert table.height > 0  # the second night was compared with the first


def test_the_runs_leaderboard_reads_the_latest_nights_rows_only(
    scored_out: Path, tmp_path: Path
) -> None:
    """The leaderboard a run prints is the standing as of the latest night (or, one option
    away, the night's own): read from its partitions, not from months of history. With the
    other night's model and category files gone, it is the same."""
    import shutil

    from flows.present.leaderboard import leaderboard_lines
    from flows.store.output import Output, night_levels
    from schemas.views import View

    def board(out: Path, view: View) -> list[str]:
        output = Output.at(out)
        return leaderboard_lines(output, night_levels(output.state()), view)

    first, latest = sorted(last_run(scored_out)["nights"])  # type: ignore[call-overload]
    copy = tmp_path / "out"
    shutil.copytree(scored_out, copy)
    for table in ("model_scores", "category_scores"):
        shutil.rmtree(copy / table / f"dump_date={first}")
    for table in ("standings", "category_standings"):
        shutil.rmtree(copy / table / f"as_of={first}")
    for view in View:
        assert board(copy, view) == board(scored_out, view)
    assert board(copy, View.STANDING)[0].startswith(f"standing as of {latest}")
    assert board(copy, View.NIGHT)[0].startswith(f"leaderboard of the night {latest}")


def test_a_run_gives_a_table_it_does_not_rewrite_this_versions_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table an earlier cogscore wrote and a run leaves as it is (a nightly with nothing
    new) gains this cogscore's new columns in a metadata commit the run records: DuckDB's
    ``delta_scan`` under sql/views.sql bound the views' columns and failed on such an output
    (``calls`` not found in ``standings``) until a night rewrote the table."""
    from deltalake import DeltaTable

    from flows.store import writer
    from flows.store.catalog import empty_table

    out = tmp_path / "out"
    runs.nightly(EXAMPLE_DUMP, out)  # by "an earlier cogscore"; then one with a column more
    newer = pl.Series("added_later", [], pl.Int64)

    def with_added(table: str) -> pl.DataFrame:
        frame = empty_table(table)
        return frame.with_columns(newer) if table == "standings" else frame

    monkeypatch.setattr(writer, "empty_table", with_added)
    runs.nightly(EXAMPLE_DUMP, out)  # nothing new: no night of standings rewritten
    table = DeltaTable(str(out / "standings"))
    assert "added_later" in [field.name for field in table.schema().fields]
    assert latest_versions(out)["standings"] == table.version()  # the run pins it
    rows = pl.read_delta(str(out / "standings"))
    assert rows.height > 0 and rows["added_later"].null_count() == rows.height
    con = _delta_scan_views(out)
    assert con.execute("SELECT count(*), count(added_later) FROM standings").fetchone() == (
        rows.height,
        0,
    )
