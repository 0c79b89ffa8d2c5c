"""What a run reads of the history behind it (issue 48): a nightly's cost must not grow with
the nights the output already holds. Counted, never timed: the tables opened (an open
replays the table's Delta log) and the nights' files read."""

from __future__ import annotations

import collections
import shutil
from collections.abc import Iterator
from pathlib import Path

import deltalake
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from flows import runs
from flows.importers.scores import import_scores
from flows.options import RegressionOptions
from flows.repeats import SeenIds
from flows.standings import Standings
from flows.store.output import Output
from schemas.tables import TABLES
from tests.tables import read_table
from transforms.aggregate import Bootstrap

FIRST = "2026-03-01"
CATEGORIES = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}
MODELS = ("m1", "m2", "m3")


def _night(day: int) -> str:
    return f"2026-03-{day:02}"


def _rows(day: int) -> list[dict[str, object]]:
    """Night ``day``: every model on every task the first night, then one model re-running
    one task (a harness's re-runs), as import-scores tables."""
    if day == 1:
        cells = [(m, t) for m in MODELS for t in CATEGORIES]
    else:
        cells = [(MODELS[day % len(MODELS)], list(CATEGORIES)[day % len(CATEGORIES)])]
    return [
        {
            "dump_date": _night(day),
            "model": m,
            "task": t,
            "category": CATEGORIES[t],
            "score": round(0.1 + 0.2 * MODELS.index(m) + 0.03 * ((day * 7 + k) % 5), 4),
        }
        for k, (m, t) in enumerate(cells)
    ]


