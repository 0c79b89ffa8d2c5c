"""What a run reads of the history behind it (issue 48): a nightly's cost must not grow with
the nights the output already holds. Counted, never timed: the tables opened (an open
replays the table's Delta log) and the nights' files read."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import deltalake
import polars as pl
import pytest

from flows import runs
from flows.importers.scores import import_scores

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
