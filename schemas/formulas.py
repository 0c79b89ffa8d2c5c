"""Formula versions: their names, weights and descriptions, per category and per task.

Each version is registered where it is defined (``@formula`` in ``transforms/<category>.py``;
the registry, what is registered and the formula sets made from it: ``transforms.registry``).
This module holds what needs no registration: a version's declaration, and the keys and
formula sets as text. Rescoring history selects versions by name.

A *formula set* maps keys to versions: a key is a category (``procedural_learning``) or a
task of one (``procedural_learning/boolean_circuit_proc_learning``); a task's own entry wins
over its category's. ``--formula`` takes ``KEY=VERSION``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from schemas.contract import Category

# A category's name, or "category/task".
FormulaSet = dict[str, str]
TASK_SEPARATOR: Final = "/"
ALL_TASKS: Final = "*"  # CATEGORY/*=VERSION: the category and every task of it
# The formula version of an episode whose score is the harness's reported score (contract
# 1.2), with no formula input to compute one from: a score table imported. No formula
# recomputes it; a rescore leaves it as it is.
REPORTED: Final = "reported"


@dataclass(frozen=True)
class FormulaVersion:
    """One registered version: its weights (named constants of its module) and a one-line
    description written with them (``str.format`` over the weights)."""

    category: Category
    version: str
    text: str
    weights: Mapping[str, float] = field(default_factory=dict)
    default: bool = False  # the category's default version
    tasks: tuple[str, ...] = ()  # tasks whose default this version is (their own formula)

    @property
    def description(self) -> str:
        return self.text.format(**self.weights)


def task_key(category: str, task: str) -> str:
    """The formula-set key of one task.

    >>> task_key("procedural_learning", "nim")
    'procedural_learning/nim'
    """
    return f"{category}{TASK_SEPARATOR}{task}"


def split_key(name: str) -> tuple[Category, str | None]:
    """(category, task or None) of a formula-set key; an unknown category is refused.

    >>> split_key("procedural_learning/nim")
    (<Category.PROCEDURAL_LEARNING: 'procedural_learning'>, 'nim')
    """
    head, sep, task = str(name).strip().partition(TASK_SEPARATOR)
    try:
        category = Category(head.strip())
    except ValueError:
        raise ValueError(
            f"unknown category {head!r} in --formula; one of {', '.join(Category)}"
        ) from None
    if sep and not task.strip():
        raise ValueError(f"--formula {name!r} names no task after {TASK_SEPARATOR!r}")
    return category, (task.strip() if sep else None)


def version_of(formulas: Mapping[str, str], category: str, task: str | None = None) -> str:
    """The version ``formulas`` gives a task (its own entry, else its category's).

    >>> version_of({"procedural_learning": "v3", "procedural_learning/nim": "v4"},
    ...            "procedural_learning", "nim")
    'v4'
    """
    if task is not None:
        own = formulas.get(task_key(category, task))
        if own is not None:
            return own
    return formulas[category]


def task_versions(formulas: Mapping[str, str], category: str) -> dict[str, str]:
    """The tasks of ``category`` that ``formulas`` gives a version of their own.

    >>> task_versions({"runtime_rl": "v1", "procedural_learning/nim": "v4"},
    ...               "procedural_learning")
    {'nim': 'v4'}
    """
    prefix = f"{category}{TASK_SEPARATOR}"
    return {k[len(prefix) :]: v for k, v in formulas.items() if str(k).startswith(prefix)}


def describe(versions: Mapping[Category, str] | Mapping[str, str]) -> str:
    """``KEY=VERSION`` pairs in category order (each category's tasks after it, by name),
    as the tables write them.

    >>> describe({"procedural_learning/nim": "v4", Category.RUNTIME_RL: "v1",
    ...           Category.PROCEDURAL_LEARNING: "v3"})
    'runtime_rl=v1,procedural_learning=v3,procedural_learning/nim=v4'
    """
    return ",".join(f"{k}={v}" for k, v in ordered(versions).items())


def ordered(versions: Mapping[Category, str] | Mapping[str, str]) -> FormulaSet:
    """``versions`` with string keys in category order, each category's tasks after it."""
    named = {str(k): v for k, v in versions.items()}
    out: FormulaSet = {}
    for category in Category:
        if category in named:
            out[str(category)] = named[category]
        prefix = f"{category}{TASK_SEPARATOR}"
        out.update(sorted((k, v) for k, v in named.items() if k.startswith(prefix)))
    return out
