"""Test-wide settings and fixtures.

Prefect sends no telemetry, waits long enough for its server, and keeps its state (the
persisted task cache above all) in homes of the tests' own, never in ``~/.prefect``: a test
that passed on a cache hit left by an earlier run would prove nothing.
"""

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.s3server import S3Server, start_s3_server

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
# Before Prefect is imported anywhere: this session's default home (a fixture gives each
# flow test a home of its own on top of it).
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="cogscore-tests-prefect-")
atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)


@pytest.fixture(autouse=True)
def storage_options_stay_in_their_test() -> Iterator[None]:
    """``--storage-option`` (and a flow's ``storage_options``) become the process's
    ``COGSCORE_STORAGE_OPTIONS``: a command is one process, but the tests run commands and
    flows in this one, and one test's options must not reach the next."""
    saved = os.environ.get("COGSCORE_STORAGE_OPTIONS")
    yield
    if saved is None:
        os.environ.pop("COGSCORE_STORAGE_OPTIONS", None)
    else:
        os.environ["COGSCORE_STORAGE_OPTIONS"] = saved


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """One temporary Prefect API server for the session (it takes 15-25 s to start)."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield str(PREFECT_API_URL.value())


@pytest.fixture
def prefect_home(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A Prefect home of this test's own, its result store (the task cache) empty; also
    for the subprocesses the test starts."""
    from prefect.settings import (
        PREFECT_HOME,
        PREFECT_RESULTS_LOCAL_STORAGE_PATH,
        temporary_settings,
    )

    home = tmp_path / "prefect-home"
    home.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv("PREFECT_RESULTS_LOCAL_STORAGE_PATH", str(home / "storage"))
    with temporary_settings(
        updates={PREFECT_HOME: home, PREFECT_RESULTS_LOCAL_STORAGE_PATH: home / "storage"}
    ):
        yield home
    # Prefect's events worker stays connected to the session's API, its websocket pinging
    # with the global ``random`` from a thread of its own: during a later test's Hypothesis
    # draw (HypothesisDeprecationWarning today, an error in a later Hypothesis). Stopped
    # here; the next flow run starts another.
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=10, at_exit=False)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3 API for the session: moto's server in its own process (in-process, it
    hangs some delta-rs calls)."""
    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()
