"""Harness bugs and failures that spoil a simulated episode, and what the scorer must say.

Each ``Fault`` edits the rows of one finished episode the way a buggy harness would log
them and names the one contract rule that this breaks (``schemas.rules.Rule``); applied to
an episode of a task it applies to, the scorer rejects the episode for exactly that rule.
``crash`` is the harness failure: the episode stops early with an ``episode_end`` whose
status is ``error``, kept valid otherwise (items left, every practice round logged), so
the scorer reports exactly ``harness_error``.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from schemas.contract import NEEDS_ITEMS, Category, Col, Kind, Match, Role, Status
from schemas.rules import Rule
from simulator.transcript import DT, Row


@dataclass(frozen=True)
class Fault:
    name: str
    rule: Rule
    applies: Callable[[Category, list[Row]], bool]
    apply: Callable[[random.Random, list[Row]], None]


def _renumber(rows: list[Row]) -> None:
    for turn, row in enumerate(rows):
        row[Col.TURN] = turn


def _of_kind(rows: list[Row], kind: Kind) -> list[int]:
    return [i for i, r in enumerate(rows) if r[Col.KIND] == kind]


def _params(rows: list[Row]) -> dict:
    start = rows[_of_kind(rows, Kind.EPISODE_START)[0]]
    params: dict = json.loads(start[Col.PARAMS])
    return params


# --------------------------------------------------------------------------- rule breakers


def _retried_message(rng: random.Random, rows: list[Row]) -> None:
    """A retried request logged twice under the same turn."""
    i = rng.choice([i for i in _of_kind(rows, Kind.MESSAGE) if i > 0])
    rows.insert(i + 1, dict(rows[i]))


def _float_expected(rng: random.Random, rows: list[Row]) -> None:
    """An integer ground truth formatted as a float."""
    i = rng.choice(
        [i for i in _of_kind(rows, Kind.ITEM) if rows[i].get(Col.MATCH) == Match.INTEGER]
    )
    rows[i][Col.EXPECTED] = f"{rows[i][Col.EXPECTED]}.0"


def _uncapped_examples(rng: random.Random, rows: list[Row]) -> None:
    """The example cap was not enforced: two examples more than ``max_examples``."""
    shown = _of_kind(rows, Kind.EXAMPLE)
    missing = _params(rows)["max_examples"] + 2 - len(shown)
    at = shown[-1] + 1
    extra: list[Row] = []
    for n in range(missing):
        again = rows[shown[n % len(shown)]]
        request = {**again, Col.KIND: Kind.MESSAGE.value, Col.ROLE: Role.ASSISTANT.value}
        extra += [{**request, Col.CONTENT: "MORE"}, {**again}]
    rows[at:at] = extra
    _renumber(rows)


def _lost_round(rng: random.Random, rows: list[Row]) -> None:
    """One practice round's ``round_end`` was not logged."""
    del rows[rng.choice(_of_kind(rows, Kind.ROUND_END))]


def _percent_round(rng: random.Random, rows: list[Row]) -> None:
    """A round score logged in percent (0..100) instead of as a share."""
    rounds = [i for i in _of_kind(rows, Kind.ROUND_END) if rows[i][Col.VALUE] > 0.02]
    i = rng.choice(rounds)
    rows[i][Col.VALUE] = round(100 * rows[i][Col.VALUE], 2)


def _answer_typo(rng: random.Random, rows: list[Row]) -> None:
    """An answer logged under an item id the harness mangled."""
    i = rng.choice(_of_kind(rows, Kind.ANSWER))
    rows[i][Col.ITEM_ID] = f"{rows[i][Col.ITEM_ID]}-retry"


def _nan_feedback(rng: random.Random, rows: list[Row]) -> None:
    """A feedback value that the environment computed as NaN."""
    rows[rng.choice(_of_kind(rows, Kind.FEEDBACK))][Col.VALUE] = math.nan


def _missing_param(rng: random.Random, rows: list[Row]) -> None:
    """A required parameter left out of ``params``."""
    start = rows[_of_kind(rows, Kind.EPISODE_START)[0]]
    params = json.loads(start[Col.PARAMS])
    key = rng.choice(sorted(set(params) & {"initial_examples", "max_examples", "budget"}))
    del params[key]
    start[Col.PARAMS] = json.dumps(params)


