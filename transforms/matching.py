"""Grading an answer against its item with the contract's four match modes.

``grade`` adds ``correct`` (bool) and ``positional`` (the observational diagnostic: the share
of expected tokens matched position by position) to a frame of item/answer pairs.
``sequence`` is exact in polars for every input, ``integer`` for literals within int128;
``contains`` and ``nfc`` are exact in polars for ASCII text and for equal texts. The rare
pairs left (non-ASCII text that differs, longer literals) are decided by Python's own
``re`` and ``unicodedata``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import polars as pl

from schemas.contract import VERDICT, Match
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
    rows = batch.struct.unnest().gather(idx)
    verdicts = [
        _python_grade(mode, expected, answer)
        for mode, expected, answer in zip(
            rows[MODE].to_list(), rows[EXPECTED].to_list(), rows[ANSWER].to_list(), strict=True
        )
    ]
    out = pl.Series(CORRECT, [None] * len(batch), dtype=pl.Boolean)
    return out.scatter(idx, pl.Series(verdicts, dtype=pl.Boolean)) if len(idx) else out


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
    if mode == Match.CONTAINS:
        return re.search(re.escape(expected.strip()), answer.strip(), re.IGNORECASE) is not None
    if mode == Match.INTEGER:
        key = _integer_key(expected)
        return key is not None and key == _integer_key(answer)
    normalize = unicodedata.normalize
    return normalize("NFC", answer.strip()) == normalize("NFC", expected.strip())


# Working columns of ``grade``.
_E: Final = "_expected_stripped"
_A: Final = "_answer_stripped"
_ASCII: Final = "_ascii_pair"
_SAME: Final = "_same_text"  # expected.strip() == answer.strip()
_JE: Final = "_expected_tokens"  # " ".join(expected.split())
_JA: Final = "_answer_tokens"
_FAST: Final = "_polars_verdict"
_INT128_DIGITS: Final = 38  # every literal of at most this many characters fits int128


def _fast_verdicts() -> pl.Expr:
    """Every verdict that polars can give exactly; null where Python must decide.

    Each mode's string work sees its own pairs only, the others as nulls (a when/then chain
    would run every mode's work on every pair), and equal texts are decided at once.
    """
    mode, e, a, ascii_pair, same = (pl.col(c) for c in (MODE, _E, _A, _ASCII, _SAME))

    def mine(match: Match) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        is_mode = mode == match
        return is_mode, pl.when(is_mode).then(e), pl.when(is_mode).then(a)

    is_contains, ce, ca = mine(Match.CONTAINS)
    lower_hit = ca.str.to_lowercase().str.contains(ce.str.to_lowercase(), literal=True)
    contains = (
        pl.when(is_contains & ascii_pair)
        .then(lower_hit)  # ASCII: re.IGNORECASE is lowercase comparison
        .when(is_contains & ca.str.contains(ce, literal=True))
        .then(True)  # an exact substring also matches ignoring case; else Python decides
    )
    nfc = (
        pl.when((mode == Match.NFC) & same)
        .then(True)  # equal text has equal NFC forms
        .when((mode == Match.NFC) & ascii_pair)
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
    sequence = pl.when(mode == Match.SEQUENCE).then(same | (pl.col(_JA) == pl.col(_JE)))
    # The harness's verdict is the verdict; no answer (no verdict) is wrong.
    recorded = pl.when(mode == Match.RECORDED).then(pl.col(VERDICT).fill_null(False))
    return pl.coalesce(contains, nfc, integer, sequence, recorded)


def grade(
    pairs: pl.LazyFrame, key: list[str], positional_where: pl.Expr | None = None
) -> pl.LazyFrame:
    """Add ``correct`` and ``positional`` to item/answer pairs.

    ``pairs`` has ``key`` (unique per pair), ``expected`` (non-null), ``answer`` (null: no
    answer, graded as the empty string), ``verdict`` (the harness's, null where it recorded
    none) and ``mode`` (a ``Match`` value). ``positional`` is
    computed for the pairs where ``positional_where`` holds (all by default), null elsewhere.
    """
    if VERDICT not in pairs.collect_schema():  # pairs of a dump before contract 1.2
        pairs = pairs.with_columns(pl.lit(None, pl.Boolean).alias(VERDICT))
    expected, answer, mode = pl.col(EXPECTED), pl.col(ANSWER).fill_null(""), pl.col(MODE)
    positional = pl.lit(True) if positional_where is None else positional_where
    # Equal stripped texts have equal tokens: only the others are split.
    tokens = ((mode == Match.SEQUENCE) | positional) & ~pl.col(_SAME)
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
    split = positional_scores(graded.filter(positional & ~pl.col(_SAME)), key)
    whole = pl.when(positional & pl.col(_SAME)).then(pl.lit(1.0))  # every token in place
    return (
        graded.join(split, on=key, how="left", nulls_equal=True)
        .with_columns(pl.coalesce(POSITIONAL, whole).alias(POSITIONAL))
        .drop(_E, _A, _ASCII, _SAME, _JE, _JA, _FAST)
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
