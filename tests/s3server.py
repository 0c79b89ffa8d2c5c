"""A local S3 server for tests: moto in its own process.

Its own process because moto's in-process `ThreadedMotoServer` shares the GIL with the test,
and delta-rs calls (`DeltaTable.history()`, `is_deltatable()`) then hang until the object
store's timeout (lake notes). werkzeug's request log is silenced: a line per request costs time
and buries failures. moto honours `If-None-Match: *` and `If-Match` on PUT (checked by
tests/store/test_s3server.py), which the lease and delta-rs's commits rely on.

Reusable from any test folder: `from tests.s3server import start_s3_server`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Final

REGION: Final = "us-east-1"
_LAUNCH: Final = (
    "import logging, sys; logging.getLogger('werkzeug').setLevel(logging.ERROR);"
    "from moto.server import main; main(sys.argv[1:])"
)


@dataclass
class S3Server:
    """A running moto server: its endpoint and the two forms of its settings."""

    endpoint: str
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def options(self) -> dict[str, str]:
        """Storage options as polars, deltalake and `flows.store` take them."""
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_region": REGION,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "aws_allow_http": "true",
            "connect_timeout": "2s",
            "timeout": "30s",
            "max_retries": "2",
            "retry_timeout": "5s",
        }

    @property
    def env(self) -> dict[str, str]:
        """The same settings as AWS_* environment variables."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def create_bucket(self, name: str | None = None) -> str:
        """A new, empty bucket (a fresh random name unless given)."""
        name = name or f"test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    @contextlib.contextmanager
    def authentication(self) -> Iterator[None]:
        """Inside, moto checks credentials (unknown keys get 403 InvalidAccessKeyId)."""
        self._post("/moto-api/reset-auth", b"0")
        try:
            yield
        finally:
            self._post("/moto-api/reset-auth", b"inf")

    def _post(self, path: str, data: bytes) -> None:
        request = urllib.request.Request(
            self.endpoint + path, data=data, method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_s3_server(timeout: float = 10.0) -> S3Server:
    """Start moto on a free port of 127.0.0.1 and wait until it answers (1-2 s here)."""
    port = free_port()
    return launch_s3_server([_LAUNCH, "-H", "127.0.0.1", "-p", str(port)], port, timeout)


def launch_s3_server(script: list[str], port: int, timeout: float = 10.0) -> S3Server:
    """Run ``python -c *script`` (a moto server listening on ``port``, without the caller's
    AWS_* variables) and wait until it answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # Its stderr (errors only: werkzeug's request log is silenced) for a failure to name.
    said = tempfile.TemporaryFile()  # noqa: SIM115 (the server's for its whole life)
    process = subprocess.Popen(
        [sys.executable, "-c", *script],
        stdout=subprocess.DEVNULL,
        stderr=said,
        env=env,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto server exited with {process.returncode}:\n{_tail(said)}")
        try:
            with urllib.request.urlopen(endpoint + "/moto-api/", timeout=0.5):
                return S3Server(endpoint, process)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    process.kill()
    process.wait()
    raise RuntimeError(
        f"moto server did not answer on {endpoint} within {timeout} s:\n{_tail(said)}"
    )


def _tail(said: IO[bytes]) -> str:
    said.seek(0)
    return said.read()[-3000:].decode(errors="replace")
