"""Each flow test runs in a Prefect home of its own (``tests/conftest.py``): a test can never
pass on a cache hit that another test, or an earlier run, left behind."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from prefect.settings import (
    PREFECT_HOME,
    PREFECT_RESULTS_LOCAL_STORAGE_PATH,
    temporary_settings,
)

from flows import prefect_flows
from flows.score import batches
from flows.store.dumps import DumpFile, discover

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def cached_units() -> int:
    """The example dump's cached results: one per file, or per batch of small files
    (``flows.score.batches``), of each night."""
    nights: dict[str | None, list[DumpFile]] = {}
    for dump_file in discover(EXAMPLE_DUMP):
        nights.setdefault(dump_file.partitions.get("dump_date"), []).append(dump_file)
    return sum(len(batches(files)) for files in nights.values())


def stored(home: Path) -> set[str]:
    """The task results (the persisted cache) kept in ``home``."""
    storage = home / "storage"
    return {p.name for p in storage.iterdir()} if storage.exists() else set()


def test_no_cache_hit_crosses_two_test_homes(prefect_home: Path, tmp_path: Path) -> None:
    assert PREFECT_HOME.value() == prefect_home and os.environ["PREFECT_HOME"] == str(prefect_home)
    assert not Path(PREFECT_HOME.value()).is_relative_to(Path.home() / ".prefect")
    prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "a")
    first = stored(prefect_home)
    assert len(first) == cached_units()  # one result per file, or batch of small files
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


def test_a_prefect_run_shows_its_progress_as_progress_artifacts(
    prefect_home: Path, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterType,
    )

    state = prefect_flows.score_flow(
        input_root=EXAMPLE_DUMP, out=tmp_path / "out", return_state=True
    )
    run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]),
                type=ArtifactFilterType(any_=["progress"]),
            )
        )
    nights = {p.parent.name for p in EXAMPLE_DUMP.rglob("*.parquet")}
    assert len(artifacts) == len(nights)  # one per night, each at 100%
    assert all(float(a.data) == 100.0 for a in artifacts)  # type: ignore[arg-type]


def planted(storage: Path, name: str, age: timedelta) -> Path:
    """A file in the result storage, last written ``age`` ago."""
    storage.mkdir(parents=True, exist_ok=True)
    path = storage / name
    path.write_text("{}")
    then = time.time() - age.total_seconds()
    os.utime(path, (then, then))
    return path


def test_cached_results_older_than_the_cache_days_are_deleted_and_nothing_else(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect never deletes a persisted result: a month of nights' results (each twice its
    dump's size) stayed on disk. A run deletes this project's results older than
    COGSCORE_CACHE_DAYS, and nothing else in the result storage."""
    monkeypatch.setattr(prefect_flows, "_pruned", {})  # this process has not pruned yet
    monkeypatch.setenv(prefect_flows.CACHE_DAYS_ENV, "3")
    storage = prefect_home / "storage"
    stale = planted(storage, prefect_flows.CACHE_PREFIX + "stale", timedelta(days=3, hours=1))
    fresh = planted(storage, prefect_flows.CACHE_PREFIX + "fresh", timedelta(days=2))
    foreign = planted(storage, "someone-elses-result", timedelta(days=90))
    prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "a")
    assert not stale.exists()
    assert fresh.exists() and foreign.exists()
    scored = stored(prefect_home) - {fresh.name, foreign.name}
    assert len(scored) == cached_units()


def test_a_process_prunes_the_cache_at_most_once_an_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prefect_flows, "_pruned", {})
    storage = tmp_path / "storage"
    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: storage}):
        first = planted(storage, prefect_flows.CACHE_PREFIX + "a", timedelta(days=5))
        assert prefect_flows.prune_cache(timedelta(days=1)) == [first]
        second = planted(storage, prefect_flows.CACHE_PREFIX + "b", timedelta(days=5))
        assert prefect_flows.prune_cache(timedelta(days=1)) == []  # pruned a moment ago
        later = time.time() + timedelta(hours=1, minutes=1).total_seconds()
        assert prefect_flows.prune_cache(timedelta(days=1), now=later) == [second]


def test_no_result_is_persisted_with_cache_days_zero(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(prefect_flows.CACHE_DAYS_ENV, "0")
    prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "a")
    assert stored(prefect_home) == set()


@pytest.mark.parametrize("text", ["-1", "soon", "nan"])
def test_cache_days_must_be_a_number_of_days(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(prefect_flows.CACHE_DAYS_ENV, text)
    with pytest.raises(ValueError, match=prefect_flows.CACHE_DAYS_ENV):
        prefect_flows.cache_days()


def test_a_bad_cache_days_fails_the_flow_before_any_file_is_scored(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored: list[object] = []
    monkeypatch.setattr(prefect_flows, "score_batch", lambda *a, **k: scored.append(a))
    monkeypatch.setenv(prefect_flows.CACHE_DAYS_ENV, "a week")
    with pytest.raises(ValueError, match="COGSCORE_CACHE_DAYS"):
        prefect_flows.score_flow(input_root=EXAMPLE_DUMP, out=tmp_path / "a")
    assert scored == [] and not (tmp_path / "a").exists()
