"""Reading what kaggle-benchmarks writes, without running anything: a run's ``.run.json``
(data only: nothing in it is ever executed) and an index of task files by registered name
(found by parsing the files' source, not by importing them).

A ``.run.json`` is the harness's ``BenchmarkTaskRun`` protobuf as JSON (camelCase keys):
``conversations`` (one per chat, the outer chat first, each sub-chat after its parent), each
with ``requests``: the messages sent since the previous reply and the model's reply last
(role ``CONTENT_ROLE_ASSISTANT``); a request with no reply is a call that failed. Structured
replies (a schema other than ``str``) are stored JSON-encoded twice. Each request's
``metrics`` (``ModelUsageMetrics``) are its usage: tokens as JSON numbers (int32, dropped when
0), costs in nanodollars and the latency as decimal strings (int64, present only where
recorded); ``{}`` or none: nothing recorded.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from schemas.contract import Category
from schemas.kaggle import UPSTREAM_CATEGORIES, Reason
from transforms.kaggle_rows import Usage, parse_time
from transforms.names import task_by_rule

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
    reply (role, text), the reply (None: the call failed and left no reply) and its usage
    (None: not recorded)."""

    chat: str
    sent: tuple[tuple[str, str], ...]
    reply: str | None
    usage: Usage | None = None


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
    digest: str = ""  # ``run_digest``: the run's content
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def errored(self) -> bool:
        return self.state == ERRORED

    @property
    def identity(self) -> str:
        """What names the harness run whatever its file's name or bytes: the sha256 of its
        model, task, harness run id (``pyRunId``) and start time (as an instant), as JSON.
        A run saved again under another name, or with a field added, is the same run."""
        started = parse_time(self.start_time)
        assert started is not None
        named = [self.model, self.task, self.py_run_id, started.isoformat()]
        return hashlib.sha256(json.dumps(named, ensure_ascii=False).encode()).hexdigest()

    def named(self) -> str:
        """The run's identity in words.

        >>> RunRecord("t", "m", "", "2026-04-12T01:25:49.77Z", None, "t-Run #1", (), None, 1
        ...     ).named()
        "model 'm', task 't', harness run id 't-Run #1', started 2026-04-12T01:25:49.77Z"
        """
        return (
            f"model {self.model!r}, task {self.task!r}, harness run id {self.py_run_id!r}, "
            f"started {self.start_time}"
        )

    @property
    def night(self) -> str:
        """The night of the run's start (UTC), ``YYYY-MM-DD``."""
        started = parse_time(self.start_time)
        assert started is not None
        return started.date().isoformat()


_KINDS: Final = {
    str: "text",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    dict: "an object",
    list: "a list",
}


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    for kind, said in _KINDS.items():
        if type(value) is kind:
            return said
    return type(value).__name__


def _get(obj: dict[str, Any], key: str, kind: type, where: str, required: bool = False) -> Any:
    """``obj[key]`` checked to be of ``kind`` (None when absent or null and not required);
    ``RunFileError`` naming the field otherwise."""
    value = obj.get(key)
    name = f"{where}.{key}" if where else key
    if value is None:
        if required:
            raise RunFileError(f"field {name} is missing")
        return None
    # JSON numbers: an integer is a number too; true and false are not numbers
    fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        fits = True
    if not fits:
        raise RunFileError(f"field {name} is {_kind_of(value)}, not {_KINDS[kind]}")
    return value


def _objects(value: list[Any], where: str) -> list[dict[str, Any]]:
    for number, item in enumerate(value):
        if not isinstance(item, dict):
            raise RunFileError(f"field {where}[{number}] is {_kind_of(item)}, not an object")
    return value


def _text(content: dict[str, Any], where: str) -> str:
    parts = _objects(_get(content, "parts", list, where) or [], f"{where}.parts")
    return "".join(_get(p, "text", str, f"{where}.parts[{n}]") or "" for n, p in enumerate(parts))


_DECIMAL: Final = re.compile(r"-?[0-9]+")


def _integer(metrics: dict[str, Any], key: str, where: str) -> int | None:
    """An integer field of proto3 JSON: a number (int32) or its decimal text (int64)."""
    value = metrics.get(key)
    if value is None:
        return None
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _DECIMAL.fullmatch(value):
        number = int(value)
    if number is None or not -(2**63) <= number < 2**63:
        said = _kind_of(value) if number is None else f"{value!r}"
        raise RunFileError(f"field {where}.{key} is {said}, not a 64-bit integer")
    return number


