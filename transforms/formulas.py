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

import polars as pl

from schemas.contract import Category
from schemas.tables import Component

Scorer = Callable[[pl.LazyFrame], pl.LazyFrame]


@dataclass(frozen=True)
class Registered:
    """A version's function and the components it writes (the others stay null)."""

    scorer: Scorer
    components: tuple[Component, ...]


SCORERS: dict[tuple[Category, str], Registered] = {}


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
        # Imported here: schemas.formulas imports the modules that call this.
        from schemas.formulas import FormulaVersion, register

        for category in every:
            spec = FormulaVersion(category, version, text, dict(weights or {}), default, tasks)
            register(spec)
            SCORERS[category, version] = Registered(scorer, components)
        return scorer

    return register_it
