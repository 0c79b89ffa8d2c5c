"""DuckDB over an output, and nothing else: every table registered as the latest finished
run (or run ``as_of``) left it, through deltalake's Arrow datasets (any DuckDB version, local
folders and object stores alike, filters pushed down), then the views of ``sql/views.sql``;
then the connection is shut in (no file, URL or extension; its configuration locked), and
it runs one statement, one that reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Final

import duckdb
import polars as pl

from flows.present.terminal import printable, render, table_of_columns
from flows.store.catalog import conform, empty_table
from flows.store.delta.tables import dataset_at, table_version
from flows.store.location import Location
from flows.store.output import TABLES, Output
from flows.store.runs_table import RUNS
from schemas.columns import SqlFormat
from schemas.exits import ExitCode

VIEWS = Path(__file__).resolve().parents[2] / "sql" / "views.sql"

# Set once OUT's tables and views are registered, the lock last: DuckDB then opens no file
# and no URL (read_csv, read_text, glob, read_parquet, COPY ... TO, EXPORT, ATTACH, INSTALL,
# LOAD, secrets), loads no extension, reads no Python variable as a table, and no statement
# can set any of it back. The registered Arrow datasets still scan: their files are opened
# by Arrow (and an object store's credentials stay in deltalake's file system), not DuckDB.
SHUT_IN: Final = (
    "SET enable_external_access = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET python_enable_replacements = false",
    "SET lock_configuration = true",
)
_ONE: Final = (
    "cogscore sql runs one query that reads OUT's tables and views (SELECT, FROM, WITH, "
    "DESCRIBE, SUMMARIZE) and nothing else"
)
_PIVOT: Final = (
    " (a PIVOT without IN (...) is two, as it creates a type first: name its values, "
    "PIVOT t ON c IN (...))"
)


class RefusedQuery(Exception):
    """A query ``cogscore sql`` does not run: not exactly one statement, a statement that
    does not read, or one that reaches past OUT's tables (a file, a URL, an extension)."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


def connect(output: Output, as_of: str | None = None, con: Any = None) -> Any:
    """A DuckDB connection (``con``, or a new one) with OUT's tables and views, shut in
    (``SHUT_IN``): it reads them and nothing else."""
    con = con or duckdb.connect()
    versions = output.versions(as_of)
    for table in (*TABLES, RUNS):
        where = output.location.child(table)
        version = versions.get(table)
        if table == RUNS:
            version = None if output.runs().is_empty() else _runs_version(output)
        if version is None:
            relation = empty_table(table).to_arrow()
        else:
            relation = dataset_at(output.location, table, version, _native(where))
            model = set(empty_table(table).columns)
            if not model <= set(relation.schema.names):  # written before a column existed
                frame = pl.scan_pyarrow_dataset(relation)
                relation = conform(table, frame).collect().to_arrow()
        con.register(table, relation)
    con.execute(VIEWS.read_text())
    for setting in SHUT_IN:
        con.execute(setting)
    return con


def reading(query: str) -> str:
    """``query`` if DuckDB's parser finds in it one statement, a SELECT (which ``FROM ...``,
    ``WITH``, ``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` and a ``PIVOT ... IN (...)``
    are); else ``RefusedQuery`` saying what is refused and why. A parse error is DuckDB's."""
    statements = duckdb.extract_statements(query)
    if not statements:
        raise RefusedQuery(f"refused: no statement: {_ONE}")
    if len(statements) > 1:
        hint = "" if all(s.query for s in statements) else _PIVOT  # DuckDB's own: no text
        raise RefusedQuery(f"refused: {len(statements)} statements: {_ONE}{hint}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise RefusedQuery(f"refused: {kind.name} statement: {_ONE}")
    return query


def answer(con: Any, query: str, how: SqlFormat) -> str:
    """``query`` (``reading``) run on ``con`` (``connect``'s) and ``formatted`` as ``how``
    says; a file, URL or extension it reaches for is ``RefusedQuery``."""
    try:
        return formatted(con.sql(reading(query)), how)
    except duckdb.PermissionException as error:
        said = str(error).splitlines()[0].removeprefix("Permission Error: ")
        raise RefusedQuery(
            f"refused: {said}: cogscore sql reads OUT's tables and views, no other file, URL "
            "or extension"
        ) from None


def _native(where: Location) -> Any:
    """Arrow's own file system for a local table, so that no Arrow thread calls into Python.

    deltalake's default is its storage handler behind a Python file system: Arrow's I/O
    threads take the GIL to use it, and one still doing so as the interpreter exits (a file
    closed late) is ended by Python mid-C++: "terminate called without an active
    exception", exit -6, after the result was printed (6 of 60 fresh processes on 2 loaded
    cores; none of 120 with Arrow's LocalFileSystem). A URL keeps deltalake's (None)."""
    if not where.is_local:
        return None
    from pyarrow import fs

    return fs.SubTreeFileSystem(where.uri, fs.LocalFileSystem())


def _runs_version(output: Output) -> int | None:
    return table_version(output.location, RUNS)


_NESTED = frozenset({"list", "struct", "map", "array", "union"})


def _name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _texts(relation: Any, nested_as_json: bool) -> Any:
    """``relation`` with every column as DuckDB writes it as text, or (``nested_as_json``)
    with only its lists and structs as JSON text."""
    columns = []
    for column, kind in zip(relation.columns, relation.types, strict=True):
        if nested_as_json and kind.id in _NESTED:
            columns.append(f"to_json({_name(column)}) AS {_name(column)}")
        elif nested_as_json:
            columns.append(_name(column))
        else:
            columns.append(f"CAST({_name(column)} AS VARCHAR) AS {_name(column)}")
    return relation.project(", ".join(columns))


def formatted(relation: Any, how: SqlFormat) -> str:
    """A DuckDB result as ``how`` says, every column and every value whole (DuckDB's own
    display drops columns and cuts values at the terminal's width): a table rendered as
    the leaderboard is, CSV (lists and structs as JSON) or one JSON array of objects."""
    if how is SqlFormat.JSON:
        rows = [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
        return json.dumps(rows, default=str)
    if how is SqlFormat.CSV:
        return str(_texts(relation, nested_as_json=True).pl().write_csv()).rstrip("\n")
    from rich.markup import escape

    table = table_of_columns()
    for column in relation.columns:
        table.add_column(escape(printable(column)), overflow="fold")
    for row in _texts(relation, nested_as_json=False).fetchall():
        table.add_row(*("NULL" if v is None else escape(printable(v)) for v in row))
    return "\n".join(render(table))
