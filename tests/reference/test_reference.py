"""Tests of the reference implementation: the seed's tables, match modes, rules, scoring."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference import (
    composite_score,
    concept_score,
    grade,
    positional,
    procedural_composite_score,
    procedural_v1_score,
    reference_score,
)
from tests.reference import contract as c
from tests.reference.contract import FILE_RULES, RULES, Rule

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CONCEPT = json.loads((GOLDEN / "concept_formation.json").read_text())
PROCEDURAL = json.loads((GOLDEN / "procedural_learning.json").read_text())


# --- the seed's tables


@pytest.mark.parametrize("case", CONCEPT["rows"], ids=[r["id"] for r in CONCEPT["rows"]])
def test_concept_boundary_table(case: dict[str, Any]) -> None:
    got = concept_score(
        case["correct_count"],
        case["examples_used"],
        CONCEPT["max_examples"],
        CONCEPT["initial_examples"],
        CONCEPT["num_test_items"],
        CONCEPT["free_threshold"],
    )
    assert round(got, CONCEPT["decimals"]) == pytest.approx(case["score"], abs=1e-9)


@pytest.mark.parametrize("case", PROCEDURAL["rows"], ids=[r["id"] for r in PROCEDURAL["rows"]])
def test_procedural_table(case: dict[str, Any]) -> None:
    test = PROCEDURAL["test_score"]
    assert round(procedural_composite_score(case["round_scores"], test), 2) == pytest.approx(
        case["new"]
    )
    assert round(procedural_v1_score(case["round_scores"], test), 2) == pytest.approx(case["old"])


def test_procedural_ranking() -> None:
    by_id = {r["id"]: r["round_scores"] for r in PROCEDURAL["rows"]}
    by_id["static"] = PROCEDURAL["erratum"]["round_scores"]
    scores = [
        procedural_composite_score(by_id[i], PROCEDURAL["test_score"])
        for i in PROCEDURAL["ranking"]
    ]
    assert scores[0] > scores[1] > scores[2]


@pytest.mark.parametrize("version", ["new", "old"])
def test_seed_static_row_erratum(version: str) -> None:
    """The seed prints 0.37 / 0.48 for Static; its own formula gives ~0.496 / ~0.547 (contract)."""
    erratum = PROCEDURAL["erratum"]
    fn = procedural_composite_score if version == "new" else procedural_v1_score
    got = fn(erratum["round_scores"], PROCEDURAL["test_score"])
    assert abs(got - erratum["seed_printed"][version]) > 0.05
    assert got == pytest.approx(erratum["contract"][version], abs=5e-4)


def test_procedural_zero_guard_and_single_round() -> None:
    assert (
        procedural_composite_score([0.0, 0.0, 0.0], 0.0) == 0.0
    )  # else trajectory would add 0.125
    # One round: asymptote 0.4, trajectory 0.5 (flat), consistency 0.4:
    # 0.25 x 0.4 + 0.25 x 0.5 + 0.20 x 0.4 = 0.1 + 0.125 + 0.08.
    assert procedural_composite_score([0.4], 0.0) == pytest.approx(0.305, abs=1e-12)


def test_composite_score_hand_values() -> None:
    assert composite_score(True, 3, 20, 2, 0.5) == 0.8875  # eff = 1 - 0.9 / 18 = 0.95
    assert composite_score(True, 20, 20, 7, 0.0) == 0.575  # 0.55 + 0.25 x floor 0.10
    assert composite_score(True, 0, 20, 7, 2.0) == 1.0  # step_y clamped to 1; progress to 1
    assert composite_score(False, 0, 20, 7, 0.3) == 0.06


# --- match modes: the verdicts of tests/golden/matching.json are pinned in
# tests/transforms/test_matching_golden.py, for the reference and the vectorised matcher alike.


def test_integer_literals_beyond_int_digit_limit() -> None:
    """int() refuses more than 4300 digits; the contract's literal comparison does not."""
    huge = "9" * 5000
    assert grade("integer", huge, "+000" + huge)
    assert not grade("integer", huge, "-" + huge)
    assert not grade("integer", huge, huge + "9")


