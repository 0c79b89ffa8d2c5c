"""The match kinds of contract 1.2 (the real benchmark's graders): ``grade`` against the
reference's plain Python, kind by kind, on answers drawn to hit each kind's edges; and the
common real answers decided in polars, not handed to Python."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.contract import Match
from tests.reference import grade as reference_grade
from tests.strategies import answer_text, expected_text
from transforms.matching import _E, ANSWER, CORRECT, EXPECTED, MODE, grade

KEY = "pair"
NEW_KINDS = [
    Match.UPPER_CONTAINS,
    Match.WORD,
    Match.ISOLATED_WORD,
    Match.NFC_WORDS,
    Match.INT_VALUE,
    Match.JSON_EQUAL,
]


def graded(mode: Match, pairs: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    frame = pl.LazyFrame(
        {
            KEY: list(range(len(pairs))),
            MODE: [mode.value] * len(pairs),
            EXPECTED: [e for e, _ in pairs],
            ANSWER: [a for _, a in pairs],
        },
        schema={KEY: pl.Int64, MODE: pl.String, EXPECTED: pl.String, ANSWER: pl.String},
    )
    return grade(frame).sort(KEY).collect().to_dicts()


@st.composite
def kind_pairs(draw: st.DrawFn, mode: Match) -> list[tuple[str, str | None]]:
    out = []
    for _ in range(draw(st.integers(1, 30))):
        expected = draw(expected_text(mode))
        out.append((expected, draw(answer_text(expected, mode))))
    return out


@pytest.mark.parametrize("mode", NEW_KINDS, ids=[m.value for m in NEW_KINDS])
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_each_kind_is_its_python(mode: Match, data: st.DataObject) -> None:
    pairs = data.draw(kind_pairs(mode))
    for (expected, answer), row in zip(pairs, graded(mode, pairs), strict=True):
        want = reference_grade(mode, expected, "" if answer is None else answer)
        assert row[CORRECT] is want, (mode, expected, answer)


CASES = [
    # (kind, expected, answer, verdict): the graders' own cases, worked out by hand.
    (Match.UPPER_CONTAINS, "UNKNOWN", "Plex is unknown", True),
    (Match.UPPER_CONTAINS, "SS", "ß", True),  # "ß".upper() is "SS"; contains says False
    (Match.CONTAINS, "SS", "ß", False),
    (Match.WORD, "UNKNOWN", "Plex is not unknown", False),  # a negation before it
    (Match.WORD, "UNKNOWN", "not known, so UNKNOWN", False),  # "not" is among the last 3
    (Match.WORD, "UNKNOWN", "not known at all: UNKNOWN", True),  # ... and here it is not
    (Match.WORD, "UNKNOWN", "UNKNOWNS", False),  # not a whole word
    (Match.WORD, "NO", "isn't NO", True),  # \w+ splits isn't: "isn", "t"
    (Match.WORD, "-7", "balance -7", False),  # \b before "-" needs a word character
    # Non-ASCII answers (Python's path): the same three words before the token.
    (Match.WORD, "UNKNOWN", "not known, só UNKNOWN", False),  # "not" is among the last 3
    (Match.WORD, "UNKNOWN", "not known at àll: UNKNOWN", True),  # ... and here it is not
    (Match.ISOLATED_WORD, "-7", "balance -7", True),
    (Match.ISOLATED_WORD, "-7", "balance x-7", False),
    (Match.NFC_WORDS, "kotomó", " koto  mó ", False),
    (Match.NFC_WORDS, "koto mó", " koto \t mo\u0301 ", True),
    (Match.NFC_WORDS, "Koto", "koto", False),
    (Match.INT_VALUE, "5", '"+05"', True),  # int("+05")
    (Match.INT_VALUE, "5", "5.9", True),  # int(5.9) truncates
    (Match.INT_VALUE, "1", "true", True),  # int(True)
    (Match.INT_VALUE, "5", '"5.0"', False),  # int("5.0") raises
    (Match.INT_VALUE, "5", "null", False),
    (Match.JSON_EQUAL, "3", '"3"', False),  # the string "3" is not 3
    (Match.JSON_EQUAL, "3", "3.0", True),
    (Match.JSON_EQUAL, "[1, 2]", "[1,2]", True),
    (Match.JSON_EQUAL, "1", "true", True),  # Python: True == 1
    (Match.JSON_EQUAL, '"a"', '"a" x', False),  # not JSON
    (Match.JSON_EQUAL, '"ab"', '"a\\u0062"', True),  # an escape is its character
    (Match.JSON_EQUAL, "NaN", "NaN", False),  # nan != nan
]


@pytest.mark.parametrize(("mode", "expected", "answer", "verdict"), CASES)
def test_the_graders_cases(mode: Match, expected: str, answer: str, verdict: bool) -> None:
    assert reference_grade(mode, expected, answer) is verdict
    assert graded(mode, [(expected, answer)])[0][CORRECT] is verdict


REAL = [
    (Match.UPPER_CONTAINS, "CIPHER", "cipher"),
    (Match.WORD, "UNKNOWN", "Plex is not UNKNOWN"),
    (Match.ISOLATED_WORD, "YES", "yes"),
    (Match.NFC_WORDS, "tikinme", "tikin me"),
    (Match.INT_VALUE, "12", '"12"'),
    (Match.INT_VALUE, "12", "-3"),
    (Match.JSON_EQUAL, "[0, 1]", "[0, 1]"),  # lists: Python decides (not here)
    (Match.JSON_EQUAL, '"abc"', '"abd"'),
    (Match.JSON_EQUAL, "4", "4"),
]


def test_common_real_answers_are_decided_in_polars() -> None:
    """What a harness writes (ASCII tokens, json.dumps of ints and plain strings) takes the
    vectorised path; only the list is left to Python."""
    from transforms.matching import _fast_verdicts

    frame = pl.DataFrame(
        {
            MODE: [m.value for m, _, _ in REAL],
            EXPECTED: [e for _, e, _ in REAL],
            ANSWER: [a for _, _, a in REAL],
        }
    )
    from transforms.matching import _A, _ASCII, _JA, _JE, _SAME
    from transforms.text import is_ascii, py_split_joined, py_strip

    prepared = frame.with_columns(
        py_strip(pl.col(EXPECTED)).alias(_E),
        py_strip(pl.col(ANSWER)).alias(_A),
        (is_ascii(pl.col(EXPECTED)) & is_ascii(pl.col(ANSWER))).alias(_ASCII),
        py_split_joined(pl.col(EXPECTED)).alias(_JE),
        py_split_joined(pl.col(ANSWER)).alias(_JA),
        pl.lit(None, pl.Boolean).alias("verdict"),
    ).with_columns((pl.col(_E) == pl.col(_A)).alias(_SAME))
    fast = prepared.select(_fast_verdicts()).to_series().to_list()
    decided = [v is not None for v in fast]
    assert decided == [True, True, True, True, True, True, False, True, True], fast
