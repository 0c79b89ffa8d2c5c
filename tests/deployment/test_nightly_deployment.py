"""The nightly deployment end to end, as an operator sets it up (docs/deployment.md, "Nightly
runs with Prefect"): a real ``prefect server start``, the process work pool ``cogscore``, ``prefect
deploy`` of ``prefect.yaml``, a process worker, runs triggered with ``prefect deployment run``;
and the alert on a failed nightly (a Prefect automation that sends a notification), its
notification block pointed at a receiver in this test.

The server and the worker (with its flow runs and their task cache) have Prefect homes of
their own, and a fresh SQLite database: nothing leaks in or out of ``~/.prefect``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.tables import read_tables

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
DEPLOYMENT = "cogscore-nightly/nightly"
POOL = "cogscore"
NIGHT = "2026-12-01"
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
SERVER_START_SECONDS = 180  # a fresh database: 25 s here when idle, far more under load
CLI_SECONDS = 120
RUN_SECONDS = 240
ALERT_SECONDS = 90

pytestmark = pytest.mark.slow


def recorded_runs(out: Path) -> list[dict[str, Any]]:
    """The rows of the output's runs table (a row per run and night), read with polars."""
    if (out / "runs").is_dir():
        return pl.read_delta(str(out / "runs")).to_dicts()
    return []


def nightly_records(out: Path, *, failed: bool = False) -> list[dict[str, Any]]:
    """The rows of nightly runs that scored NIGHT; those that succeeded (``failed``:
    whatever their status)."""
    return [
        record
        for record in recorded_runs(out)
        if record.get("kind") == "nightly"
        and record.get("night") == NIGHT
        and (failed or record.get("status") == "succeeded")
    ]


# The alert as docs/deployment.md gives it ("Being alerted when the nightly fails"): the test
# runs that very snippet with the Slack block swapped for a webhook to its own receiver.
SLACK_BLOCK = 'SlackWebhook(url="https://hooks.slack.com/services/T000/B000/XXXX")'


def alert_snippet() -> str:
    """The Python block of docs/deployment.md's alert section, as a user copies it."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    section = text.split("\n## Being alerted when the nightly fails\n", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert SLACK_BLOCK in snippet, "the documented alert no longer saves a SlackWebhook block"
    return snippet


ALERT_SNIPPET = alert_snippet()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Service:
    """A long-running subprocess in a process group of its own, its output in ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 80) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} log (last {lines} lines) ---\n" + "\n".join(
            text.splitlines()[-lines:]
        )

    def stop(self) -> None:
        """SIGTERM to the group, then SIGKILL to whatever of it is left (flow runs too)."""
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                continue


def start(name: str, args: list[str], env: dict[str, str], logs: Path) -> Service:
    log = logs / f"{name}.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Service(name, process, log)


