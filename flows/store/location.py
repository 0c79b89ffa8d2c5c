"""Where a dump or an output lives: a local folder or an object-store URL, plus its options.

Every storage library used here (delta-rs, polars, obstore) takes "a URI plus
`storage_options`", so a `Location` is exactly that pair. The options can hold secrets, so they
never appear in `repr`, `str` or `display`, and `redact` masks them in anything printed.

Options come, lowest precedence first, from:

1. defaults: short timeouts (`connect_timeout` 5 s, at most 3 retries within 30 s), so an
   unreachable endpoint fails in seconds instead of retrying for object_store's 3 minutes;
2. the standard AWS environment (`AWS_ENDPOINT_URL`, `AWS_REGION` / `AWS_DEFAULT_REGION`,
   `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_PROFILE`,
   `AWS_ALLOW_HTTP`), for `s3://` locations only;
3. `COGSCORE_STORAGE_OPTIONS`: `KEY=VALUE,KEY=VALUE` (the syntax of `--storage-option`, so a
   value cannot hold a comma: pass such a value with `--storage-option` or its AWS_* variable);
4. the location's own options (`--storage-option KEY=VALUE`, repeated).

Keys are the ones delta-rs and polars document (`aws_endpoint_url`, `aws_region`, `timeout`,
`connect_timeout`, `max_retries`, `retry_timeout`, ...), case-insensitive, stored lower-case.
An `http://` endpoint implies `aws_allow_http=true` (asking for it is the consent). Local folders
get no options. Google (`GOOGLE_*`) and Azure (`AZURE_*`) variables are read by delta-rs
itself; for obstore pass them as options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final
from urllib.parse import urlsplit

from flows.store.errors import BadLocation, StorageError

# Object stores delta-rs and obstore both support (abfs[s] and az are Azure's two spellings).
OBJECT_SCHEMES: Final = frozenset({"s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss"})
ENV_OPTIONS: Final = "COGSCORE_STORAGE_OPTIONS"

DEFAULT_OPTIONS: Final[Mapping[str, str]] = {
    # object_store retries connection errors up to 10 times within 3 minutes by default; a
    # wrong endpoint should fail while the person is still watching.
    "connect_timeout": "5s",
    "max_retries": "3",
    "retry_timeout": "30s",
}

_AWS_ENV: Final[tuple[tuple[str, str], ...]] = (
    ("AWS_ENDPOINT_URL", "aws_endpoint_url"),
    ("AWS_DEFAULT_REGION", "aws_region"),  # AWS_REGION, below, wins over it
    ("AWS_REGION", "aws_region"),
    ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
    ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
    ("AWS_SESSION_TOKEN", "aws_session_token"),
    ("AWS_PROFILE", "aws_profile"),
    ("AWS_ALLOW_HTTP", "aws_allow_http"),
)
_SECRET_WORDS: Final = ("secret", "token", "password", "key", "sas", "credential", "signature")
_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/")
_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?\s*$")


@dataclass(frozen=True)
class Location:
    """A local folder (absolute path) or an object-store URL, and its storage options.

    Two locations are equal when their URIs are; the options take no part in equality, `repr`
    or `str`, so that a credential never ends up in a log line or an assertion message.

    >>> out = Location.parse("s3://bucket/out", {"aws_secret_access_key": "hush"})
    >>> out, str(out.child("episode_scores"))
    (Location('s3://bucket/out'), 's3://bucket/out/episode_scores')
    """

    uri: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"Location({self.display!r})"

    def __str__(self) -> str:
        return self.display

    @property
    def scheme(self) -> str:
        """`file` for a local folder, else the URL's scheme (`s3`, `gs`, ...)."""
        return "file" if self.is_local else self.uri.split("://", 1)[0].lower()

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri

    @property
    def display(self) -> str:
        """The URI without any `user:password@` part: safe to print.

        >>> Location("s3://key:secret@bucket/out").display
        's3://bucket/out'
        """
        if self.is_local:
            return self.uri
        parts = urlsplit(self.uri)
        host = parts.netloc.rsplit("@", 1)[-1]
        return f"{parts.scheme}://{host}{parts.path}"

    def file_in_the_way(self) -> str | None:
        """Where a local location cannot be a folder: it, or the nearest path above it that
        exists, is a file (None where it is or can be a folder, and for a URL: its store
        answers for it).

        >>> Location.parse(f"{os.__file__}/out").file_in_the_way() == os.__file__
        True
        >>> Location.parse(os.path.dirname(os.__file__)).file_in_the_way() is None
        True
        """
        if not self.is_local:
            return None
        path = self.uri
        while not os.path.exists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        return None if os.path.isdir(path) else path

    def child(self, name: str) -> Location:
        """The location `name` (a relative path, `/`-separated) below this one.

        >>> Location("/data/out").child("runs").uri
        '/data/out/runs'
        """
        parts = name.split("/")
        if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise StorageError(f"invalid name {name!r} below {self.display}")
        return Location(f"{self.uri.rstrip('/')}/{name}", self.options)

    @classmethod
    def parse(cls, text: str, options: Mapping[str, str] | None = None) -> Location:
        """A location from a command-line argument: a path (made absolute) or a URL.

        >>> Location.parse("s3://bucket/out/").uri
        's3://bucket/out'
        >>> Location.parse("ftp://host/x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        flows.store.errors.BadLocation: unsupported URL ftp://host/x: use a local path, ...
        """
        opts = {k.lower(): v for k, v in (options or {}).items()}
        match = _SCHEME.match(text)
        if match is None:
            if not text:
                raise BadLocation("empty location")
            return cls(os.path.abspath(os.path.expanduser(text)), opts)
        scheme = match.group(1).lower()
        safe = Location(text).display if "://" in text else text
        if scheme == "file":
            if not text.startswith("file:///"):
                raise BadLocation(f"malformed URL {safe}: expected file:///absolute/path")
            return cls(os.path.abspath(text[len("file://") :]), opts)
        if scheme not in OBJECT_SCHEMES:
            raise BadLocation(
                f"unsupported URL {safe}: use a local path, s3://, gs://, az:// or abfs://"
            )
        if not text.lower().startswith(f"{scheme}://"):
            raise BadLocation(f"malformed URL {safe}: expected {scheme}://bucket/prefix")
        if not urlsplit(text).netloc.rsplit("@", 1)[-1]:
            raise BadLocation(f"URL {safe} names no bucket: expected {scheme}://bucket/prefix")
        return cls(text.rstrip("/"), opts)


