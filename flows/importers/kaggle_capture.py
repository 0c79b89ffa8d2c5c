"""Capturing a LearningBench task's score inputs while it runs, without editing the task.

A task file's scoring helpers are module globals looked up at call time, so a wrapper set on
the imported module sees every call's arguments and result: the formulas
(``_composite_score``, ``_concept_score``, ``procedural_composite_score``, the procedural
efficiency functions), the graders (``_str_match``, ``_label_match``, ``_letter_match``,
``_surface_equal``) and ``_log_trace``, which every task but one calls with its graded items.
Per category (measured on the 135 task files, see docs/importing.md):

- associative learning (and the one observational task written like them): the items are
  ``_log_trace``'s ``expected`` and ``answers``; an item's verdict is the grader call made
  while the task's loop variable ``key`` named it, else (an inline grader: integer or exact
  items) the harness assertion whose expectation names it (`` `key` must ...``), which those
  tasks make with the very comparison they grade with;
- observational learning: ``_log_trace``'s ``test_results`` (``expected``, ``got``,
  ``correct``); the task with no ``_log_trace`` keeps the same list in a local variable, read
  when the task function returns;
- concept formation and language learning: ``_concept_score``'s arguments, the module's
  ``NUM_TEST_ITEMS`` and ``FREE_THRESHOLD``, and ``_log_trace``'s ``exam_results``;
- procedural learning: ``_log_trace``'s ``phases`` (practice rounds and their scores, the
  transfer tests and whether each passed);
- runtime RL: ``_composite_score``'s arguments (solved, steps, budget, free steps, progress,
  floor).

Every capture is checked against the task's own numbers before it is used (the verdicts sum to
the count the task used, the formula's result is the score the task returned); a capture that
does not reproduce them raises ``CaptureError``: such a run is rejected, never imported with
guessed inputs. This module imports nothing from the harness: it runs in the replaying
process and in a live harness job alike.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Final

from schemas.contract import Category

FORMULAS: Final = (
    "_composite_score",
    "_concept_score",
    "procedural_composite_score",
    "efficiency_score",
    "_efficiency_score",
)
GRADERS: Final = ("_str_match", "_label_match", "_letter_match", "_surface_equal")
LOG: Final = "_log_trace"
_ITEM_IN_EXPECTATION: Final = re.compile(r"`([^`]+)`")


class CaptureError(Exception):
    """The captured inputs do not reproduce the task's own score: a message saying which."""


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    result: Any
    key: Any = None  # a grader call: the caller's loop variable ``key``, if any


@dataclass
class Capture:
    """Wrappers on a task module's scoring helpers, and what they saw."""

    module: dict[str, Any]
    calls: list[Call] = field(default_factory=list)
    returned_locals: dict[str, Any] = field(default_factory=dict)
    _saved: dict[str, Any] = field(default_factory=dict)
    _in_log: int = 0

    def install(self) -> Capture:
        for name in (*FORMULAS, *GRADERS, LOG):
            function = self.module.get(name)
            if callable(function) and name not in self._saved:
                self._saved[name] = function
                self.module[name] = self._wrap(name, function)
        return self

    def restore(self) -> None:
        self.module.update(self._saved)
        self._saved.clear()

    def _wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if name == LOG:
                self._in_log += 1
                try:
                    result = function(*args, **kwargs)
                finally:
                    self._in_log -= 1
            else:
                result = function(*args, **kwargs)
            if name in GRADERS and self._in_log:
                return result  # _log_trace re-grades for its printout: not the verdict
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            caller = sys._getframe(1)
            key = caller.f_locals.get("key") if name in GRADERS else None
            self.calls.append(Call(name, dict(bound.arguments), result, key))
            return result

        return wrapper

    def last(self, name: str) -> Call | None:
        found = [c for c in self.calls if c.name == name]
        return found[-1] if found else None

    def of(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]


