"""Expression builders that reproduce Python's own string semantics in polars.

Python's ``str.strip()`` and ``str.split()`` use ``str.isspace``, which is not Rust's
``char::is_whitespace`` (polars' default): ``\\x1c``-``\\x1f`` are Python whitespace, for one.
So the exact character set is spelled out here.
"""

from __future__ import annotations

from typing import Final

import polars as pl

# Every character for which Python's str.isspace() is true (tests check this list).
PY_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Python whitespace but the space, one character at a time (rare in text: cheap to find).
_OTHER_WHITESPACE: Final = (
    "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PY_WHITESPACE if c != " ") + "]"
)
# `[0-9]` in Rust's regex is ASCII only, as the contract's integer literal is.
INTEGER_LITERAL: Final = r"^[+-]?[0-9]+$"


def py_strip(expr: pl.Expr) -> pl.Expr:
    """Python's ``str.strip()``.

    >>> pl.select(py_strip(pl.lit("\\x1c 88\\u00a0"))).item()
    '88'
    """
    return expr.str.strip_chars(PY_WHITESPACE)


def is_ascii(expr: pl.Expr) -> pl.Expr:
    """True where every character is ASCII (one byte each in UTF-8).

    >>> pl.select(is_ascii(pl.lit("abc")), is_ascii(pl.lit("é")).alias("b")).row(0)
    (True, False)
    """
    return expr.str.len_bytes() == expr.str.len_chars()


def py_split_joined(expr: pl.Expr) -> pl.Expr:
    """``" ".join(s.split())``: equal exactly when Python's token lists are equal.

    >>> pl.select(py_split_joined(pl.lit("\\ta  b\\x1c c "))).item()
    'a b c'
    """
    # Every whitespace character to a space, then runs of spaces to one: replacing each
    # run of whitespace at once (a match at every space) took three times as long.
    spaced = expr.str.replace_all(_OTHER_WHITESPACE, " ").str.replace_all(" {2,}", " ")
    return spaced.str.strip_chars(" ")
