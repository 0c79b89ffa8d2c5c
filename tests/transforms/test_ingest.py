"""Reading a file into the canonical frame: contract 1.1's optional ``instance_id``."""

from __future__ import annotations

import polars as pl
import pytest

from schemas.rules import Rule
from transforms.ingest import normalise, schema_problems

BASE = {"run_id": pl.String(), "episode_id": pl.String(), "model": pl.String()}


def _instances(column: pl.Series | None) -> list[object]:
    frame = pl.DataFrame({"run_id": ["r", "r"]})
    if column is not None:
        frame = frame.with_columns(column.alias("instance_id"))
    rows = normalise(frame.lazy(), frame.schema, file="f.parquet", partitions={})
    return rows.collect()["instance_id"].to_list()


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (pl.Series(["a#1", None]), ["a#1", None]),
        (pl.Series([7, None], dtype=pl.Int16), ["7", None]),
        (pl.Series([2**40, 0], dtype=pl.UInt64), [str(2**40), "0"]),
        (pl.Series(["x", "y"], dtype=pl.Categorical), ["x", "y"]),
        (None, [None, None]),  # contract 1.0: no column, nothing shared
    ],
    ids=["string", "int16", "uint64", "categorical", "absent"],
)
def test_instance_ids_read_as_text_or_null(
    column: pl.Series | None, expected: list[object]
) -> None:
    assert _instances(column) == expected


@pytest.mark.parametrize("dtype", [pl.Float64(), pl.Boolean(), pl.List(pl.String())])
def test_an_instance_id_of_another_type_rejects_the_file(dtype: pl.DataType) -> None:
    problems = schema_problems({"turn": pl.Int64(), "instance_id": dtype})
    wrong = [text for rule, text in problems if rule is Rule.WRONG_COLUMN_TYPE]
    assert wrong == [
        f"column `instance_id` has type {dtype}; the contract allows a string or an integer"
    ]


def test_an_all_null_instance_id_column_is_accepted() -> None:
    assert not [
        p for p in schema_problems({"instance_id": pl.Null()}) if p[0] is Rule.WRONG_COLUMN_TYPE
    ]


def test_ts_reads_as_its_instant_in_utc_whatever_its_zone() -> None:
    """``ts`` (read for an episode's wall time): the same instant in UTC, from a naive time
    (taken as UTC), another zone or nanoseconds; null where the file has no ``ts``."""
    from datetime import UTC, datetime

    noon = datetime(2026, 12, 1, 12)
    frame = pl.DataFrame({"run_id": ["r"], "naive": [noon]}).with_columns(
        pl.col("naive").dt.replace_time_zone("Europe/Paris").alias("paris"),
        pl.col("naive").cast(pl.Datetime("ns")).alias("ns"),
    )
    read = {}
    for column in ("naive", "paris", "ns"):
        one = frame.select("run_id", pl.col(column).alias("ts"))
        rows = normalise(one.lazy(), one.schema, file="f.parquet", partitions={}).collect()
        assert rows.schema["ts"] == pl.Datetime("us", "UTC")
        read[column] = rows["ts"].item()
    assert read == {
        "naive": noon.replace(tzinfo=UTC),
        "paris": datetime(2026, 12, 1, 11, tzinfo=UTC),
        "ns": noon.replace(tzinfo=UTC),
    }
    none = frame.select("run_id")
    rows = normalise(none.lazy(), none.schema, file="f.parquet", partitions={}).collect()
    assert rows["ts"].dtype == pl.Datetime("us", "UTC") and rows["ts"].item() is None
