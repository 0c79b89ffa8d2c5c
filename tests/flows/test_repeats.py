"""A night's episode ids checked against the run's other nights (``flows.repeats``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import polars as pl
import pytest

from flows.repeats import SeenIds


def _night(day: int) -> str:
    return f"2026-03-{day:02}"


def _ids(day: int, count: int = 5) -> pl.Series:
    return pl.Series([f"{_night(day)}/e{k}" for k in range(count)])


def _seen(nights: int) -> SeenIds:
    seen = SeenIds(None)
    for day in range(1, nights + 1):
        seen.add(_night(day), _ids(day))
    return seen


def test_a_night_names_every_new_night_it_repeats_and_how_many() -> None:
    """Each earlier night of the run that scored some of the night's ids, with their
    count; the night's own ids and the nights it does not repeat are not named."""
    seen = _seen(6)
    tonight = pl.concat([_ids(2)[:3], _ids(5)[:1], pl.Series(["new/e1", "new/e2"])])
    assert seen.repeats(_night(7), tonight) == {_night(2): 3, _night(5): 1}
    assert seen.repeats(_night(7), pl.Series(["new/e1"])) == {}
    # A night checked again against itself (delivered twice in one run) is not its own copy.
    assert seen.repeats(_night(3), _ids(3)) == {}


def _queries(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the joins and collects polars is asked for."""
    counted: Counter[str] = Counter()

    def counting(name: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            counted[name] += 1
            return real(*args, **kwargs)

        return call

    for owner, name in ((pl.DataFrame, "join"), (pl.LazyFrame, "collect")):
        monkeypatch.setattr(owner, name, counting(name, getattr(owner, name)))
    return counted


def test_a_night_is_checked_against_the_nights_before_in_as_many_queries_however_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 48: a rescore of history checks each night against every night it scored
    before; one join per night before made N nights cost N²/2 queries (28,920 in a rescore
    of 240 nights). However many nights came before, a night costs the same queries."""
    few, many = _seen(3), _seen(40)
    counted = _queries(monkeypatch)
    assert few.repeats(_night(41), _ids(2)[:2]) == {_night(2): 2}
    after_few = sum(counted.values())
    counted.clear()
    assert many.repeats(_night(41), _ids(2)[:2]) == {_night(2): 2}
    assert sum(counted.values()) == after_few
