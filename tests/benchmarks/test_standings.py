"""benchmarks.standings: the nightly measured as many times as asked (its ratio moves with
the machine: more runs than the scores'), on and off in turn, and each ratio of the medians."""

from __future__ import annotations

import statistics
from itertools import count
from pathlib import Path

import pytest

from benchmarks import standings


def test_the_nightly_runs_nightly_repeat_times_and_each_ratio_is_of_the_medians(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(root: Path, *_: int) -> Path:
        night = root / "new-dump" / "dump_date=2026-01-03"
        night.mkdir(parents=True)
        return night

    seconds = count(1)
    calls: list[tuple[str, bool]] = []

    def timed(args: list[str], off: bool) -> tuple[float, float]:
        calls.append((args[0], off))
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)  # a score's output, copied for the nightly
        return float(next(seconds)), 100.0

    monkeypatch.setattr(standings, "build", build)
    monkeypatch.setattr(standings, "timed", timed)
    found = standings.measure(2, 2, 1, 2, repeat=2, nightly_repeat=5)
    assert (
        calls
        == [("score", False), ("score", True)] * 2 + [("nightly", False), ("nightly", True)] * 5
    )
    nightly_on = found["nightly of night 3, standings on"]["seconds"]
    nightly_off = found["nightly of night 3, standings off"]["seconds"]
    assert len(nightly_on) == len(nightly_off) == 5
    assert standings.ratios(found) == {
        "score 2 nights": round(
            found["score 2 nights, standings on"]["median_s"]
            / found["score 2 nights, standings off"]["median_s"],
            3,
        ),
        "nightly of night 3": round(
            statistics.median(nightly_on) / statistics.median(nightly_off), 3
        ),
    }