def usage_of(metrics: dict[str, Any], where: str) -> Usage | None:
    """A request's usage from its ``metrics`` (None: nothing recorded). Token counts are
    plain int32 fields, which proto3 JSON drops when 0: absent beside other metrics, they
    are 0; the costs and the latency are optional fields, absent where not recorded. The
    cost is the input's and the output's together, as the harness totals it.

    >>> usage_of({"inputTokens": 5, "outputTokensCostNanodollars": "120"}, "m")
    Usage(input_tokens=5, output_tokens=0, cost_nanodollars=120, latency_ms=None)
    >>> usage_of({}, "m") is None
    True
    """
    if not metrics:
        return None
    costs = [
        _integer(metrics, f"{side}TokensCostNanodollars", where) for side in ("input", "output")
    ]
    known = [c for c in costs if c is not None]
    return Usage(
        input_tokens=_integer(metrics, "inputTokens", where) or 0,
        output_tokens=_integer(metrics, "outputTokens", where) or 0,
        cost_nanodollars=sum(known) if known else None,
        latency_ms=_integer(metrics, "totalBackendLatencyMs", where),
    )


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
    """Every model call of a run, in the file's order (chat by chat); ``RunFileError`` for a
    field of the wrong type."""
    out: list[Request] = []
    for c, conversation in enumerate(_objects(conversations, "conversations")):
        where = f"conversations[{c}]"
        chat = chat_name(_get(conversation, "id", str, where) or "")
        requests = _objects(_get(conversation, "requests", list, where) or [], f"{where}.requests")
        for r, request in enumerate(requests):
            at = f"{where}.requests[{r}]"
            contents = list(_objects(_get(request, "contents", list, at) or [], f"{at}.contents"))
            roles = [_get(c, "role", str, f"{at}.contents[{n}]") for n, c in enumerate(contents)]
            reply = None
            if contents and roles[-1] == ASSISTANT:
                reply = _text(contents.pop(), f"{at}.contents[{len(contents)}]")
            sent = tuple(
                (ROLES.get(str(role), "user"), _text(c, f"{at}.contents[{n}]"))
                for n, (role, c) in enumerate(zip(roles, contents, strict=False))
            )
            metrics = _get(request, "metrics", dict, at) or {}
            out.append(Request(chat, sent, reply, usage_of(metrics, f"{at}.metrics")))
    return tuple(out)


def reported_score(results: Any) -> float | None:
    """The score the harness recorded: the first numeric result (proto3 JSON drops a 0.0,
    so ``{"numericResult": {}}`` is 0.0); None when the run recorded none.

    >>> reported_score([{"numericResult": {"value": 0.5}}]), reported_score([{"numericResult": {}}])
    (0.5, 0.0)
    >>> reported_score([]) is None, reported_score([{"booleanResult": True}])
    (True, 1.0)
    """
    for n, result in enumerate(_objects(results or [], "results")):
        if "numericResult" in result:
            numeric = _get(result, "numericResult", dict, f"results[{n}]") or {}
            return float(_get(numeric, "value", float, f"results[{n}].numericResult") or 0.0)
        if "booleanResult" in result:
            return 1.0 if _get(result, "booleanResult", bool, f"results[{n}]") else 0.0
    return None


def _time(raw: dict[str, Any], key: str, required: bool) -> str | None:
    """An RFC 3339 time field, checked (the night and the rows' times come from it)."""
    value = _get(raw, key, str, "", required)
    if value is not None:
        try:
            parse_time(value)
        except ValueError:
            raise RunFileError(
                f"field {key} is {value[:40]!r}, not a time as the harness writes it "
                "(RFC 3339 in UTC: 2026-04-12T01:25:49.772005Z)"
            ) from None
    return value


