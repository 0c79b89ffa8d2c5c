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


def test_the_columns_a_staged_night_holds_include_every_column_its_comparisons_read() -> None:
    from schemas.columns import COMPARED_COLUMNS, HELD_DTYPES
    from schemas.tables import EPISODE_SCORES_TABLE

    assert set(COMPARED_COLUMNS) <= set(HELD_DTYPES) <= set(EPISODE_SCORES_TABLE.columns)


def test_each_table_is_its_rows_as_scored_plus_the_provenance() -> None:
    from schemas.columns import EPISODE_SCORES_DTYPES, PROVENANCE, REJECTS_DTYPES
    from schemas.tables import EPISODE_SCORES_TABLE, REJECTS_TABLE

    assert EPISODE_SCORES_TABLE.dtypes == {**EPISODE_SCORES_DTYPES, **PROVENANCE}
    assert REJECTS_TABLE.dtypes == {**REJECTS_DTYPES, **PROVENANCE}
