"""benchmarks.standing_cpu: the standings kept are those asked for, made again alike from
their copies, and the parts timed are told per call and restored after."""

import copy
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from benchmarks.standing_cpu import Inline, captured, replay, timed_parts
from benchmarks.standings import build


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> list:
    root: Path = tmp_path_factory.mktemp("standing-cpu")
    build(root, 4, 3, 1, 2)
    return captured(root / "dump", root / "out", first=2, count=2)


def test_the_standings_asked_for_are_kept(kept: list) -> None:
    from flows import standings

    assert [night for _, night, _ in kept] == ["2026-01-02", "2026-01-03"]  # 2nd, 3rd of 4
    assert standings.Standings.of_night.__qualname__ == "Standings.of_night"  # restored


def test_a_standing_made_again_from_its_copy_is_the_same(kept: list) -> None:
    start, night, tonight = kept[0]
    first = copy.deepcopy(start).of_night(night, copy.deepcopy(tonight))
    second = copy.deepcopy(start).of_night(night, copy.deepcopy(tonight))
    assert first.keys() == second.keys()
    for name, frame in first.items():  # (in any order: the writer sorts a table's rows)
        assert_frame_equal(frame, second[name], check_row_order=False, check_exact=True)


def test_parts_are_timed_per_call_and_restored(kept: list) -> None:
    from flows import standings

    before = (standings.Standings.of_night, standings.ThreadPoolExecutor)
    with timed_parts(["flows.standings:Standings.of_night"]) as found:
        assert standings.ThreadPoolExecutor is Inline
        replay(kept)
    calls, _ = found["flows.standings:Standings.of_night"]
    assert calls == len(kept)  # (its seconds: whatever the machine takes)
    assert (standings.Standings.of_night, standings.ThreadPoolExecutor) == before
