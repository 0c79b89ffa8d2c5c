"""The formula registry: names generated from the registrations, weights read by the code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from schemas.contract import Category
from schemas.formulas import describe
from tests.reference.test_reference import (
    ACTION,
    EXAMPLE,
    answer,
    episode,
    feedback,
    item,
    round_end,
)
from tests.run import run_pipeline
from transforms.registry import (
    DEFAULTS,
    REGISTRY,
    SCORERS,
    VERSIONS,
    chosen,
    listing,
    overlay,
    resolve,
)


def test_every_registered_version_has_a_function_and_every_function_a_name() -> None:
    assert set(SCORERS) == set(REGISTRY) == {(c, v) for c in VERSIONS for v in VERSIONS[c]}


def test_every_category_has_versions_and_one_default_among_them() -> None:
    assert list(VERSIONS) == list(Category)  # in category order
    for category in Category:
        assert DEFAULTS[category] in VERSIONS[category]
        assert sum(REGISTRY[category, v].default for v in VERSIONS[category]) == 1


def test_descriptions_are_written_with_the_registered_weights() -> None:
    for key, spec in REGISTRY.items():
        weights = spec.weights
        written = {float(x) for x in re.findall(r"\d+\.\d+", spec.description)}
        assert written == set(weights.values()), key


def test_a_task_key_wins_over_its_category_and_a_star_drops_the_task_keys() -> None:
    base = resolve(["procedural_learning=v1", "procedural_learning/nim=v2"])
    assert base["procedural_learning"] == "v1" and base["procedural_learning/nim"] == "v2"
    both = overlay(base, ["procedural_learning/*=v2"])
    assert both["procedural_learning"] == "v2"
    assert not [k for k in both if k.startswith("procedural_learning/")]
    assert describe(base).index("procedural_learning=v1") < describe(base).index("/nim=v2")


@pytest.mark.parametrize(
    "bad", ["procedural=v1", "procedural_learning=v9", "procedural_learning/=v1", "v1"]
)
def test_unknown_categories_versions_and_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        chosen([bad])


# --- the code reads the registered weights ------------------------------------------------


def score_of(category: Category, body: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    rows = episode(category, *body, params=json.dumps(params))
    scores, rejects = run_pipeline(rows)
    assert rejects.is_empty(), rejects
    return scores.row(0, named=True)


def weights(category: Category) -> dict[str, float]:
    return dict(REGISTRY[category, DEFAULTS[category]].weights)


def test_runtime_rl_score_is_the_registered_weighted_sum() -> None:
    body = [ACTION, feedback(0.3, False)] * 9 + [ACTION, feedback(0.6, True)]
    got = score_of(Category.RUNTIME_RL, body, budget=20)
    w = weights(Category.RUNTIME_RL)
    parts = w["success"] * 1.0 + w["efficiency"] * got["efficiency"]
    assert got["score"] == round(parts + w["progress"] * got["progress"], 4)


def test_concept_score_is_the_registered_weighted_product() -> None:
    body = [EXAMPLE] * 8 + [item("a", "x"), item("b", "y"), answer("a", "x")]
    got = score_of(Category.CONCEPT_FORMATION, body, initial_examples=3, max_examples=16)
    w = weights(Category.CONCEPT_FORMATION)
    assert 0.0 < got["efficiency"] < 1.0
    assert got["score"] == got["accuracy"] * (w["base"] + w["efficiency"] * got["efficiency"])


@pytest.mark.parametrize("version", VERSIONS[Category.PROCEDURAL_LEARNING])
def test_procedural_scores_are_the_registered_weighted_sums(version: str) -> None:
    rounds = [round_end(n, v) for n, v in enumerate([0.1, 0.3, 0.5, 0.8, 0.9], 1)]
    body = [*rounds, item("t1", "x"), item("t2", "y"), answer("t1", "x")]
    rows = episode(Category.PROCEDURAL_LEARNING, *body)
    scores, _ = run_pipeline(rows, {Category.PROCEDURAL_LEARNING: version})
    got = scores.row(0, named=True)
    w = dict(REGISTRY[Category.PROCEDURAL_LEARNING, version].weights)
    parts = {**got, "mean": (0.1 + 0.3 + 0.5 + 0.8 + 0.9) / 5}  # v4: the plain mean
    weighted = 0.0
    for part, weight in w.items():
        weighted += weight * parts[part]
    rounding = 5e-5 if version == "v3" else 1e-12  # v3 rounds to 4 places
    assert abs(got["score"] - weighted) <= rounding, (version, got, w)


def test_the_readme_table_is_the_registry() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("\n## Formula versions\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    written = [tuple(cell.strip() for cell in row.strip("|").split(" | ")) for row in rows]
    expected = [(f"`{key}`", "yes" if default else "", text) for key, default, text in listing()]
    assert written == expected
