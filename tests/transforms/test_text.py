"""``transforms.text``: Python's own string semantics as polars expressions, checked
against Python over arbitrary text (the full Unicode range and the awkward characters)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import NOT_WHITESPACE, WHITESPACE, WORDS, any_text
from transforms.text import (
    PY_WHITESPACE,
    is_ascii,
    py_split_joined,
    py_strip,
)

# Strings mostly made of whitespace (Python's and look-alikes) around and between words.
SPACED = st.lists(
    st.sampled_from(WHITESPACE + NOT_WHITESPACE)
    | st.sampled_from(WORDS)
    | st.characters(codec="utf-8"),  # what a Parquet string can hold: no lone surrogates
    max_size=10,
).map("".join)
TEXTS = st.lists(st.text() | SPACED | any_text(), min_size=1, max_size=30)
SETTINGS = settings(max_examples=60, deadline=None)


def _apply(build: Callable[[pl.Expr], pl.Expr], texts: list[str]) -> list[Any]:
    return pl.DataFrame({"s": texts}).select(build(pl.col("s"))).to_series().to_list()


def test_py_whitespace_is_every_isspace_character() -> None:
    every = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert every == PY_WHITESPACE


@SETTINGS
@given(TEXTS)
def test_py_strip_is_str_strip(texts: list[str]) -> None:
    assert _apply(py_strip, texts) == [t.strip() for t in texts]


@SETTINGS
@given(TEXTS)
def test_py_split_joined_is_join_of_str_split(texts: list[str]) -> None:
    assert _apply(py_split_joined, texts) == [" ".join(t.split()) for t in texts]


@SETTINGS
@given(TEXTS)
def test_is_ascii_is_str_isascii(texts: list[str]) -> None:
    assert _apply(is_ascii, texts) == [t.isascii() for t in texts]