class ReturnWatch:
    """The local variables of one function's frame when it returns (``sys.setprofile``):
    what a task kept but passed to no hook."""

    def __init__(self, code: CodeType, into: dict[str, Any]) -> None:
        self.code, self.into = code, into
        self._previous: Any = None

    def __enter__(self) -> ReturnWatch:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self._previous)

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is self.code:
            self.into.clear()
            self.into.update(frame.f_locals)


def text(value: Any) -> str | None:
    """An expected value or an answer as contract text: a string as it is, anything else as
    JSON (sorted keys; ``str()`` where JSON cannot say it); None stays None.

    >>> text("A"), text(3), text([1, 2]), text(None), text({"b": 1, "a": "x"})
    ('A', '3', '[1, 2]', None, '{"a": "x", "b": 1}')
    """
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _assertion_verdicts(assertions: list[tuple[bool, str]]) -> dict[str, bool]:
    """Item -> verdict from the harness assertions whose expectation names one item."""
    out: dict[str, bool] = {}
    for passed, expectation in assertions:
        found = _ITEM_IN_EXPECTATION.findall(expectation or "")
        if len(found) == 1:
            out[found[0]] = bool(passed)
    return out


def _items_from_log(
    capture: Capture, assertions: list[tuple[bool, str]]
) -> list[dict[str, Any]] | None:
    """Associative style: ``_log_trace(..., answers, expected, score)``."""
    log = capture.last(LOG)
    if log is None or "expected" not in log.args or "answers" not in log.args:
        return None
    expected: Mapping[str, Any] = log.args["expected"]
    answers: Mapping[str, Any] = log.args["answers"] or {}
    graded = [c for c in capture.calls if c.name in GRADERS]
    keyed = {str(c.key): bool(c.result) for c in graded if c.key is not None}
    unkeyed = [bool(c.result) for c in graded if c.key is None]
    asserted = _assertion_verdicts(assertions)
    items = []
    for key, value in expected.items():
        verdict: bool | None
        if str(key) in keyed:
            verdict = keyed[str(key)]
        elif unkeyed:
            verdict = unkeyed.pop(0)
        else:
            verdict = asserted.get(str(key))
        if verdict is None:
            raise CaptureError(f"item {key!r}: no grader call and no assertion names it")
        items.append(
            {
                "item_id": str(key),
                "expected": text(value),
                "answer": text(answers.get(key)),
                "verdict": verdict,
            }
        )
    return items


def _result_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(r, dict) and "correct" in r for r in value)


def _pick(row: Mapping[str, Any], name: str) -> Any:
    """``row[name]``, or the row's ``name_*`` fields together (a two-part item)."""
    if name in row:
        return row[name]
    parts = {k: v for k, v in row.items() if k.startswith(name + "_")}
    return parts or None


def _items_from_results(results: list[dict[str, Any]], answer_key: str) -> list[dict[str, Any]]:
    items = []
    for position, row in enumerate(results, start=1):
        item = row.get("q", row.get("item", position))
        items.append(
            {
                "item_id": str(item),
                "expected": text(_pick(row, "expected")),
                "answer": text(_pick(row, answer_key)),
                "verdict": bool(row["correct"]),
            }
        )
    return items


def _check_fraction(items: list[dict[str, Any]], returned: Any) -> None:
    if not items:
        raise CaptureError("no graded item was captured")
    right = sum(1 for i in items if i["verdict"])
    if right / len(items) != returned:
        raise CaptureError(
            f"{right} of {len(items)} items right is {right / len(items)!r}, "
            f"but the task returned {returned!r}"
        )


def _fraction_items(
    capture: Capture, assertions: list[tuple[bool, str]], returned: Any
) -> dict[str, Any]:
    items = _items_from_log(capture, assertions)
    if items is None:
        log = capture.last(LOG)
        results = log.args.get("test_results") if log is not None else None
        if not _result_list(results):
            results = next(
                (v for v in capture.returned_locals.values() if _result_list(v) and v), None
            )
        if results is None:
            raise CaptureError("no graded items: no _log_trace and no list of results")
        items = _items_from_results(results, "got")
    _check_fraction(items, returned)
    return {"items": items, "params": {}}


