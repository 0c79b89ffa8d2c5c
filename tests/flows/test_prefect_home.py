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
