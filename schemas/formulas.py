"""Formula versions per category. Rescoring history selects versions by name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from schemas.contract import Category

VERSIONS: Final[dict[Category, tuple[str, ...]]] = {
    Category.ASSOCIATIVE_LEARNING: ("v1",),
    Category.CONCEPT_FORMATION: ("v1",),
    Category.LANGUAGE_LEARNING: ("v1",),
    Category.OBSERVATIONAL_LEARNING: ("v1",),
    Category.RUNTIME_RL: ("v1",),
    # v1: 0.5 x weighted mean + 0.5 x test score (the previous formula); v2: the seed's four parts.
    Category.PROCEDURAL_LEARNING: ("v1", "v2"),
}
DEFAULTS: Final[dict[Category, str]] = {c: v[-1] for c, v in VERSIONS.items()}
# The formula version of an episode whose score is the harness's reported score (contract
# 1.2), with no formula input to compute one from: a score table imported. No formula
# recomputes it; a rescore leaves it as it is.
REPORTED: Final = "reported"
# One line per version, for `cogscore formulas`.
DESCRIPTIONS: Final[dict[tuple[Category, str], str]] = {
    (Category.ASSOCIATIVE_LEARNING, "v1"): "right items / items",
    (Category.CONCEPT_FORMATION, "v1"): "accuracy x (0.40 + 0.60 x efficiency beyond the "
    "free examples); 0 when no item is right",
    (Category.LANGUAGE_LEARNING, "v1"): "as concept formation (NFC-exact forms)",
    (Category.OBSERVATIONAL_LEARNING, "v1"): "whole sequences right / items (positional "
    "score kept as a diagnostic)",
    (Category.RUNTIME_RL, "v1"): "round(0.55 x solved + 0.25 x efficiency + 0.20 x progress, 4)",
    (Category.PROCEDURAL_LEARNING, "v1"): "0.5 x weighted learning mean + 0.5 x test score "
    "(the previous formula)",
    (Category.PROCEDURAL_LEARNING, "v2"): "0.30 x transfer + 0.25 x asymptote + 0.25 x "
    "trajectory + 0.20 x consistency (the seed's)",
}


def resolve(selected: Iterable[str] | Mapping[str, str] = ()) -> dict[Category, str]:
    """Formula versions from ``CATEGORY=VERSION`` strings (or a mapping), defaults elsewhere.

    >>> resolve(["procedural_learning=v1"])[Category.PROCEDURAL_LEARNING]
    'v1'
    """
    return {**DEFAULTS, **chosen(selected)}


def chosen(selected: Iterable[str] | Mapping[str, str] = ()) -> dict[Category, str]:
    """Only the versions named in ``selected`` (checked), by category.

    >>> chosen(["procedural_learning=v1"])
    {<Category.PROCEDURAL_LEARNING: 'procedural_learning'>: 'v1'}
    """
    pairs = (
        selected.items() if isinstance(selected, Mapping) else (_split(text) for text in selected)
    )
    picked: dict[Category, str] = {}
    for name, version in pairs:
        try:
            category = Category(name)
        except ValueError:
            raise ValueError(
                f"unknown category {name!r} in --formula; one of {', '.join(Category)}"
            ) from None
        if version not in VERSIONS[category]:
            raise ValueError(
                f"{category} has no formula {version!r}; one of {', '.join(VERSIONS[category])}"
            )
        picked[category] = version
    return picked


def describe(versions: Mapping[Category, str] | Mapping[str, str]) -> str:
    """``CATEGORY=VERSION`` pairs in category order, as the tables write them.

    >>> describe({Category.RUNTIME_RL: "v1", Category.PROCEDURAL_LEARNING: "v2"})
    'runtime_rl=v1,procedural_learning=v2'
    """
    named = {str(c): v for c, v in versions.items()}
    return ",".join(f"{c}={named[c]}" for c in Category if c in named)


def _split(text: str) -> tuple[str, str]:
    name, sep, version = text.partition("=")
    if not sep:
        raise ValueError(f"--formula takes CATEGORY=VERSION, got {text!r}")
    return name.strip(), version.strip()
