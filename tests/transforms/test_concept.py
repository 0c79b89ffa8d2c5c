"""Concept formation (and language learning): the seed's boundary table, through the pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemas.contract import Category
from tests.reference import formulas as ref
from tests.reference.test_reference import EXAMPLE, answer, episode, item
from tests.run import run_pipeline

TABLE = json.loads((Path(__file__).parents[1] / "golden" / "concept_formation.json").read_text())


def concept_episode(category: str, correct: int, examples: int, **params: int) -> list[dict]:
    n = TABLE["num_test_items"]
    items = [item(f"q{i}", f"out{i}") for i in range(n)]
    answers = [answer(f"q{i}", f"out{i}" if i < correct else "wrong") for i in range(n)]
    settings = {
        "initial_examples": TABLE["initial_examples"],
        "max_examples": TABLE["max_examples"],
        **params,
    }
    return episode(category, *[EXAMPLE] * examples, *items, *answers, params=json.dumps(settings))


@pytest.mark.parametrize("category", [Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING])
@pytest.mark.parametrize("case", TABLE["rows"], ids=[r["id"] for r in TABLE["rows"]])
def test_seed_boundary_table(case: dict[str, Any], category: str) -> None:
    scores, rejects = run_pipeline(
        concept_episode(category, case["correct_count"], case["examples_used"])
    )
    assert rejects.is_empty()
    got = scores.row(0, named=True)
    assert round(got["score"], TABLE["decimals"]) == case["score"]  # as the seed prints it
    assert got["score"] == ref.concept_score(
        case["correct_count"],
        case["examples_used"],
        TABLE["max_examples"],
        TABLE["initial_examples"],
        TABLE["num_test_items"],
    )
    assert got["examples_used"] == case["examples_used"]


def test_num_test_items_counts_unlisted_items_as_wrong() -> None:
    scores, _ = run_pipeline(concept_episode(Category.CONCEPT_FORMATION, 4, 4, num_test_items=8))
    assert scores["accuracy"].to_list() == [4 / 8]


def test_free_threshold_widens_the_free_zone() -> None:
    narrow, _ = run_pipeline(concept_episode(Category.CONCEPT_FORMATION, 4, 8))
    wide, _ = run_pipeline(concept_episode(Category.CONCEPT_FORMATION, 4, 8, free_threshold=8))
    assert narrow["efficiency"][0] < 1.0 == wide["efficiency"][0]
