"""The moto server honours the conditional writes the lease and delta-rs rely on."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


def test_moto_refuses_a_second_create_and_a_stale_update(s3_server, bucket):
    client = s3_server.client()
    first = client.put_object(Bucket=bucket, Key="k", Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=bucket, Key="k", Body=b"2", IfNoneMatch="*")
    client.put_object(Bucket=bucket, Key="k", Body=b"3", IfMatch=first["ETag"])
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=bucket, Key="k", Body=b"4", IfMatch=first["ETag"])
    assert client.get_object(Bucket=bucket, Key="k")["Body"].read() == b"3"
