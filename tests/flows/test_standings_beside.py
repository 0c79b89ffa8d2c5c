"""A run's standings made beside its next night (``flows.standings_beside``, issue 48,
i48-pipeline): each standing on a worker thread while the run scores the next night's files,
in night order, one in flight; its error fails the run with its message and nothing of the
run is committed; a run failing for another reason waits for the standing in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

import flows.job as job_module
from flows import runs
from flows.mappers import Mapper
from flows.standings import NightInput, Standing, Standings
from flows.standings_beside import StandingsBeside
from flows.store.output import Output
from schemas.columns import AS_OF
from schemas.contract import DUMP_DATE
from schemas.tables import TABLES
from tests.flows.test_standing_writes import NIGHTS, _dump

WORKER = "cogscore-standing"


def _before_mapping(monkeypatch: pytest.MonkeyPatch, call: Callable[[set[str]], None]) -> None:
    """``call`` (the nights of the files) each time the run is about to map files."""
    with_progress = job_module.local_mapper_with

    def local_mapper_with(progress: object) -> Mapper:
        mapper = with_progress(progress)  # type: ignore[arg-type]

        def mapped(files, *rest):  # type: ignore[no-untyped-def]
            call({f.partitions[DUMP_DATE] for f in files})
            return mapper(files, *rest)

        return mapped  # type: ignore[return-value]

    monkeypatch.setattr(job_module, "local_mapper_with", local_mapper_with)


def _spy_mapping(monkeypatch: pytest.MonkeyPatch, wait: dict[str, threading.Event]) -> dict:
    """Each night's files, when the run maps them, set ``mapping[night]``; the mapping of a
    night in ``wait`` first waits for that event (10 s at most)."""
    mapping = {night: threading.Event() for night in NIGHTS}

    def spy(nights: set[str]) -> None:
        for night in nights:
            mapping[night].set()
            if night in wait:
                wait[night].wait(10)

    _before_mapping(monkeypatch, spy)
    return mapping


def _no_worker_left() -> bool:
    return not any(t.name.startswith(WORKER) for t in threading.enumerate())


def test_a_score_makes_a_night_s_standing_on_a_worker_while_it_maps_the_next_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standing as of night 1 is made on another thread than the run's, and is still
    being made when the run maps night 2's files; every standing made on that thread, in
    night order, and the run's re-run results kept in night order."""
    mapping = _spy_mapping(monkeypatch, {})
    made: list[tuple[str | None, str, bool]] = []
    of_night = Standings.of_night

    def spy(self: Standings, night: str | None, tonight: NightInput) -> dict:
        # on the run's thread the next night is never mapped while this one is made
        beside = mapping[NIGHTS[1]].wait(10) if night == NIGHTS[0] else True
        made.append((night, threading.current_thread().name, beside))
        return of_night(self, night, tonight)

    monkeypatch.setattr(Standings, "of_night", spy)
    outcome = runs.score(_dump(tmp_path, NIGHTS), tmp_path / "out")

    assert [night for night, _, _ in made] == NIGHTS
    assert all(thread.startswith(WORKER) for _, thread, _ in made), made
    assert made[0][2], "night 2's files were not mapped while night 1's standing was made"
    as_of = outcome.reruns[AS_OF].to_list()
    assert as_of and as_of == sorted(as_of)
    assert _no_worker_left()


def _scored_but_the_last_night(tmp_path: Path) -> Path:
    """A dump of ``NIGHTS`` whose nights but the last ``tmp_path / "out"`` holds (a
    ``score`` of them): the last one is the nightly's new night."""
    dump = _dump(tmp_path, NIGHTS)
    last = dump / f"dump_date={NIGHTS[-1]}"
    held = tmp_path / "held"
    last.rename(held)
    runs.score(dump, tmp_path / "out")
    held.rename(last)
    return dump


def test_a_nightly_reads_the_standing_before_while_it_maps_the_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly's one standing: the standing before it (the output's) is read on the
    worker while the run maps the night's files, not after; the tables as without."""
    dump = _scored_but_the_last_night(tmp_path)

    read = threading.Event()
    read_on: list[str] = []
    previous = Standings.previous

    def spy(self: Standings, night: str | None) -> Standing | None:
        read_on.append(threading.current_thread().name)
        standing = previous(self, night)
        read.set()
        return standing

    monkeypatch.setattr(Standings, "previous", spy)
    mapping = _spy_mapping(monkeypatch, {NIGHTS[-1]: read})
    outcome = runs.nightly(dump, tmp_path / "out")

    assert mapping[NIGHTS[-1]].is_set() and outcome.nights_scored == [NIGHTS[-1]]
    assert read_on and read_on[0].startswith(WORKER)
    standings = pl.read_delta(str(tmp_path / "out" / "standings"))
    assert NIGHTS[-1] in standings[AS_OF].to_list()
    assert _no_worker_left()


