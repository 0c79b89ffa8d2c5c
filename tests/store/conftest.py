"""Fixtures: a moto S3 server for the session, a fresh bucket per test, outputs local or S3."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.store.location import Location
from tests.s3server import S3Server


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    """A new, empty bucket for this test."""
    return s3_server.create_bucket()


@pytest.fixture(params=["local", "s3"])
def out(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """An output location, once a local folder and once a prefix in a fresh S3 bucket."""
    if request.param == "local":
        return Location.parse(str(tmp_path / "out"))
    server: S3Server = request.getfixturevalue("s3_server")
    name = server.create_bucket()
    return Location.parse(f"s3://{name}/out", server.options)


@pytest.fixture(autouse=True)
def _no_ambient_storage_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's AWS_* variables must not reach these tests (nor real AWS)."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_") or name == "COGSCORE_STORAGE_OPTIONS":
            monkeypatch.delenv(name)
