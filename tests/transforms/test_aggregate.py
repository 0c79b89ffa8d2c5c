"""Aggregates: the component means a night's reduction makes from per-file sums."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.aggregate import component_means, component_sums

KEY = {"dump_date": "d", "model": "m", "category": "c", "task": "t"}


@st.composite
def episodes(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(1, 30))
    value = st.one_of(st.none(), st.floats(0, 1, allow_nan=False))
    return pl.DataFrame(
        {
            **{k: [v] * n for k, v in KEY.items()},
            "file": draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n)),
            "episode_id": [f"e{i:03d}" for i in range(n)],
            "accuracy": draw(st.lists(value, min_size=n, max_size=n)),
            "success": draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n)),
        },
        schema_overrides={"accuracy": pl.Float64, "success": pl.Boolean},
    )


@settings(max_examples=60, deadline=None)
@given(episodes())
def test_component_means_are_the_means_of_the_episodes(frame: pl.DataFrame) -> None:
    means = component_means(component_sums(frame.lazy())).collect().row(0, named=True)
    for column in ("accuracy", "success"):
        values = [float(v) for v in frame[column].to_list() if v is not None]
        expected = math.fsum(values) / len(values) if values else None
        got = means[f"mean_{column}"]
        assert (got is None) == (expected is None)
        if expected is not None:
            assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=30, deadline=None)
@given(episodes())
def test_files_summed_apart_or_together_give_the_same_bits(frame: pl.DataFrame) -> None:
    """A worker sums its own file; the driver adds the files' sums in file order: the same
    bits as the sums of the whole night's rows, grouped by file, in any row order."""
    apart = pl.concat(
        [component_sums(part.lazy()).collect() for part in frame.partition_by("file")]
    )
    together = component_sums(frame.sample(fraction=1.0, shuffle=True, seed=1).lazy()).collect()
    a = component_means(apart.lazy()).collect()
    b = component_means(together.lazy()).collect()
    assert a.rows() == b.rows()
