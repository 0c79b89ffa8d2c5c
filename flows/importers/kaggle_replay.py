"""Replaying a recorded harness run through its task file, under the real harness.

Runs in a forked child of the replay worker (``flows.importers.kaggle_worker_process``), never
in the importing process: the child loads the task file (a module of its own), replays the
run's recorded replies through it with a scripted model and returns what it captured.

The task file is code, and the replay runs it; nothing from the run file is executed: the
run's replies are fed to the task as the model's text.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types
import typing
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flows.importers.kaggle_capture import Capture, CaptureError, ReturnWatch, score_inputs
from flows.importers.kaggle_files import RunRecord, parse_run
from schemas.contract import Category
from schemas.kaggle import Reason


class MissingReply(RuntimeError):
    """The run recorded this call without a reply (the call failed)."""


def _harness() -> Any:
    """The harness, set up for offline replay (imported here: only the worker needs it)."""
    os.environ.setdefault("CONTINUE_WITH_EXCEPTIONS", "true")  # a failed run is returned
    os.environ.setdefault("BENCHMARK_CONSOLE_QUIET", "true")
    import kaggle_benchmarks as kbench

    return kbench


def returning_failures(kbench: Any) -> contextlib.AbstractContextManager[None]:
    """Within: a task run that fails is returned as a failed run, not raised (as in Kaggle's
    batch runs), whatever the harness's configuration says outside."""

    @contextlib.contextmanager
    def scope() -> Iterator[None]:
        before = kbench.config.continue_with_exceptions
        kbench.config.continue_with_exceptions = True
        try:
            yield
        finally:
            kbench.config.continue_with_exceptions = before

    return scope()


def scripted_llm(
    kbench: Any, record: RunRecord, log: dict[str, Any], blank_at: int | None = None
) -> Any:
    """An ``LLMChat`` that answers each call with the run's next recorded reply in the chat
    the call is made in (the file lists chats one after another, so replies are queued per
    chat name); a call whose reply the file lacks fails as the recorded call did."""
    from kaggle_benchmarks.actors.llms import LLMChat, LLMResponse

    queues: dict[str, deque[str | None]] = defaultdict(deque)
    for request in record.requests:
        # Each call sends one user message; a call that failed left no reply, so its
        # message joins the next request's: all but a request's last call failed.
        calls = max(1, sum(1 for role, _ in request.sent if role == "user"))
        queues[request.chat].extend([None] * (calls - 1) + [request.reply])

    class ScriptedLLM(LLMChat):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(name=record.model, support_structured_outputs=True)
            self.model = record.model  # the slug the harness writes into the run

        def invoke(self, messages: Any, system: Any = None, **kwargs: Any) -> Any:
            chat = kbench.chats.get_current_chat().name
            queue = queues.get(chat) or next((q for q in queues.values() if q), deque())
            if not queue:
                log["extra_calls"] += 1
                raise MissingReply(f"the task made a call the run did not record (chat {chat!r})")
            reply = queue.popleft()
            log["calls"] = log.get("calls", 0) + 1
            schema = kwargs.get("response_format")
            if blank_at == log["calls"] and schema is not None:
                return LLMResponse(content=blank_reply(schema))
            if reply is None:
                log["missing"] += 1
                raise MissingReply(f"the run recorded no reply to this call (chat {chat!r})")
            if schema is not None:
                with contextlib.suppress(ValueError):
                    decoded = json.loads(reply)  # stored JSON-encoded twice
                    if isinstance(decoded, str):
                        reply = decoded
            return LLMResponse(content=reply)

    return ScriptedLLM()


def reply_fits(schema: Any, reply: str) -> bool:
    """Whether a structured reply is what the schema asked for (pydantic's own validation:
    the harness builds the answer without checking types)."""
    import pydantic
    from kaggle_benchmarks import utils

    try:
        pydantic.TypeAdapter(schema).validate_json(utils.extract_code_block(reply, name="json"))
    except (pydantic.ValidationError, ValueError, TypeError):
        return False
    return True