def _deliver(tmp: Path, dump: Path, day: int) -> None:
    table = tmp / f"{_night(day)}.csv"
    pl.DataFrame(_rows(day)).write_csv(table)
    assert not import_scores(table, dump).rejected


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[tuple[str, str]]]:
    """Every Delta table opened, by (table, ``latest`` or the version)."""
    counted: collections.Counter[tuple[str, str]] = collections.Counter()
    real = deltalake.DeltaTable.__init__

    def counting(self: deltalake.DeltaTable, uri: str, *args: object, **kwargs: object) -> None:
        version = kwargs.get("version")
        at = "latest" if version is None else str(version)
        counted[(str(uri).rstrip("/").rsplit("/", 1)[-1], at)] += 1
        real(self, uri, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(deltalake.DeltaTable, "__init__", counting)
    yield counted


def test_a_nightly_opens_each_table_once_a_version(
    tmp_path: Path, opens: collections.Counter[tuple[str, str]]
) -> None:
    """Under the lease no other run writes: a table's latest version is opened once for the
    checks, the repair and the commit, and each version a run reads once however often it
    reads it (the ids check, the regressions' baseline, the standings)."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    for day in range(1, 4):
        _deliver(tmp_path, dump, day)
    runs.score(dump, out)
    _deliver(tmp_path, dump, 4)
    opens.clear()
    assert runs.nightly(dump, out).nights_scored == [_night(4)]
    again = {key: n for key, n in opens.items() if n > 1 and key[0] != "runs"}
    assert not again, f"opened more than once: {again}"
    # The runs table: read before the lease (the plan), once holding it, once recorded.
    runs_opens = sum(n for (table, _), n in opens.items() if table == "runs")
    assert runs_opens <= 12, opens


def test_a_nightly_opens_the_runs_table_once_before_the_lease_and_once_holding_it(
    tmp_path: Path, opens: collections.Counter[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs table's log grows a commit a run: each open replays it. Before the lease, one
    open gives the version the run plans at and its rows (the state made once); holding the
    lease, the layout check's open serves the repair, the version checked, the record (the
    append moves the handle) and the rows read after it. The preflight reads it once."""
    from flows.plan import preflight
    from flows.store.state import OutputState

    dump, out = _scored(tmp_path, 3)
    for _ in range(2):  # a few runs in its log
        runs.nightly(dump, out)
    _deliver(tmp_path, dump, 4)
    made = collections.Counter[int]()
    of_runs = OutputState.of_runs.__func__  # type: ignore[attr-defined]

    def counted(cls: type[OutputState], rows: pl.DataFrame) -> OutputState:
        made[len(rows)] += 1
        return of_runs(cls, rows)  # type: ignore[no-any-return]

    monkeypatch.setattr(OutputState, "of_runs", classmethod(counted))
    opens.clear()
    preflight(dump, out, [], False)
    assert opens[("runs", "latest")] == 1 and sum(opens.values()) == 1, opens
    assert sum(made.values()) == 1, made
    opens.clear()
    made.clear()
    assert runs.nightly(dump, out).nights_scored == [_night(4)]
    runs_opens = {key: n for key, n in opens.items() if key[0] == "runs"}
    assert runs_opens == {("runs", "latest"): 2}, runs_opens
    # The state before the run (planned from) and after it (its record): once each.
    assert sum(made.values()) == 2, made


def test_a_run_checkpoints_each_table_it_moved_past_a_multiple_of_the_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open replays every commit after the table's last checkpoint, and a nightly makes
    a commit a table: each run checkpoints the tables (the runs table too) whose versions
    it moved past a multiple of ``CHECKPOINT_EVERY``, so that no table is ever more than
    that many commits past its checkpoint (Delta's default: 100); the runs table, a file a
    run, is compacted first. No row changes."""
    import json

    from flows.store.delta import tables

    every = 2
    monkeypatch.setattr(tables, "CHECKPOINT_EVERY", every)
    dump, out = _scored(tmp_path, 2)
    before = read_table(out, "episode_scores")
    for day in (3, 4, 5):
        _deliver(tmp_path, dump, day)
        runs.nightly(dump, out)
    checked = 0
    for table in [*TABLES, "runs"]:
        if not (out / table / "_delta_log").is_dir():
            continue
        latest = deltalake.DeltaTable(str(out / table)).version()
        if latest < every:
            continue
        marker = out / table / "_delta_log" / "_last_checkpoint"
        assert marker.exists(), f"{table} at version {latest} has no checkpoint"
        assert latest - json.loads(marker.read_text())["version"] < every, table
        checked += 1
    assert checked >= len(TABLES) // 2
    # The runs table's files (one a run) compacted where it is checkpointed: its rows the same.
    assert len(deltalake.DeltaTable(str(out / "runs")).file_uris()) <= every
    assert Output.at(out).runs()["run_id"].n_unique() == 4
    after = read_table(out, "episode_scores").filter(pl.col("dump_date") < _night(3))
    assert_frame_equal(before, after, check_row_order=False)


def test_a_checkpoint_not_written_leaves_the_run_committed_and_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A checkpoint is written after the commit point: one that fails (a full disk) does not
    fail the committed run; the run's log names the table."""
    import logging

    from flows.logs import LOGGER
    from flows.store.delta import tables

    dump, out = _scored(tmp_path, 2)
    _deliver(tmp_path, dump, 3)
    monkeypatch.setattr(tables, "CHECKPOINT_EVERY", 1)

    def full(self: deltalake.DeltaTable) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(deltalake.DeltaTable, "create_checkpoint", full)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert runs.nightly(dump, out).nights_scored == [_night(3)]
    assert Output.at(out).state().nights[_night(3)].input_fingerprint
    assert "no checkpoint written for episode_scores" in caplog.text


def test_the_reads_after_a_nightly_take_the_tables_as_its_commits_left_them(
    tmp_path: Path, opens: collections.Counter[tuple[str, str]]
) -> None:
    """The run's handles are at the versions it committed, and the run's summary reads those
    versions (the standing it wrote): read through the same output, no table is opened
    again (the runs table is: another run may have recorded since)."""
    dump, out = _scored(tmp_path, 2)
    _deliver(tmp_path, dump, 3)
    outcome = runs.nightly(dump, out)
    opens.clear()
    for table in ("standings", "category_standings", "episode_scores"):
        assert not outcome.out.scan(table).collect().is_empty()
    assert {table for table, _ in opens} == {"runs"}, opens


def _scored(tmp: Path, days: int) -> tuple[Path, Path]:
    """A dump of ``days`` nights and its output, scored by one run."""
    dump, out = tmp / "dump", tmp / "out"
    for day in range(1, days + 1):
        _deliver(tmp, dump, day)
    runs.score(dump, out)
    return dump, out


def _spoil(out: Path, table: str, nights: list[str], column: str = "dump_date") -> int:
    """Overwrite the data files of ``nights`` in ``table`` with bytes no reader takes: a run
    that reads one fails. How many."""
    spoiled = 0
    for night in nights:
        for path in (out / table / f"{column}={night}").rglob("*.parquet"):
            path.write_bytes(b"not parquet")
            spoiled += 1
    return spoiled


def test_the_ids_check_reads_no_night_whose_ids_cannot_hold_tonights(tmp_path: Path) -> None:
    """An episode id unique in the whole dump is checked against every night the output
    holds: the files' statistics (their ids' range) answer for the nights whose ids cannot
    hold tonight's (import-scores' name their night), and their files are not read."""
    _, out = _scored(tmp_path, 3)
    assert _spoil(out, "episode_scores", [_night(1), _night(2)])
    seen = SeenIds(Output.at(out), frozenset(_night(d) for d in range(1, 4)))
    tonight = pl.Series([f"{_night(4)}/m1/t1", f"{_night(4)}/m2/t3"])
    assert seen.repeats(_night(4), tonight) == {}
    # A copy of night 3's episode is still found (its file is read).
    copied = pl.Series([f"{_night(3)}/m1/t1"])  # night 3 re-ran m1 on t1
    assert seen.repeats(_night(4), copied) == {_night(3): 1}


def test_a_night_no_other_nights_files_can_hold_reads_no_file_nor_plans_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48: the plan of a scan of the output's episode scores grows with its files
    (17-21 ms at 240 nights, every night of a rescore); the Delta log's bounds of each
    file's ids answer alone where no other night can hold tonight's, and a copy is still
    found, reading only the nights whose files can hold it."""
    _, out = _scored(tmp_path, 3)
    assert _spoil(out, "episode_scores", [_night(1), _night(2)])
    scans: list[str] = []
    scan = Output.scan

    def counted(self: Output, table: str, as_of: str | None = None) -> pl.LazyFrame:
        scans.append(table)
        return scan(self, table, as_of)

    monkeypatch.setattr(Output, "scan", counted)
    seen = SeenIds(Output.at(out), frozenset(_night(d) for d in range(1, 4)))
    assert seen.repeats(_night(4), pl.Series([f"{_night(4)}/m1/t1"])) == {}
    assert scans == []
    assert seen.repeats(_night(4), pl.Series([f"{_night(3)}/m1/t1"])) == {_night(3): 1}
    assert scans == ["episode_scores"]


def test_the_standings_held_are_read_from_the_log(tmp_path: Path) -> None:
    """Which standings the output holds (their as_of) is its table's partitions, from the
    Delta log: no standing's file is read for it."""
    _, out = _scored(tmp_path, 3)
    assert _spoil(out, "task_standings", [_night(d) for d in range(1, 4)], "as_of")
    standings = Standings(Output.at(out), Bootstrap(), RegressionOptions())
    assert standings.present() == [_night(d) for d in range(1, 4)]


def test_a_standing_takes_the_pairs_whose_models_kept_their_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A standing compares again only the pairs of a model with a new result; the others
    are the standing's before (made earlier in the run, or as OUT holds it), to the bit:
    every standing table is the one comparing every pair makes."""
    dump, out = _scored(tmp_path, 4)
    _deliver(tmp_path, dump, 5)
    made: list[bool] = []
    real = Standings._known

    def known(self: Standings, *args: object) -> object:
        found = real(self, *args)  # type: ignore[arg-type]
        made.append(found is not None)
        return found

    monkeypatch.setattr(Standings, "_known", known)
    runs.nightly(dump, out)
    assert made == [True]  # OUT's standing before, read, was taken
    monkeypatch.setattr(Standings, "_known", lambda self, *args: None)
    every = tmp_path / "every"
    runs.score(dump, every)
    for table in ("standing_comparisons", "standings", "category_standings", "standing_changes"):
        mine, theirs = read_table(out, table), read_table(every, table)
        keys = [c for c in theirs.columns if theirs[c].dtype == pl.String]
        assert_frame_equal(
            mine.sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True), check_exact=True
        )


def test_a_nightly_reads_no_night_before_its_baseline(tmp_path: Path) -> None:
    """The night after a history reads of it only what does not grow with it: the standing
    before (its partitions), the episodes that standing takes from earlier nights as
    ``standing_episodes`` keeps them, and the baseline night of the regressions. Every
    earlier night's files spoiled, the nightly makes the same tables."""
    dump, out = _scored(tmp_path, 5)
    _deliver(tmp_path, dump, 6)
    intact = tmp_path / "intact"
    shutil.copytree(out, intact)
    earlier = [_night(day) for day in range(1, 5)]
    spoiled = sum(_spoil(out, table, earlier) for table in ("episode_scores", "rejects"))
    spoiled += sum(
        _spoil(out, table.name, earlier, "as_of")
        for table in TABLES.values()
        if table.night == "as_of"
    )
    assert spoiled > 30
    for where in (out, intact):
        assert runs.nightly(dump, where).nights_scored == [_night(6)]
    for table in ("standing_comparisons", "standings", "standing_changes", "standing_episodes"):
        tonight = pl.col("as_of") == _night(6)  # (the spoiled nights are not read here)
        mine = Output.at(out).scan(table).filter(tonight).collect()
        theirs = Output.at(intact).scan(table).filter(tonight).collect()
        keys = [c for c in theirs.columns if theirs[c].dtype == pl.String]
        assert not theirs.is_empty() or table == "standing_changes"
        assert_frame_equal(mine.sort(keys), theirs.sort(keys), check_exact=True)
