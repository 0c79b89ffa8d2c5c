"""Locations: parsing, display without secrets, options from env, flags and defaults."""

from __future__ import annotations

import os

import pytest

from flows.store.errors import StorageError
from flows.store.location import Location, parse_storage_options, redact, storage_options

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"


def test_relative_local_path_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    location = Location.parse("out/../results")
    assert location.uri == str(tmp_path / "results")
    assert location.is_local and os.path.isabs(location.uri)
    assert Location.parse("file:///data/out").uri == "/data/out"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("ftp://host/dump", "ftp://host/dump"),
        ("s3:/bucket/x", "s3:/bucket/x"),
        ("s3://", "s3://"),
        ("s3:///prefix", "s3:///prefix"),
        ("http://host/x", "http://host/x"),
        ("file://relative", "file://relative"),
    ],
)
def test_unknown_or_malformed_urls_are_refused_naming_the_url(text, names):
    with pytest.raises(StorageError) as caught:
        Location.parse(text)
    assert names in str(caught.value)
    assert "\n" not in str(caught.value)


def test_object_store_urls():
    for text in ("s3://b/p", "gs://b/p", "az://c/p", "abfss://c@acct.dfs.core.windows.net/p"):
        location = Location.parse(text + "/")
        assert not location.is_local and location.uri == text
    assert Location.parse("S3://b/p").scheme == "s3"


def test_secrets_never_in_repr_str_or_display():
    location = Location.parse(
        f"s3://AKIDEXAMPLE:{SECRET}@bucket/out", {"aws_secret_access_key": SECRET}
    )
    for shown in (repr(location), str(location), location.display, repr(location.child("t"))):
        assert SECRET not in shown
        assert "AKIDEXAMPLE" not in shown
    assert location.display == "s3://bucket/out"
    assert SECRET not in str(redact(storage_options(location)))
    # equality ignores options (and so never prints them in an assertion diff)
    assert location == Location(location.uri)


def test_child_refuses_escaping_names():
    out = Location.parse("/data/out")
    for bad in ("../x", "/abs", "a//b", "", "a/./b"):
        with pytest.raises(StorageError):
            out.child(bad)


def test_options_precedence_defaults_env_variable_flags():
    env = {
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "ignored",
        "AWS_ACCESS_KEY_ID": "from-env",
        "COGSCORE_STORAGE_OPTIONS": "aws_access_key_id=from-variable,TIMEOUT=7s",
    }
    flags = parse_storage_options(["AWS_ACCESS_KEY_ID=from-flag", "connect_timeout=1s"])
    options = storage_options(Location.parse("s3://b/o", flags), env=env)
    assert options["aws_region"] == "eu-west-1"
    assert options["aws_access_key_id"] == "from-flag"
    assert options["timeout"] == "7s"
    assert options["connect_timeout"] == "1s"
    assert options["retry_timeout"] == "30s"  # a default
    assert "aws_allow_http" not in options  # no http endpoint, no consent implied
    assert (
        storage_options(Location.parse("s3://b/o"), env={"AWS_DEFAULT_REGION": "x"})["aws_region"]
        == "x"
    )


def test_aws_variables_are_not_given_to_other_stores():
    options = storage_options(Location.parse("gs://b/o"), env={"AWS_ACCESS_KEY_ID": "k"})
    assert "aws_access_key_id" not in options


def test_storage_option_without_equals_is_refused_without_echoing_it():
    with pytest.raises(StorageError) as caught:
        parse_storage_options([SECRET])
    assert SECRET not in str(caught.value)


def test_an_http_endpoint_implies_allow_http():
    local_server = Location.parse("s3://b/o", {"aws_endpoint_url": "http://127.0.0.1:9000"})
    assert storage_options(local_server, env={})["aws_allow_http"] == "true"
    tls = Location.parse("s3://b/o", {"aws_endpoint_url": "https://minio.example:9000"})
    assert "aws_allow_http" not in storage_options(tls, env={})
