"""``transforms.matching.grade`` against the contract's Python (``tests.reference.matching``):
the same verdict in every match mode and the same positional score, for arbitrary text
(the full Unicode range) and for answers that are near misses of the expected text."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.contract import DECLARATIVE, VERDICT, Match
from tests.reference import grade as reference_grade
from tests.reference import is_integer_literal
from tests.reference import positional as reference_positional
from tests.strategies import (
    WORDS,
    answer_text,
    any_text,
    expected_text,
    same_integer,
    separator,
    variant,
    whitespace,
)
from transforms.matching import (
    _PYTHON_GRADERS,
    ANSWER,
    CORRECT,
    EXPECTED,
    MODE,
    POSITIONAL,
    _python_grade,
    grade,
)

KEY = "pair"
SETTINGS = settings(max_examples=60, deadline=None)

# Pairs whose verdicts hinge on Python's exact Unicode behaviour.
AWKWARD = [
    ("s", "\u017f"),
    ("\u017f", "S"),
    ("k", "\u212a"),
    ("i", "\u0130"),
    ("\u0130", "i"),
    ("I", "\u0131"),
    ("ss", "ß"),
    ("ß", "SS"),
    ("σ", "ς"),
    ("Σ", "ς"),
    ("é", "e\u0301"),
    ("Å", "\u212b"),
    ("yes", "\x1cYES\xa0"),
    ("$5 (", "costs $5 (five)"),
    (".*", "anything"),
    ("\\", "a\\b"),
    ("a b", "a\x1cb"),
    ("a b", "a\u200bb"),
    ("88", "٨٨"),
    ("88", "+088\u3000"),
    ("-0", "0"),
    # Literals beyond int128 (39 characters and more) are Python's to compare.
    ("1" + "0" * 40, "+0001" + "0" * 40),
    ("0" * 39 + "7", "7"),
    ("-" + "9" * 45, "-" + "9" * 44 + "8"),
]


@st.composite
def pairs(draw: st.DrawFn) -> tuple[str, str, str | None]:
    """(mode, expected, answer): arbitrary, awkward, or an answer derived from expected."""
    mode = draw(st.sampled_from(list(DECLARATIVE)))
    how = draw(st.sampled_from(["arbitrary", "awkward", "derived", "derived"]))
    if how == "awkward":
        expected, answer = draw(st.sampled_from(AWKWARD))
        return mode, expected, answer
    if how == "arbitrary":
        return mode, draw(st.text() | any_text()), draw(st.none() | st.text() | any_text())
    expected = draw(expected_text(mode) | any_text())
    return mode, expected, draw(answer_text(expected, mode) | variant(expected))


def _graded(cases: list[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    frame = pl.LazyFrame(
        {
            KEY: list(range(len(cases))),
            MODE: [m for m, _, _ in cases],
            EXPECTED: [e for _, e, _ in cases],
            ANSWER: [a for _, _, a in cases],
        },
        schema={KEY: pl.Int64, MODE: pl.String, EXPECTED: pl.String, ANSWER: pl.String},
    )
    return grade(frame).sort(KEY).collect().to_dicts()


@SETTINGS
@given(st.lists(pairs(), min_size=1, max_size=40))
def test_grade_is_the_contracts_python(cases: list[tuple[str, str, str | None]]) -> None:
    for (mode, expected, answer), row in zip(cases, _graded(cases), strict=True):
        text = "" if answer is None else answer  # no answer: graded as the empty string
        want = reference_grade(mode, expected, text)
        assert row[CORRECT] is want, f"{mode}: expected {expected!r}, answer {answer!r}"
        if expected.split():  # the positional score is defined where there are tokens
            want_positional = reference_positional(expected, text)
            assert row[POSITIONAL] == want_positional, f"expected {expected!r}, answer {answer!r}"


@st.composite
def sequences(draw: st.DrawFn) -> tuple[str, str, str | None]:
    """A ``sequence`` item: tokens joined by odd whitespace, and an answer that keeps,
    changes, drops or adds tokens, with other separators."""
    tokens = draw(st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=3), max_size=6))
    tokens = [t for t in tokens if t.split() == [t]]  # one token each
    if not tokens:
        tokens = ["0"]
    got = list(tokens)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(got)))
        how = draw(st.sampled_from(["change", "drop", "add"]))
        if how == "add" or not got:
            got.insert(at, draw(st.sampled_from(WORDS)))
        elif how == "drop":
            got.pop(min(at, len(got) - 1))
        else:
            got[min(at, len(got) - 1)] = draw(st.sampled_from(WORDS))

    def joined(parts: list[str]) -> str:
        return draw(whitespace()) + "".join(p + draw(separator()) for p in parts)

    return Match.SEQUENCE, joined(tokens), joined(got)


@SETTINGS
@given(st.lists(sequences(), min_size=1, max_size=40))
def test_sequence_verdict_and_positional_score(cases: list[tuple[str, str, str | None]]) -> None:
    for (mode, expected, answer), row in zip(cases, _graded(cases), strict=True):
        assert answer is not None
        assert row[CORRECT] is reference_grade(mode, expected, answer), (expected, answer)
        assert row[POSITIONAL] == reference_positional(expected, answer), (expected, answer)


def _literal(sign: str, zeros: int, number: int, pad: str) -> str:
    return pad + sign + "0" * zeros + str(number) + pad


# Integer literals (and near misses) of every length: within int64, int128, and beyond.
LITERALS = st.builds(
    _literal,
    st.sampled_from(["", "+", "-", "--", "+-"]),
    st.sampled_from([0, 1, 3, 40]),
    st.integers(0, 10**3) | st.integers(0, 10**30) | st.integers(0, 10**45),
    st.sampled_from(["", " ", "\x1c", "\u3000"]),
) | st.text(st.sampled_from("+-0123456789٣３_ .e"), max_size=6)


@st.composite
def integer_pairs(draw: st.DrawFn) -> tuple[str, str, str | None]:
    expected = draw(LITERALS)
    respelled = same_integer(expected) if is_integer_literal(expected) else LITERALS
    answer = draw(LITERALS | respelled)
    return Match.INTEGER, expected, answer


@SETTINGS
@given(st.lists(integer_pairs(), min_size=1, max_size=40))
def test_integer_verdict_is_int_equality(cases: list[tuple[str, str, str | None]]) -> None:
    for (mode, expected, answer), row in zip(cases, _graded(cases), strict=True):
        assert answer is not None
        assert row[CORRECT] is reference_grade(mode, expected, answer), (expected, answer)


def test_recorded_takes_the_answers_verdict_and_no_answer_is_wrong() -> None:
    verdicts = [True, False, None, None]
    answers = ["anything", "the expected", "x", None]
    frame = pl.LazyFrame(
        {
            KEY: [0, 1, 2, 3],
            MODE: [Match.RECORDED] * 4,
            EXPECTED: ["the expected"] * 4,
            ANSWER: answers,
            VERDICT: verdicts,
        },
        schema={
            KEY: pl.Int64,
            MODE: pl.String,
            EXPECTED: pl.String,
            ANSWER: pl.String,
            VERDICT: pl.Boolean,
        },
    )
    got = grade(frame).sort(KEY).collect()[CORRECT].to_list()
    assert got == [True, False, False, False]


# Literals about int128's limits (2^127 - 1 has 39 digits): those that overflow it are
# Python's to compare, those within it polars'.
INT128_EDGE = [
    ("9" * 39, "9" * 39),
    ("9" * 39, "+" + "9" * 39),
    ("9" * 39, "9" * 38 + "8"),
    (str(2**127 - 1), "+" + str(2**127 - 1)),
    (str(2**127), str(2**127)),
    (str(-(2**127)), "-0" + str(2**127)),
    ("1" + "0" * 38, "1" + "0" * 38 + "x"),
    ("1" * 40 + "x", "1" * 40 + "x"),  # equal texts, but no literal
]


def test_integer_literals_about_the_limits_of_int128_are_compared_as_integers() -> None:
    cases: list[tuple[str, str, str | None]] = [(Match.INTEGER, e, a) for e, a in INT128_EDGE]
    verdicts = [row[CORRECT] for row in _graded(cases)]
    assert verdicts == [reference_grade(Match.INTEGER, e, a) for e, a in INT128_EDGE]
    assert verdicts == [True, True, False, True, True, True, False, False]


def test_positional_is_computed_only_where_asked() -> None:
    """``positional_where``: the pairs it selects get their positional score (1.0 for equal
    texts), the others none, equal texts included."""
    texts = [("a b", "a b"), ("a b", "a c"), ("a b", "a b"), ("a b", "a c")]
    frame = pl.LazyFrame(
        {
            KEY: [0, 1, 2, 3],
            MODE: [Match.SEQUENCE] * 4,
            EXPECTED: [e for e, _ in texts],
            ANSWER: [a for _, a in texts],
            "asked": [True, True, False, False],
        }
    )
    got = grade(frame, positional_where=pl.col("asked")).sort(KEY).collect()
    want = [reference_positional(e, a) for e, a in texts[:2]]
    assert got[POSITIONAL].to_list() == [*want, None, None]
    assert want == [1.0, 0.5]


def test_every_mode_polars_may_leave_to_python_has_its_own_python_grader() -> None:
    """Python grades the pairs polars leaves undecided through one grader per mode
    (``_PYTHON_GRADERS``, looked up once a pair): every mode but those polars always decides
    (``sequence``, ``recorded``) has its own, so a new mode cannot fall through to ``nfc``'s;
    and each gives the contract's verdict on the awkward pairs, both ways round."""
    assert set(_PYTHON_GRADERS) == {m.value for m in Match} - {Match.SEQUENCE, Match.RECORDED}
    for mode in _PYTHON_GRADERS:
        for first, second in AWKWARD:
            for expected, answer in ((first, second), (second, first)):
                want = reference_grade(mode, expected, answer)
                assert _python_grade(mode, expected, answer) is want, (mode, expected, answer)


