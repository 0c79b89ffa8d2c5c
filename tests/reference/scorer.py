"""Reference scorer: validate and score rows of a dump, one plain loop at a time.

Input rows are dicts keyed by the contract's column names (a missing key is null) plus
``"file"`` and optionally ``"dump_date"``. Written from ``../shared/spec/dump-contract.md`` and
docs/decisions.md, "Decisions where the contract is silent"; formulas in ``formulas.py``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.reference import contract as c
from tests.reference import formulas as f
from tests.reference.contract import (
    ACTION,
    ANSWER,
    CATEGORIES,
    CATEGORY,
    CONCEPT_LIKE,
    CONTENT,
    DEFAULT_MATCH,
    DUMP_DATE,
    EPISODE_CONSTANT,
    EPISODE_END,
    EPISODE_ID,
    EPISODE_START,
    ERROR,
    EXAMPLE,
    EXPECTED,
    FEEDBACK,
    FILE,
    INSTANCE_ID,
    INTEGER,
    ITEM,
    ITEM_ID,
    KIND,
    KINDS,
    MATCH,
    MATCH_MODES,
    MODEL,
    NEEDS_ITEMS,
    PARAMS,
    PARAMS_COLUMN,
    PROCEDURAL,
    PROGRESS_MODES,
    RECORDED,
    REPORTED_SCORE,
    REQUIRED,
    ROLE,
    ROLES,
    ROUND,
    ROUND_END,
    RUN_ID,
    RUNTIME_RL,
    SOLVED,
    STATUS,
    TASK,
    TS,
    TURN,
    UNCATEGORISED,
    VALUE,
    VERDICT,
    Rule,
)
from tests.reference.matching import grade, is_integer_literal, positional

Row = dict[str, Any]

# Per category: the formula versions, the default first (procedural learning: v3 is the
# seed's four components as the new-formula task files code them, rounded; v2 the seed's
# text, unrounded; v1 its "previous formula"; v4 that formula as the 4 old-formula task
# files code it, their default).
FORMULA_VERSIONS: dict[str, tuple[str, ...]] = {name: ("v1",) for name in CATEGORIES}
FORMULA_VERSIONS[PROCEDURAL] = ("v3", "v2", "v1", "v4")
TASK_VERSIONS: dict[str, str] = {
    f"{PROCEDURAL}/{task}": "v4"
    for task in (
        "boolean_circuit_proc_learning",
        "grammar_induction_proc_learning",
        "lights_out_variant_proc_learning",
        "voting_protocol_proc_learning",
    )
}
_PROCEDURAL_SCORES = {
    "v1": f.procedural_v1_score,
    "v2": f.procedural_composite_score,
    "v3": f.procedural_v3_score,
    "v4": f.procedural_v4_score,
}

# fmt: off
SCORE_FIELDS = (
    "run_id", "model", "task", "category", "instance_id", "dump_date", "score", "formula_version",
    "correct_count", "n_items", "accuracy", "examples_used", "efficiency", "success", "steps",
    "progress", "transfer", "asymptote", "trajectory", "consistency", "positional",
    "feedback_out_of_range", "n_rows", "reported_score", "score_mismatch", "verdict_mismatches",
    *c.USAGE_COLUMNS, "replies_without_usage", "usage_refused", c.SINGLE_RUN_STARTED,
    "calls", c.SOURCE_NAMES, "wall_ms",
)
# fmt: on

_ENUM_COLUMNS = (
    (CATEGORY, frozenset({*CATEGORIES, UNCATEGORISED}), Rule.UNKNOWN_CATEGORY),
    (ROLE, frozenset(ROLES), Rule.UNKNOWN_ROLE),
    (KIND, frozenset(KINDS), Rule.UNKNOWN_KIND),
    (MATCH, frozenset(MATCH_MODES), Rule.UNKNOWN_MATCH),
)
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1  # README: int parameters are 32-bit
_TOO_LONG_INT = object()  # a JSON integer too long for int(): outside every parameter's range


@dataclass
class ReferenceResult:
    scored: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    rejected: dict[tuple[str | None, str], dict[str, Any]] = field(default_factory=dict)
    rows_read: int = 0
    rows_scored: int = 0
    rows_rejected: int = 0


# --- small helpers


def _of_kind(rows: list[Row], kind: str) -> list[Row]:
    return [r for r in rows if r.get(KIND) == kind]


# Contract 1.2, "A reported score alone": the kinds of rows that carry a formula's inputs, and
# the rules about them, which an episode that is a reported score alone does not break.
_INPUT_KINDS = (EXAMPLE, ITEM, ANSWER, ACTION, FEEDBACK, ROUND_END)
_INPUT_RULES = {
    Rule.NO_ITEMS,
    Rule.TOO_MANY_ITEMS,
    Rule.TOO_MANY_EXAMPLES,
    Rule.WRONG_ROUND_COUNT,
    Rule.PARAMS_MISSING,
    Rule.PARAMS_WRONG_TYPE,
    Rule.PARAMS_INVALID_VALUE,
}
REPORTED_VERSION = "reported"


def _reported_alone(rows: list[Row]) -> float | None:
    """The reported score of an episode that is one alone (a finite reported score, no row of
    an input kind, one episode_start whose params are ``{}``, JSON whitespace aside), else
    None."""
    if any(r.get(KIND) in _INPUT_KINDS for r in rows):
        return None
    starts = _of_kind(rows, EPISODE_START)
    text = starts[0].get(PARAMS_COLUMN) if len(starts) == 1 else None
    if text is None or re.sub(r"[ \t\n\r]", "", text) != "{}":
        return None
    ends = _of_kind(_by_turn(rows), EPISODE_END)
    reported = [r[REPORTED_SCORE] for r in ends if r.get(REPORTED_SCORE) is not None]
    if not reported or not math.isfinite(reported[-1]):
        return None
    return float(reported[-1])


def _by_turn(rows: list[Row]) -> list[Row]:
    """Rows ordered by turn (null turns last; ties keep input order)."""
    return sorted(rows, key=lambda r: (r.get(TURN) is None, r.get(TURN) or 0))


def _first_non_null(rows: list[Row], col: str) -> Any:
    """For reporting: the smallest non-null value (the only one in a scored episode)."""
    values = [r[col] for r in rows if r.get(col) is not None]
    return min(values) if values else None


def _has_repeats(values: list[Any]) -> bool:
    return len(set(values)) < len(values)


def _json_int(text: str) -> object:
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        return _TOO_LONG_INT


def _parse_object(raw: str | None) -> dict[str, Any] | None:
    """``params`` as a dict, or None when it is null, not JSON, or not a JSON object."""
    if raw is None:
        return None
    try:
        obj = json.loads(raw, parse_int=_json_int)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _param_rule(kind: str, v: Any) -> str | None:
    """The rule a present parameter value breaks, if any (README decisions)."""
    if kind == c.INT:  # a JSON integer (not a bool, not 5.0) in the int32 range
        if v is _TOO_LONG_INT:
            return Rule.PARAMS_INVALID_VALUE
        if type(v) is not int:
            return Rule.PARAMS_WRONG_TYPE
        return None if _INT_MIN <= v <= _INT_MAX else Rule.PARAMS_INVALID_VALUE
    if kind == c.FLOAT:  # a finite JSON number, integers accepted
        if v is _TOO_LONG_INT:
            return Rule.PARAMS_INVALID_VALUE
        if type(v) not in (int, float):
            return Rule.PARAMS_WRONG_TYPE
        try:
            return None if math.isfinite(v) else Rule.PARAMS_INVALID_VALUE
        except OverflowError:  # an int beyond float64
            return Rule.PARAMS_INVALID_VALUE
    if not isinstance(v, str):
        return Rule.PARAMS_WRONG_TYPE
    return None if v in PROGRESS_MODES else Rule.PARAMS_INVALID_VALUE


def _resolve_params(
    category: str, obj: dict[str, Any], n_items: int
) -> tuple[dict[str, Any], set[str]]:
    """The valid (or defaulted) parameters, and the rules that the others break."""
    resolved: dict[str, Any] = {}
    rules: set[str] = set()
    for p in PARAMS.get(category, ()):  # (uncategorised: none)
        if p.name not in obj:
            if p.required:
                rules.add(Rule.PARAMS_MISSING)
            else:  # default None means derived: num_test_items = the number of items
                resolved[p.name] = n_items if p.default is None else p.default
            continue
        v = obj[p.name]
        problem = _param_rule(p.type, v)
        if problem is not None:
            rules.add(problem)
        elif p.minimum is not None and v < p.minimum:
            rules.add(Rule.PARAMS_INVALID_VALUE)
        else:
            resolved[p.name] = v
    return resolved, rules


# --- validation


def _check(rows: list[Row]) -> tuple[set[str], str | None, dict[str, Any] | None]:
    """Every rule one episode (one file's rows of one episode_id) breaks.

    Returns (rules, category or None when not known and the same on every row,
    resolved params or None when they could not be read).
    """
    rules: set[str] = set()

    # Rows: nulls, enum values, non-finite values (any kind).
    for r in rows:
        if any(r.get(c) is None for c in REQUIRED):
            rules.add(Rule.NULL_REQUIRED)
        for col, allowed, rule in _ENUM_COLUMNS:
            if r.get(col) is not None and r.get(col) not in allowed:
                rules.add(rule)
        value = r.get(VALUE)
        if value is not None and not math.isfinite(value):
            rules.add(Rule.NON_FINITE_VALUE)
        reported = r.get(REPORTED_SCORE)
        if r.get(KIND) == EPISODE_END and reported is not None and not math.isfinite(reported):
            rules.add(Rule.NON_FINITE_VALUE)
        elif r.get(KIND) == EPISODE_END and reported is not None and not 0 <= reported <= 1:
            rules.add(Rule.REPORTED_SCORE_OUT_OF_RANGE)

    # Identity.
    if _has_repeats([r[TURN] for r in rows if r.get(TURN) is not None]):
        rules.add(Rule.DUPLICATE_TURN)
    for col in EPISODE_CONSTANT:
        if len({r[col] for r in rows if r.get(col) is not None}) > 1:
            rules.add(Rule.INCONSISTENT_FIELD)
    categories = {r.get(CATEGORY) for r in rows}
    category: str | None = None
    if len(categories) == 1:
        only = categories.pop()
        if only is not None and only in {*CATEGORIES, UNCATEGORISED}:
            category = only

    items = _of_kind(rows, ITEM)

    # Start and parameters (parameter checks need exactly one episode_start).
    starts = _of_kind(rows, EPISODE_START)
    params: dict[str, Any] | None = None
    if not starts:
        rules.add(Rule.MISSING_EPISODE_START)
    elif len(starts) > 1:
        rules.add(Rule.MULTIPLE_EPISODE_START)
    else:
        obj = _parse_object(starts[0].get(PARAMS_COLUMN))
        if obj is None:
            rules.add(Rule.PARAMS_NOT_OBJECT)
        elif category is not None:
            params, param_rules = _resolve_params(category, obj, len(items))
            rules |= param_rules

    # Items and answers (category-independent).
    item_ids = [it.get(ITEM_ID) for it in items]
    named_ids = [i for i in item_ids if i is not None]
    if None in item_ids:
        rules.add(Rule.ITEM_WITHOUT_ID)
    if _has_repeats(named_ids):
        rules.add(Rule.DUPLICATE_ITEM_ID)
    for it in items:
        expected = it.get(EXPECTED)
        if expected is None or expected.strip() == "":
            rules.add(Rule.EMPTY_EXPECTED)
        if it.get(MATCH) == INTEGER and expected is not None and not is_integer_literal(expected):
            rules.add(Rule.INTEGER_EXPECTED_NOT_INTEGER)
    recorded_ids = {it.get(ITEM_ID) for it in items if it.get(MATCH) == RECORDED}
    for a in _of_kind(rows, ANSWER):
        if a.get(ITEM_ID) is None or a.get(ITEM_ID) not in named_ids:
            rules.add(Rule.ANSWER_UNKNOWN_ITEM)
        if a.get(ITEM_ID) in recorded_ids and a.get(VERDICT) is None:
            rules.add(Rule.RECORDED_WITHOUT_VERDICT)

    # Rounds (the count only for procedural learning).
    round_ends = _of_kind(rows, ROUND_END)
    for r in round_ends:
        value = r.get(VALUE)
        if value is None:
            rules.add(Rule.ROUND_MISSING_VALUE)
        elif not 0.0 <= value <= 1.0:  # NaN and infinities are outside too
            rules.add(Rule.ROUND_VALUE_OUT_OF_RANGE)
        if r.get(ROUND) is None:
            rules.add(Rule.ROUND_MISSING_NUMBER)
    if _has_repeats([r[ROUND] for r in round_ends if r.get(ROUND) is not None]):
        rules.add(Rule.DUPLICATE_ROUND)

    # Category-specific counts (need the category; those against a parameter need it valid).
    if category in NEEDS_ITEMS and not items:
        rules.add(Rule.NO_ITEMS)
    if category in CONCEPT_LIKE and params is not None:
        if "num_test_items" in params and len(items) > params["num_test_items"]:
            rules.add(Rule.TOO_MANY_ITEMS)
        if "max_examples" in params and len(_of_kind(rows, EXAMPLE)) > params["max_examples"]:
            rules.add(Rule.TOO_MANY_EXAMPLES)
    if (
        category == PROCEDURAL
        and params is not None
        and "practice_rounds" in params
        and len(round_ends) != params["practice_rounds"]
    ):
        rules.add(Rule.WRONG_ROUND_COUNT)

    if _reported_alone(rows) is not None:
        rules -= _INPUT_RULES
    elif category == UNCATEGORISED:  # contract 1.4: no formula scores a task in no category
        rules.add(Rule.UNCATEGORISED_NOT_REPORTED)
    return rules, category, params


def _is_harness_error(rows: list[Row]) -> bool:
    return any(r.get(STATUS) == ERROR for r in _of_kind(rows, EPISODE_END))


# --- scoring of a valid episode


def _grade_items(rows: list[Row], category: str) -> list[tuple[bool, float, bool | None]]:
    """(right, positional, the recorded verdict where it disagrees or not: None where there
    is no verdict to compare) per item, items in turn order; rows are sorted by turn."""
    latest: dict[str, Row] = {}  # item_id -> its highest-turn answer
    for r in _of_kind(rows, ANSWER):
        latest[r[ITEM_ID]] = r
    graded = []
    for it in _of_kind(rows, ITEM):
        mode = it.get(MATCH) or DEFAULT_MATCH[category]
        last = latest.get(it[ITEM_ID])
        content = "" if last is None or last.get(CONTENT) is None else last[CONTENT]
        verdict = None if last is None else last.get(VERDICT)
        if mode == RECORDED:  # unanswered: wrong; answered: its verdict (never null here)
            right = verdict is True
            disagrees = None
        else:
            right = last is not None and grade(mode, it[EXPECTED], content)
            disagrees = None if verdict is None else verdict != right
        graded.append((right, positional(it[EXPECTED], content), disagrees))
    return graded


def _score_runtime_rl(rows: list[Row], params: dict[str, Any], out: dict[str, Any]) -> None:
    actions = 0
    step_y: int | None = None  # actions before the first solving feedback
    values: list[float] = []  # non-null feedback values, by turn
    for r in rows:
        if r.get(KIND) == ACTION:
            actions += 1
        elif r.get(KIND) == FEEDBACK:
            if r.get(SOLVED) is True and step_y is None:
                step_y = actions
            if r.get(VALUE) is not None:
                values.append(r[VALUE])
    solved = step_y is not None
    if not values:
        raw_progress = 0.0
    elif params["progress"] == "max":
        raw_progress = max(values)
    else:
        raw_progress = values[-1]
    args = (solved, step_y or 0, params["budget"], params["min_explore"], raw_progress)
    floor = float(params["floor"])
    eff, progress = f.composite_parts(*args, floor=floor)
    out.update(
        success=solved,
        steps=step_y,
        efficiency=eff,
        progress=progress,
        score=f.composite_score(*args, floor=floor),
    )


def _score(rows: list[Row], category: str, params: dict[str, Any], version: str) -> dict[str, Any]:
    rows = _by_turn(rows)
    out: dict[str, Any] = dict.fromkeys(SCORE_FIELDS)
    first = rows[0]
    start = _of_kind(rows, EPISODE_START)[0]  # exactly one: the episode is scored
    instance = start.get(INSTANCE_ID)
    out.update(
        run_id=first[RUN_ID],
        model=first[MODEL],
        task=first[TASK],
        category=category,
        # An integer id reads as its decimal text; absent or null: not shared.
        instance_id=None if instance is None else str(instance),
        # Contract 1.4: read on the episode_start row. Which single runs a later one
        # replaces is a rule of the whole night (tests/flows/test_replaced_runs.py).
        single_run_started=start.get(c.SINGLE_RUN_STARTED),
        source_names=start.get(c.SOURCE_NAMES),  # 1.5: kept as the source wrote it
        dump_date=first.get(DUMP_DATE),
        formula_version=version,
        n_rows=len(rows),
        # Contract: a feedback value outside [0, 1] is legal but counted as a warning.
        feedback_out_of_range=sum(
            1
            for r in _of_kind(rows, FEEDBACK)
            if r.get(VALUE) is not None and not 0.0 <= r[VALUE] <= 1.0
        ),
    )
    alone = _reported_alone(rows)
    if alone is not None:  # its score is the one reported; no formula, no component
        out.update(score=alone, formula_version=REPORTED_VERSION)
        return _with_usage(rows, _with_reported(rows, out))
    if category == RUNTIME_RL:
        _score_runtime_rl(rows, params, out)
        return _with_usage(rows, _with_reported(rows, out))

    graded = _grade_items(rows, category)
    compared = [d for _, _, d in graded if d is not None]
    out["verdict_mismatches"] = sum(compared) if compared else None
    correct = len([1 for right, _, _ in graded if right])
    n_items = len(graded)
    out.update(correct_count=correct, n_items=n_items, accuracy=correct / n_items)
    if category in (c.ASSOCIATIVE, c.OBSERVATIONAL):
        out["score"] = correct / n_items
        if category == c.OBSERVATIONAL:
            out["positional"] = f.mean([pos for _, pos, _ in graded])
    elif category in CONCEPT_LIKE:
        examples_used = len(_of_kind(rows, EXAMPLE))
        p = params
        out.update(
            accuracy=correct / p["num_test_items"],
            examples_used=examples_used,
            efficiency=f.concept_efficiency(
                examples_used, p["max_examples"], p["initial_examples"], p["free_threshold"]
            ),
            score=f.concept_score(
                correct,
                examples_used,
                p["max_examples"],
                p["initial_examples"],
                p["num_test_items"],
                p["free_threshold"],
            ),
        )
    else:  # procedural learning
        round_ends = sorted(_of_kind(rows, ROUND_END), key=lambda r: r[ROUND])
        round_scores = [r[VALUE] for r in round_ends]
        test_score = correct / n_items
        asymptote, trajectory, consistency = f.procedural_parts(round_scores)
        if version == "v3":  # the trajectory the task files compute: rounded
            trajectory = round(trajectory, 4)
        score_fn = _PROCEDURAL_SCORES[version]
        out.update(
            transfer=test_score,
            asymptote=asymptote,
            trajectory=trajectory,
            consistency=consistency,
            score=score_fn(round_scores, test_score),
        )
    return _with_usage(rows, _with_reported(rows, out))


def _beyond(value: float, bound: float) -> bool:
    """A usage value no call can have (contract 1.4): outside [0, bound], or not a number."""
    return not (0 <= value <= bound)  # NaN compares false


def usage_refusal(rows: list[Row]) -> tuple[int, str, float, int] | None:
    """Contract 1.4, ``rows`` in turn order: where some assistant row carries a usage value
    beyond its bound, (the first such row's turn, its first such column, the value, how
    many more such rows); None where every value is within bounds."""
    bad = [
        (r[TURN], column, r[column])
        for r in rows
        if r.get(ROLE) == "assistant"
        for column in c.USAGE_COLUMNS
        if r.get(column) is not None and _beyond(r[column], c.USAGE_MAXIMA[column])
    ]
    if not bad:
        return None
    rows_bad = len({turn for turn, _, _ in bad})
    return (*bad[0], rows_bad - 1)


def _with_usage(rows: list[Row], out: dict[str, Any]) -> dict[str, Any]:
    """Contract 1.3, ``rows`` in turn order: each usage column summed over the assistant rows
    that carry it, left to right (null where none does); where some carries usage, the
    replies (assistant ``message`` or ``action`` rows with content) that carry none, and
    the calls (the rows that carry usage and those replies). 1.4: a value beyond its bound
    refuses all of the episode's usage (null), and says why."""
    mine = [r for r in rows if r.get(ROLE) == "assistant"]
    if not any(r.get(u) is not None for r in mine for u in c.USAGE_COLUMNS):
        return out
    refusal = usage_refusal(rows)
    if refusal is not None:
        turn, column, value, more = refusal
        also = f" (and {more} more assistant row(s))" if more else ""
        bound = c.USAGE_MAXIMA[column]
        out["usage_refused"] = (
            f"{c.USAGE_INVALID}: turn {turn}: {column} = {value!r}, outside [0, {bound:.15g}]{also}"
        )
        return out
    for column in c.USAGE_COLUMNS:
        total = None
        for r in mine:
            if r.get(column) is not None:
                total = r[column] if total is None else total + r[column]  # no compensation
        out[column] = total
    out["replies_without_usage"] = sum(
        1
        for r in mine
        if r.get(KIND) in (c.MESSAGE, ACTION)
        and r.get(CONTENT) is not None
        and all(r.get(u) is None for u in c.USAGE_COLUMNS)
    )
    # The calls: every assistant row that carries usage (the call behind it), and every
    # reply that carries none.
    priced = sum(1 for r in mine if any(r.get(u) is not None for u in c.USAGE_COLUMNS))
    out["calls"] = priced + out["replies_without_usage"]
    out["wall_ms"] = _wall_ms(rows)
    return out


def _wall_ms(rows: list[Row]) -> float | None:
    """The harness's wall time of an episode that records usage: from its ``episode_start``
    row's ``ts`` to its ``episode_end`` row's (the earliest start, the latest end), in
    whole milliseconds (the part of one left out); None where either has none, or the end
    comes before the start. A time without a zone is UTC's."""

    def utc(when: datetime) -> datetime:
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)

    starts = [utc(r[TS]) for r in _of_kind(rows, EPISODE_START) if r.get(TS) is not None]
    ends = [utc(r[TS]) for r in _of_kind(rows, EPISODE_END) if r.get(TS) is not None]
    if not starts or not ends:
        return None
    span = max(ends) - min(starts)
    return None if span < timedelta(0) else float(span // timedelta(milliseconds=1))


def _with_reported(rows: list[Row], out: dict[str, Any]) -> dict[str, Any]:
    """The harness's reported score (the last non-null one on an ``episode_end`` row) and
    whether the score differs from it: float64 inequality, nothing rounded (README)."""
    reported = [
        r[REPORTED_SCORE] for r in _of_kind(rows, EPISODE_END) if r.get(REPORTED_SCORE) is not None
    ]
    if reported:
        out["reported_score"] = reported[-1]
        out["score_mismatch"] = out["score"] != reported[-1]
    return out


# --- the whole dump


def _versions(formulas: dict[str, str] | None) -> dict[str, str]:
    """Category and ``category/task`` keys to versions: defaults, then ``formulas`` (a
    ``category/*`` key gives the category and every task of it that version)."""
    chosen = {c: versions[0] for c, versions in FORMULA_VERSIONS.items()} | TASK_VERSIONS
    for name, version in (formulas or {}).items():
        category, _, task = str(name).partition("/")
        if category not in FORMULA_VERSIONS:
            raise ValueError(f"unknown category {category!r}")
        if version not in FORMULA_VERSIONS[category]:
            raise ValueError(f"no formula {version!r} for {category}")
        if task == "*":
            chosen = {k: v for k, v in chosen.items() if not k.startswith(category + "/")}
            chosen[category] = version
        else:
            chosen[str(name)] = version
    return chosen


def _version(versions: dict[str, str], category: str, task: str) -> str:
    # (an uncategorised episode is a reported score alone: ``_score`` never asks its version)
    return versions.get(f"{category}/{task}", versions.get(category, REPORTED_VERSION))


def _reject(rows: list[Row], rules: set[str], status: str) -> dict[str, Any]:
    return {
        "status": status,
        "rules": rules,
        "rows": len(rows),
        "model": _first_non_null(rows, MODEL),
        "task": _first_non_null(rows, TASK),
        "category": _first_non_null(rows, CATEGORY),
        "dump_date": rows[0].get(DUMP_DATE),
    }


def _night(file: str) -> str | None:
    """The dump_date of a file, from its ``dump_date=…`` folder."""
    folders = file.split("/")[:-1]
    return next((f.split("=", 1)[1] for f in folders if f.startswith("dump_date=")), None)


def reference_score(rows: list[Row], formulas: dict[str, str] | None = None) -> ReferenceResult:
    versions = _versions(formulas)
    episodes: dict[tuple[str | None, str], list[Row]] = {}
    for row in rows:
        episodes.setdefault((row.get(EPISODE_ID), row[FILE]), []).append(row)
    # README: episode ids must be unique within a night (a dump_date folder, or the whole
    # dump where there is none), so that each night is scored on its own.
    files_of: dict[tuple[str | None, str], set[str]] = {}
    for episode_id, file in episodes:
        if episode_id is not None:
            files_of.setdefault((_night(file), episode_id), set()).add(file)

    result = ReferenceResult(rows_read=len(rows))
    for key, ep_rows in episodes.items():
        episode_id, _ = key
        if episode_id is None:  # one bucket per file, not an episode
            result.rejected[key] = _reject(ep_rows, {Rule.NO_EPISODE_ID}, "rejected")
            result.rows_rejected += len(ep_rows)
            continue
        rules, category, params = _check(ep_rows)
        if len(files_of[(_night(key[1]), episode_id)]) > 1:
            rules.add(Rule.DUPLICATE_EPISODE_ACROSS_FILES)
        harness_error = _is_harness_error(ep_rows)
        if harness_error:
            rules.add(Rule.HARNESS_ERROR)
        if rules:
            status = "harness_error" if harness_error else "rejected"
            result.rejected[key] = _reject(ep_rows, rules, status)
            result.rows_rejected += len(ep_rows)
        else:
            assert category is not None and params is not None  # no rule broken
            task = ep_rows[0][TASK]
            result.scored[(episode_id, key[1])] = _score(
                ep_rows, category, params, _version(versions, category, task)
            )
            result.rows_scored += len(ep_rows)
    return result