def test_a_nightly_starts_its_standing_before_the_night_s_regressions_and_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly's one standing has no next night to hide behind: it starts from the
    night's own tables, beside the night's regressions and staging (the worker is free),
    not after them; the standing's tables as without."""
    dump = _scored_but_the_last_night(tmp_path)

    started = threading.Event()
    beside: list[bool] = []
    of_night, regressions = Standings.of_night, job_module.NightWatch.regressions

    def standing(self: Standings, night: str | None, tonight: NightInput) -> dict:
        started.set()
        return of_night(self, night, tonight)

    def night_s_regressions(self: object, *args: object, **kwargs: object) -> pl.DataFrame:
        beside.append(started.wait(10))  # on the old order: never, until the wait ends
        return regressions(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Standings, "of_night", standing)
    monkeypatch.setattr(job_module.NightWatch, "regressions", night_s_regressions)
    outcome = runs.nightly(dump, tmp_path / "out")

    assert outcome.nights_scored == [NIGHTS[-1]]
    assert beside == [True], "the standing started after the night's regressions"
    standings = pl.read_delta(str(tmp_path / "out" / "standings"))
    assert NIGHTS[-1] in standings[AS_OF].to_list()
    assert _no_worker_left()


def test_a_standing_failing_on_the_worker_fails_the_run_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A standing that fails on the worker fails the run with its error (raised at the next
    night's standing); no table of ``OUT`` moves and the worker is ended."""
    dump = _dump(tmp_path, NIGHTS)
    out = tmp_path / "out"
    runs.score(dump, out)
    before = {name: DeltaTable(str(out / name)).version() for name in TABLES}

    failed_on: list[str] = []
    of_night = Standings.of_night

    def failing(self: Standings, night: str | None, tonight: NightInput) -> dict:
        if night == NIGHTS[2]:
            failed_on.append(threading.current_thread().name)
            raise ValueError(f"the standing as of {night} cannot be made")
        return of_night(self, night, tonight)

    monkeypatch.setattr(Standings, "of_night", failing)
    with pytest.raises(ValueError, match=f"standing as of {NIGHTS[2]} cannot be made"):
        runs.score(dump, out)

    assert failed_on and failed_on[0].startswith(WORKER)
    assert {name: DeltaTable(str(out / name)).version() for name in TABLES} == before
    assert Output.at(out).runs()["status"].to_list()[-1] == "failed"
    assert _no_worker_left()


def test_a_run_failing_on_its_thread_waits_for_the_standing_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Night 3's files failing to map while night 2's standing is made: the run fails with
    its own error, after the standing in flight is done (waited for, not left running
    while the failure is recorded); nothing committed."""
    let_through = threading.Event()
    done: list[str | None] = []
    of_night = Standings.of_night

    def slow(self: Standings, night: str | None, tonight: NightInput) -> dict:
        if night == NIGHTS[1]:
            let_through.wait(10)
        tables = of_night(self, night, tonight)
        done.append(night)
        return tables

    def unreadable(nights: set[str]) -> None:
        if nights == {NIGHTS[2]}:
            let_through.set()
            raise RuntimeError("the files of night 3 are unreadable")

    recorded_after: list[list[str | None]] = []
    record_failure = job_module.record_failure

    def record(output: object, rows: object) -> None:
        recorded_after.append(list(done))
        record_failure(output, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(Standings, "of_night", slow)
    _before_mapping(monkeypatch, unreadable)
    monkeypatch.setattr(job_module, "record_failure", record)
    with pytest.raises(RuntimeError, match="night 3 are unreadable"):
        runs.score(_dump(tmp_path, NIGHTS), tmp_path / "out")

    assert recorded_after == [NIGHTS[:2]]  # night 2's standing was done before
    assert (
        not (tmp_path / "out" / "standings").exists()
        or not pl.read_delta(str(tmp_path / "out" / "standings")).height
    )
    assert _no_worker_left()


def _tonight(night: str) -> NightInput:
    return NightInput(night, pl.DataFrame({"night": [night]}))


def test_one_standing_in_flight_made_in_order_its_error_at_the_next_submit_or_flush() -> None:
    through = threading.Event()
    made_on: list[str] = []

    def make(night: str | None, tonight: NightInput) -> dict[str, pl.DataFrame]:
        through.wait(10)
        made_on.append(threading.current_thread().name)
        if night == "bad":
            raise ValueError(f"standing {night}")
        return {"t": tonight.tasks}

    done: list[str | None] = []
    beside = StandingsBeside(make, lambda night, tables: done.append(night))
    beside.submit("a", _tonight("a"))
    assert done == []  # made on the worker: the run goes on
    through.set()
    beside.submit("b", _tonight("b"))  # waits for a's, hands it on here
    assert done == ["a"]
    beside.flush()
    assert done == ["a", "b"] and all(t.startswith(WORKER) for t in made_on)
    assert _no_worker_left()

    at_submit = StandingsBeside(make, lambda night, tables: done.append(night))
    at_submit.submit("bad", _tonight("bad"))
    with pytest.raises(ValueError, match="standing bad"):
        at_submit.submit("c", _tonight("c"))
    at_submit.close()

    at_flush = StandingsBeside(make, lambda night, tables: done.append(night))
    at_flush.submit("bad", _tonight("bad"))
    with pytest.raises(ValueError, match="standing bad"):
        at_flush.flush()

    closed = StandingsBeside(make, lambda night, tables: done.append(night))
    closed.submit("bad", _tonight("bad"))
    closed.close()  # waited for, its error left to the failing run's own
    assert done == ["a", "b"] and _no_worker_left()
