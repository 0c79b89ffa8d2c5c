"""What a standing's worker makes aside (``flows.standings_aside``, issue 48, i48-stand8):
the parts of a standing that need its task rows and episodes alone (the tasks' health, the
hypotheses, the re-runs tested) are made on a second thread while the statistics above the
tasks are made."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.lazyframe import engine

import flows.standings
import flows.standings_between
import transforms.compare
from flows import runs
from flows.options import read_hypotheses
from flows.standings_aside import of_categories, of_tasks
from tests.flows.test_standing_writes import _dump
from tests.transforms.test_health import _published_cells
from transforms import health

TASKS = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}
NIGHTS = ["2026-05-01", "2026-05-02", "2026-05-03"]
ROOT = Path(__file__).parents[2]


def test_the_tasks_health_and_the_reruns_tested_are_made_while_the_statistics_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statistics above the tasks wait for the tasks' health and the re-runs' test to
    have begun (made one after the other, after the statistics, they never begin: the wait
    fails), on another thread than the statistics'."""
    begun = {"health": threading.Event(), "tested": threading.Event()}
    threads: dict[str, set[str]] = {"health": set(), "tested": set(), "statistics": set()}
    stability, tested = health.stability, transforms.compare.regressions

    def stability_spy(tasks: pl.LazyFrame) -> pl.LazyFrame:
        threads["health"].add(threading.current_thread().name)
        begun["health"].set()
        return stability(tasks)

    def regressions_spy(*args: Any, **kwargs: Any) -> pl.DataFrame:
        threads["tested"].add(threading.current_thread().name)
        begun["tested"].set()
        return tested(*args, **kwargs)

    statistics = flows.standings.statistics_above
    overlapped: list[bool] = []

    def statistics_spy(*args: Any, **kwargs: Any) -> Any:
        threads["statistics"].add(threading.current_thread().name)
        overlapped.append(all(event.wait(10) for event in begun.values()))
        for event in begun.values():
            event.clear()
        return statistics(*args, **kwargs)

    monkeypatch.setattr(health, "stability", stability_spy)
    monkeypatch.setattr(flows.standings, "statistics_above", statistics_spy)
    for module in (flows.standings, flows.standings_between):  # (where each run calls it)
        monkeypatch.setattr(module, "regressions", regressions_spy, raising=False)
    runs.score(_dump(tmp_path, NIGHTS), tmp_path / "out")
    assert len(overlapped) == 2 and all(overlapped), overlapped  # nights 2 and 3
    assert not threads["statistics"] & (threads["health"] | threads["tested"])


def test_a_standings_health_and_hypotheses_run_on_the_in_memory_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A standing's health and hypotheses are made from its cells (LearningBench's published
    table: 14 models x 135 tasks, and the authors' hypotheses): every query on the in-memory
    engine, none on polars 2's default (``auto``: the streaming engine, about 0.7 ms more to
    set up each; issue 48, round thirteen: the health tables 40 -> 9 ms in a nightly)."""
    engines: list[str] = []
    for name in ("collect", "collect_all"):
        original = getattr(engine._LocalEngine, name)

        def spied(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            engines.append(self.name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(engine._LocalEngine, name, spied)
    cells = _published_cells()
    planned = read_hypotheses(
        Path(__file__).parents[2] / "examples" / "learningbench-hypotheses.toml"
    )
    tables = of_tasks(cells, planned, 0.95)
    categories = cells.group_by("as_of", "model", "category").agg(pl.col("score").mean())
    tables |= of_categories(categories)
    assert tables["stability"].height and tables["hypotheses"].height
    assert engines and set(engines) == {"in-memory"}
