"""Headless Chromium driven over the DevTools protocol (a websocket, no other dependency):
open a page, record every request it makes and every console error, evaluate JavaScript,
take a screenshot."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
)
CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    return next((p for name in CHROMIUM_NAMES if (p := shutil.which(name))), None)


class Browser:
    """One Chromium process with one page, attached through a flat DevTools session."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
        executable = find_chromium()
        if executable is None:
            raise RuntimeError("chromium is not installed")
        profile.mkdir(parents=True, exist_ok=True)
        self.log = open(profile / "chromium.log", "wb")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        # Chromium writes the port it chose and the browser's websocket path into this file.
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (active.exists() and len(active.read_text().splitlines()) >= 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                log = (profile / "chromium.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"chromium did not start its DevTools endpoint:\n{log}")
            time.sleep(0.05)
        port, path = active.read_text().splitlines()[:2]
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{port}{path}", max_size=None, proxy=None, open_timeout=20
        )
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Network", "Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def _receive(self, timeout: float) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.ws.recv(timeout=timeout))
        if "method" in message:
            self.events.append(message)
        return message

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """A command and its result (events that arrive meanwhile are recorded)."""
        command_id = next(self.ids)
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = self._receive(timeout=60)
            if reply.get("id") == command_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page."""
        return self.send(method, params, self.session)

    def wait_for_event(self, method: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        while True:
            for event in self.events[seen:]:
                if event["method"] == method:
                    return event
            seen = len(self.events)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            try:
                self._receive(timeout=left)
            except TimeoutError:
                continue

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, timeout: float = 30) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired", timeout)

    def wait_until(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := self.evaluate(expression):
                return value
            time.sleep(0.1)
        raise TimeoutError(f"{expression} still false after {timeout} s")

    def screenshot(self, path: Path) -> Path:
        """The whole page, not only the window."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": size["height"],
                    "scale": 1,
                },
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def requests(self) -> list[str]:
        """The URL of every request the page made."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (failed loads too)."""
        found = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Runtime.exceptionThrown":
                details = p["exceptionDetails"]
                found.append(str(details.get("exception", {}).get("description", details)))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                found.append(f"{p['entry'].get('url', '')}: {p['entry']['text']}")
            elif e["method"] == "Page.javascriptDialogOpening":
                found.append(f"dialog: {p.get('message')}")
        return found

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
