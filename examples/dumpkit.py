"""Build and write transcript dumps (contract version 1) for tests and examples.

A *row* is a dict keyed by contract column name (``Col``); a missing key means null. The
key ``FILE`` ("file") says which Parquet file the row goes into, relative to the dump root,
e.g. ``"dump_date=2026-12-01/part-0.parquet"``. Any other key is written as an extra column
(the contract ignores those), except ``DUMP_DATE``, which comes from the hive folder.

Episodes are easiest to write with the builders::

    episode(Category.ASSOCIATIVE_LEARNING, episode_id="e1", turns=[
        item("q1", "UNKNOWN"),
        answer("q1", "Plex is UNKNOWN"),
        episode_end(),
    ])

``episode`` puts an ``episode_start`` row (with the category's default parameters, see
``DEFAULT_PARAMS``) first and numbers the turns 0, 1, 2, ... Every builder takes
``**cols`` to set or override any contract column (``turn=7``, ``model="m2"``,
``role="narrator"``, ``item_id=None``, ...), which is how rule-breaking rows are made.
An explicit ``turn`` is kept; an automatic one is one more than the largest turn so far.

This module depends only on the project's runtime packages (polars, pyarrow).
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from types import EllipsisType
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.contract import (
    DUMP_DATE,
    FILE,
    NULLABLE,
    OPTIONAL_DTYPES,
    Category,
    Col,
    Kind,
    Role,
    Status,
)

Row: TypeAlias = dict[str, Any]
DType: TypeAlias = "pl.DataType | type[pl.DataType] | pa.DataType"

DEFAULT_FILE = "part-0.parquet"

# Valid parameters per category, used by `episode` when `params` is not given.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    Category.ASSOCIATIVE_LEARNING: {},
    Category.OBSERVATIONAL_LEARNING: {},
    Category.CONCEPT_FORMATION: {"initial_examples": 2, "max_examples": 8},
    Category.LANGUAGE_LEARNING: {"initial_examples": 2, "max_examples": 8},
    Category.RUNTIME_RL: {"budget": 10},
    Category.PROCEDURAL_LEARNING: {"practice_rounds": 3},
}

_COLUMNS = frozenset(str(c) for c in Col)


def arrow_types(turn_type: DType = pl.Int32) -> dict[str, pa.DataType]:
    """The Arrow type of every contract column as a harness writes it."""
    special: dict[Col, pa.DataType] = {
        Col.TURN: to_arrow_type(turn_type),
        Col.ROUND: pa.int32(),
        Col.VALUE: pa.float64(),
        Col.SOLVED: pa.bool_(),
        Col.TS: pa.timestamp("us", tz="UTC"),
    }
    return {str(c): special.get(c, pa.string()) for c in Col}


def to_arrow_type(dtype: DType) -> pa.DataType:
    """A polars dtype (class or instance) or a pyarrow type, as a pyarrow type."""
    if isinstance(dtype, pa.DataType):
        return dtype
    arrow = pl.Series("x", [], dtype=dtype).to_arrow().type
    if pa.types.is_large_string(arrow) or pa.types.is_string_view(arrow):
        return pa.string()  # what a harness writes for a polars String
    return arrow


# --------------------------------------------------------------------------- writing


def write_dump(
    rows: Iterable[Row],
    root: Path,
    *,
    drop_null_columns: bool = False,
    turn_type: DType = pl.Int32,
    shuffle_seed: int | None = None,
    column_types: Mapping[str, DType] | None = None,
    drop_columns: Collection[str] = (),
) -> list[Path]:
    """Write `rows` as Parquet files under `root`; return the paths written, in order.

    Rows are grouped by their ``FILE`` key (default ``DEFAULT_FILE``); hive folders in that
    path are created. Contract columns get the contract's Arrow types (``turn`` as
    `turn_type`, int32 by default); extra keys get pyarrow's inferred type.

    drop_null_columns: omit nullable contract columns (and extra columns) that are all null
        in that file, as the contract allows.
    shuffle_seed: write each file's rows in a shuffled, reproducible order.
    column_types: override the Arrow type of a column (values are cast), e.g. to write a
        ``turn`` of type string for the file-level ``wrong_column_type`` rule.
    drop_columns: columns never written, e.g. a required one for ``missing_column``.
    """
    root = Path(root)
    types = arrow_types(turn_type)
    overrides = {str(k): to_arrow_type(v) for k, v in (column_types or {}).items()}
    dropped = {str(c) for c in drop_columns}
    required = _COLUMNS - {str(c) for c in NULLABLE}

    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(str(r.get(FILE, DEFAULT_FILE)), []).append(r)

    written: list[Path] = []
    for rel, group in groups.items():
        if shuffle_seed is not None:
            group = list(group)
            random.Random(f"{shuffle_seed}:{rel}").shuffle(group)
        extras: list[str] = []
        for r in group:
            for key in r:
                name = str(key)
                if name not in _COLUMNS and name not in (FILE, DUMP_DATE) and name not in extras:
                    extras.append(name)
        fields: dict[str, pa.Array] = {}
        for name in [*types, *extras]:
            if name in dropped:
                continue
            values = [_plain(r.get(name)) for r in group]
            if drop_null_columns and name not in required and all(v is None for v in values):
                continue
            array = pa.array(values, type=types.get(name))
            if name in overrides:
                array = array.cast(overrides[name])
            fields[name] = array
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(fields), path, compression="zstd")
        written.append(path)
    return written


def _plain(value: Any) -> Any:
    """Enum members as their plain values (pyarrow wants builtin types)."""
    return value.value if isinstance(value, Enum) else value


# --------------------------------------------------------------------------- builders


def _row(kind: str, role: str, fields: Mapping[Col, Any], cols: Mapping[str, Any]) -> Row:
    out: Row = {str(Col.KIND): _plain(kind), str(Col.ROLE): _plain(role)}
    for key, value in [*fields.items(), *cols.items()]:
        name = str(key)
        if name not in _COLUMNS and name not in OPTIONAL_DTYPES and name != FILE:
            raise KeyError(f"{name!r} is not a contract column")
        out[name] = _plain(value)
    return out


def row(kind: str, role: str, **cols: Any) -> Row:
    """Any row, e.g. one of an unknown kind: ``row("thought", Role.ASSISTANT, content=...)``."""
    return _row(kind, role, {}, cols)


def params_json(params: Mapping[str, Any] | str | None) -> str | None:
    """A params mapping as JSON; a string is taken as raw JSON text (may be invalid)."""
    if params is None or isinstance(params, str):
        return params
    return json.dumps(dict(params))


def episode_start(params: Mapping[str, Any] | str | None = None, **cols: Any) -> Row:
    """An ``episode_start`` row; `episode` adds one itself unless ``start=False``."""
    return _row(Kind.EPISODE_START, Role.ENVIRONMENT, {Col.PARAMS: params_json(params)}, cols)


def message(role: str, text: str, **cols: Any) -> Row:
    return _row(Kind.MESSAGE, role, {Col.CONTENT: text}, cols)


def example(text: str = "x -> y", **cols: Any) -> Row:
    return _row(Kind.EXAMPLE, Role.ENVIRONMENT, {Col.CONTENT: text}, cols)


def item(item_id: str | None, expected: str | None, match: str | None = None, **cols: Any) -> Row:
    fields = {Col.ITEM_ID: item_id, Col.EXPECTED: expected, Col.MATCH: match}
    return _row(Kind.ITEM, Role.ENVIRONMENT, fields, cols)


def answer(item_id: str | None, text: str | None, **cols: Any) -> Row:
    return _row(Kind.ANSWER, Role.ASSISTANT, {Col.ITEM_ID: item_id, Col.CONTENT: text}, cols)


def action(text: str = "step", **cols: Any) -> Row:
    return _row(Kind.ACTION, Role.ASSISTANT, {Col.CONTENT: text}, cols)


def feedback(value: float | None = None, solved: bool | None = False, **cols: Any) -> Row:
    return _row(Kind.FEEDBACK, Role.ENVIRONMENT, {Col.VALUE: value, Col.SOLVED: solved}, cols)


def round_end(round: int | None, value: float | None, **cols: Any) -> Row:
    return _row(Kind.ROUND_END, Role.ENVIRONMENT, {Col.ROUND: round, Col.VALUE: value}, cols)


def episode_end(status: str | None = Status.COMPLETED, **cols: Any) -> Row:
    return _row(Kind.EPISODE_END, Role.ENVIRONMENT, {Col.STATUS: status}, cols)


def episode(
    category: str,
    *,
    episode_id: str | None,
    model: str | None = "m1",
    task: str | None = "t",
    run_id: str | None = "r1",
    params: Mapping[str, Any] | str | EllipsisType | None = ...,
    file: str = DEFAULT_FILE,
    turns: Iterable[Row] = (),
    start: bool = True,
    ts: datetime | None = None,
) -> list[Row]:
    """The rows of one episode: ``episode_start`` (unless ``start=False``), then `turns`.

    params: a mapping (written as JSON), a raw string, None (null) or, by default, the
        category's ``DEFAULT_PARAMS``.
    ts: time of turn 0; turn n then gets ``ts + n seconds`` (else ``ts`` stays null).
    Identity columns (run_id, episode_id, model, task, category) and ``FILE`` are set on
    every row unless the turn sets them itself.
    """
    if isinstance(params, EllipsisType):
        params = DEFAULT_PARAMS.get(str(category), {})
    fragments = ([episode_start(params)] if start else []) + list(turns)
    base: Row = {
        str(Col.RUN_ID): run_id,
        str(Col.EPISODE_ID): episode_id,
        str(Col.MODEL): model,
        str(Col.TASK): task,
        str(Col.CATEGORY): _plain(category),
        FILE: file,
    }
    rows: list[Row] = []
    last = -1
    turn_key, ts_key = str(Col.TURN), str(Col.TS)
    for fragment in fragments:
        r = {**base, **fragment}
        if turn_key not in r:
            r[turn_key] = last + 1
        n = r[turn_key]
        if isinstance(n, int):
            last = max(last, n)
            if ts is not None and ts_key not in r:
                r[ts_key] = ts + timedelta(seconds=n)
        rows.append(r)
    return rows
