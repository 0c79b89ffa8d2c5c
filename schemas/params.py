"""The `params` JSON object each category needs (contract "Where each formula's inputs
come from")."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from schemas.contract import Category


class ParamType(StrEnum):
    INT = "int"  # a JSON integer (not a bool, not 5.0)
    FLOAT = "float"  # a finite JSON number (integer or not, not a bool)
    PROGRESS_MODE = "progress_mode"  # the string "max" or "last"


@dataclass(frozen=True)
class Param:
    name: str
    type: ParamType
    required: bool
    default: float | int | str | None = None  # None with required=False: derived (num_test_items)
    minimum: int | None = None  # inclusive lower bound for INT parameters


PROGRESS_MODES: Final = ("max", "last")

PARAMS: Final[dict[Category, tuple[Param, ...]]] = {
    Category.ASSOCIATIVE_LEARNING: (),
    Category.OBSERVATIONAL_LEARNING: (),
    Category.CONCEPT_FORMATION: (
        Param("initial_examples", ParamType.INT, required=True),
        Param("max_examples", ParamType.INT, required=True),
        Param("free_threshold", ParamType.INT, required=False, default=4),
        Param("num_test_items", ParamType.INT, required=False, default=None),
    ),
    Category.RUNTIME_RL: (
        # The seed's efficiency divides by budget - min_explore; with budget >= 1 that
        # quotient is only reached when it is positive, so budget < 1 is rejected.
        Param("budget", ParamType.INT, required=True, minimum=1),
        Param("min_explore", ParamType.INT, required=False, default=7),
        Param("floor", ParamType.FLOAT, required=False, default=0.10),
        Param("progress", ParamType.PROGRESS_MODE, required=False, default="max"),
    ),
    Category.PROCEDURAL_LEARNING: (
        Param("practice_rounds", ParamType.INT, required=False, default=5, minimum=1),
    ),
}
PARAMS[Category.LANGUAGE_LEARNING] = PARAMS[Category.CONCEPT_FORMATION]
