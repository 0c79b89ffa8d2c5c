"""Each flow test runs in a Prefect home of its own (``tests/conftest.py``): a test can never
pass on a cache hit that another test, or an earlier run, left behind."""

from __future__ import annotations

import os
from pathlib import Path

from prefect.settings import (
    PREFECT_HOME,
    PREFECT_RESULTS_LOCAL_STORAGE_PATH,
    temporary_settings,
)

from flows import prefect_flows

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def stored(home: Path) -> set[str]:
    """The task results (the persisted cache) kept in ``home``."""
    storage = home / "storage"
    return {p.name for p in storage.iterdir()} if storage.exists() else set()


def test_no_cache_hit_crosses_two_test_homes(prefect_home: Path, tmp_path: Path) -> None:
    assert PREFECT_HOME.value() == prefect_home and os.environ["PREFECT_HOME"] == str(prefect_home)
    assert not Path(PREFECT_HOME.value()).is_relative_to(Path.home() / ".prefect")
    prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "a")
    first = stored(prefect_home)
    assert len(first) == len(list(EXAMPLE_DUMP.rglob("*.parquet")))  # one result per file
    prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "b")
    assert stored(prefect_home) == first  # the same home: the cache answers, nothing new

    other = tmp_path / "other-home"
    with temporary_settings(
        updates={PREFECT_HOME: other, PREFECT_RESULTS_LOCAL_STORAGE_PATH: other / "storage"}
    ):
        prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "c")
    # Another home scored every file itself: its own results, none read from the first.
    assert stored(other) == first
    assert stored(prefect_home) == first
