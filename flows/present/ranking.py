"""``cogscore leaderboard``: the standing of an output in one scope, without scoring.

The overall leaderboard (``standings``: each model's latest result on every task) or one
category's (``category_standings``: its rank among every model with a score in it), as of
the latest night, read from the tables as the latest finished run (or run ``as_of``) left
them: the table the score command prints (``flows.present.leaderboard``, the same renderer),
or its rows as CSV or JSON. It reads ``OUT`` alone and writes nothing. An output written
before standings existed shows its latest night's own tables.
"""

from __future__ import annotations

import json
from typing import ClassVar, Final

import polars as pl

from flows.present.leaderboard import leaderboard_lines
from flows.store.output import Output, night_levels
from schemas.columns import RANK, SqlFormat
from schemas.comparisons import OVERALL, RANKED_AMONG
from schemas.contract import Category, Col
from schemas.exits import ExitCode
from schemas.views import VIEWS, View

# The scopes a leaderboard is of: the overall one, then each category's.
SCOPES: Final = (OVERALL, *(str(c) for c in Category))


class ScopeError(ValueError):
    """A scope no leaderboard is of: a usage error (exit 2) that lists the valid ones."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


def checked_scope(scope: str) -> str:
    """``scope`` where a leaderboard is of it, else ``ScopeError`` naming every valid one.

    >>> checked_scope("runtime_rl")
    'runtime_rl'
    >>> checked_scope("rl")
    Traceback (most recent call last):
    ...
    flows.present.ranking.ScopeError: 'rl' is no scope of a leaderboard: one of overall, \
associative_learning, concept_formation, language_learning, observational_learning, \
runtime_rl, procedural_learning
    """
    if scope not in SCOPES:
        raise ScopeError(f"{scope!r} is no scope of a leaderboard: one of {', '.join(SCOPES)}")
    return scope


def standing_rows(output: Output, scope: str, as_of: str | None = None) -> pl.DataFrame:
    """The leaderboard's rows of ``scope`` as of ``output``'s latest night (the standing's;
    an output without standings: the night's own), every column, in rank order (the
    overall one by coverage group first, as the terminal shows it)."""
    latest = latest_night(output, as_of)
    for view in (View.STANDING, View.NIGHT):
        tables = VIEWS[view]
        table = tables.models if scope == OVERALL else tables.categories
        rows = output.scan(table.name, as_of).filter(_of_night(tables.night, latest))
        if scope != OVERALL:
            rows = rows.filter(pl.col(Col.CATEGORY) == scope)
        found = rows.collect()
        if not found.is_empty() or view is View.NIGHT:
            order = [RANKED_AMONG, RANK, Col.MODEL] if scope == OVERALL else [RANK, Col.MODEL]
            present = [c for c in order if c in found.columns]
            return found.sort(present, nulls_last=True)
    raise AssertionError("unreachable")  # pragma: no cover


def latest_night(output: Output, as_of: str | None = None) -> str | None:
    """The latest night ``output`` holds (as run ``as_of`` left it), as the leaderboard
    printed after a run takes it."""
    levels = night_levels(output.state(as_of))
    return max((night for night in levels if night is not None), default=None)


def leaderboard_of(out: str, scope: str, how: SqlFormat, as_of: str | None = None) -> str:
    """``leaderboard_text`` of the output at ``out``: the scope checked first
    (``ScopeError``), then the output (it must exist: ``StorageError``) and ``as_of``."""
    checked_scope(scope)
    output = Output.at(out).require()
    output.check_as_of(as_of)
    return leaderboard_text(output, scope, how, as_of)


def leaderboard_text(output: Output, scope: str, how: SqlFormat, as_of: str | None = None) -> str:
    """The leaderboard of ``scope`` as ``how`` says: the terminal's table (the title line
    and the rows drawn as after a run), CSV or one JSON array of objects (every column of
    ``standing_rows``, every value whole)."""
    if how is SqlFormat.TABLE:
        levels = night_levels(output.state(as_of))
        return "\n".join(leaderboard_lines(output, levels, scope=scope, as_of=as_of))
    rows = standing_rows(output, scope, as_of)
    if how is SqlFormat.JSON:
        return json.dumps(rows.to_dicts(), default=str)
    return rows.write_csv().rstrip("\n")


def _of_night(column: str, night: str | None) -> pl.Expr:
    return pl.col(column).is_null() if night is None else pl.col(column) == night
