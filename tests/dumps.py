"""Test dumps: the writer and row builders of ``examples.dumpkit``, plus ``rule_dump``.

``rule_dump()`` returns the rows of a small dump over three files (one hive-partitioned by
``dump_date``) with valid episodes of every category, one or more episodes breaking each
episode-level rule of ``schemas.rules.Rule``, harness errors and an episode duplicated
across two files, together with the rules expected for every episode that must not be
scored, keyed by ``(episode_id, file)`` (``(None, file)`` for rows without an episode_id).
Every episode not in that mapping must be scored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any

from examples.dumpkit import (
    DEFAULT_FILE,
    DEFAULT_PARAMS,
    Row,
    action,
    answer,
    arrow_types,
    episode,
    episode_end,
    episode_start,
    example,
    feedback,
    item,
    message,
    params_json,
    round_end,
    row,
    to_arrow_type,
    write_dump,
)
from schemas.contract import (
    FILE,
    REPORTED_SCORE,
    UNCATEGORISED,
    Category,
    Col,
    Match,
    Role,
    Status,
)
from schemas.rules import Rule

__all__ = [
    "DEFAULT_FILE",
    "DEFAULT_PARAMS",
    "FILE_LEVEL_RULES",
    "RULE_DUMP_FILES",
    "Expected",
    "Row",
    "action",
    "answer",
    "arrow_types",
    "built_counts",
    "episode",
    "episode_end",
    "episode_start",
    "example",
    "example_dump_counts",
    "feedback",
    "item",
    "message",
    "params_json",
    "round_end",
    "row",
    "rule_dump",
    "to_arrow_type",
    "write_dump",
]

Expected = dict[tuple[str | None, str], set[str]]

# Rules about whole files, which rule_dump does not exercise.
FILE_LEVEL_RULES = frozenset({Rule.FILE_UNREADABLE, Rule.MISSING_COLUMN, Rule.WRONG_COLUMN_TYPE})

F0 = "part-0.parquet"
F1 = "part-1.parquet"
FH = "dump_date=2026-12-01/part-0.parquet"
RULE_DUMP_FILES = (F0, F1, FH)

AL = Category.ASSOCIATIVE_LEARNING
CF = Category.CONCEPT_FORMATION
LL = Category.LANGUAGE_LEARNING
OL = Category.OBSERVATIONAL_LEARNING
RL = Category.RUNTIME_RL
PL = Category.PROCEDURAL_LEARNING


def _assoc_turns() -> list[Row]:
    return [
        message(Role.SYSTEM, "Answer each question about the trial log."),
        message(Role.USER, "Trials: Plex+Vorn -> effect; Vorn -> effect; Tesk -> none."),
        item("q1", "UNKNOWN"),
        item("q2", "RULED OUT"),
        item("q3", "1", match=Match.INTEGER),
        answer("q1", "Plex is UNKNOWN (blocked by Vorn)"),
        answer("q2", "Tesk: ruled out"),
        answer("q3", "1"),
        episode_end(),
    ]


def _concept() -> tuple[dict[str, int], list[Row]]:
    params = {"initial_examples": 2, "max_examples": 6, "num_test_items": 2}
    return params, [
        example("f(1) = 5"),
        example("f(2) = 8"),
        message(Role.ASSISTANT, "REQUEST_EXAMPLE"),
        example("f(5) = 17"),
        item("x1", "14", match=Match.INTEGER),
        item("x2", "-1", match=Match.INTEGER),
        answer("x1", "14"),
        answer("x2", "-1"),
        episode_end(),
    ]


def _language() -> tuple[dict[str, int], list[Row]]:
    params = {"initial_examples": 3, "max_examples": 5, "free_threshold": 3}
    return params, [
        example("tiki -> tikinmé"),
        example("paru -> parunmó"),
        example("sel -> selmé"),
        item("w1", "kotomó"),  # null match: nfc
        item("w2", "lirmé", match=Match.NFC),
        answer("w1", "kotomo\u0301"),  # NFD: still right
        answer("w2", "lirmé"),
        episode_end(),
    ]


def _observational_turns() -> list[Row]:
    return [
        example("a b b -> 0 1 1"),
        example("b a -> 1 0"),
        item("s1", "0 1 1 0", match=Match.SEQUENCE),
        item("s2", "1 1"),  # null match: sequence
        answer("s1", " 0  1\t1 0 "),
        answer("s2", "1 0"),
        episode_end(),
    ]


def _rl() -> tuple[dict[str, int], list[Row]]:
    params = {"budget": 8, "min_explore": 3}
    return params, [
        message(Role.USER, "Guess the code."),
        action("RGBY"),
        feedback(0.25, False, content="LOCK 1 DRIFT 2"),
        action("RBGY"),
        feedback(1.0, True, content="LOCK 4"),
        episode_end(),
    ]


def _procedural_turns(rounds: int = 3) -> list[Row]:
    scores = [0.2, 0.5, 0.9, 0.9, 1.0][:rounds]
    return [
        *[round_end(i + 1, s) for i, s in enumerate(scores)],
        item("t1", "4", match=Match.INTEGER),
        item("t2", "sorted"),
        answer("t1", "4"),
        answer("t2", "The list is sorted."),
        episode_end(),
    ]


def rule_dump() -> tuple[list[Row], Expected]:
    """Rows of the rule dump and the rules expected per unscored ``(episode_id, file)``."""
    rows: list[Row] = []
    expected: Expected = {}

    def add(
        category: str,
        episode_id: str | None,
        file: str,
        turns: list[Row],
        rules: set[Rule] | None = None,
        *,
        params: Mapping[str, Any] | str | EllipsisType | None = ...,
        model: str = "m1",
        start: bool = True,
    ) -> None:
        rows.extend(
            episode(
                category,
                episode_id=episode_id,
                file=file,
                turns=turns,
                params=params,
                model=model,
                start=start,
            )
        )
        if rules is not None:
            expected[(episode_id, file)] = set(rules)

    cf_params, cf_turns = _concept()
    ll_params, ll_turns = _language()
    rl_params, rl_turns = _rl()

    # ---- valid episodes: every category, plus legal edge cases
    add(AL, "ok-al", F0, _assoc_turns())
    add(CF, "ok-cf", F0, cf_turns, params=cf_params, model="m2")
    add(OL, "ok-ol", F0, _observational_turns())
    add(LL, "ok-ll", F1, ll_turns, params=ll_params)
    add(RL, "ok-rl", F1, rl_turns, params=rl_params, model="m2")
    add(PL, "ok-pl", FH, _procedural_turns(3), params={"practice_rounds": 3})
    # Integer literal with sign and leading zeros; answer by a `user` role (roles are not
    # checked against kinds); an unanswered item; an answer with null content; an answer
    # given twice (the highest turn counts); an unknown parameter.
    add(
        AL,
        "ok-al-edge",
        F1,
        [
            item("q1", " +088 ", match=Match.INTEGER),
            item("q2", "UNKNOWN"),
            item("q3", "CONFIRMED"),
            answer("q1", "88", role=Role.USER),
            answer("q2", None),
            answer("q3", "UNKNOWN"),
            answer("q3", "CONFIRMED"),
        ],
        params={"seed": 7},
    )
    # Duplicate JSON keys: the last wins (budget 9); a feedback value outside [0, 1] is only
    # a warning; float parameter given as an integer; `progress` "last"; a second
    # episode_end with status completed.
    add(
        RL,
        "ok-rl-edge",
        FH,
        [
            action("up"),
            feedback(1.5, None),
            action("left"),
            feedback(None, True),
            episode_end(),
            episode_end(),
        ],
        params='{"budget": 0, "floor": 0, "progress": "last", "budget": 9}',
    )
    # Default practice_rounds (5), round numbers not 1..n and rows out of turn order.
    add(
        PL,
        "ok-pl-edge",
        FH,
        [
            round_end(50, 1.0, turn=9),
            round_end(10, 0.0, turn=1),
            round_end(30, 0.5, turn=5),
            round_end(20, 0.25, turn=3),
            round_end(40, 0.75, turn=7),
            item("t1", "yes", turn=10),
            answer("t1", "YES", turn=11),
        ],
        params={},
    )
    # Examples == max_examples and fewer items than num_test_items.
    add(
        CF,
        "ok-cf-edge",
        F0,
        [example(f"f({x}) = {2 * x}") for x in range(4)]
        + [item("x1", "20", match=Match.INTEGER), answer("x1", "20")],
        params={"initial_examples": 4, "max_examples": 4, "num_test_items": 4},
    )

    # ---- one broken rule per episode
    add(
        AL,
        "bad-null-turn",
        F0,
        [message(Role.USER, "hello", turn=None), *_assoc_turns()],
        {Rule.NULL_REQUIRED},
    )
    add(
        "quantum_learning",
        "bad-category",
        F0,
        [item("q1", "x"), answer("q1", "x")],
        {Rule.UNKNOWN_CATEGORY},
        params={},
    )
    add(
        AL,
        "bad-role",
        F0,
        [message("narrator", "Once upon a time"), *_assoc_turns()],
        {Rule.UNKNOWN_ROLE},
    )
    add(
        AL,
        "bad-kind",
        F0,
        [row("thought", Role.ASSISTANT, content="hmm"), *_assoc_turns()],
        {Rule.UNKNOWN_KIND},
    )
    add(
        AL,
        "bad-match",
        F0,
        [item("q1", "blue", match="fuzzy"), answer("q1", "blue")],
        {Rule.UNKNOWN_MATCH},
    )
    # A complete, otherwise valid episode whose rows have no episode_id.
    add(AL, None, F1, _assoc_turns(), {Rule.NO_EPISODE_ID})
    add(
        AL,
        "bad-dup-turn",
        F0,
        [message(Role.USER, "a", turn=1), message(Role.USER, "b", turn=1), *_assoc_turns()],
        {Rule.DUPLICATE_TURN},
    )
    add(
        AL,
        "bad-model",
        F0,
        [message(Role.USER, "hi", model="m2"), *_assoc_turns()],
        {Rule.INCONSISTENT_FIELD},
    )
    # The category differs between rows: category checks (here: required params) are
    # skipped, only the inconsistency is reported.
    add(
        CF,
        "bad-category-mixed",
        F1,
        [message(Role.USER, "hi", category=AL), *_assoc_turns()],
        {Rule.INCONSISTENT_FIELD},
        params={},
    )
    add(AL, "dup-1", F0, _assoc_turns(), {Rule.DUPLICATE_EPISODE_ACROSS_FILES})
    add(AL, "dup-1", F1, _assoc_turns(), {Rule.DUPLICATE_EPISODE_ACROSS_FILES})
    # The same id on another night is another episode (ids are unique within a night).
    add(AL, "dup-1", FH, _assoc_turns(), None)
    add(AL, "bad-no-start", F1, _assoc_turns(), {Rule.MISSING_EPISODE_START}, start=False)
    add(
        AL,
        "bad-two-starts",
        F1,
        [episode_start({}), *_assoc_turns()],
        {Rule.MULTIPLE_EPISODE_START},
    )
    add(
        OL,
        "bad-params-array",
        F1,
        _observational_turns(),
        {Rule.PARAMS_NOT_OBJECT},
        params="[1, 2]",
    )
    add(AL, "bad-params-json", F1, _assoc_turns(), {Rule.PARAMS_NOT_OBJECT}, params="{seed: 7}")
    add(AL, "bad-params-null", F1, _assoc_turns(), {Rule.PARAMS_NOT_OBJECT}, params=None)
    add(RL, "bad-params-missing", F1, rl_turns, {Rule.PARAMS_MISSING}, params={"min_explore": 3})
    add(RL, "bad-params-type", F1, rl_turns, {Rule.PARAMS_WRONG_TYPE}, params={"budget": "12"})
    add(RL, "bad-params-float", F1, rl_turns, {Rule.PARAMS_WRONG_TYPE}, params={"budget": 12.0})
    add(
        CF,
        "bad-params-bool",
        F1,
        cf_turns,
        {Rule.PARAMS_WRONG_TYPE},
        params={**cf_params, "initial_examples": True},
    )
    add(RL, "bad-budget-zero", F1, rl_turns, {Rule.PARAMS_INVALID_VALUE}, params={"budget": 0})
    add(
        AL,
        "bad-item-no-id",
        FH,
        [item(None, "x"), item("q2", "y"), answer("q2", "y")],
        {Rule.ITEM_WITHOUT_ID},
    )
    add(
        AL,
        "bad-item-dup",
        FH,
        [item("q1", "x"), item("q1", "y"), answer("q1", "x y")],
        {Rule.DUPLICATE_ITEM_ID},
    )
    add(
        AL,
        "bad-expected-blank",
        FH,
        [item("q1", " \t "), item("q2", "y"), answer("q2", "y")],
        {Rule.EMPTY_EXPECTED},
    )
    add(
        AL,
        "bad-expected-null",
        FH,
        [item("q1", None), item("q2", "y"), answer("q2", "y")],
        {Rule.EMPTY_EXPECTED},
    )
    add(
        AL,
        "bad-integer",
        FH,
        [item("q1", "3.0", match=Match.INTEGER), answer("q1", "3")],
        {Rule.INTEGER_EXPECTED_NOT_INTEGER},
    )
    add(
        AL,
        "bad-integer-nonascii",
        FH,
        [item("q1", "\u0663", match=Match.INTEGER), answer("q1", "3")],  # ARABIC-INDIC THREE
        {Rule.INTEGER_EXPECTED_NOT_INTEGER},
    )
    add(
        AL,
        "bad-answer-item",
        FH,
        [item("q1", "x"), answer("q1", "x"), answer("q9", "y")],
        {Rule.ANSWER_UNKNOWN_ITEM},
    )
    add(
        AL,
        "bad-answer-null-item",
        FH,
        [item("q1", "x"), answer("q1", "x"), answer(None, "y")],
        {Rule.ANSWER_UNKNOWN_ITEM},
    )
    add(
        OL,
        "bad-no-items",
        FH,
        [example("a -> 0"), message(Role.ASSISTANT, "0 1"), episode_end()],
        {Rule.NO_ITEMS},
    )
    add(
        CF,
        "bad-too-many-items",
        FH,
        [*cf_turns[:-1], item("x3", "7", match=Match.INTEGER)],
        {Rule.TOO_MANY_ITEMS},
        params=cf_params,  # num_test_items 2
    )
    add(
        LL,
        "bad-too-many-examples",
        FH,
        [example("sel -> selmé"), *ll_turns],
        {Rule.TOO_MANY_EXAMPLES},
        params={**ll_params, "max_examples": 3},  # 4 examples
    )
    add(
        RL,
        "bad-nan",
        F0,
        [action("a"), feedback(float("nan"), False), action("b"), feedback(1.0, True)],
        {Rule.NON_FINITE_VALUE},
        params=rl_params,
    )
    # Contract 1.2: a non-finite reported score; a `recorded` item's answer without a verdict.
    add(
        AL,
        "bad-reported-score",
        F0,
        [*_assoc_turns(), episode_end(**{REPORTED_SCORE: float("inf")})],
        {Rule.NON_FINITE_VALUE},
    )
    # A reported score on another scale (a percentage): every score lies in [0, 1].
    add(
        AL,
        "bad-reported-range",
        F0,
        [*_assoc_turns(), episode_end(**{REPORTED_SCORE: 75.0})],
        {Rule.REPORTED_SCORE_OUT_OF_RANGE},
    )
    # Contract 1.4: a task in no category with formula inputs (no formula scores it).
    add(
        UNCATEGORISED,
        "bad-uncategorised",
        F0,
        [*_assoc_turns(), episode_end(**{REPORTED_SCORE: 0.5})],
        {Rule.UNCATEGORISED_NOT_REPORTED},
        params={},
    )
    add(
        AL,
        "bad-recorded-no-verdict",
        F0,
        [item("r1", "yes", match=Match.RECORDED), answer("r1", "yes"), *_assoc_turns()],
        {Rule.RECORDED_WITHOUT_VERDICT},
    )
    # Contract 1.4: usage no call can have, on an assistant row (negative, or beyond the
    # most one reply records): the usage is refused, the episode scored (1.3 rejected it);
    # elsewhere usage is not read.
    add(
        AL,
        "ok-usage-refused",
        F0,
        [
            message(Role.ASSISTANT, "Thinking.", input_tokens=-3, output_tokens=5),
            *_assoc_turns(),
        ],
    )
    add(
        AL,
        "ok-usage-beyond-bound",
        F0,
        [message(Role.ASSISTANT, "Thinking.", cost_usd=1e308), *_assoc_turns()],
    )
    add(
        AL,
        "ok-usage-not-read-on-user-rows",
        F0,
        [
            message(Role.USER, "x", cost_usd=float("nan"), input_tokens=-1),
            message(Role.ASSISTANT, "Thinking.", input_tokens=30, cost_usd=0.25),
            *_assoc_turns(),
        ],
    )
    # A non-finite value rejects whatever the row's kind.
    add(
        AL,
        "bad-inf-message",
        F0,
        [message(Role.USER, "x", value=float("-inf")), *_assoc_turns()],
        {Rule.NON_FINITE_VALUE},
    )
    add(
        PL,
        "bad-round-range",
        F0,
        [round_end(1, 0.5), round_end(2, 1.2), round_end(3, 0.9), *_procedural_turns(0)],
        {Rule.ROUND_VALUE_OUT_OF_RANGE},
        params={"practice_rounds": 3},
    )
    add(
        PL,
        "bad-round-null-value",
        F0,
        [round_end(1, 0.5), round_end(2, None), round_end(3, 0.9), *_procedural_turns(0)],
        {Rule.ROUND_MISSING_VALUE},
        params={"practice_rounds": 3},
    )
    # Round-number rules apply in every category; in runtime RL no count is expected, so
    # these break exactly one rule.
    add(
        RL,
        "bad-round-no-number",
        F0,
        [*rl_turns[:-1], round_end(None, 0.5), episode_end()],
        {Rule.ROUND_MISSING_NUMBER},
        params=rl_params,
    )
    add(
        RL,
        "bad-round-dup",
        F0,
        [*rl_turns[:-1], round_end(1, 0.3), round_end(1, 0.5), episode_end()],
        {Rule.DUPLICATE_ROUND},
        params=rl_params,
    )
    add(
        PL,
        "bad-round-count",
        F0,
        _procedural_turns(4),
        {Rule.WRONG_ROUND_COUNT},
        params={},  # practice_rounds 5 by default
    )

    # ---- three rules at once
    add(
        CF,
        "bad-three",
        F1,
        [
            example("f(1) = 5"),
            example("f(2) = 8"),
            example("f(3) = 11"),
            example("f(4) = 14"),
            message(Role.ASSISTANT, "READY", turn=5),
            message(Role.USER, "Test:", turn=5),
            item("x1", "  "),
            item("x2", "17", match=Match.INTEGER),
            answer("x2", "17"),
        ],
        {Rule.DUPLICATE_TURN, Rule.EMPTY_EXPECTED, Rule.TOO_MANY_EXAMPLES},
        params={"initial_examples": 2, "max_examples": 3},
    )

    # ---- harness errors
    add(
        AL,
        "err-al",
        F1,
        [*_assoc_turns()[:-1], episode_end(Status.ERROR)],
        {Rule.HARNESS_ERROR},
    )
    add(
        RL,
        "err-rl",
        FH,
        [action("a"), feedback(0.25, False), episode_end(Status.ERROR, content="timeout")],
        {Rule.HARNESS_ERROR},
        params=rl_params,
    )
    # Crashed during practice: two of five rounds and no transfer items.
    add(
        PL,
        "err-pl",
        FH,
        [round_end(1, 0.2), round_end(2, 0.4), episode_end(Status.ERROR)],
        {Rule.HARNESS_ERROR, Rule.WRONG_ROUND_COUNT, Rule.NO_ITEMS},
        params={"practice_rounds": 5},
    )
    return rows, expected


def built_counts(
    rows: Sequence[Row], expected: Expected, night: str | None = None
) -> dict[str, int]:
    """The manifest's counts that a dump's builder implies: ``rows`` it wrote and the
    ``expected`` rules of every episode it spoiled (all others must be scored), over the
    whole dump or the files of one ``dump_date`` night. Derived, never typed in."""
    if night is not None:
        folder = f"dump_date={night}/"
        rows = [r for r in rows if r[FILE].startswith(folder)]
        expected = {k: v for k, v in expected.items() if k[1].startswith(folder)}
    episodes: dict[tuple[str | None, str], int] = {}
    for r in rows:
        key = (r.get(Col.EPISODE_ID), r[FILE])
        episodes[key] = episodes.get(key, 0) + 1
    rejected_rows = sum(n for key, n in episodes.items() if key in expected)
    harness = sum(Rule.HARNESS_ERROR in rules for rules in expected.values())
    return {
        "rows_read": len(rows),
        "rows_scored": len(rows) - rejected_rows,
        "rows_rejected": rejected_rows,
        "episodes_scored": len(episodes) - len(expected),
        "episodes_rejected": sum(k[0] is not None for k in expected) - harness,
        "episodes_harness_error": harness,
    }


@functools.cache
def _example() -> tuple[list[Row], Expected]:
    from examples.make_example_dump import build_rows

    return build_rows()


def example_dump_counts(night: str | None = None) -> dict[str, int]:
    """``built_counts`` of the example dump (``examples/dump``, which
    ``examples.make_example_dump.build_rows`` writes: tests/test_dumps.py checks that the
    committed files are its output)."""
    return built_counts(*_example(), night)


def copy_night(source: Path, target: Path) -> None:
    """The Parquet files of night folder ``source`` copied into ``target`` as another
    night's: the same episodes under new ids (the target's name appended), as a harness
    that runs them again writes them. (A plain copy repeats ids, and a night that repeats
    another night's episodes fails.)"""
    import polars as pl

    target.mkdir(parents=True)
    for path in sorted(source.glob("*.parquet")):
        rows = pl.read_parquet(path)
        again = pl.col(Col.EPISODE_ID) + f"@{target.name}"
        rows.with_columns(again.alias(Col.EPISODE_ID)).write_parquet(target / path.name)


# File names polars would read as patterns unless told not to: `a*` matches `a` and `ab`,
# `b[1]` a class, `c?` any one character, `d{x,y}` a choice.
PATTERN_NAMES = ("a", "ab", "a*", "b[1]", "c?", "d{x,y}")


def copies_named(source: Path, night: Path, names: Sequence[str]) -> list[Path]:
    """The Parquet file ``source`` copied into folder ``night`` once per name of ``names``
    (``<name>.parquet``), each copy's episodes under new ids (the name appended): files of
    distinct episodes, whatever their names say to a pattern matcher."""
    import polars as pl

    night.mkdir(parents=True, exist_ok=True)
    rows = pl.read_parquet(source, glob=False)
    written = []
    for name in names:
        path = night / f"{name}.parquet"
        rows.with_columns(pl.col(Col.EPISODE_ID) + f"@{name}").write_parquet(path)
        written.append(path)
    return written