@given(
    st.integers(-(10**30), 10**30), st.integers(-(10**30), 10**30), st.integers(0, 3), st.booleans()
)
def test_integer_equality_is_int_equality(a: int, b: int, zeros: int, plus: bool) -> None:
    """Two respellings of Python ints (sign, leading zeros) match exactly when a == b."""
    b_text = ("+" if plus and b >= 0 else "") + ("-" if b < 0 else "") + "0" * zeros + str(abs(b))
    assert grade("integer", str(a), b_text) is (a == b)


def test_positional() -> None:
    assert positional("a b c", "a x c") == 2 / 3
    assert positional("a b", "") == 0.0
    assert positional("a b", "a b c d") == 1.0
    assert positional("a b c", "a\x1cb") == 2 / 3


# --- row builders

FILE = "dump_date=2026-12-01/part-0.parquet"
KEY = ("e1", FILE)
OTHER = "dump_date=2026-12-01/other.parquet"  # another file of the same night
CONCEPT_PARAMS = '{"initial_examples": 3, "max_examples": 16}'


def row(kind: str, role: str = "environment", **cols: Any) -> dict[str, Any]:
    return {"kind": kind, "role": role, **cols}


def item(item_id: str | None, expected: str | None, match: str | None = None) -> dict[str, Any]:
    return row("item", item_id=item_id, expected=expected, match=match)


def answer(item_id: str | None, content: str | None) -> dict[str, Any]:
    return row("answer", "assistant", item_id=item_id, content=content)


def round_end(number: int | None, value: float | None) -> dict[str, Any]:
    return row("round_end", round=number, value=value)


def feedback(value: float | None = None, solved: bool | None = None) -> dict[str, Any]:
    return row("feedback", value=value, solved=solved)


ACTION = row("action", "assistant")
EXAMPLE = row("example")


def episode(
    category: str,
    *body: dict[str, Any],
    params: str | None = "{}",
    start: bool = True,
    episode_id: str | None = "e1",
    file: str = FILE,
) -> list[dict[str, Any]]:
    """Rows of one episode, turns 0.. in order; a body row's own keys override the defaults."""
    rows = ([row("episode_start", params=params)] if start else []) + list(body)
    base = {
        "run_id": "r1",
        "episode_id": episode_id,
        "model": "m",
        "task": "t",
        "category": category,
        "file": file,
        "dump_date": "2026-12-01",
    }
    return [base | {"turn": turn} | r for turn, r in enumerate(rows)]


