"""Plain-Python reference implementation of cogscore (the oracle for the polars scorer)."""

from tests.reference.formulas import (
    composite_parts,
    composite_score,
    concept_efficiency,
    concept_score,
    learning_curve_slope,
    mean,
    procedural_composite_score,
    procedural_parts,
    procedural_v1_score,
    weighted_learning_mean,
)
from tests.reference.matching import grade, is_integer_literal, positional
from tests.reference.scorer import FORMULA_VERSIONS, SCORE_FIELDS, ReferenceResult, reference_score

__all__ = [
    "FORMULA_VERSIONS",
    "SCORE_FIELDS",
    "ReferenceResult",
    "composite_parts",
    "composite_score",
    "concept_efficiency",
    "concept_score",
    "grade",
    "is_integer_literal",
    "learning_curve_slope",
    "mean",
    "positional",
    "procedural_composite_score",
    "procedural_parts",
    "procedural_v1_score",
    "reference_score",
    "weighted_learning_mean",
]
