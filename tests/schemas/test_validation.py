"""``schemas.validation``: one query, read from each table's declaration, says what pandera
says, and pandera reports failures.

The frames are the tables of a real run of the example dump, then changed at random: a value
set to null, NaN, out of range or unknown, a row repeated, a column dropped, moved, added
or of another dtype. On each, the one-query answer must equal pandera's own validation."""

from __future__ import annotations

import math
from pathlib import Path

import pandera.errors
import pandera.polars as pa
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.mappers import local_mapper
from flows.options import run_options
from flows.records import RunContext
from flows.runs import score
from flows.store.catalog import CORE_TABLES
from schemas.models import schema_of
from schemas.tables import TABLES
from schemas.validation import passes, validate
from tests.tables import read_table

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


HYPOTHESES = """
[[hypothesis]]
id = "oracle"
claim = "the oracle beats the random model"
test = "wilcoxon"
scope = "overall"
a = "oracle-large"
b = "random-small"

[[hypothesis]]
id = "groups"
claim = "the two better models beat the random one and one that never ran"
test = "mann-whitney"
scope = ["concept_formation", "runtime_rl"]
a = ["oracle-large", "learner-medium"]
b = ["random-small", "never-ran"]
"""


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    """Each core table of a run of the example dump, as its model lays it out (with planned
    hypotheses: one tested, one not estimable)."""
    out = tmp_path_factory.mktemp("out")
    planned = out.parent / f"{out.name}-hypotheses.toml"
    planned.write_text(HYPOTHESES)
    context = RunContext(options=run_options(hypotheses=str(planned)))
    score(EXAMPLE_DUMP, out, (), local_mapper, context)
    laid_out = {}
    for name in CORE_TABLES:
        frame, schema = read_table(out, name), schema_of(name)
        if not any(c.regex for c in schema.columns.values()):  # read back, the partition
            frame = frame.select(list(schema.columns))  # columns come last
        laid_out[name] = frame
    return laid_out


def pandera_passes(model: pa.DataFrameSchema, frame: pl.DataFrame) -> bool:
    try:
        model.validate(frame, lazy=True)
    except pandera.errors.SchemaErrors:
        return False
    return True


def test_every_table_of_a_run_passes_in_one_query(tables: dict[str, pl.DataFrame]) -> None:
    for name, frame in tables.items():
        model = schema_of(name)
        # the example dump has no regression, and no run a later one replaced (contract 1.4)
        assert frame.height > 0 or name in ("regressions", "replaced_episodes"), name
        assert pandera_passes(model, frame), name
        assert passes(TABLES[name], frame), name


VALUES: dict[type[pl.DataType], list[object]] = {
    pl.Float64: [None, math.nan, math.inf, -math.inf, -0.5, 0.0, 1.0, 1.5, 1e300],
    pl.Int64: [None, -1, 0, 1, 2, 10**9],
    pl.String: [None, "", "concept_formation", "no-such-category", "rejected"],
    pl.Boolean: [None, True, False],
    pl.UInt32: [None, 0, 1, 7],
}


AWKWARD: dict[type[pl.DataType], list[object]] = {
    pl.Float64: [None, math.nan, -0.5, 1.5],
    pl.Int64: [None, -1, 0],
    pl.String: [None, "no-such-category"],
    pl.Boolean: [None],
}
OTHER_DTYPE: dict[type[pl.DataType], pl.DataType] = {
    pl.Float64: pl.Float32(),
    pl.Int64: pl.Int32(),
    pl.String: pl.Categorical(),
    pl.Boolean: pl.Int8(),
}
SWEPT = ("episode_scores", "rejects")  # validated per file on the workers: the hot path


def test_every_column_set_awkward_or_cast_answers_as_pandera(
    tables: dict[str, pl.DataFrame],
) -> None:
    """Each column of the tables the workers validate, its first value made null, NaN,
    out of range or unknown, or the column cast to a neighbouring dtype."""
    for name in SWEPT:
        frame, model = tables[name].head(3), schema_of(name)
        for column, dtype in frame.schema.items():
            first = pl.int_range(pl.len()) == 0
            changed = [
                frame.with_columns(
                    pl.when(first)
                    .then(pl.lit(v, dtype=dtype))
                    .otherwise(pl.col(column))
                    .alias(column)
                )
                for v in AWKWARD.get(type(dtype), [])
            ]
            if type(dtype) in OTHER_DTYPE:
                changed.append(frame.with_columns(pl.col(column).cast(OTHER_DTYPE[type(dtype)])))
            for each in changed:
                assert passes(TABLES[name], each) == pandera_passes(model, each), (
                    name,
                    column,
                    each.row(0),
                )


