"""Grading an answer against its item with the contract's four match modes.

``grade`` adds ``correct`` (bool) and ``positional`` (the observational diagnostic: the share
of expected tokens matched position by position) to a frame of item/answer pairs.
``integer`` and ``sequence`` are exact in polars for every input; ``contains`` and ``nfc`` are
exact in polars for ASCII text, and the rare non-ASCII pairs are decided by Python's own
``re`` and ``unicodedata``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import polars as pl

from schemas.contract import Match
from transforms.text import integer_canonical, is_ascii, py_split_joined, py_strip

EXPECTED: Final = "expected"
ANSWER: Final = "answer"
MODE: Final = "mode"
CORRECT: Final = "correct"
POSITIONAL: Final = "positional"


def _python_verdicts(batch: pl.Series) -> pl.Series:
    # Only rows flagged non-ASCII are graded here: re.IGNORECASE's Unicode case folding
    # (ſ, K, İ, ς ...) and the NFC tables must be Python's own, and no polars kernel is.
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


def _python_grade(mode: str, expected: str, answer: str) -> bool:
    if mode == Match.CONTAINS:
        return re.search(re.escape(expected.strip()), answer.strip(), re.IGNORECASE) is not None
    normalize = unicodedata.normalize
    return normalize("NFC", answer.strip()) == normalize("NFC", expected.strip())


def contains_ascii(expected: pl.Expr, answer: pl.Expr) -> pl.Expr:
    """``contains`` for ASCII text: case-insensitive literal substring after Python's strip.

    >>> pl.select(contains_ascii(pl.lit(" unknown "), pl.lit("Plex is UNKNOWN."))).item()
    True
    """
    needle = py_strip(expected).str.to_lowercase()
    return py_strip(answer).str.to_lowercase().str.contains(needle, literal=True)


def integer_equal(expected: pl.Expr, answer: pl.Expr) -> pl.Expr:
    """``integer``: both sides ASCII integer literals after strip, equal as integers.

    >>> pl.select(integer_equal(pl.lit("88"), pl.lit(" +088\\n"))).item()
    True
    """
    canonical_answer = integer_canonical(py_strip(answer))
    return (canonical_answer == integer_canonical(py_strip(expected))).fill_null(False)


def sequence_equal(expected: pl.Expr, answer: pl.Expr) -> pl.Expr:
    """``sequence``: equal token lists under Python's ``str.split()``.

    >>> pl.select(sequence_equal(pl.lit("a b"), pl.lit(" a\\t b\\n"))).item()
    True
    """
    return py_split_joined(answer) == py_split_joined(expected)


def grade(
    pairs: pl.LazyFrame, key: list[str], positional_where: pl.Expr | None = None
) -> pl.LazyFrame:
    """Add ``correct`` and ``positional`` to item/answer pairs.

    ``pairs`` has ``key`` (unique per pair), ``expected`` (non-null), ``answer`` (null: no
    answer, graded as the empty string) and ``mode`` (a ``Match`` value). ``positional`` is
    computed for the pairs where ``positional_where`` holds (all by default), null elsewhere.
    """
    expected, mode = pl.col(EXPECTED), pl.col(MODE)
    answer = pl.col(ANSWER).fill_null("")
    ascii_pair = is_ascii(expected) & is_ascii(answer)
    needs_python = mode.is_in([Match.CONTAINS, Match.NFC]) & ~ascii_pair
    python_verdict = pl.struct(expected, answer, mode, needs_python.alias("flagged")).map_batches(
        _python_verdicts, return_dtype=pl.Boolean, is_elementwise=True
    )
    correct = (
        pl.when(needs_python)
        .then(python_verdict)
        .when(mode == Match.CONTAINS)
        .then(contains_ascii(expected, answer))
        .when(mode == Match.NFC)
        .then(py_strip(answer) == py_strip(expected))  # ASCII text is already NFC
        .when(mode == Match.INTEGER)
        .then(integer_equal(expected, answer))
        .otherwise(sequence_equal(expected, answer))
    )
    graded = pairs.with_columns(correct.alias(CORRECT))
    wanted = graded if positional_where is None else graded.filter(positional_where)
    return graded.join(positional_scores(wanted, key), on=key, how="left", nulls_equal=True)


def positional_scores(pairs: pl.LazyFrame, key: list[str]) -> pl.LazyFrame:
    """Per pair: ``sum(g == e for g, e in zip(got, exp)) / len(exp)`` over the
    ``str.split()`` tokens, whatever the pair's mode (the contract defines one formula)."""
    tokens = pairs.select(
        *key,
        py_split_joined(pl.col(EXPECTED)).str.split(" ").alias("exp_tokens"),
        py_split_joined(pl.col(ANSWER).fill_null("")).str.split(" ").alias("got_tokens"),
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