def _load_task(kbench: Any, path: Path, name: str) -> tuple[Any, dict[str, Any]]:
    module_name = f"learningbench_task_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if isinstance(value, kbench.tasks.Task) and value.name == name:
            return value, vars(module)
    raise LookupError(f"{path} registers no task named {name!r}")


def first_difference(recorded: RunRecord, replayed: RunRecord) -> str | None:
    """The first model call whose prompt or reply differs between two runs, in words."""
    ours, theirs = recorded.requests, replayed.requests
    for number, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1):
        if a.sent != b.sent:
            where = next(
                (i for i, (x, y) in enumerate(zip(a.sent, b.sent, strict=False)) if x != y),
                min(len(a.sent), len(b.sent)),
            )
            got = b.sent[where][1] if where < len(b.sent) else "(nothing)"
            had = a.sent[where][1] if where < len(a.sent) else "(nothing)"
            return (
                f"call {number} (chat {a.chat!r}): the task sends {_snippet(got, had)!r} where "
                f"the run recorded {_snippet(had, got)!r}"
            )
        if a.reply != b.reply:
            return f"call {number} (chat {a.chat!r}): the reply fed differs from the one recorded"
    if len(ours) != len(theirs):
        return f"the run recorded {len(ours)} calls, the task made {len(theirs)}"
    return None


def _snippet(text: str, other: str, width: int = 120) -> str:
    """``text`` around where it first differs from ``other``."""
    at = next((i for i, (x, y) in enumerate(zip(text, other, strict=False)) if x != y), None)
    at = min(len(text), len(other)) if at is None else at
    start = max(0, at - 30)
    return ("…" if start else "") + text[start : start + width]


def run_captured(task: Any, module: dict[str, Any], go: Callable[[], Any]) -> tuple[Any, Capture]:
    """``go()`` (the task's run) with its score inputs captured (``kaggle_capture``)."""
    capture = Capture(module).install()
    try:
        with (
            returning_failures(sys.modules["kaggle_benchmarks"]),
            ReturnWatch(task.func.__code__, capture.returned_locals),
        ):
            run = go()
    finally:
        capture.restore()
    return run, capture


def _messages(chat: Any) -> list[Any]:
    """A chat's messages in the order they happened, its sub-chats' included."""
    out: list[Any] = []
    for entry in getattr(chat, "history", []):
        out.extend(_messages(entry) if hasattr(entry, "history") else [entry])
    return out


def _unreadable_last_reply(run: Any) -> bool:
    """Whether the run's last reply did not fit the schema the task asked for."""
    replies = [m for m in _messages(run.chat) if m.sender.role == "assistant"]
    if not replies:
        return False
    meta = replies[-1]._meta
    schema, raw = meta.get("schema"), meta.get("raw_content")
    return schema not in (None, str) and isinstance(raw, str) and not reply_fits(schema, raw)


def conclude(
    kbench: Any, job: dict[str, Any], record: RunRecord, run: Any, capture: Capture
) -> dict[str, Any]:
    """What a finished run gives the importer, whether replayed or recorded live: the score
    inputs (checked against the task's own numbers), or why there are none.

    A run that failed: when the model's last reply did not fit the schema the task asked
    for (a task with no guard), it is the model's failure (``unreadable_reply``: its items
    all wrong, score 0); otherwise the harness's (``errored``: ``episode_end`` status
    error, never scored)."""
    result: dict[str, Any] = {"reason": None, "notes": [], "returned": None}
    if run.status == kbench.utils.Status.FAILED:
        result["error"] = _last_line(run.error_message)
        if not _unreadable_last_reply(run):
            result["notes"] = [Reason.ERRORED]
            return result
        result["notes"] = [Reason.UNREADABLE_REPLY]
        calls = sum(1 for r in record.requests for role, _ in r.sent if role == "user")
        try:
            result["inputs"] = _items_without_answers(kbench, job, record, calls)
        except (CaptureError, KeyError, TypeError, ValueError) as error:
            return {
                "reason": Reason.INPUTS_NOT_CAPTURED,
                "detail": f"unreadable reply, items not found: {error}",
            }
        return result
    result["returned"] = run.result
    assertions = [(a.passed, a.expectation) for a in run.assertion_results]
    try:
        category = Category(job["category"])
        result["inputs"] = score_inputs(category, capture, run.result, assertions)
    except (CaptureError, KeyError, TypeError, ValueError) as error:
        return {"reason": Reason.INPUTS_NOT_CAPTURED, "detail": f"{type(error).__name__}: {error}"}
    return result


