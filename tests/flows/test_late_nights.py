"""Nights that arrive late or are delivered again: every table a run leaves is the one scoring
the same nights in date order leaves (issue 46). The standings already were; the regressions
of the nights after a night scored (their baseline) are made again in the same run.

Expected tables are those of a run that scored the same dump night by night in date order:
never typed in."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from flows import runs
from flows.comparisons import NightWatch
from flows.importers.scores import import_scores
from flows.options import RegressionOptions, RunOptions
from flows.records import RunContext
from tests.tables import read_table

NIGHTS = ["2026-04-01", "2026-04-02", "2026-04-03", "2026-04-04"]
CATEGORIES = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}
MODELS = ("m1", "m2", "m3")
# Tables whose rows do not depend on the order the nights came in (run ids and times are in
# the runs table alone).
COMPARED = ("regressions", "task_standings", "standings", "standing_changes", "task_changes")


def _rows(night: str, absent: Iterable[str] = ()) -> list[dict[str, object]]:
    """Every model but ``absent`` on every task, its score moving night to night."""
    i = NIGHTS.index(night)
    return [
        {
            "dump_date": night,
            "model": m,
            "task": t,
            "category": c,
            "score": round(0.2 + 0.15 * j + 0.1 * k + 0.07 * ((i * (j + 2) + k) % 4), 4),
        }
        for j, m in enumerate(MODELS)
        if m not in absent
        for k, (t, c) in enumerate(CATEGORIES.items())
    ]


# m3 runs nothing on the third night (a not_comparable row of its regressions).
ABSENT = {NIGHTS[2]: ("m3",)}


def _deliver(tmp: Path, dump: Path, night: str, absent: Iterable[str] = ()) -> None:
    """The night's score table imported into the dump (replacing what it held)."""
    table = tmp / f"{night}.csv"
    pl.DataFrame(_rows(night, absent)).write_csv(table)
    done = import_scores(table, dump)
    assert not done.rejected


def _context(baseline: str, k: int) -> RunContext:
    options = RunOptions(regression=RegressionOptions(baseline=baseline, baseline_nights=k))  # type: ignore[arg-type]
    return RunContext(options=options)


def _nightly(tmp: Path, order: list[str], baseline: str, k: int, name: str) -> Path:
    """One nightly after each night arrives, in ``order``."""
    dump, out = tmp / f"{name}-dump", tmp / f"{name}-out"
    for night in order:
        _deliver(tmp, dump, night, ABSENT.get(night, ()))
        outcome = runs.nightly(dump, out, context=_context(baseline, k))
        assert not outcome.nights_failed
    return out


def _assert_same(mine: Path, theirs: Path, tables: Iterable[str] = COMPARED) -> None:
    for name in tables:
        a, b = read_table(mine, name), read_table(theirs, name)
        keys = [c for c in b.columns if b[c].dtype == pl.String]
        assert_frame_equal(a.sort(keys, nulls_last=True), b.sort(keys, nulls_last=True))


@pytest.mark.parametrize(
    ("baseline", "k"), [("previous", 1), ("mean", 2)], ids=["previous", "mean-of-2"]
)
def test_nights_arriving_late_give_the_tables_of_nights_in_order(
    tmp_path: Path, baseline: str, k: int
) -> None:
    """The third night, then the second, the first, the fourth (each a nightly): the
    regressions are those of the four nights scored in order, row for row."""
    in_order = _nightly(tmp_path, NIGHTS, baseline, k, "in-order")
    late = [NIGHTS[2], NIGHTS[1], NIGHTS[0], NIGHTS[3]]
    out_of_order = _nightly(tmp_path, late, baseline, k, "late")
    regressions = read_table(in_order, "regressions")
    # Every night after the first has rows: each model and scope against its baseline.
    assert sorted(set(regressions["dump_date"])) == NIGHTS[1:]
    _assert_same(out_of_order, in_order)


def test_a_night_delivered_again_changed_remakes_the_next_nights_regressions(
    tmp_path: Path,
) -> None:
    """The four nights in order, then the second delivered again without m3 (which ran
    nothing on the third): the third night's regressions no longer say m3 ran on its
    baseline night; every table is that of the changed nights scored in order."""
    out = _nightly(tmp_path, NIGHTS, "previous", 1, "again")
    absent = read_table(out, "regressions").filter(
        (pl.col("dump_date") == NIGHTS[2]) & (pl.col("model") == "m3")
    )
    assert absent["level"].to_list() == ["not_comparable"]
    _deliver(tmp_path, tmp_path / "again-dump", NIGHTS[1], ("m3",))
    outcome = runs.nightly(tmp_path / "again-dump", out, context=_context("previous", 1))
    assert outcome.regressions_refreshed == [NIGHTS[2]]
    expected_dump = tmp_path / "expected-dump"
    shutil.copytree(tmp_path / "again-dump", expected_dump)
    expected = tmp_path / "expected-out"
    for night in NIGHTS:  # the changed dump, night by night in order
        partial = tmp_path / "partial"
        shutil.copytree(expected_dump / f"dump_date={night}", partial / f"dump_date={night}")
        runs.nightly(
            partial,
            expected,
            context=_context("previous", 1),
        )
    stale = read_table(out, "regressions").filter(
        (pl.col("dump_date") == NIGHTS[2]) & (pl.col("model") == "m3")
    )
    assert stale.is_empty()  # m3 ran on neither night
    _assert_same(out, expected, ("regressions", "task_standings", "standings"))


def test_a_late_night_reads_only_the_nights_whose_regressions_it_makes_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A night arriving late in a long history: the regressions made again read, of the
    history, only the nights after it that its baseline reaches (``span``), never the rest."""
    read: list[list[str]] = []
    rows = NightWatch._rows

    def counted(self: NightWatch, nights: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        read.append(sorted(nights))
        return rows(self, nights)

    dump, out = tmp_path / "dump", tmp_path / "out"
    for night in NIGHTS[:1] + NIGHTS[2:]:
        _deliver(tmp_path, dump, night, ABSENT.get(night, ()))
    runs.nightly(dump, out, context=_context("mean", 2))
    monkeypatch.setattr(NightWatch, "_rows", counted)
    _deliver(tmp_path, dump, NIGHTS[1])
    outcome = runs.nightly(dump, out, context=_context("mean", 2))
    assert outcome.nights_scored == [NIGHTS[1]] and outcome.regressions_refreshed == NIGHTS[2:]
    # The late night's baseline (the first), then each night made again: its own rows (its
    # baseline is in memory: the late night, and the night made again before it).
    assert read == [[NIGHTS[0]], [NIGHTS[2]], [NIGHTS[3]]]
