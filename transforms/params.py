"""Parsing the ``params`` JSON of ``episode_start`` rows into typed columns.

JSON typing must be Python's ``json`` (an ``int`` parameter is a JSON integer, not ``true``
and not ``5.0``), which no polars kernel gives. Parameters repeat across the episodes of a
task, so Python parses each distinct (params, category) pair once and a join spreads the
result: the Python work grows with the number of distinct strings, not of episodes.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

import polars as pl

from schemas.contract import Category, Col
from schemas.params import PARAMS, PROGRESS_MODES, Param, ParamType
from schemas.rules import Rule

PARAMS_RULE: Final = "params_rule"
PARAMS_MESSAGE: Final = "params_message"
# int parameters are 32-bit: differences of two stay exact in float64, so dividing them
# as floats gives Python's int / int.
_INT32 = (-(2**31), 2**31 - 1)


class _HugeInt:
    """A JSON integer too long for ``int()`` (Python's 4300-digit limit): out of range."""


def _json_int(text: str) -> int | _HugeInt:
    try:
        return int(text)
    except ValueError:
        return _HugeInt()


# Every parameter any category has, with its column dtype.
PARAM_DTYPES: Final[dict[str, pl.DataType]] = {
    p.name: {
        ParamType.INT: pl.Int64(),
        ParamType.FLOAT: pl.Float64(),
        ParamType.PROGRESS_MODE: pl.String(),
    }[p.type]
    for params in PARAMS.values()
    for p in params
}


def _check(param: Param, value: Any) -> tuple[Rule, str] | None:
    where = f"parameter `{param.name}`"
    shown = "a huge integer" if isinstance(value, _HugeInt) else json.dumps(value)[:80]
    if param.type is ParamType.PROGRESS_MODE:
        if not isinstance(value, str):
            return Rule.PARAMS_WRONG_TYPE, f"{where} must be a string, got {shown}"
        if value not in PROGRESS_MODES:
            return (
                Rule.PARAMS_INVALID_VALUE,
                f"{where} must be one of {PROGRESS_MODES}, got {shown}",
            )
        return None
    if not isinstance(value, _HugeInt):
        wanted = int if param.type is ParamType.INT else int | float
        if isinstance(value, bool) or not isinstance(value, wanted):
            kind = "an integer" if param.type is ParamType.INT else "a number"
            return Rule.PARAMS_WRONG_TYPE, f"{where} must be {kind}, got {shown}"
    if param.type is ParamType.FLOAT:
        if isinstance(value, _HugeInt) or not _finite(value):
            return Rule.PARAMS_INVALID_VALUE, f"{where} must be finite, got {shown}"
        return None
    if isinstance(value, _HugeInt) or not _INT32[0] <= value <= _INT32[1]:
        return Rule.PARAMS_INVALID_VALUE, f"{where} is outside the 32-bit integer range"
    if param.minimum is not None and value < param.minimum:
        return Rule.PARAMS_INVALID_VALUE, f"{where} must be at least {param.minimum}, got {value}"
    return None


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float64
        return False


def parse_params(text: str | None, category: str | None) -> dict[str, Any]:
    """One ``params`` string judged for one category: the first problem (rule, message), or
    the typed parameters with defaults filled in (``num_test_items`` stays null when absent).

    >>> parse_params('{"budget": 12}', "runtime_rl")["min_explore"]
    7
    >>> parse_params('[1]', "runtime_rl")[PARAMS_RULE]
    'params_not_object'
    """
    out: dict[str, Any] = {PARAMS_RULE: None, PARAMS_MESSAGE: None}
    why = "not a JSON object"
    try:
        parsed = json.loads(text, parse_int=_json_int) if text is not None else None
    except RecursionError:  # Python's parser stops at about 1,000 levels of nesting
        parsed, why = None, "a JSON value nested too deep to read"
    except ValueError as error:
        parsed, why = None, f"not JSON ({error})"
    if not isinstance(parsed, dict):
        shown = "null" if text is None else repr(text[:80])
        out.update(
            {
                PARAMS_RULE: Rule.PARAMS_NOT_OBJECT.value,
                PARAMS_MESSAGE: f"`params` is {why}: {shown}",
            }
        )
        return out
    problems = []
    for param in PARAMS.get(Category(category), ()) if category in set(Category) else ():
        if param.name not in parsed:
            if param.required:
                problems.append(
                    (Rule.PARAMS_MISSING, f"required parameter `{param.name}` is missing")
                )
            out[param.name] = param.default
            continue
        problem = _check(param, parsed[param.name])
        if problem:
            problems.append(problem)
        else:
            out[param.name] = parsed[param.name]
    if problems:  # the valid parameters stay: rules that need only them still apply
        out[PARAMS_RULE] = "|".join(r.value for r, _ in problems)
        out[PARAMS_MESSAGE] = "; ".join(m for _, m in problems)
    return out


def _parse_batch(pairs: pl.DataFrame) -> pl.DataFrame:
    parsed = [
        parse_params(text, category)
        for text, category in zip(
            pairs[Col.PARAMS].to_list(), pairs[Col.CATEGORY].to_list(), strict=True
        )
    ]
    schema = {PARAMS_RULE: pl.String(), PARAMS_MESSAGE: pl.String(), **PARAM_DTYPES}
    typed = pl.DataFrame(
        [{k: row.get(k) for k in schema} for row in parsed], schema=schema, orient="row"
    )
    return pl.concat([pairs, typed], how="horizontal")


def with_params(episodes: pl.LazyFrame, category: str = Col.CATEGORY) -> pl.LazyFrame:
    """Add ``params_rule``/``params_message`` and one column per parameter to episodes
    that have ``params`` and a ``category`` column (the episode's category, or null)."""
    distinct = episodes.select(Col.PARAMS, pl.col(category).alias(Col.CATEGORY)).unique()
    schema = {
        Col.PARAMS: pl.String(),
        Col.CATEGORY: pl.String(),
        PARAMS_RULE: pl.String(),
        PARAMS_MESSAGE: pl.String(),
        **PARAM_DTYPES,
    }
    parsed = distinct.map_batches(_parse_batch, schema=schema)
    return episodes.join(
        parsed.rename({Col.CATEGORY: category}),
        on=[Col.PARAMS, category],
        how="left",
        nulls_equal=True,
    )
