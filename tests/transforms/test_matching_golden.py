"""Golden verdicts of the four match modes (``tests/golden/matching.json``).

Each case has an id, the verdict reasoned by hand from the contract's rule ("Matching an
answer to an item") and why it exists. Both the reference (``tests.reference.grade``) and
the vectorised matcher (``transforms.matching.grade``) must give the pinned verdict: the
property tests only compare the two with each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.reference import grade as reference_grade
from transforms.matching import ANSWER, CORRECT, EXPECTED, MODE, grade

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "matching.json").read_text())
CASES: list[dict[str, Any]] = GOLDEN["cases"]
IDS = [c["id"] for c in CASES]


def test_cases_are_well_formed() -> None:
    assert len(IDS) == len(set(IDS)), "ids are unique"
    assert all(c["why"] and isinstance(c["verdict"], bool) for c in CASES)
    assert {c["mode"] for c in CASES} == {"contains", "integer", "nfc", "sequence"}
    for mode in ("contains", "integer", "nfc", "sequence"):  # both verdicts in every mode
        assert {c["verdict"] for c in CASES if c["mode"] == mode} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_verdict(case: dict[str, Any]) -> None:
    answer = case["answer"] if case["answer"] is not None else ""  # README: null is ""
    assert reference_grade(case["mode"], case["expected"], answer) is case["verdict"], case["why"]


@pytest.fixture(scope="module")
def vectorised() -> dict[str, bool]:
    """Every case graded by ``transforms.matching.grade`` in one frame."""
    frame = pl.LazyFrame(
        {
            "id": IDS,
            MODE: [c["mode"] for c in CASES],
            EXPECTED: [c["expected"] for c in CASES],
            ANSWER: [c["answer"] for c in CASES],
        },
        schema={"id": pl.String, MODE: pl.String, EXPECTED: pl.String, ANSWER: pl.String},
    )
    graded = grade(frame).collect()
    return dict(zip(graded["id"], graded[CORRECT], strict=True))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vectorised_verdict(case: dict[str, Any], vectorised: dict[str, bool]) -> None:
    assert vectorised[case["id"]] is case["verdict"], case["why"]


def test_each_case_alone_gives_the_same_verdict() -> None:
    """One pair per frame: the fast paths see no other rows (a frame of one ASCII pair)."""
    for case in CASES:
        frame = pl.LazyFrame(
            {
                "id": [0],
                MODE: [case["mode"]],
                EXPECTED: [case["expected"]],
                ANSWER: [case["answer"]],
            },
            schema={"id": pl.Int64, MODE: pl.String, EXPECTED: pl.String, ANSWER: pl.String},
        )
        got = grade(frame).collect()[CORRECT].item()
        assert got is case["verdict"], (case["id"], case["why"])