def replay(job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One run through its task file, in this process: the result the worker sends back."""
    kbench = _harness()
    kbench.client.directory = workdir  # the task's .task.json and the replayed .run.json
    record = parse_run(job["run"].encode())
    task, module = _load_task(kbench, Path(job["task_file"]), job["task_name"])
    log: dict[str, Any] = {"missing": 0, "extra_calls": 0, "calls": 0}
    llm = scripted_llm(kbench, record, log)
    run, capture = run_captured(task, module, lambda: task.run(llm=llm))
    written = sorted(workdir.glob("*.run.json"))
    if not written:
        return {"reason": Reason.REPLAY_FAILED, "detail": "the harness wrote no run file"}
    difference = first_difference(record, parse_run(written[-1].read_bytes()))
    if difference is not None:
        return {"reason": Reason.PROMPT_MISMATCH, "detail": difference}
    failed = run.status == kbench.utils.Status.FAILED
    if failed != record.errored:
        said = "ERRORED" if record.errored else "COMPLETED"
        return {
            "reason": Reason.REPLAY_FAILED,
            "detail": f"the run was recorded {said} but its replay "
            + ("failed: " + _last_line(run.error_message) if failed else "completed"),
        }
    result = conclude(kbench, job, record, run, capture)
    if log["missing"] and not result["reason"]:
        result["notes"] = [Reason.REPLY_MISSING, *result["notes"]]
    return result


def blank_value(annotation: Any) -> Any:
    """The empty value of a field's type: what an answer left blank reads as.

    >>> blank_value(str), blank_value(int), blank_value(list[int]), blank_value(int | None)
    ('', 0, [], 0)
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return blank_value(options[0]) if options else None
    if origin in (list, tuple, set) or annotation in (list, tuple, set):
        return []
    if origin is dict or annotation is dict:
        return {}
    zeros: dict[Any, Any] = {bool: False, int: 0, float: 0.0}
    return zeros.get(annotation, "")


def blank_reply(schema: Any) -> str:
    """A reply that fits ``schema`` (the harness's pydantic model) with every field blank."""
    fields = getattr(schema, "model_fields", {})
    return json.dumps({name: blank_value(f.annotation) for name, f in fields.items()})


def _items_without_answers(
    kbench: Any, job: dict[str, Any], record: RunRecord, unreadable_call: int
) -> dict[str, Any]:
    """The items of a run that the model's unreadable reply ended (a task with no guard):
    the task replayed once more with that reply left blank, for its items only; every item
    is then unanswered, so wrong (``CaptureError`` when the items cannot be had)."""
    before, scratch = kbench.client.directory, Path(tempfile.mkdtemp(prefix="cogscore-blank-"))
    kbench.client.directory = scratch
    try:  # this replay's files go elsewhere: a live job's run file stays the run's own
        task, module = _load_task(kbench, Path(job["task_file"]), job["task_name"])
        log: dict[str, Any] = {"missing": 0, "extra_calls": 0, "calls": 0}
        llm = scripted_llm(kbench, record, log, blank_at=unreadable_call)
        run, capture = run_captured(task, module, lambda: task.run(llm=llm))
    finally:
        kbench.client.directory = before
        shutil.rmtree(scratch, ignore_errors=True)
    assertions = [(a.passed, a.expectation) for a in run.assertion_results]
    if run.status == kbench.utils.Status.FAILED:
        raise CaptureError("the task fails even with that reply left blank")
    inputs = score_inputs(Category(job["category"]), capture, run.result, assertions)
    for item in inputs.get("items") or []:
        item["answer"], item["verdict"] = None, False
    return inputs


def _last_line(message: str | None) -> str:
    lines = [line for line in (message or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