@st.composite
def changed(draw: st.DrawFn, tables: dict[str, pl.DataFrame]) -> tuple[str, pl.DataFrame]:
    """A table of the run with one random change."""
    name = draw(st.sampled_from(sorted(n for n, t in tables.items() if t.height)))
    frame = tables[name]
    column = draw(st.sampled_from(frame.columns))
    dtype = frame.schema[column]
    change = draw(
        st.sampled_from(["value", "value", "value", "repeat", "drop", "move", "add", "cast"])
    )
    if change == "repeat":
        row = draw(st.integers(0, frame.height - 1))
        return name, pl.concat([frame, frame.slice(row, 1)])
    if change == "drop":
        return name, frame.drop(column)
    if change == "move":
        return name, frame.select(*(c for c in frame.columns if c != column), column)
    if change == "add":
        return name, frame.with_columns(pl.lit(1).alias("extra"))
    if change == "cast" and not dtype.is_nested():
        other = draw(st.sampled_from([pl.String, pl.Float32, pl.Int32, pl.Float64, pl.Int64]))
        return name, frame.with_columns(pl.col(column).cast(other, strict=False))
    values = VALUES.get(type(dtype), [None])
    value = draw(st.sampled_from(values))
    row = draw(st.integers(0, frame.height - 1))
    at_row = pl.int_range(pl.len()) == row
    new = pl.when(at_row).then(pl.lit(value, dtype=dtype)).otherwise(pl.col(column))
    return name, frame.with_columns(new.alias(column))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_one_query_answers_as_pandera_on_changed_tables(
    tables: dict[str, pl.DataFrame], data: st.DataObject
) -> None:
    name, frame = data.draw(changed(tables))
    model = schema_of(name)
    expected = pandera_passes(model, frame)
    assert passes(TABLES[name], frame) == expected
    if expected:
        assert validate(name, frame) is frame
    else:
        with pytest.raises(pandera.errors.SchemaErrors):
            validate(name, frame)


def test_a_fresh_process_validates_without_pandera_and_reports_with_it() -> None:
    """A table that passes is validated without importing pandera (about 1.2 s of CPU, most
    of a small night's run); one that fails gets pandera's report, pandera imported then (a
    Dask worker's first file may be that one)."""
    import subprocess
    import sys

    code = (
        "import sys, polars as pl\n"
        "from schemas.tables import REJECTS_TABLE\n"
        "from schemas.validation import validate\n"
        "none = pl.DataFrame(schema=REJECTS_TABLE.dtypes)\n"
        "print(validate(REJECTS_TABLE, none).height, 'pandera' in sys.modules)\n"
        "try:\n"
        "    validate(REJECTS_TABLE, none.drop('file'))\n"
        "except Exception as error:\n"
        "    print(type(error).__module__, type(error).__name__)\n"
    )
    root = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["0 False", "pandera.errors SchemaErrors"]


def test_a_table_missing_any_column_is_reported_by_pandera(
    tables: dict[str, pl.DataFrame],
) -> None:
    """pandera's report of the failures must itself work: with a StrEnum member as a
    column's name, it failed while stacking the failure cases (polars SchemaError)."""
    for name, frame in tables.items():
        literal = [c for c, column in schema_of(name).columns.items() if not column.regex]
        for column in literal:
            with pytest.raises(pandera.errors.SchemaErrors):
                validate(name, frame.drop(column))


@pytest.mark.parametrize("value", [math.inf, math.nan])
@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("episode_scores", "cost_usd"),
        ("task_scores", "latency_ms"),
        ("task_scores", "mean_tokens"),
        ("model_scores", "cost_usd"),
        ("standings", "cost_usd"),
    ],
)
def test_a_usage_value_that_is_not_finite_is_never_written(
    tables: dict[str, pl.DataFrame], table: str, column: str, value: float
) -> None:
    """Contract 1.4 (issue 46): no sum makes one any more (``transforms.usage.fitting``);
    should one appear, the table fails its validation, both ways, before it is written
    (two replies of 1e308 dollars put ``inf`` into task_scores and the standings)."""
    frame = tables[table]
    assert passes(TABLES[table], frame)
    bad = frame.with_columns(pl.lit(value, pl.Float64).alias(column))
    assert not passes(TABLES[table], bad) and not pandera_passes(schema_of(table), bad)
    at_most = frame.with_columns(pl.lit(1.7976931348623157e308, pl.Float64).alias(column))
    assert passes(TABLES[table], at_most)