def test_repeated_pairs_are_graded_once_and_each_pair_keeps_its_grades_and_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``grade`` grades each distinct (expected, answer, mode, verdict, positional wanted)
    once: a non-ASCII ``nfc`` pair that polars leaves to Python, repeated, is one Python
    call; every pair still gets the grades it gets alone, in the pairs' order (unsorted)."""
    calls: list[tuple[str, str]] = []
    nfc = _PYTHON_GRADERS[Match.NFC.value]

    def counted(expected: str, answer: str) -> bool:
        calls.append((expected, answer))
        return nfc(expected, answer)

    monkeypatch.setitem(_PYTHON_GRADERS, Match.NFC.value, counted)
    cases = [("é", "e\u0301"), ("é", "e\u0301"), ("a b", "a c"), ("é", "e\u0301"), ("a b", "a c")]
    frame = pl.LazyFrame(
        {
            KEY: [4, 3, 2, 1, 0],
            MODE: [Match.NFC] * 5,
            EXPECTED: [e for e, _ in cases],
            ANSWER: [a for _, a in cases],
            "asked": [True, True, True, True, False],
        }
    )
    got = grade(frame, positional_where=pl.col("asked")).collect()
    assert calls == [("é", "e\u0301")]
    assert got[KEY].to_list() == [4, 3, 2, 1, 0]
    assert got[CORRECT].to_list() == [reference_grade(Match.NFC, e, a) for e, a in cases]
    want = [reference_positional(e, a) for e, a in cases[:4]]
    assert got[POSITIONAL].to_list() == [*want, None]
    assert want == [0.0, 0.0, 0.5, 0.0]
