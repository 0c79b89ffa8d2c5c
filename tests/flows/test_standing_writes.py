"""A ``score``'s standings staged on a worker thread (``flows.standing_writes``, issue 48,
i48-overlap): a batch's files are written while the run makes the next standings, in
order, one batch in flight; an error writing them fails the run with its message, and
nothing of the run is committed."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

import flows.store.writer as writer_module
from flows import runs, standing_writes
from flows.importers.scores import import_scores
from flows.standing_writes import StandingWrites
from flows.standings import Standings
from flows.store import objects
from flows.store.errors import StorageError
from flows.store.location import Location
from schemas.columns import AS_OF
from schemas.tables import TABLES

TASKS = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}
NIGHTS = [f"2026-05-0{d}" for d in range(1, 7)]


def _dump(tmp: Path, nights: list[str]) -> Path:
    """A dump of ``nights``: three models on every task the first night, then one model
    re-running a task each night (a standing a night)."""
    rng = random.Random(3)
    models = ("m1", "m2", "m3")
    cells = [(m, t) for m in models for t in TASKS]
    rows = [
        {
            "dump_date": night,
            "model": model,
            "task": task,
            "category": TASKS[task],
            "score": round(rng.random(), 4),
            "instance_id": f"{task}#0",
        }
        for i, night in enumerate(nights)
        for model, task in (cells if i == 0 else [rng.choice(cells)])
    ]
    table = tmp / "scores.csv"
    pl.DataFrame(rows).write_csv(table)
    assert not import_scores(table, tmp / "dump").rejected
    return tmp / "dump"


def test_a_score_writes_a_batch_of_standings_on_a_worker_while_it_makes_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of the first batch of standings (nights 1 and 2) are written on another
    thread than the run's, while the run makes the standing of night 3; every standing
    table's nights staged in order, each night once."""
    begun: dict[str, threading.Event] = {night: threading.Event() for night in NIGHTS}
    made = Standings.of_night

    def of_night(self: Standings, night: str | None, tonight: object) -> object:
        if night is not None:
            begun[night].set()
        return made(self, night, tonight)  # type: ignore[arg-type]

    writes: list[tuple[str, str | None, str, bool]] = []
    staged = writer_module.Writer.stage_files

    def spy(self: writer_module.Writer, table: str, night: str | None, files: Any) -> None:
        # a standing's table (standing_episodes: the run's last standing's, staged at its end)
        if AS_OF in TABLES[table].dtypes and table != "standing_episodes":
            # the first night staged of the first batch waits for the next standing to be
            # begun (on the run's thread: never, it is this thread)
            overlapped = begun[NIGHTS[2]].wait(10) if not writes else True
            writes.append((table, night, threading.current_thread().name, overlapped))
        staged(self, table, night, files)

    monkeypatch.setattr(Standings, "of_night", of_night)
    monkeypatch.setattr(writer_module.Writer, "stage_files", spy)
    monkeypatch.setattr(standing_writes, "STANDINGS_AT_ONCE", 2)
    runs.score(_dump(tmp_path, NIGHTS), tmp_path / "out")

    main = threading.main_thread().name
    assert writes and all(thread != main for _, _, thread, _ in writes)
    assert writes[0][3], "the first batch's files were not written while night 3's was made"
    for table in {t for t, _, _, _ in writes}:
        assert [n for t, n, _, _ in writes if t == table] == NIGHTS, table


def test_an_error_writing_standings_on_the_worker_fails_the_run_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write of the standings that fails on the worker fails the run with its message;
    no table of ``OUT`` moves (the run's commit is never reached)."""
    dump = _dump(tmp_path, NIGHTS)
    out = tmp_path / "out"
    runs.score(dump, out)  # a first run: the tables as they are before the failing one
    before = {name: DeltaTable(str(out / name)).version() for name in TABLES}

    failed_on: list[str] = []
    put = objects.put_if_absent

    def full(location: Location, key: str, data: bytes) -> str | None:
        if location.display.endswith("task_standings") and key.startswith(f"as_of={NIGHTS[1]}"):
            failed_on.append(threading.current_thread().name)
            raise StorageError("cannot stage task_standings: no space left on the device")
        return put(location, key, data)

    monkeypatch.setattr(objects, "put_if_absent", full)
    monkeypatch.setattr(standing_writes, "STANDINGS_AT_ONCE", 2)
    with pytest.raises(StorageError, match="no space left on the device"):
        runs.score(dump, out)  # every night again, their standings too

    assert failed_on and failed_on[0] != threading.main_thread().name
    after = {name: DeltaTable(str(out / name)).version() for name in TABLES}
    assert after == before


class _Slow:
    """A writer whose standing writes wait to be let through (a stand-in for ``Writer``)."""

    def __init__(self) -> None:
        self.through = threading.Event()
        self.staged: list[tuple[str, list[str | None]]] = []

    def stage_nights(self, table: str, frame: pl.DataFrame, nights: list[str | None]) -> None:
        self.through.wait(10)
        if table == "bad":
            raise ValueError(f"table bad of {nights}")
        self.staged.append((table, list(nights)))


def test_at_most_one_batch_is_in_flight_and_its_error_comes_at_the_next_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(standing_writes, "STANDINGS_AT_ONCE", 1)
    slow = _Slow()
    stood = StandingWrites(slow, lambda name, rows: rows)  # type: ignore[arg-type]
    row = {"t": pl.DataFrame({AS_OF: ["a"]})}
    stood.add("a", row)  # handed off: the worker waits
    assert slow.staged == []
    slow.through.set()
    stood.add("b", row)  # waits for a's batch before handing b's
    assert slow.staged[0] == ("t", ["a"])
    stood.flush()
    assert slow.staged == [("t", ["a"]), ("t", ["b"])]

    failing = StandingWrites(slow, lambda name, rows: rows)  # type: ignore[arg-type]
    failing.add("c", {"bad": pl.DataFrame({AS_OF: ["c"]})})
    with pytest.raises(ValueError, match=r"table bad of \['c'\]"):
        failing.flush()


def test_a_batch_s_tables_are_staged_together_and_the_first_failure_is_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch's tables are staged several at a time (``STAGED_AT_ONCE``; i48-stand8): the
    first two tables' staging wait for each other (a barrier: staged one after the other,
    the first waits in vain and fails); each table's nights in order; the first table's
    failure in the batch's order is the one raised, once every table is done."""
    barrier = threading.Barrier(2, timeout=20)
    staged: list[tuple[str, list[str | None]]] = []

    class Together:
        def stage_nights(self, table: str, frame: pl.DataFrame, nights: list[str | None]) -> None:
            if table in ("a", "b"):
                barrier.wait()
            if table.startswith("bad"):
                raise ValueError(f"table {table}")
            staged.append((table, list(nights)))

    stood = StandingWrites(Together(), lambda name, rows: rows)  # type: ignore[arg-type]
    rows = {t: pl.DataFrame({AS_OF: ["n1"]}) for t in ("a", "b", "c")}
    stood.add("n1", rows)
    stood.add("n2", rows)
    stood.flush()
    assert sorted(staged) == [(t, ["n1", "n2"]) for t in ("a", "b", "c")]

    failing = StandingWrites(Together(), lambda name, rows: rows)  # type: ignore[arg-type]
    failing.add("n3", {t: pl.DataFrame({AS_OF: ["n3"]}) for t in ("bad1", "c", "bad2")})
    with pytest.raises(ValueError, match=r"^table bad1$"):
        failing.flush()
    assert ("c", ["n3"]) in staged