def assoc(*extra: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    return episode("associative_learning", item("q1", "yes"), answer("q1", "yes"), *extra, **kw)


def concept(
    *extra: dict[str, Any], params: str = CONCEPT_PARAMS, examples: int = 5, **kw: Any
) -> list[dict[str, Any]]:
    items = [item(f"q{i}", f"out{i}") for i in range(4)]
    return episode("concept_formation", *[EXAMPLE] * examples, *items, *extra, params=params, **kw)


def rl(*extra: dict[str, Any], params: str = '{"budget": 20}') -> list[dict[str, Any]]:
    return episode("runtime_rl", ACTION, feedback(0.5, True), *extra, params=params)


def procedural(*rounds: dict[str, Any], params: str = "{}") -> list[dict[str, Any]]:
    if not rounds:
        rounds = tuple(round_end(n, 0.5) for n in range(1, 6))
    return episode(
        "procedural_learning", *rounds, item("t1", "x"), answer("t1", "x"), params=params
    )


def rounds(
    *values: float | None, numbers: tuple[int | None, ...] = (1, 2, 3, 4, 5)
) -> list[dict[str, Any]]:
    return [round_end(n, v) for n, v in zip(numbers, values, strict=False)]


# --- one rejection test (or more) per rule

R = Rule
FIVE = (0.1, 0.2, 0.3, 0.4, 0.5)
REJECTIONS = [
    ("null-model", assoc(row("message", model=None)), {R.NULL_REQUIRED}),
    ("null-turn", assoc(row("message", turn=None)), {R.NULL_REQUIRED}),
    ("unknown-category", episode("telepathy", item("q", "x")), {R.UNKNOWN_CATEGORY}),
    (  # contract 1.4: a task in no category is a reported score alone
        "uncategorised-with-inputs",
        episode("uncategorised", item("q", "x"), row("episode_end", reported_score=0.5)),
        {R.UNCATEGORISED_NOT_REPORTED},
    ),
    ("unknown-role", assoc(row("message", "narrator")), {R.UNKNOWN_ROLE}),
    ("unknown-kind", assoc(row("thought")), {R.UNKNOWN_KIND}),
    ("unknown-match", assoc(item("q2", "x", "regex")), {R.UNKNOWN_MATCH}),
    ("duplicate-turn", assoc(row("message", turn=1)), {R.DUPLICATE_TURN}),
    ("inconsistent-run", assoc(row("message", run_id="r2")), {R.INCONSISTENT_FIELD}),
    # An inconsistent category skips the category's checks (here: too many examples, no items).
    (
        "inconsistent-category",
        episode(
            "concept_formation",
            *[EXAMPLE] * 30,
            row("message", category="language_learning"),
            params=CONCEPT_PARAMS,
        ),
        {R.INCONSISTENT_FIELD},
    ),
    # A missing episode_start skips every check against a parameter.
    ("missing-start", concept(*[EXAMPLE] * 30, start=False), {R.MISSING_EPISODE_START}),
    (
        "missing-start-rounds",
        procedural(round_end(1, 0.5), params="{}")[1:],
        {R.MISSING_EPISODE_START},
    ),
    ("multiple-start", assoc(row("episode_start", params="{}")), {R.MULTIPLE_EPISODE_START}),
    ("params-array", assoc(params="[1, 2]"), {R.PARAMS_NOT_OBJECT}),
    ("params-null", assoc(params=None), {R.PARAMS_NOT_OBJECT}),
    ("params-bad-json", rl(params='{"budget": 20'), {R.PARAMS_NOT_OBJECT}),
    ("params-missing", concept(params='{"initial_examples": 3}'), {R.PARAMS_MISSING}),
    ("params-float-for-int", rl(params='{"budget": 20.0}'), {R.PARAMS_WRONG_TYPE}),
    ("params-bool-for-int", rl(params='{"budget": true}'), {R.PARAMS_WRONG_TYPE}),
    ("params-int-beyond-int32", rl(params='{"budget": 2147483648}'), {R.PARAMS_INVALID_VALUE}),
    (
        "params-int-5000-digits",
        rl(params='{"budget": ' + "9" * 5000 + "}"),
        {R.PARAMS_INVALID_VALUE},
    ),
    ("params-nan-floor", rl(params='{"budget": 20, "floor": NaN}'), {R.PARAMS_INVALID_VALUE}),
    ("params-huge-floor", rl(params='{"budget": 20, "floor": 1e400}'), {R.PARAMS_INVALID_VALUE}),
    (
        "params-progress-mode",
        rl(params='{"budget": 20, "progress": "min"}'),
        {R.PARAMS_INVALID_VALUE},
    ),
    ("params-progress-number", rl(params='{"budget": 20, "progress": 1}'), {R.PARAMS_WRONG_TYPE}),
    ("params-null-value", rl(params='{"budget": 20, "min_explore": null}'), {R.PARAMS_WRONG_TYPE}),
    ("params-budget-0", rl(params='{"budget": 0}'), {R.PARAMS_INVALID_VALUE}),
    (
        "params-practice-rounds-0",
        procedural(params='{"practice_rounds": 0}'),
        {R.PARAMS_INVALID_VALUE},
    ),
    ("item-without-id", assoc(item(None, "x")), {R.ITEM_WITHOUT_ID}),
    ("duplicate-item-id", assoc(item("q1", "no")), {R.DUPLICATE_ITEM_ID}),
    ("blank-expected", assoc(item("q2", " \x1c\u00a0")), {R.EMPTY_EXPECTED}),
    ("null-expected", assoc(item("q2", None)), {R.EMPTY_EXPECTED}),
    ("integer-arabic-indic", assoc(item("q2", "٨٨", "integer")), {R.INTEGER_EXPECTED_NOT_INTEGER}),
    ("integer-decimal", assoc(item("q2", "12.0", "integer")), {R.INTEGER_EXPECTED_NOT_INTEGER}),
    ("answer-unknown-item", assoc(answer("zz", "x")), {R.ANSWER_UNKNOWN_ITEM}),
    ("answer-null-item", assoc(answer(None, "x")), {R.ANSWER_UNKNOWN_ITEM}),
    (
        "no-items",
        episode("associative_learning", answer("q1", "x")),
        {R.NO_ITEMS, R.ANSWER_UNKNOWN_ITEM},
    ),
    (
        "too-many-items",
        concept(params='{"initial_examples": 3, "max_examples": 16, "num_test_items": 3}'),
        {R.TOO_MANY_ITEMS},
    ),
    ("too-many-examples", concept(examples=17), {R.TOO_MANY_EXAMPLES}),
    ("non-finite-message", assoc(row("message", value=math.inf)), {R.NON_FINITE_VALUE}),
    ("non-finite-feedback", rl(feedback(math.nan)), {R.NON_FINITE_VALUE}),
    (
        "non-finite-reported-score",
        assoc(row("episode_end", status="completed", reported_score=math.inf)),
        {R.NON_FINITE_VALUE},
    ),
    (
        "reported-score-above-one",
        assoc(row("episode_end", status="completed", reported_score=1.5)),
        {R.REPORTED_SCORE_OUT_OF_RANGE},
    ),
    (
        "reported-score-below-zero",
        assoc(row("episode_end", status="completed", reported_score=-0.2)),
        {R.REPORTED_SCORE_OUT_OF_RANGE},
    ),
    (
        "recorded-answer-without-verdict",
        assoc(item("r1", "x", "recorded"), answer("r1", "x")),
        {R.RECORDED_WITHOUT_VERDICT},
    ),
    (
        "non-finite-round",
        procedural(*rounds(0.1, 0.2, math.nan, 0.4, 0.5)),
        {R.NON_FINITE_VALUE, R.ROUND_VALUE_OUT_OF_RANGE},
    ),
    (
        "round-out-of-range",
        procedural(*rounds(0.1, 0.2, 1.5, 0.4, 0.5)),
        {R.ROUND_VALUE_OUT_OF_RANGE},
    ),
    ("round-out-of-range-assoc", assoc(round_end(1, -0.1)), {R.ROUND_VALUE_OUT_OF_RANGE}),
    ("round-missing-value", procedural(*rounds(0.1, 0.2, None, 0.4, 0.5)), {R.ROUND_MISSING_VALUE}),
    (
        "round-missing-number",
        procedural(*rounds(*FIVE, numbers=(1, 2, None, 4, 5))),
        {R.ROUND_MISSING_NUMBER},
    ),
    ("duplicate-round", procedural(*rounds(*FIVE, numbers=(1, 2, 3, 3, 5))), {R.DUPLICATE_ROUND}),
    ("wrong-round-count", procedural(*rounds(0.1, 0.2, 0.3, 0.4)), {R.WRONG_ROUND_COUNT}),
    ("wrong-round-count-param", procedural(params='{"practice_rounds": 4}'), {R.WRONG_ROUND_COUNT}),
]


def _reply(**usage: Any) -> dict[str, Any]:
    return row("message", "assistant", content="x", **usage)


@pytest.mark.parametrize(
    ("rows", "refused"),
    [
        (assoc(_reply(input_tokens=-1)), "input_tokens = -1, outside [0, 1000000000]"),
        (assoc(_reply(cost_usd=math.nan)), "cost_usd = nan, outside [0, 1000]"),
        (rl(row("action", "assistant", latency_ms=math.inf)), "latency_ms = inf, outside"),
        (assoc(_reply(output_tokens=10**9 + 1, cost_usd=-1.0)), "output_tokens = 1000000001,"),
        (assoc(_reply(cost_usd=1e308), _reply(cost_usd=1e308)), "cost_usd = 1e+308, outside"),
        (assoc(_reply(input_tokens=10**9, cost_usd=1000.0, latency_ms=6.048e8)), None),
    ],
    ids=["negative", "nan", "infinite", "above", "two-rows", "at-the-bounds"],
)
def test_usage_beyond_its_bounds_is_refused_and_the_episode_scored(
    rows: list[dict[str, Any]], refused: str | None
) -> None:
    """Contract 1.4: a usage value outside [0, its bound] refuses the episode's usage (every
    measure null, and why: the first such row's turn, column and value), never the episode
    (1.3 rejected it); a value at its bound is kept."""
    result = reference_score(rows)
    assert not result.rejected
    out = result.scored[KEY]
    assert out["score"] is not None
    if refused is None:
        assert out["usage_refused"] is None
        assert (out["input_tokens"], out["cost_usd"]) == (10**9, 1000.0)
        return
    assert out["usage_refused"].startswith(f"usage_invalid: turn 3: {refused}")
    assert all(out[column] is None for column in (*c.USAGE_COLUMNS, "replies_without_usage"))
    two = sum(r.get("cost_usd") == 1e308 for r in rows) == 2  # the second row counted
    assert out["usage_refused"].endswith(" (and 1 more assistant row(s))") is two


@pytest.mark.parametrize(
    ("rows", "rules"), [c[1:] for c in REJECTIONS], ids=[c[0] for c in REJECTIONS]
)
def test_rejection(rows: list[dict[str, Any]], rules: set[str]) -> None:
    result = reference_score(rows)
    assert not result.scored
    assert result.rejected[KEY]["rules"] == rules
    assert result.rejected[KEY]["status"] == "rejected"
    assert result.rejected[KEY]["rows"] == len(rows) == result.rows_rejected


def test_no_episode_id_is_a_bucket_per_file() -> None:
    rows = assoc(row("message", episode_id=None), row("message", episode_id=None, model="other"))
    result = reference_score(rows)
    assert result.rejected == {
        (None, FILE): {
            "status": "rejected",
            "rules": {R.NO_EPISODE_ID},
            "rows": 2,
            "model": "m",
            "task": "t",
            "category": "associative_learning",
            "dump_date": "2026-12-01",
        }
    }
    assert KEY in result.scored and result.rows_scored == 3


def test_an_id_may_repeat_on_another_night() -> None:
    result = reference_score(assoc() + assoc(file="dump_date=2026-12-02/part-0.parquet"))
    assert not result.rejected and len(result.scored) == 2


def test_duplicate_episode_across_files() -> None:
    result = reference_score(assoc() + assoc(file=OTHER))
    assert set(result.rejected) == {KEY, ("e1", OTHER)}
    assert all(r["rules"] == {R.DUPLICATE_EPISODE_ACROSS_FILES} for r in result.rejected.values())


def test_harness_error() -> None:
    result = reference_score(assoc(row("episode_end", status="error")))
    assert result.rejected[KEY]["status"] == "harness_error"
    assert result.rejected[KEY]["rules"] == {R.HARNESS_ERROR}
    both = reference_score(assoc(row("episode_end", status="error"), row("thought")))
    assert both.rejected[KEY]["rules"] == {R.HARNESS_ERROR, R.UNKNOWN_KIND}
    assert not reference_score(assoc(row("episode_end", status="completed"))).rejected


def test_every_row_rule_is_tested() -> None:
    tested = {rule for c in REJECTIONS for rule in c[2]}
    tested |= {R.NO_EPISODE_ID, R.DUPLICATE_EPISODE_ACROSS_FILES, R.HARNESS_ERROR}
    assert tested == RULES - FILE_RULES  # file rules are not row-level: no dicts to check


# --- scoring


def test_associative_latest_answer_by_turn_not_file_order() -> None:
    rows = episode(
        "associative_learning",
        item("q1", "UNKNOWN"),
        item("q2", "3", "integer"),
        item("q3", "no"),
        answer("q1", "wrong"),
        answer("q2", " 03 "),
        answer("q1", "Plex is unknown"),
    )
    rows.reverse()
    out = reference_score(rows).scored[KEY]
    assert (out["correct_count"], out["n_items"], out["score"], out["accuracy"]) == (
        2,
        3,
        2 / 3,
        2 / 3,
    )
    assert (
        out["formula_version"] == "v1" and out["n_rows"] == 7 and out["dump_date"] == "2026-12-01"
    )


def test_observational_positional_and_default_sequence_match() -> None:
    rows = episode(
        "observational_learning",
        item("a", "1 0 1"),
        item("b", "x y"),
        item("c", "p q"),
        answer("a", "1 1 1"),
        answer("b", "x\u00a0 y"),
    )
    out = reference_score(rows).scored[KEY]
    assert out["score"] == 1 / 3 and out["positional"] == ((0.0 + 2 / 3) + 1.0 + 0.0) / 3


def test_concept_and_language_learning() -> None:
    rows = concept(answer("q0", "out0"), answer("q1", "OUT1"), answer("q2", "nope"), examples=6)
    out = reference_score(rows).scored[KEY]
    eff = 1.0 - 2 / 12  # effective free zone max(3, 4) = 4; 6 used
    assert (out["examples_used"], out["accuracy"], out["efficiency"]) == (6, 0.5, eff)
    # 0.5 x (0.40 + 0.60 x 10/12) = 0.5 x 0.9
    assert out["score"] == pytest.approx(0.45, abs=1e-12) and out["correct_count"] == 2
    zero = reference_score(concept(examples=16)).scored[KEY]
    assert (zero["score"], zero["efficiency"]) == (0.0, 0.0)
    lang = episode(
        "language_learning",
        item("w", "e\u0301ka"),
        answer("w", " \u00e9ka"),
        params='{"initial_examples": 3, "max_examples": 16, "num_test_items": 4}',
    )
    out = reference_score(lang).scored[KEY]
    assert (out["accuracy"], out["score"]) == (0.25, 0.25)  # nfc default; 1 of num_test_items = 4


def test_runtime_rl() -> None:
    body = (
        ACTION,
        feedback(0.2),
        ACTION,
        feedback(0.5),
        ACTION,
        feedback(0.4, True),
        ACTION,
        feedback(0.1),
    )
    out = reference_score(
        episode("runtime_rl", *body, params='{"budget": 20, "min_explore": 2}')
    ).scored[KEY]
    assert (out["success"], out["steps"], out["efficiency"], out["progress"]) == (
        True,
        3,
        1.0 - 0.9 * (1 / 18),
        0.5,
    )
    assert out["score"] == 0.8875 and out["correct_count"] is None
    last = episode(
        "runtime_rl",
        *body,
        feedback(None),
        params='{"budget": 20, "min_explore": 2, "progress": "last"}',
    )
    # last non-null progress 0.1: 0.55 + 0.25 x 0.95 + 0.20 x 0.1
    assert reference_score(last).scored[KEY]["score"] == 0.8075
    early = reference_score(
        episode("runtime_rl", feedback(1.7, True), ACTION, params='{"budget": 20}')
    )
    assert (
        early.scored[KEY]["steps"] == 0 and early.scored[KEY]["score"] == 1.0
    )  # clamped to 1 and to 1.0
    unsolved = reference_score(
        episode("runtime_rl", ACTION, feedback(None, None), params='{"budget": 20}')
    )
    got = unsolved.scored[KEY]
    assert (got["success"], got["steps"], got["efficiency"], got["progress"], got["score"]) == (
        False,
        None,
        0.0,
        0.0,
        0.0,
    )


def test_procedural_rounds_ordered_by_round_and_versions() -> None:
    learner = [0.1, 0.3, 0.5, 0.8, 0.9]
    body = [round_end(n, learner[n - 1]) for n in (5, 3, 1, 4, 2)]
    rows = episode(
        "procedural_learning", *body, item("t1", "x"), item("t2", "y"), answer("t1", "x")
    )
    new = reference_score(rows, {"procedural_learning": "v2"}).scored[KEY]
    # The seed's Learner: 0.30 x 0.5 + 0.25 x 0.85 + 0.25 x 0.92 + 0.20 x 9.9/15 (prints 0.72)
    assert new["score"] == pytest.approx(0.7245, abs=1e-12) and new["formula_version"] == "v2"
    # v3 (the default: the task files' rounding) rounds it to 4 places, a tie decided by
    # the binary value, as Python's round does.
    rounded = reference_score(rows).scored[KEY]
    assert rounded["formula_version"] == "v3" and rounded["score"] == round(new["score"], 4)
    plain = reference_score(rows, {"procedural_learning": "v4"}).scored[KEY]
    assert plain["score"] == pytest.approx(sum(learner) / 5 * 0.5 + 0.5 * 0.5, abs=1e-12)
    assert (new["transfer"], new["asymptote"], new["trajectory"]) == (0.5, (0.8 + 0.9) / 2, 0.92)
    old = reference_score(rows, {"procedural_learning": "v1"}).scored[KEY]
    # 0.5 x 0.66 + 0.5 x 0.5 (the seed prints 0.58)
    assert old["score"] == pytest.approx(0.58, abs=1e-12) and old["formula_version"] == "v1"
    with pytest.raises(ValueError):
        reference_score(rows, {"runtime_rl": "v2"})


def test_accounting() -> None:
    rows = assoc() + episode("runtime_rl", ACTION, params='{"budget": 3}', episode_id="e2")
    rows += [*assoc(row("thought"), episode_id="e3"), row("message", episode_id=None, file=FILE)]
    result = reference_score(rows)
    assert result.rows_read == len(rows) == result.rows_scored + result.rows_rejected
    assert set(result.scored) == {KEY, ("e2", FILE)} and set(result.rejected) == {
        ("e3", FILE),
        (None, FILE),
    }
