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

import flows.standings
import flows.standings_between
import transforms.compare
from flows import runs
from tests.flows.test_standing_writes import _dump
from transforms import health

TASKS = {"t1": "associative_learning", "t2": "associative_learning", "t3": "runtime_rl"}
NIGHTS = ["2026-05-01", "2026-05-02", "2026-05-03"]


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
