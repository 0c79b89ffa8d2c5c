"""``@formula``: a formula version is registered where it is defined.

A version is one function (episodes with their facts in, the same frame with ``score`` and
its components out) and one registration naming its category, version, weights (the
module's named constants, which the function reads too) and a one-line description
written with them. ``schemas.formulas`` (names, defaults, descriptions) and ``SCORERS``
(the functions, read by ``transforms.pipeline``) are both generated from the registrations::

    TRANSFER, MEAN = 0.5, 0.5

    @formula(Category.PROCEDURAL_LEARNING, "v9", components=COMPONENTS,
             weights={"transfer": TRANSFER, "mean": MEAN},
             text="{mean:.2f} x mean + {transfer:.2f} x test score", tasks=("some_task",))
    def plain_mean(episodes: pl.LazyFrame) -> pl.LazyFrame: ...

``default=True`` makes a version its category's default; ``tasks`` makes it the default of
those tasks (a task's own formula). New modules are imported by ``transforms.registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import polars as pl

from schemas.columns import Component
from schemas.contract import Category
from schemas.formulas import (
    ALL_TASKS,
    TASK_SEPARATOR,
    FormulaSet,
    FormulaVersion,
    ordered,
    split_key,
    task_key,
)

Scorer = Callable[[pl.LazyFrame], pl.LazyFrame]


@dataclass(frozen=True)
class Registered:
    """A version's function and the components it writes (the others stay null)."""

    scorer: Scorer
    components: tuple[Component, ...]


SCORERS: dict[tuple[Category, str], Registered] = {}


# Filled in place by ``register`` (the registrations run when ``transforms.registry`` imports the
# formula modules), in category order.
REGISTRY: Final[dict[tuple[Category, str], FormulaVersion]] = {}
VERSIONS: Final[dict[Category, tuple[str, ...]]] = {}
DEFAULTS: Final[dict[Category, str]] = {}
# Tasks with a default of their own: "category/task" -> version.
TASK_DEFAULTS: Final[dict[str, str]] = {}


def register(spec: FormulaVersion) -> None:
    """Add one version to the tables (each (category, version) once; one default each)."""
    key = (spec.category, spec.version)
    if key in REGISTRY:
        raise ValueError(f"{spec.category}={spec.version} is registered twice")
    if spec.default and spec.category in DEFAULTS:
        raise ValueError(f"{spec.category} has two default formulas")
    entries = {**REGISTRY, key: spec}
    order = {c: i for i, c in enumerate(Category)}
    REGISTRY.clear()
    REGISTRY.update(sorted(entries.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])))
    VERSIONS.clear()
    for category, version in REGISTRY:
        VERSIONS[category] = (*VERSIONS.get(category, ()), version)
    if spec.default:
        DEFAULTS[spec.category] = spec.version
    for task in spec.tasks:
        TASK_DEFAULTS[task_key(spec.category, task)] = spec.version


def listing() -> list[tuple[str, bool, str]]:
    """(``KEY=VERSION``, is a default, description) of every version, then of every task
    with a default of its own: what ``cogscore formulas`` prints and the README's table."""
    rows = [(f"{c}={v}", spec.default, spec.description) for (c, v), spec in REGISTRY.items()]
    for key, version in ordered(TASK_DEFAULTS).items():
        category, _ = split_key(key)
        rows.append(
            (
                f"{key}={version}",
                True,
                f"this task's own: {REGISTRY[category, version].description}",
            )
        )
    return rows


def resolve(selected: Iterable[str] | Mapping[str, str] = ()) -> FormulaSet:
    """The formula set: defaults (categories' and tasks' own), then the versions named in
    ``selected`` (``KEY=VERSION`` strings or a mapping).

    >>> resolve(["procedural_learning=v1"])["procedural_learning"]
    'v1'
    """
    return overlay({**_str_keys(DEFAULTS), **TASK_DEFAULTS}, selected)


def overlay(base: Mapping[str, str], selected: Iterable[str] | Mapping[str, str]) -> FormulaSet:
    """``base`` with the versions named in ``selected``; ``CATEGORY/*=VERSION`` gives every
    task of the category that version (their own entries are dropped).

    >>> overlay({"procedural_learning": "v3", "procedural_learning/nim": "v4"},
    ...         ["procedural_learning/*=v2"])
    {'procedural_learning': 'v2'}
    """
    out = dict(base)
    for key, version in chosen(selected).items():
        category, task = split_key(key)
        if task == ALL_TASKS:
            tasks_of = f"{category}{TASK_SEPARATOR}"
            out = {k: v for k, v in out.items() if not k.startswith(tasks_of)}
            out[str(category)] = version
        else:
            out[key] = version
    return ordered(out)


def chosen(selected: Iterable[str] | Mapping[str, str] = ()) -> FormulaSet:
    """Only the versions named in ``selected`` (checked), by key.

    >>> chosen(["procedural_learning=v1", "procedural_learning/nim=v2"])
    {'procedural_learning': 'v1', 'procedural_learning/nim': 'v2'}
    """
    pairs = (
        selected.items() if isinstance(selected, Mapping) else (_split(text) for text in selected)
    )
    picked: FormulaSet = {}
    for name, version in pairs:
        category, task = split_key(name)
        if version not in VERSIONS[category]:
            raise ValueError(
                f"{category} has no formula {version!r}; one of {', '.join(VERSIONS[category])}"
            )
        picked[name if task is None else task_key(category, task)] = version
    return picked


def _str_keys(versions: Mapping[Category, str]) -> FormulaSet:
    return {str(c): v for c, v in versions.items()}


def _split(text: str) -> tuple[str, str]:
    name, sep, version = text.partition("=")
    if not sep:
        raise ValueError(f"--formula takes CATEGORY=VERSION or CATEGORY/TASK=VERSION, got {text!r}")
    return name.strip(), version.strip()


def formula(
    categories: Category | Iterable[Category],
    version: str,
    *,
    text: str,
    components: tuple[Component, ...],
    weights: Mapping[str, float] | None = None,
    default: bool = False,
    tasks: tuple[str, ...] = (),
) -> Callable[[Scorer], Scorer]:
    """Register the decorated function as ``version`` of each of ``categories``."""
    every = (categories,) if isinstance(categories, Category) else tuple(categories)

    def register_it(scorer: Scorer) -> Scorer:
        for category in every:
            spec = FormulaVersion(category, version, text, dict(weights or {}), default, tasks)
            register(spec)
            SCORERS[category, version] = Registered(scorer, components)
        return scorer

    return register_it
