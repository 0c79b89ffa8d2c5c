"""The contract's declarative match modes ("Matching an answer to an item"), verbatim Python.

``recorded`` is no function of the texts: the scorer reads the answer's verdict."""

from __future__ import annotations

import re
import unicodedata

from tests.reference.contract import CONTAINS, INTEGER, NFC, SEQUENCE

# `[0-9]` in a str pattern is ASCII-only; re.ASCII makes that explicit.
_INTEGER_LITERAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def is_integer_literal(text: str) -> bool:
    """``text.strip()`` is an ASCII ``[+-]?[0-9]+`` literal (narrower than what ``int()`` takes)."""
    return _INTEGER_LITERAL.fullmatch(text.strip()) is not None


def _integer_key(literal: str) -> tuple[bool, str]:
    """(negative, digits without leading zeros): equal iff the literals are equal as integers.

    Used instead of ``int()``, which refuses literals of more than 4300 digits.
    """
    digits = literal.lstrip("+-").lstrip("0")
    return (literal.startswith("-") and digits != "", digits)


def match_contains(expected: str, answer: str) -> bool:
    return re.search(re.escape(expected.strip()), answer.strip(), re.IGNORECASE) is not None


def match_integer(expected: str, answer: str) -> bool:
    if not (is_integer_literal(expected) and is_integer_literal(answer)):
        return False
    return _integer_key(expected.strip()) == _integer_key(answer.strip())


def match_nfc(expected: str, answer: str) -> bool:
    return unicodedata.normalize("NFC", answer.strip()) == unicodedata.normalize(
        "NFC", expected.strip()
    )


def match_sequence(expected: str, answer: str) -> bool:
    return answer.split() == expected.split()


def positional(expected: str, answer: str) -> float:
    """Diagnostic: share of the expected tokens matched position by position."""
    exp = expected.split()
    got = answer.split()
    right = 0
    for g, e in zip(got, exp, strict=False):
        if g == e:
            right += 1
    return right / len(exp)


_MATCHERS = {
    CONTAINS: match_contains,
    INTEGER: match_integer,
    NFC: match_nfc,
    SEQUENCE: match_sequence,
}


def grade(match_mode: str, expected: str, answer: str) -> bool:
    return _MATCHERS[str(match_mode)](expected, answer)