def run_text(data: bytes) -> str:
    """A run file's bytes as text: UTF-8 (a byte-order mark allowed), as the harness writes
    it; ``RunFileError`` otherwise (UTF-16, say, which ``json`` would read but nothing
    else in a dump expects)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        said = "UTF-16 (a byte-order mark)" if utf16 else f"byte {error.start} is not UTF-8"
        raise RunFileError(f"not UTF-8 text: {said}") from None


def parse_run(data: bytes) -> RunRecord:
    """A ``.run.json``'s bytes as a ``RunRecord`` (``RunFileError`` naming what is wrong when
    it is not one: every field the importer uses is checked for its type)."""
    text = run_text(data)
    try:
        raw = json.loads(text)
    except RecursionError:
        raise RunFileError("not a harness run record: JSON nested too deeply") from None
    except ValueError as error:
        raise RunFileError(f"not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise RunFileError(f"not a harness run record: the JSON is {_kind_of(raw)}, not an object")
    version = _get(raw, "taskVersion", dict, "", required=True)
    task = _get(version, "name", str, "taskVersion", required=True)
    model = _get(raw, "modelVersion", dict, "") or {}
    state = _get(raw, "state", str, "") or ""
    number = _get(version, "versionNumber", int, "taskVersion")
    return RunRecord(
        digest=run_digest(raw),
        task=task,
        model=_get(model, "slug", str, "modelVersion") or "",
        state=state,
        start_time=str(_time(raw, "startTime", required=True)),
        end_time=_time(raw, "endTime", required=False),
        py_run_id=_get(raw, "pyRunId", str, "") or "",
        requests=requests_of(_get(raw, "conversations", list, "") or []),
        # an ERRORED run records a pass/fail of False, not a score
        reported_score=None if state == ERRORED else reported_score(_get(raw, "results", list, "")),
        task_version=1 if number is None else number,
        error_message=_get(raw, "errorMessage", str, ""),
        raw=raw,
    )


def run_digest(raw: Any) -> str:
    """What names a run by its content: the sha256 of its JSON made canonical (sorted keys,
    no spaces), so a copy is the same run whatever its file's name, folder or layout
    (``RunFileError`` for a string that is no text: a lone surrogate, ``"\\udc80"``).

    >>> run_digest({"b": 1, "a": "x"}) == run_digest(json.loads('{"a":"x", "b":1}'))
    True
    """
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    except UnicodeEncodeError as error:
        raise RunFileError(
            f"a string holds {canonical[error.start : error.end]!r}, which is no text"
        ) from None


@dataclass(frozen=True)
class TaskFile:
    """A task file: where it is, the category of its folder, the name cogscore shows its
    task by (``shown_task``)."""

    path: Path
    category: Category | None
    folder: str
    task: str


def shown_task(path: Path, registered: Sequence[str], name: str) -> str:
    """The name cogscore shows the task ``name`` that the file ``path`` registers (with
    ``registered``, every name it does) by: the file's name by the rule (``- as _``), which
    is the task's published slug, the Kaggle task's; the registered name where the file
    registers several. LearningBench's task files register the file's name but for 13 of
    135 (``10000.py`` registers ``odd_letter_score_pair_assoc_learning``,
    ``mealy-machine-output-obs-learning.py`` ``finite_state_transducer_obs_learning``), whose
    runs are the table's tasks of those names (``transforms.names.task_by_rule``).

    >>> shown_task(Path("a/10000.py"), ["odd_letter_score_pair_assoc_learning"], "x")
    '10000'
    >>> shown_task(Path("a/b.py"), ["c", "d"], "d")
    'd'
    """
    return task_by_rule(path.stem) if len(set(registered)) == 1 else name


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
        category = UPSTREAM_CATEGORIES.get(folder)
        for name in names:
            found.setdefault(name, TaskFile(path, category, folder, shown_task(path, names, name)))
    return found


@dataclass(frozen=True)
class ListedRun:
    """A ``*.run.json`` found below RUNS: its path below RUNS as text (``relative``, what the
    report and the rows say; a byte of the name that is not UTF-8 is written ``\\xNN``), where
    to read it (``path``), or why it cannot be (``problem``: a reason and a detail)."""

    relative: str
    path: str
    problem: tuple[Reason, str] | None = None


def as_text(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (which Python keeps as surrogates) as
    ``\\xNN``, so every name can be printed, written to JSON and to Parquet.

    >>> as_text("run[1]"), as_text(os.fsdecode(b"caf\\xe9"))
    ('run[1]', 'caf\\\\xe9')
    """
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def runs_below(root: Path) -> list[ListedRun]:
    """Every ``*.run.json`` below the local folder ``root`` at any depth, sorted by path.
    Names starting with ``.`` or ``_`` are passed over (hidden, as everywhere in cogscore).
    Symbolic links are followed, to files and to folders, each folder walked once (the first
    path to it in sorted order: a second link to it, or a loop, adds nothing). What cannot
    be read is listed with its problem, never passed over in silence: a ``*.run.json`` link
    that leads nowhere (dangling, or a loop), a folder that cannot be listed."""
    found: list[ListedRun] = []
    seen: set[tuple[int, int]] = set()

    def walk(folder: str, relative: str) -> None:
        try:
            stat = os.stat(folder)
            if (stat.st_dev, stat.st_ino) in seen:
                return
            seen.add((stat.st_dev, stat.st_ino))
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:
            found.append(
                ListedRun(
                    as_text(relative or "."),
                    folder,
                    (Reason.UNREADABLE_FOLDER, f"cannot list the folder: {error.strerror}"),
                )
            )
            return
        for entry in entries:
            if entry.name.startswith((".", "_")):
                continue
            below = f"{relative}/{entry.name}" if relative else entry.name
            try:
                is_folder = entry.is_dir()  # follows a link
            except OSError:
                is_folder = False
            if is_folder:
                walk(entry.path, below)
            elif entry.name.endswith(RUN_SUFFIX):
                found.append(ListedRun(as_text(below), entry.path, _link_problem(entry)))

    walk(str(root), "")
    return sorted(found, key=lambda run: run.relative)


def _link_problem(entry: os.DirEntry[str]) -> tuple[Reason, str] | None:
    """Why a listed file cannot be read because of a link (None: it can be read, or is no
    link; other errors come when it is read)."""
    if not entry.is_symlink():
        return None
    try:
        os.stat(entry.path)
    except OSError as error:
        try:
            target = os.readlink(entry.path)
        except OSError:
            target = "?"
        how = "a loop" if error.errno == errno.ELOOP else "nothing (a dangling link)"
        return Reason.BROKEN_LINK, f"a symbolic link to {as_text(target)!r}, which leads to {how}"
    return None
