r"""Grading an answer against its item with the contract's match kinds.

``grade`` adds ``correct`` (bool) and ``positional`` (the observational diagnostic: the share
of expected tokens matched position by position) to a frame of item/answer pairs.

Each kind's verdict is given in polars wherever polars is exact, and by Python's own
``re``, ``unicodedata``, ``int`` and ``json`` for the few pairs left (flagged, then graded in
one batch): Python's Unicode case folding, whitespace, ``\w``, NFC tables and JSON numbers
are not polars' (Rust's), so only inputs where the two provably agree stay in polars.

- ``sequence``: exact in polars for every input; ``integer``: for literals within int128.
- ``contains``, ``upper_contains``, ``nfc``, ``nfc_words``: ASCII text (where Python's case
  mapping and NFC are the identity or ASCII's) and equal texts.
- ``word``, ``isolated_word``: ASCII text and an expected token of ASCII word characters
  (where Rust's ``\b``/``\w`` are Python's, and ``(?<!\w)…(?!\w)`` is ``\b…\b``).
- ``int_value``, ``json_equal``: JSON integers (canonical, within int128) and, for
  ``int_value``, JSON strings of an ASCII integer literal; for ``json_equal`` also JSON
  strings without escapes and the literals ``true``, ``false``, ``null`` compared among
  themselves. Real harness answers are ``json.dumps`` of ints and strings: nearly all.
- ``recorded``: the answer's ``verdict``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Final

import polars as pl

from schemas.contract import NEGATIONS, VERDICT, Match
from transforms.text import is_ascii, py_split_joined, py_strip

EXPECTED: Final = "expected"
ANSWER: Final = "answer"
MODE: Final = "mode"
CORRECT: Final = "correct"
POSITIONAL: Final = "positional"


def _python_verdicts(batch: pl.Series) -> pl.Series:
    # Only the flagged rows are graded here: non-ASCII contains/nfc pairs that polars left
    # undecided (re.IGNORECASE's Unicode case folding, ſ, K, İ, ς ..., and the NFC tables
    # must be Python's own, and no polars kernel is), and integer literals too long for
    # int128. Both are rare.
    flagged = batch.struct.field("flagged").fill_null(False)
    idx = flagged.arg_true()
    out = pl.repeat(None, len(batch), dtype=pl.Boolean, eager=True).alias(CORRECT)
    if not len(idx):
        return out
    rows = batch.struct.unnest().gather(idx)
    # Each pair's grader looked up once (an if-chain compared every mode before nfc's,
    # the most frequent: half the Python time of a realistic file's 2,827 pairs).
    grader = _PYTHON_GRADERS.get
    verdicts = [
        grader(mode, _nfc)(expected, answer)
        for mode, expected, answer in zip(
            rows[MODE].to_list(), rows[EXPECTED].to_list(), rows[ANSWER].to_list(), strict=True
        )
    ]
    return out.scatter(idx, pl.Series(verdicts, dtype=pl.Boolean))


_LITERAL: Final = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _integer_key(text: str) -> tuple[bool, str] | None:
    """(negative, digits without leading zeros) of an integer literal (no ``int()``: it
    refuses more than 4300 digits); None for any other text."""
    literal = text.strip()
    if _LITERAL.fullmatch(literal) is None:
        return None
    digits = literal.lstrip("+-").lstrip("0")
    return literal.startswith("-") and digits != "", digits


def _python_grade(mode: str, expected: str, answer: str) -> bool:
    return _PYTHON_GRADERS.get(mode, _nfc)(expected, answer)


def _contains(expected: str, answer: str) -> bool:
    return re.search(re.escape(expected.strip()), answer.strip(), re.IGNORECASE) is not None


def _integer(expected: str, answer: str) -> bool:
    key = _integer_key(expected)
    return key is not None and key == _integer_key(answer)


def _upper_contains(expected: str, answer: str) -> bool:
    upper_e, upper_a = expected.strip().upper().strip(), answer.strip().upper().strip()
    return re.search(re.escape(upper_e), upper_a, re.IGNORECASE) is not None


def _int_value(expected: str, answer: str) -> bool:
    try:
        return bool(int(json.loads(answer)) == int(json.loads(expected)))
    except Exception:  # as the graders' try/except: whatever int() or json refuses
        return False


def _json_equal(expected: str, answer: str) -> bool:
    try:
        return bool(json.loads(answer) == json.loads(expected))
    except (ValueError, RecursionError):
        return False


def _nfc_words(expected: str, answer: str) -> bool:
    normalize = unicodedata.normalize
    return normalize("NFC", " ".join(answer.split())) == normalize(
        "NFC", " ".join(expected.split())
    )


def _nfc(expected: str, answer: str) -> bool:
    """``nfc``, and any mode without a grader of its own."""
    normalize = unicodedata.normalize
    return normalize("NFC", answer.strip()) == normalize("NFC", expected.strip())


def _not_negated(mode: str, expected: str, answer: str) -> bool:
    """The token as a whole word of the upper-cased answer, not after a negation among the
    three words before it."""
    before, after = (r"\b", r"\b") if mode == Match.WORD else (r"(?<!\w)", r"(?!\w)")
    actual = answer.strip().upper()
    found = re.search(before + re.escape(expected.strip()) + after, actual.strip(), re.IGNORECASE)
    if found is None:
        return False
    last_words = re.findall(r"\w+", actual[: found.start()])[-3:]
    return not any(w.lower() in NEGATIONS for w in last_words)


# Python's verdict of a pair, by its mode (``nfc`` for any other).
_PYTHON_GRADERS: Final[dict[str, Callable[[str, str], bool]]] = {
    Match.CONTAINS.value: _contains,
    Match.INTEGER.value: _integer,
    Match.UPPER_CONTAINS.value: _upper_contains,
    Match.WORD.value: lambda expected, answer: _not_negated(Match.WORD, expected, answer),
    Match.ISOLATED_WORD.value: (
        lambda expected, answer: _not_negated(Match.ISOLATED_WORD, expected, answer)
    ),
    Match.INT_VALUE.value: _int_value,
    Match.JSON_EQUAL.value: _json_equal,
    Match.NFC_WORDS.value: _nfc_words,
    Match.NFC.value: _nfc,
}


# Working columns of ``grade``.
_E: Final = "_expected_stripped"
_A: Final = "_answer_stripped"
_ASCII: Final = "_ascii_pair"
_SAME: Final = "_same_text"  # expected.strip() == answer.strip()
_JE: Final = "_expected_tokens"  # " ".join(expected.split())
_JA: Final = "_answer_tokens"
_FAST: Final = "_polars_verdict"
_WANTED: Final = "_positional_wanted"  # positional_where, per pair
_ID: Final = "_distinct_pair"
# What a pair's grades depend on: ``grade`` grades each distinct combination once.
_GRADED_ON: Final = [EXPECTED, ANSWER, MODE, VERDICT, _WANTED]
_INT128_DIGITS: Final = 38  # every literal of at most this many characters fits int128


def _fast_verdicts() -> pl.Expr:
    """Every verdict that polars can give exactly; null where Python must decide.

    Each kind's string work sees its own pairs only, the others as nulls (a when/then chain
    would run every kind's work on every pair), and equal texts are decided at once.
    """
    mode, e, a, ascii_pair, same = (pl.col(c) for c in (MODE, _E, _A, _ASCII, _SAME))

    def mine(*kinds: Match) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        is_mode = mode.is_in([k.value for k in kinds])
        return is_mode, pl.when(is_mode).then(e), pl.when(is_mode).then(a)

    # contains and upper_contains: on ASCII, Python's upper and re.IGNORECASE are
    # lowercase comparison; an exact substring matches ignoring case (and upper-cased: upper
    # maps each character on its own); else Python decides.
    is_contains, ce, ca = mine(Match.CONTAINS, Match.UPPER_CONTAINS)
    lower_hit = ca.str.to_lowercase().str.contains(ce.str.to_lowercase(), literal=True)
    contains = (
        pl.when(is_contains & ascii_pair)
        .then(lower_hit)
        .when(is_contains & ca.str.contains(ce, literal=True))
        .then(True)
    )
    is_nfc = mode.is_in([Match.NFC.value, Match.NFC_WORDS.value])
    joined_same = pl.col(_JA) == pl.col(_JE)
    nfc = (
        pl.when((mode == Match.NFC) & same)
        .then(True)  # equal text has equal NFC forms
        .when((mode == Match.NFC_WORDS) & (same | joined_same))
        .then(True)
        .when(is_nfc & ascii_pair)
        .then(False)  # ASCII text is its own NFC form; else Python decides
    )
    is_integer, ie, ia = mine(Match.INTEGER)
    # Exactly the ASCII literals [+-]?[0-9]+ within int128 parse; longer ones go to Python.
    ie_int, ia_int = (x.str.to_integer(dtype=pl.Int128, strict=False) for x in (ie, ia))
    long = (ie.str.len_bytes() > _INT128_DIGITS) | (ia.str.len_bytes() > _INT128_DIGITS)
    integer = (
        pl.when(is_integer & ie_int.is_not_null() & ia_int.is_not_null())
        .then(ie_int == ia_int)
        .when(is_integer & ~long)
        .then(False)  # a side is not a literal
    )
    sequence = pl.when(mode == Match.SEQUENCE).then(same | joined_same)
    # The harness's verdict is the verdict; no answer (no verdict) is wrong.
    recorded = pl.when(mode == Match.RECORDED).then(pl.col(VERDICT).fill_null(False))
    return pl.coalesce(
        contains, nfc, integer, sequence, _word_verdicts(), *_json_verdicts(), recorded
    )


# An expected token of ASCII word characters: \b and (?<!\w)...(?!\w) agree around it.
_WORD_TOKEN: Final = r"^[A-Za-z0-9_]+$"
_NEGATIONS: Final = sorted(NEGATIONS)


def _word_verdicts() -> pl.Expr:
    """``word`` and ``isolated_word`` for ASCII text and a token of word characters: the
    first case-insensitive whole-word match, then the last three words before it."""
    mode, ascii_pair = pl.col(MODE), pl.col(_ASCII)
    token = pl.col(_E)
    fast = (
        mode.is_in([Match.WORD.value, Match.ISOLATED_WORD.value])
        & ascii_pair
        & token.str.contains(_WORD_TOKEN)
    )
    answer = pl.when(fast).then(pl.col(_A))
    found = answer.str.find(pl.concat_str(pl.lit(r"(?i)\b"), token, pl.lit(r"\b")))
    before = answer.str.slice(0, found).str.extract_all(r"\w+").list.tail(3)
    negated = before.list.eval(pl.element().str.to_lowercase().is_in(_NEGATIONS)).list.any()
    return pl.when(fast).then(found.is_not_null() & ~negated.fill_null(False))


# JSON texts whose value polars reads exactly: canonical integers within int128 (JSON has no
# leading zeros or plus), strings without escapes, and the three literals.
_JSON_INT: Final = r"^-?(0|[1-9][0-9]{0,36})$"
_JSON_INT_STRING: Final = r'^"[+-]?[0-9]{1,36}"$'  # int() of it: an ASCII literal
_JSON_PLAIN_STRING: Final = r'^"[^"\\\x00-\x1f]*"$'
_JSON_LITERAL: Final = r"^(true|false|null)$"


def _json_verdicts() -> tuple[pl.Expr, pl.Expr]:
    """``int_value`` and ``json_equal`` where both texts are JSON values of one simple
    class (Python's ``True == 1`` and ``1 == 1.0`` are left to Python)."""
    mode, e, a = pl.col(MODE), pl.col(EXPECTED), pl.col(ANSWER).fill_null("")

    def number(text: pl.Expr, strings: bool) -> pl.Expr:
        literal: pl.Expr = pl.when(text.str.contains(_JSON_INT)).then(text)
        if strings:
            quoted = text.str.contains(_JSON_INT_STRING)
            literal = pl.coalesce(literal, pl.when(quoted).then(text.str.strip_chars('"')))
        return literal.str.to_integer(dtype=pl.Int128, strict=False)

    is_int = mode == Match.INT_VALUE
    ie, ia = (number(pl.when(is_int).then(x), strings=True) for x in (e, a))
    int_value = pl.when(is_int & ie.is_not_null() & ia.is_not_null()).then(ie == ia)

    is_json = mode == Match.JSON_EQUAL
    je, ja = (pl.when(is_json).then(x) for x in (e, a))
    both_ints = number(je, strings=False).is_not_null() & number(ja, strings=False).is_not_null()
    both_plain = je.str.contains(_JSON_PLAIN_STRING) & ja.str.contains(_JSON_PLAIN_STRING)
    both_literal = je.str.contains(_JSON_LITERAL) & ja.str.contains(_JSON_LITERAL)
    json_equal = (
        pl.when(is_json & both_ints)
        .then(number(je, strings=False) == number(ja, strings=False))
        .when(is_json & (both_plain | both_literal))
        .then(je == ja)
    )
    return int_value, json_equal


def grade(pairs: pl.LazyFrame, positional_where: pl.Expr | None = None) -> pl.LazyFrame:
    """Add ``correct`` and ``positional`` to item/answer pairs.

    ``pairs`` has ``expected`` (non-null), ``answer`` (null: no answer, graded as the empty
    string), ``verdict`` (the harness's, null where it recorded none) and ``mode`` (a
    ``Match`` value); its other columns are kept. ``positional`` is computed for the pairs
    where ``positional_where`` holds (all by default), null elsewhere.

    A pair's grades depend on those four columns and ``positional_where`` alone, so each
    distinct combination is graded once and the grades joined to its pairs, in their order
    (a realistic file's 32,444 pairs are 9,068 distinct: the string work is per pair)."""
    if VERDICT not in pairs.collect_schema():  # pairs of a dump before contract 1.2
        pairs = pairs.with_columns(pl.lit(None, pl.Boolean).alias(VERDICT))
    wanted = pl.lit(True) if positional_where is None else positional_where
    pairs = pairs.with_columns(wanted.alias(_WANTED)).cache()
    distinct = pairs.select(_GRADED_ON).unique().with_row_index(_ID)
    return pairs.join(
        _graded(distinct), on=_GRADED_ON, how="left", nulls_equal=True, maintain_order="left"
    ).drop(_WANTED)


def _graded(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """``_GRADED_ON`` of distinct pairs (``_ID`` numbers them) with ``correct`` and
    ``positional``."""
    expected, answer, mode = pl.col(EXPECTED), pl.col(ANSWER).fill_null(""), pl.col(MODE)
    positional = pl.col(_WANTED)
    # Equal stripped texts have equal tokens: only the others are split.
    tokens = (mode.is_in([Match.SEQUENCE.value, Match.NFC_WORDS.value]) | positional) & ~pl.col(
        _SAME
    )
    prepared = (
        pairs.with_columns(
            py_strip(expected).alias(_E),
            py_strip(answer).alias(_A),
            (is_ascii(expected) & is_ascii(answer)).alias(_ASCII),
        )
        .with_columns((pl.col(_E) == pl.col(_A)).alias(_SAME))
        .with_columns(
            py_split_joined(pl.when(tokens).then(expected)).alias(_JE),
            py_split_joined(pl.when(tokens).then(answer)).alias(_JA),
        )
        .with_columns(_fast_verdicts().alias(_FAST))
    )
    flagged = pl.col(_FAST).is_null() & mode.is_in(list(Match))
    python_verdict = pl.struct(expected, answer, mode, flagged.alias("flagged")).map_batches(
        _python_verdicts, return_dtype=pl.Boolean, is_elementwise=True
    )
    graded = prepared.with_columns(
        pl.coalesce(_FAST, pl.when(flagged).then(python_verdict)).alias(CORRECT)
    ).cache()
    split = positional_scores(graded.filter(positional & ~pl.col(_SAME)), [_ID])
    whole = pl.when(positional & pl.col(_SAME)).then(pl.lit(1.0))  # every token in place
    return (
        graded.join(split, on=_ID, how="left")
        .with_columns(pl.coalesce(POSITIONAL, whole).alias(POSITIONAL))
        .select(*_GRADED_ON, CORRECT, POSITIONAL)
    )


def positional_scores(pairs: pl.LazyFrame, key: list[str]) -> pl.LazyFrame:
    """Per pair: ``sum(g == e for g, e in zip(got, exp)) / len(exp)`` over the
    ``str.split()`` tokens, whatever the pair's mode (the contract defines one formula);
    ``pairs`` carry the joined tokens that ``grade`` prepares."""
    tokens = pairs.select(
        *key,
        pl.col(_JE).str.split(" ").alias("exp_tokens"),
        pl.col(_JA).str.split(" ").alias("got_tokens"),
    )
    per_token = tokens.with_columns(
        pl.int_ranges(pl.col("exp_tokens").list.len()).alias("position")
    ).explode(["exp_tokens", "position"])
    hits = per_token.select(
        *key,
        (
            pl.col("got_tokens").list.get(pl.col("position"), null_on_oob=True)
            == pl.col("exp_tokens")
        )
        .fill_null(False)
        .alias("hit"),
    )
    return hits.group_by(key).agg(
        (pl.col("hit").sum().cast(pl.Float64) / pl.len().cast(pl.Float64)).alias(POSITIONAL)
    )