def _concept(capture: Capture, returned: Any) -> dict[str, Any]:
    call = capture.last("_concept_score")
    log = capture.last(LOG)
    if call is None or log is None or "exam_results" not in log.args:
        raise CaptureError("no _concept_score or _log_trace(exam_results) call")
    if call.result != returned:
        raise CaptureError(f"_concept_score gave {call.result!r}, the task returned {returned!r}")
    items = _items_from_results(list(log.args["exam_results"]), "answer")
    right = sum(1 for i in items if i["verdict"])
    if right != call.args["correct_count"]:
        raise CaptureError(
            f"{right} exam items right, but _concept_score was given {call.args['correct_count']}"
        )
    params = {
        "initial_examples": int(call.args["initial_examples"]),
        "max_examples": int(call.args["max_examples"]),
        "free_threshold": int(capture.module["FREE_THRESHOLD"]),
        "num_test_items": int(capture.module["NUM_TEST_ITEMS"]),
    }
    return {"items": items, "params": params, "examples_used": int(call.args["examples_used"])}


def _procedural(capture: Capture, returned: Any) -> dict[str, Any]:
    log = capture.last(LOG)
    if log is None or "phases" not in log.args:
        raise CaptureError("no _log_trace(phases) call")
    phases = list(log.args["phases"])
    practice = [p for p in phases if str(p["label"]).startswith("Practice")]
    tests = [p for p in phases if not str(p["label"]).startswith("Practice")]
    rounds = [float(p["score"]) for p in practice]
    efficiency = capture.of("efficiency_score") or capture.of("_efficiency_score")
    if [float(c.result) for c in efficiency] != rounds:
        raise CaptureError(f"round scores {rounds} are not the efficiency calls' results")
    items = [
        {
            "item_id": str(p["label"]),
            "expected": text(p.get("correct")),
            "answer": text(p["turns"][-1].get("submitted")) if p.get("turns") else None,
            "verdict": bool(p["solved"]),
        }
        for p in tests
    ]
    if not items:
        raise CaptureError("no transfer test was captured")
    composite = capture.last("procedural_composite_score")
    if composite is not None:
        right = sum(1 for i in items if i["verdict"])
        if [float(s) for s in composite.args["round_scores"]] != rounds:
            raise CaptureError("procedural_composite_score's rounds are not the phases'")
        if right / len(items) != composite.args["test_score"]:
            raise CaptureError(
                f"{right} of {len(items)} tests passed, but the test score given was "
                f"{composite.args['test_score']!r}"
            )
    return {"items": items, "params": {"practice_rounds": len(rounds)}, "rounds": rounds}


def _runtime_rl(capture: Capture, returned: Any) -> dict[str, Any]:
    call = capture.last("_composite_score")
    if call is None:
        raise CaptureError("no _composite_score call")
    if call.result != returned:
        raise CaptureError(f"_composite_score gave {call.result!r}, the task returned {returned!r}")
    args = call.args
    rl = {
        "solved": bool(args["solved"]),
        "step_y": int(args["step_y"]),
        "progress": float(args["progress"]),
    }
    params = {
        "budget": int(args["budget_n"]),
        "min_explore": int(args["min_explore"]),
        "floor": float(args["floor"]),
        "progress": "max",
    }
    return {"items": [], "params": params, "rl": rl}


def score_inputs(
    category: Category,
    capture: Capture,
    returned: Any,
    assertions: list[tuple[bool, str]],
) -> dict[str, Any]:
    """The inputs of the category's formula as the task computed them (JSON-ready), checked
    against the task's own numbers (``CaptureError`` when they do not reproduce them)."""
    if category in (Category.ASSOCIATIVE_LEARNING, Category.OBSERVATIONAL_LEARNING):
        return _fraction_items(capture, assertions, returned)
    if category in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING):
        return _concept(capture, returned)
    if category is Category.PROCEDURAL_LEARNING:
        return _procedural(capture, returned)
    return _runtime_rl(capture, returned)