def duration(text: str) -> timedelta:
    """A timeout option's value: `30s`, `500ms`, `2min`, `1h` or a number of seconds.

    >>> duration("500ms"), duration("2min")
    (datetime.timedelta(microseconds=500000), datetime.timedelta(seconds=120))
    """
    match = _DURATION.match(text)
    if match is None:
        raise BadLocation(f"not a duration: {text!r} (expected e.g. 30s, 500ms, 2min)")
    value, unit = float(match.group(1)), match.group(2) or "s"
    scale = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[unit]
    return timedelta(seconds=value * scale)


def parse_storage_options(pairs: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` strings (from `--storage-option`, repeated) as a dict with lower-case keys.

    >>> parse_storage_options(["AWS_REGION=eu-west-1", "timeout=30s"])
    {'aws_region': 'eu-west-1', 'timeout': '30s'}
    """
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            # Not the value: it may be a secret typed without its key.
            raise BadLocation("a storage option must be KEY=VALUE (got an entry without '=')")
        options[key] = value.strip()
    return options


def _env_options(location: Location, env: Mapping[str, str]) -> dict[str, str]:
    options: dict[str, str] = {}
    if location.scheme in ("s3", "s3a"):
        for variable, key in _AWS_ENV:
            if env.get(variable):
                options[key] = env[variable]
    extra = env.get(ENV_OPTIONS, "").strip()
    if extra:
        options.update(parse_storage_options(p for p in extra.split(",") if p.strip()))
    return options


def storage_options(location: Location, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective options of `location`: defaults < environment < its own options.

    >>> opts = storage_options(Location.parse("s3://b/o", {"aws_endpoint_url": "http://h:9"}),
    ...                        env={"AWS_REGION": "us-east-1"})
    >>> opts["aws_region"], opts["aws_allow_http"], opts["connect_timeout"]
    ('us-east-1', 'true', '5s')
    >>> storage_options(Location.parse("/tmp/out"), env={"AWS_REGION": "x"})
    {}
    """
    if location.is_local:
        return {k.lower(): v for k, v in location.options.items()}
    merged = dict(DEFAULT_OPTIONS)
    merged.update(_env_options(location, os.environ if env is None else env))
    merged.update({k.lower(): v for k, v in location.options.items()})
    endpoint = merged.get("aws_endpoint_url") or merged.get("aws_endpoint", "")
    if endpoint.startswith("http://"):
        merged.setdefault("aws_allow_http", "true")
    return merged


def polars_options(options: Mapping[str, str]) -> dict[str, Any] | None:
    """`options` as polars' readers take them (None when empty).

    polars reads `max_retries` itself and insists on an int (a string raises "expected int");
    its own retry deadline is `retry_timeout_ms`. `retry_timeout` stays for delta-rs, which
    polars' `scan_delta` calls to read the log.

    >>> polars_options({"max_retries": "3", "retry_timeout": "30s", "aws_region": "x"})
    {'max_retries': 3, 'retry_timeout': '30s', 'aws_region': 'x', 'retry_timeout_ms': 30000}
    """
    if not options:
        return None
    converted: dict[str, Any] = dict(options)
    if "max_retries" in converted:
        converted["max_retries"] = int(converted["max_retries"])
    if "retry_timeout" in converted and "retry_timeout_ms" not in converted:
        seconds = duration(converted["retry_timeout"]).total_seconds()
        converted["retry_timeout_ms"] = int(seconds * 1000)
    return converted


def redact(options: Mapping[str, str]) -> dict[str, str]:
    """`options` fit to print: values of keys that look secret are masked.

    >>> redact({"aws_secret_access_key": "x", "aws_region": "eu-west-1"})
    {'aws_secret_access_key': '***', 'aws_region': 'eu-west-1'}
    """
    return {
        key: "***" if any(word in key.lower() for word in _SECRET_WORDS) else value
        for key, value in options.items()
    }
