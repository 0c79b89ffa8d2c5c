"""Reading what kaggle-benchmarks writes, without running anything: a run's ``.run.json``
(data only: nothing in it is ever executed) and an index of task files by registered name
(found by parsing the files' source, not by importing them).

A ``.run.json`` is the harness's ``BenchmarkTaskRun`` protobuf as JSON (camelCase keys):
``conversations`` (one per chat, the outer chat first, each sub-chat after its parent), each
with ``requests``: the messages sent since the previous reply and the model's reply last
(role ``CONTENT_ROLE_ASSISTANT``); a request with no reply is a call that failed. Structured
replies (a schema other than ``str``) are stored JSON-encoded twice.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from schemas.contract import Category
from schemas.kaggle import UPSTREAM_CATEGORIES

RUN_SUFFIX: Final = ".run.json"
COMPLETED: Final = "BENCHMARK_TASK_RUN_STATE_COMPLETED"
ERRORED: Final = "BENCHMARK_TASK_RUN_STATE_ERRORED"
ASSISTANT: Final = "CONTENT_ROLE_ASSISTANT"
# The harness's content roles, as the contract's roles.
ROLES: Final = {
    "CONTENT_ROLE_USER": "user",
    "CONTENT_ROLE_SYSTEM": "system",
    "CONTENT_ROLE_DEVELOPER": "system",
    "CONTENT_ROLE_CONTEXT": "environment",
    ASSISTANT: "assistant",
}


class RunFileError(ValueError):
    """A file that is not a harness run record."""


@dataclass(frozen=True)
class Request:
    """One model call as recorded: the chat it was made in, what was sent since the previous
    reply (role, text), and the reply (None: the call failed and left no reply)."""

    chat: str
    sent: tuple[tuple[str, str], ...]
    reply: str | None


@dataclass(frozen=True)
class RunRecord:
    """The facts of one ``.run.json`` the importer uses."""

    task: str
    model: str
    state: str
    start_time: str
    end_time: str | None
    py_run_id: str
    requests: tuple[Request, ...]
    reported_score: float | None  # ``results``: ``{}`` is 0.0; None when nothing recorded
    task_version: int
    error_message: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def errored(self) -> bool:
        return self.state == ERRORED


def _text(content: dict[str, Any]) -> str:
    parts = content.get("parts") or []
    return "".join(str(p.get("text", "")) for p in parts)


def chat_name(conversation_id: str) -> str:
    """A conversation's chat name: the harness names it ``<chat name>-<8 hex digits>``.

    >>> chat_name("disjunctive_noise-0a1b2c3d"), chat_name("odd")
    ('disjunctive_noise', 'odd')
    """
    head, sep, tail = conversation_id.rpartition("-")
    if sep and len(tail) == 8 and all(c in "0123456789abcdef" for c in tail):
        return head
    return conversation_id


def requests_of(conversations: list[dict[str, Any]]) -> tuple[Request, ...]:
    """Every model call of a run, in the file's order (chat by chat)."""
    out: list[Request] = []
    for conversation in conversations:
        chat = chat_name(str(conversation.get("id", "")))
        for request in conversation.get("requests") or []:
            contents = list(request.get("contents") or [])
            reply = None
            if contents and contents[-1].get("role") == ASSISTANT:
                reply = _text(contents.pop())
            sent = tuple((ROLES.get(str(c.get("role")), "user"), _text(c)) for c in contents)
            out.append(Request(chat, sent, reply))
    return tuple(out)


def reported_score(results: Any) -> float | None:
    """The score the harness recorded: the first numeric result (proto3 JSON drops a 0.0,
    so ``{"numericResult": {}}`` is 0.0); None when the run recorded none.

    >>> reported_score([{"numericResult": {"value": 0.5}}]), reported_score([{"numericResult": {}}])
    (0.5, 0.0)
    >>> reported_score([]) is None, reported_score([{"booleanResult": True}])
    (True, 1.0)
    """
    for result in results or []:
        if "numericResult" in result:
            return float(result["numericResult"].get("value", 0.0))
        if "booleanResult" in result:
            return 1.0 if result["booleanResult"] else 0.0
    return None


def parse_run(data: bytes) -> RunRecord:
    """A ``.run.json``'s bytes as a ``RunRecord`` (``RunFileError`` when it is not one)."""
    try:
        raw = json.loads(data)
        version = raw["taskVersion"]
        return RunRecord(
            task=str(version["name"]),
            model=str((raw.get("modelVersion") or {}).get("slug") or ""),
            state=str(raw.get("state", "")),
            start_time=str(raw["startTime"]),
            end_time=raw.get("endTime"),
            py_run_id=str(raw.get("pyRunId", "")),
            requests=requests_of(list(raw.get("conversations") or [])),
            # an ERRORED run records a pass/fail of False, not a score
            reported_score=None
            if raw.get("state") == ERRORED
            else reported_score(raw.get("results")),
            task_version=int(version.get("versionNumber", 1)),
            error_message=raw.get("errorMessage"),
            raw=raw,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise RunFileError(f"not a kaggle-benchmarks run record: {error}") from None


@dataclass(frozen=True)
class TaskFile:
    """A task file: where it is, the category of its folder, the names it registers."""

    path: Path
    category: Category | None
    folder: str


def registered_names(source: str) -> list[str]:
    """The names a task file registers with ``@kbench.task(name=...)`` (literal names only),
    read from its source without running it.

    >>> registered_names('@kbench.task(name="a_b")\\ndef f(llm): ...')
    ['a_b']
    """
    names = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if not (
                isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("task")
            ):
                continue
            for keyword in decorator.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    names.append(str(keyword.value.value))
    return names


def index_tasks(root: Path) -> dict[str, TaskFile]:
    """Every ``*.py`` below ``root`` by the task names it registers; a file's category is its
    folder's (upstream's folder names, ``schemas.kaggle.UPSTREAM_CATEGORIES``). A name
    registered twice keeps the first file in path order."""
    found: dict[str, TaskFile] = {}
    for path in sorted(root.rglob("*.py")):
        try:
            names = registered_names(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        folder = path.parent.name
        for name in names:
            found.setdefault(name, TaskFile(path, UPSTREAM_CATEGORIES.get(folder), folder))
    return found