@dataclass
class Inbox:
    """A local webhook receiver: the bodies of the notifications posted to it."""

    server: ThreadingHTTPServer
    received: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/cogscore-alerts"

    @classmethod
    def start(cls) -> Inbox:
        received: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received.append(self.rfile.read(length).decode(errors="replace"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return cls(server, received)

    def webhook_block(self) -> str:
        return (
            "CustomWebhookNotificationBlock(name='cogscore-alerts', "
            f"url={self.url!r}, json_data={{'subject': '{{{{subject}}}}', "
            "'body': '{{body}}'})"
        )


@dataclass
class Stack:
    """The server, the deployment and its worker; what the runs read and write."""

    api: str
    env: dict[str, str]  # for the CLI and the worker
    logs: Path
    dump: Path
    out: Path
    local_out: Path  # what the local engine wrote for the same dump
    inbox: Inbox
    services: list[Service] = field(default_factory=list)

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [str(BIN / "prefect"), *args],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_SECONDS,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, (
            f"prefect {' '.join(args)} exited {done.returncode}:\n{output}\n{self.diagnose()}"
        )
        return output

    def get(self, path: str) -> Any:
        response = httpx.get(self.api + path, timeout=30)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = httpx.post(self.api + path, json=body, timeout=30)
        response.raise_for_status()
        return response.json()

    def trigger(self, *params: str) -> str:
        """``prefect deployment run`` with ``--param key=value`` (values JSON); its run id."""
        args = ["deployment", "run", DEPLOYMENT]
        for param in params:
            args += ["--param", param]
        output = self.cli(*args)
        found = re.search(r"UUID:\s*([0-9a-f-]{36})", output)
        assert found, f"no flow run id in the output of prefect deployment run:\n{output}"
        return found.group(1)

    def wait(self, run_id: str) -> dict[str, Any]:
        """The flow run, once in a final state."""
        deadline = time.monotonic() + RUN_SECONDS
        while True:
            try:
                run: dict[str, Any] = self.get(f"/flow_runs/{run_id}")
            except httpx.HTTPError as error:
                raise AssertionError(
                    f"the server did not answer about flow run {run_id}: {error!r}\n"
                    + self.diagnose()
                ) from None
            state = run.get("state") or {}
            if state.get("type") in FINAL:
                return run
            assert time.monotonic() < deadline, (
                f"flow run {run_id} still {state.get('type')} after {RUN_SECONDS} s\n"
                + self.diagnose(run_id)
            )
            time.sleep(1)

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        body = {"artifacts": {"flow_run_id": {"any_": [run_id]}}}
        return list(self.post("/artifacts/filter", body))

    def diagnose(self, run_id: str | None = None) -> str:
        parts = [service.tail() for service in self.services]
        if run_id is not None:
            try:
                body = {"logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_ASC"}
                logs = self.post("/logs/filter", body)
                lines = [f"{log['level']:>2} {log['message']}" for log in logs]
                parts.append(f"--- flow run {run_id} logs ---\n" + "\n".join(lines[-80:]))
            except httpx.HTTPError as error:
                parts.append(f"(no flow run logs: {error})")
        return "\n".join(parts)


def prefect_env(home: Path, **settings: str) -> dict[str, str]:
    """This environment without any PREFECT_ or COGSCORE_ setting of its own, plus these."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "COGSCORE_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        COLUMNS="200",  # rich must not wrap the flow run id of `prefect deployment run`
        **settings,
    )
    return env


def wait_healthy(api: str, server: Service) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while True:
        assert server.process.poll() is None, f"prefect server exited\n{server.tail()}"
        try:
            if httpx.get(f"{api}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, (
            f"prefect server not healthy after {SERVER_START_SECONDS} s\n{server.tail()}"
        )
        time.sleep(0.5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from flows import runs
    from simulator import simulate

    base = tmp_path_factory.mktemp("nightly-deployment")
    logs = base / "logs"
    logs.mkdir()
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    server_home = base / "server-home"
    server_env = prefect_env(
        server_home,
        PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{server_home}/prefect.db",
        PREFECT_SERVER_UI_ENABLED="false",
        # No scheduled runs: a 02:00 UTC run of the deployment must not join the test's.
        PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED="false",
    )
    with ExitStack() as cleanup:
        server = start(
            "server",
            [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            server_env,
            logs,
        )
        cleanup.callback(server.stop)

        # While the server migrates its fresh database: the dump (with rejected
        # episodes, two files) and what the local engine writes for it.
        dump, out, local_out = base / "dump", base / "out", base / "local-out"
        simulate(dump, date=NIGHT, episodes=300, seed=1, episodes_per_file=150)
        runs.nightly(dump, local_out)
        inbox = Inbox.start()
        cleanup.callback(inbox.server.shutdown)

        env = prefect_env(
            base / "worker-home",
            PREFECT_API_URL=api,
            PREFECT_WORKER_QUERY_SECONDS="1",
            COGSCORE_HOME=str(ROOT),
            COGSCORE_DUMP_ROOT=str(dump),
            COGSCORE_OUT=str(out),
        )
        stack = Stack(api, env, logs, dump, out, local_out, inbox, [server])
        wait_healthy(api, server)

        stack.cli("work-pool", "create", POOL, "--type", "process")
        worker = start(
            "worker",
            [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", "cogscore-test"],
            env,
            logs,
        )
        cleanup.callback(worker.stop)
        stack.services.append(worker)
        # The alert before any run: a notification for a completed run would show.
        script = ALERT_SNIPPET.replace(SLACK_BLOCK, inbox.webhook_block()).replace(
            "import SlackWebhook", "import CustomWebhookNotificationBlock"
        )
        alert = subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=base,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        cleanup.callback(alert.kill)  # if it hangs (a no-op once it has ended)
        stack.cli("--no-prompt", "deploy", "--name", "nightly")
        alert_output, _ = alert.communicate(timeout=CLI_SECONDS)
        assert alert.returncode == 0, f"the alert snippet failed:\n{alert_output}"
        yield stack


def assert_same_tables(out: Path, expected: Path, context: str) -> None:
    assert out.is_dir() and any(out.iterdir()), f"the run wrote nothing under {out}\n{context}"
    got, want = read_tables(out), read_tables(expected)
    assert got.keys() == want.keys() and want, f"tables {sorted(got)} != {sorted(want)}"
    for name, frame in want.items():
        try:
            assert_frame_equal(got[name], frame)
        except AssertionError as error:
            raise AssertionError(
                f"{name} of the deployment's run differs from the local engine's: {error}"
            ) from None


def test_the_deployment_is_created_from_prefect_yaml(stack: Stack) -> None:
    deployment = stack.get(f"/deployments/name/{DEPLOYMENT}")
    assert deployment["work_pool_name"] == POOL
    assert deployment["entrypoint"] == "flows/prefect_flows.py:nightly_flow"
    assert deployment["parameters"]["dump_root"] == str(stack.dump)
    assert deployment["parameters"]["out"] == str(stack.out)
    (schedule,) = deployment["schedules"]
    assert schedule["schedule"]["cron"] == "0 2 * * *"
    assert schedule["schedule"]["timezone"] == "UTC"
    assert deployment["global_concurrency_limit"]["limit"] == 1
    automations = stack.post("/automations/filter", {})
    assert [a["name"] for a in automations] == ["cogscore-nightly-failed"]


def test_a_triggered_nightly_run_writes_the_local_engines_tables_and_its_record(
    stack: Stack,
) -> None:
    run_id = stack.trigger()
    run = stack.wait(run_id)
    assert run["state"]["type"] == "COMPLETED", (
        f"the nightly run ended {run['state']['type']}: {run['state'].get('message')}\n"
        + stack.diagnose(run_id)
    )
    assert_same_tables(stack.out, stack.local_out, stack.diagnose(run_id))
    records = nightly_records(stack.out)
    assert records, f"no record of the nightly run in {stack.out}: {recorded_runs(stack.out)}"
    # Prefect's record of the run (its artifact) names the run the output records.
    described = [a.get("description") or "" for a in stack.artifacts(run_id)]
    assert any(r["run_id"] in d for r in records for d in described), (
        f"no artifact of flow run {run_id} names a recorded run: {described} / {records}"
    )


def test_a_strict_run_with_rejects_ends_failed_keeps_its_tables_and_alerts(
    stack: Stack, tmp_path: Path
) -> None:
    assert read_tables(stack.local_out)["rejects"].height > 0, "the dump has no rejects"
    strict_out = tmp_path / "strict-out"
    run_id = stack.trigger("strict=true", f"out={json.dumps(str(strict_out))}")
    run = stack.wait(run_id)
    state = run["state"]
    assert state["type"] == "FAILED", (
        f"the strict run ended {state['type']}: {state.get('message')}\n" + stack.diagnose(run_id)
    )
    assert "strict run failed" in (state.get("message") or ""), state
    assert_same_tables(strict_out, stack.local_out, stack.diagnose(run_id))
    assert nightly_records(strict_out, failed=True), (
        f"no record of the strict run in {strict_out}: {recorded_runs(strict_out)}"
    )

    # The automation's notification reaches the webhook, naming this run; none names a
    # run that completed.
    deadline = time.monotonic() + ALERT_SECONDS
    while not any(run_id in body for body in stack.inbox.received):
        assert time.monotonic() < deadline, (
            f"no notification for flow run {run_id} after {ALERT_SECONDS} s: "
            f"{stack.inbox.received}\n{stack.diagnose()}"
        )
        time.sleep(0.5)
    (alert,) = [body for body in stack.inbox.received if run_id in body]
    assert "strict run failed" in alert and "Failed" in alert, alert
    completed = stack.post(
        "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}}
    )
    for other in completed:
        assert not any(other["id"] in body for body in stack.inbox.received), (
            f"a notification for the completed run {other['id']}: {stack.inbox.received}"
        )
