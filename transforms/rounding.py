"""Python's ``round(x, 4)`` as a polars expression.

Python rounds the exact binary value of ``x`` to 4 decimals (half-even only on exact
ties) and returns the float nearest that decimal. polars' ``round`` scales by 10**4 first,
so it disagrees near half-way values. Here the scaled value decides every row that is
clearly away from a half-way point; the few rows within 1e-6 of one (or too large for the
scaled value to be exact) are rounded by Python itself.
"""

from __future__ import annotations

import polars as pl

_SCALE = 10_000.0
_NEAR_TIE = 1e-6
_EXACT_LIMIT = 1e9  # |x * 1e4| below this: the product's error is far below _NEAR_TIE


def _round4_where_flagged(batch: pl.Series) -> pl.Series:
    # Python only for the flagged rows (near a tie): rare, and exactness needs the
    # binary value's decimal expansion, which Python's round() computes.
    x, flagged = batch.struct.field("x"), batch.struct.field("flagged")
    idx = flagged.fill_null(False).arg_true()
    exact = [round(v, 4) for v in x.gather(idx).to_list()]
    out = pl.Series("x", [None] * len(batch), dtype=pl.Float64)
    return out.scatter(idx, pl.Series(exact, dtype=pl.Float64)) if len(idx) else out


def true_divide(numerator: pl.Expr, by: float) -> pl.Expr:
    """``numerator / by``, correctly rounded.

    polars divides a column by a scalar through a reciprocal multiply, which is not
    IEEE division (``4826.0 / 10000.0`` would come out as 0.48260000000000003);
    dividing by a column of the same value is.
    """
    return numerator / (numerator * 0.0 + by)


def python_round4(x: pl.Expr) -> pl.Expr:
    """``round(x, 4)`` with Python's result on every finite input.

    >>> pl.select(python_round4(pl.lit(0.00005))).item()  # binary value is below the tie
    0.0001
    >>> pl.select(python_round4(pl.lit(0.4826068563931386))).item()
    0.4826
    """
    scaled = x * _SCALE
    floor = scaled.floor()
    frac = scaled - floor
    rounded = true_divide(floor + (frac > 0.5).cast(pl.Float64), _SCALE)
    # A zero keeps the sign of x, as in Python (round(-0.00001, 4) is -0.0); x * 0.0 is
    # that signed zero.
    fast = pl.when(rounded == 0.0).then(x * 0.0).otherwise(rounded)
    needs_python = ((frac - 0.5).abs() < _NEAR_TIE) | (scaled.abs() >= _EXACT_LIMIT)
    exact = pl.struct(x.alias("x"), needs_python.alias("flagged")).map_batches(
        _round4_where_flagged, return_dtype=pl.Float64, is_elementwise=True
    )
    return pl.when(needs_python).then(exact).otherwise(fast)
