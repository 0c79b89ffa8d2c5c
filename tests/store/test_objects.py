"""Objects: listing, conditional writes and errors, on a local folder and on moto S3."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import pytest

from flows.store import objects
from flows.store.errors import StorageError
from flows.store.location import Location
from tests.s3server import free_port


def _put(out: Location, key: str, data: bytes) -> None:
    assert objects.put_if_absent(out, key, data) is not None


def test_listing_skips_hidden_and_underscore_names(out):
    for key in (
        "dump_date=2026-12-01/part-0.parquet",
        "dump_date=2026-12-01/part-1.parquet",
        "dump_date=2026-12-02/part-0.parquet",
        "dump_date=2026-12-02/notes.txt",
        "_delta_log/0.parquet",
        ".hidden/x.parquet",
        "dump_date=2026-12-02/_SUCCESS.parquet",
    ):
        _put(out, key, b"x" * 3)
    listed = objects.list_files(out)
    assert [f.relative for f in listed] == [
        "dump_date=2026-12-01/part-0.parquet",
        "dump_date=2026-12-01/part-1.parquet",
        "dump_date=2026-12-02/part-0.parquet",
    ]
    assert {f.size for f in listed} == {3}
    assert all(f.version and f.modified.tzinfo == UTC for f in listed)
    assert abs((listed[0].modified - datetime.now(UTC)).total_seconds()) < 120
    assert len(objects.list_files(out, suffix=None)) == 4


def test_version_changes_when_content_changes(out):
    _put(out, "a.parquet", b"one")
    before = objects.list_files(out)[0].version
    time.sleep(0.01)
    objects.delete(out, "a.parquet")
    _put(out, "a.parquet", b"two")
    assert objects.list_files(out)[0].version != before


def test_put_if_absent_creates_once(out):
    first = objects.put_if_absent(out, "k/lease.json", b"1")
    assert first
    assert objects.put_if_absent(out, "k/lease.json", b"2") is None
    stored = objects.get_object(out, "k/lease.json")
    assert stored is not None and stored.data == b"1" and stored.etag == first


def test_put_if_match_updates_only_the_named_version(out):
    etag = objects.put_if_absent(out, "lease.json", b"1")
    assert etag is not None
    newer = objects.put_if_match(out, "lease.json", b"2", etag)
    assert newer is not None and newer != etag
    assert objects.put_if_match(out, "lease.json", b"3", etag) is None  # stale version
    assert objects.get_bytes(out, "lease.json") == b"2"
    objects.delete(out, "lease.json")
    assert objects.put_if_match(out, "lease.json", b"4", newer) is None  # gone
    assert objects.get_object(out, "lease.json") is None
    objects.delete(out, "lease.json")  # deleting nothing is fine


def test_missing_object_is_an_error_naming_it(out):
    with pytest.raises(StorageError, match=r"cannot read .*/nothing\.json: not found"):
        objects.get_bytes(out, "nothing.json")


def test_missing_folder_or_prefix_is_an_error(out):
    with pytest.raises(StorageError) as caught:
        objects.list_files(out.child("no-such-dump"))
    assert "no-such-dump" in str(caught.value)


def test_unreachable_endpoint_fails_fast_with_one_line():
    port = free_port()  # nothing listens there
    location = Location.parse(
        "s3://bucket/dump",
        {
            "aws_endpoint_url": f"http://127.0.0.1:{port}",
            "aws_region": "us-east-1",
            "aws_access_key_id": "k",
            "aws_secret_access_key": "s",
        },
    )
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        objects.list_files(location)
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert message == "cannot list s3://bucket/dump: the endpoint is unreachable"


def test_missing_bucket(s3_server):
    location = Location.parse("s3://no-such-bucket-here/dump", s3_server.options)
    with pytest.raises(StorageError) as caught:
        objects.list_files(location)
    assert str(caught.value) == (
        "cannot list s3://no-such-bucket-here/dump: the bucket does not exist"
    )
    with pytest.raises(StorageError, match="bucket does not exist"):
        objects.put_if_absent(location, "x", b"1")


def test_wrong_credentials(s3_server, bucket):
    location = Location.parse(
        f"s3://{bucket}/dump", {**s3_server.options, "aws_access_key_id": "not-a-key"}
    )
    with s3_server.authentication(), pytest.raises(StorageError) as caught:
        objects.list_files(location)
    assert str(caught.value).startswith(f"cannot list s3://{bucket}/dump: the credentials")
    assert "not-a-key" not in str(caught.value)


def test_permission_denied_on_a_local_folder(tmp_path, monkeypatch):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    if os.geteuid() == 0:  # root writes anyway: make the OS refuse as it would anyone else

        def refuse(*args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(objects.os, "makedirs", refuse)
    try:
        with pytest.raises(StorageError, match=r"cannot write .*locked/x: permission denied"):
            objects.put_if_absent(Location.parse(str(folder)), "x", b"1")
    finally:
        folder.chmod(0o700)


def test_a_hung_endpoint_fails_within_the_timeouts_given():
    """A server that accepts connections and never answers: our options reach the client."""
    import socket

    from flows.store.delta.tables import table_version

    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        location = Location.parse(
            "s3://bucket/out",
            {
                "aws_endpoint_url": f"http://127.0.0.1:{hung.getsockname()[1]}",
                "aws_region": "us-east-1",
                "aws_access_key_id": "k",
                "aws_secret_access_key": "s",
                "timeout": "1s",
                "max_retries": "1",
                "retry_timeout": "2s",
            },
        )
        for attempt in (
            lambda: objects.list_files(location),
            lambda: table_version(location, "t"),
        ):
            started = time.monotonic()
            with pytest.raises(StorageError, match="the endpoint is unreachable"):
                attempt()
            assert time.monotonic() - started < 8  # object_store's defaults: 30 s and more
