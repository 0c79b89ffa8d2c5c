"""``schemas.tables``: the output tables' checks refuse what no formula can produce."""

from __future__ import annotations

import math

import pandera.errors
import polars as pl
import pytest

from schemas.models import schema_of

COMPONENTS_IN_THE_UNIT_INTERVAL = [
    ("episode_scores", c)
    for c in ("progress", "transfer", "asymptote", "trajectory", "consistency", "positional")
] + [("model_comparisons", "p_value"), ("model_comparisons", "p_holm")]


VALUES = [
    *[(0.0, True), (1.0, True), (-0.0, True), (None, True)],
    *[(-1e-300, False), (1 + 1e-12, False), (math.nan, False), (math.inf, False)],
]


@pytest.mark.parametrize(("model", "column"), COMPONENTS_IN_THE_UNIT_INTERVAL)
@pytest.mark.parametrize(("value", "valid"), VALUES)
def test_a_value_outside_zero_to_one_is_refused(
    model: str, column: str, value: float | None, valid: bool
) -> None:
    check = schema_of(model).columns[column]
    frame = pl.DataFrame({column: [0.5, value]}, schema={column: pl.Float64})
    if valid:
        check.validate(frame)
    else:
        with pytest.raises(pandera.errors.SchemaError, match="in_range"):
            check.validate(frame)