def _lost_start(rng: random.Random, rows: list[Row]) -> None:
    """The ``episode_start`` row was not logged."""
    del rows[_of_kind(rows, Kind.EPISODE_START)[0]]


def _model_switch(rng: random.Random, rows: list[Row]) -> None:
    """One reply came from a fallback model and was logged under its name."""
    i = rng.choice([i for i, r in enumerate(rows) if r[Col.ROLE] == Role.ASSISTANT])
    rows[i][Col.MODEL] = f"{rows[i][Col.MODEL]}-fallback"


def _unknown_kind(rng: random.Random, rows: list[Row]) -> None:
    """A row of a kind the contract does not know (a newer harness's 'tool_call')."""
    i = rng.choice([i for i in _of_kind(rows, Kind.MESSAGE) if rows[i][Col.ROLE] != Role.SYSTEM])
    rows[i][Col.KIND] = "tool_call"


def _has_kind(kind: Kind) -> Callable[[Category, list[Row]], bool]:
    return lambda category, rows: any(r[Col.KIND] == kind for r in rows)


def _always(category: Category, rows: list[Row]) -> bool:
    return True


FAULTS: tuple[Fault, ...] = (
    Fault("retried_message", Rule.DUPLICATE_TURN, _always, _retried_message),
    Fault(
        "float_expected",
        Rule.INTEGER_EXPECTED_NOT_INTEGER,
        lambda c, rows: any(r.get(Col.MATCH) == Match.INTEGER for r in rows),
        _float_expected,
    ),
    Fault(
        "uncapped_examples",
        Rule.TOO_MANY_EXAMPLES,
        lambda c, rows: c in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING),
        _uncapped_examples,
    ),
    Fault(
        "lost_round",
        Rule.WRONG_ROUND_COUNT,
        lambda c, rows: c == Category.PROCEDURAL_LEARNING,
        _lost_round,
    ),
    Fault(
        "percent_round",
        Rule.ROUND_VALUE_OUT_OF_RANGE,
        lambda c, rows: any(r[Col.KIND] == Kind.ROUND_END and r[Col.VALUE] > 0.02 for r in rows),
        _percent_round,
    ),
    Fault("answer_typo", Rule.ANSWER_UNKNOWN_ITEM, _has_kind(Kind.ANSWER), _answer_typo),
    Fault("nan_feedback", Rule.NON_FINITE_VALUE, _has_kind(Kind.FEEDBACK), _nan_feedback),
    Fault(
        "missing_param",
        Rule.PARAMS_MISSING,
        lambda c, rows: (
            c in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING, Category.RUNTIME_RL)
        ),
        _missing_param,
    ),
    Fault("lost_start", Rule.MISSING_EPISODE_START, _always, _lost_start),
    Fault("model_switch", Rule.INCONSISTENT_FIELD, _always, _model_switch),
    Fault("unknown_kind", Rule.UNKNOWN_KIND, _always, _unknown_kind),
)


# --------------------------------------------------------------------------- harness failure

CRASH_REASONS = (
    "harness error: environment server timed out after 30 s",
    "harness error: model API rate limited (HTTP 429), giving up",
    "harness error: sandbox killed (out of memory)",
    "harness error: lost connection to the evaluation worker",
)


def crash(rng: random.Random, rows: list[Row], category: Category) -> None:
    """The run stopped early: rows after a graded row are lost, then an error ``episode_end``.

    The cut keeps the episode valid otherwise: at least one item (where the category needs
    items), every practice round, no answer without its item.
    """
    if category == Category.RUNTIME_RL:
        marks = _of_kind(rows, Kind.FEEDBACK)
    else:
        marks = _of_kind(rows, Kind.ANSWER)
        if category in NEEDS_ITEMS:
            marks = marks[:-1] or marks  # stop before the last answer where possible
    cut = rng.choice(marks) + 1 if marks else len(rows) - 1
    end = rows[-1]
    clock = rows[cut - 1][DT] + rng.randint(1_000_000, 30_000_000)
    reason = rng.choice(CRASH_REASONS)
    rows[cut:] = [{**end, Col.STATUS: Status.ERROR.value, Col.CONTENT: reason, DT: clock}]
    _renumber(rows)
