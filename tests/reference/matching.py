"""The contract's declarative match modes ("Matching an answer to an item"), verbatim Python.

``recorded`` is no function of the texts: the scorer reads the answer's verdict."""

from __future__ import annotations

import json
import re
import unicodedata

from tests.reference.contract import (
    CONTAINS,
    INT_VALUE,
    INTEGER,
    ISOLATED_WORD,
    JSON_EQUAL,
    NFC,
    NFC_WORDS,
    SEQUENCE,
    UPPER_CONTAINS,
    WORD,
)

# As the benchmark's graders list them.
NEGATIONS = {"not", "isn't", "isnt", "never", "no", "cannot", "can't", "cant", "neither", "without"}

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


def match_upper_contains(expected: str, answer: str) -> bool:
    """The associative graders: ``act = str(x).strip().upper()``, the expected likewise,
    then ``_str_match``."""
    act = answer.strip().upper()
    expn = expected.strip().upper()
    return re.search(re.escape(expn.strip()), act.strip(), re.IGNORECASE) is not None


def _not_negated(expected: str, answer: str, before: str, after: str) -> bool:
    """occasion-setting's ``_label_match`` (``before``/``after`` the token's boundaries)
    on the answer as its caller passes it (``str(x).strip().upper()``)."""
    actual = answer.strip().upper()
    token = re.escape(expected.strip())
    m = re.search(before + token + after, actual.strip(), re.IGNORECASE)
    if not m:
        return False
    last_words = re.findall(r"\w+", actual[: m.start()].strip())[-3:]
    return not any(w.lower() in NEGATIONS for w in last_words)


def match_word(expected: str, answer: str) -> bool:
    return _not_negated(expected, answer, r"\b", r"\b")


def match_isolated_word(expected: str, answer: str) -> bool:
    return _not_negated(expected, answer, r"(?<!\w)", r"(?!\w)")


def match_nfc_words(expected: str, answer: str) -> bool:
    """The language graders' ``_surface_equal``."""

    def norm(s: str) -> str:
        return unicodedata.normalize("NFC", " ".join(s.strip().split()))

    return norm(expected) == norm(answer)


def match_int_value(expected: str, answer: str) -> bool:
    """``int()`` of the JSON values; anything that raises is wrong."""
    try:
        return bool(int(json.loads(answer)) == int(json.loads(expected)))
    except Exception:
        return False


def match_json_equal(expected: str, answer: str) -> bool:
    """Python's ``==`` on the JSON values; text that is not JSON is wrong."""
    try:
        return bool(json.loads(answer) == json.loads(expected))
    except (ValueError, RecursionError):
        return False


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
    UPPER_CONTAINS: match_upper_contains,
    WORD: match_word,
    ISOLATED_WORD: match_isolated_word,
    NFC_WORDS: match_nfc_words,
    INT_VALUE: match_int_value,
    JSON_EQUAL: match_json_equal,
}


def grade(match_mode: str, expected: str, answer: str) -> bool:
    return _MATCHERS[str(match_mode)](expected, answer)
