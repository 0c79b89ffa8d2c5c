"""``cogscore export OUT --format learningbench --out DIR``: the standing as LearningBench's
authors publish their leaderboard (``schemas.published``), so that an operator publishes the
benchmark after new runs the way they do.

The standing as of the latest night (of the run ``--as-of`` names) gives every cell: a
model's result on a task, its score and the episode(s) it stands on. Each is written with
the names its source gave it (contract 1.5's ``source_names``): a published row's model
name, slug, task slug, category and ``eval_date`` as the table wrote them; a result of the
harness only with the names the published table gives its model (or cogscore's name, and
its slug by the rule), its task's slug (``-`` for ``_``), its category's slug and its run's
start (as the table writes a time: the fraction's trailing zeros dropped). Numbers are
written as the authors' files write them: a score as Python's ``repr`` of the float (the
text ``0.8509583111111111`` is ``repr``'s), a model's ``mean_score`` as the exactly
rounded mean of its task scores (``math.fsum`` over their number: equal, bit for bit, to
the 14 published means, which ``sum`` is not for 10 of them), the matrix's scores rounded
to 6 places. Models are ranked by ``mean_score`` (ties share the better rank), the rows of
``leaderboard_flat.csv`` in rank order with each model's tasks in the table's order (its
first rows'; a task no table gave after them, by slug), the matrix's by category and task,
its columns by name. Importing the published table and exporting it gives its three files
byte for byte (``tests/flows/test_export.py``).

A read command: nothing in OUT is written, nothing outside it read; DIR may not lie in OUT.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from flows.standings import TASK_STANDINGS
from flows.store.catalog import EPISODE_SCORES
from flows.store.dumps import InputError
from flows.store.output import Output
from schemas.columns import AS_OF, SCORE
from schemas.contract import DUMP_DATE, SINGLE_RUN_STARTED, SOURCE_NAMES, Col
from schemas.names import HARNESS_MODEL, TABLE_ROW
from schemas.published import (
    CATEGORY_SLUG,
    EVAL_DATE,
    FLAT_COLUMNS,
    FLAT_FILE,
    FLAT_LINE_END,
    LEADERBOARD_CATEGORIES,
    LEADERBOARD_UNKNOWN,
    MATRIX_DIGITS,
    MATRIX_FILE,
    MATRIX_LEAD,
    MODEL_NAME,
    MODEL_SLUG,
    RANKS_COLUMNS,
    RANKS_FILE,
    TABLE_LINE_END,
    TASK_SLUG,
)
from transforms.names import model_by_rule, task_slug

# The category slug of each contract category (the leaderboard's own, where a table gave
# none: a result of the harness only).
CATEGORY_SLUGS = {str(c): slug for slug, c in LEADERBOARD_CATEGORIES.items()}


class ExportError(InputError):
    """Nothing to export (no standing), or DIR where it cannot be (exit 2)."""


@dataclass(frozen=True)
class Publication:
    """The three files' text by name, and what a reader of the console is told."""

    files: dict[str, str]
    as_of: str
    notes: list[str] = field(default_factory=list)


def published_at(out: str, as_of: str | None = None) -> Publication:
    """The publication of the output ``out`` (``cogscore export``): refused where it holds
    no finished run, or ``as_of`` is not one of its runs."""
    output = Output.at(out).require()
    output.check_as_of(as_of)
    return published(output, as_of)


def published(output: Output, as_of: str | None = None) -> Publication:
    """The standing as of the latest night of ``output`` (as the run ``as_of`` left it) as
    LearningBench publishes its leaderboard (the module's docstring)."""
    cells, night = standing_cells(output, as_of)
    names = model_names(output, as_of)
    cells = cells.join(names, on=Col.MODEL, how="left")
    tasks = task_names(cells)  # the published category slug in place of the contract's
    cells = cells.drop(Col.CATEGORY).join(tasks, on=Col.TASK, how="left")
    means = model_means(cells)
    order = {m: i for i, m in enumerate(means[Col.MODEL])}
    flat = cells.with_columns(
        pl.col(Col.MODEL).replace_strict(order, return_dtype=pl.Int64).alias("__rank_order"),
        _field(EVAL_DATE).alias(EVAL_DATE),
    ).sort("__rank_order", "__task_order", TASK_SLUG)
    files = {
        FLAT_FILE: _csv(
            FLAT_COLUMNS, [flat_row(r) for r in flat.iter_rows(named=True)], FLAT_LINE_END
        ),
        RANKS_FILE: _csv(
            RANKS_COLUMNS,
            [
                [r[MODEL_NAME], r[MODEL_SLUG], repr(r["mean"]), str(r["rank"])]
                for r in means.iter_rows(named=True)
            ],
            TABLE_LINE_END,
        ),
        MATRIX_FILE: matrix(cells),
    }
    return Publication(files, night, _notes(cells, means))


def flat_row(cell: dict[str, Any]) -> list[str]:
    """A cell as a row of ``leaderboard_flat.csv``: its names, its score as Python writes a
    float, and the published ``eval_date`` (else its run's start, as the table writes one)."""
    when = cell[EVAL_DATE] or eval_date(cell[SINGLE_RUN_STARTED], cell[DUMP_DATE])
    names = (cell[MODEL_NAME], cell[MODEL_SLUG], cell[TASK_SLUG], cell[CATEGORY_SLUG])
    return [*names, repr(cell[SCORE]), when]


def standing_cells(output: Output, as_of: str | None) -> tuple[pl.DataFrame, str]:
    """Each cell of the standing as of the latest night (model, task, category, score, the
    night it comes from) with what its episode's source called it (the latest started,
    where several episodes stand on it) and that episode's start."""
    standing = output.scan(TASK_STANDINGS, as_of)
    night = standing.select(pl.col(AS_OF).max()).collect().item()
    if night is None:
        raise ExportError(f"{output} holds no standing to export: score a dump into it first")
    key = [DUMP_DATE, Col.MODEL, Col.TASK]
    cells = standing.filter(pl.col(AS_OF) == night).select(*key, Col.CATEGORY, SCORE)
    episodes = (
        output.scan(EPISODE_SCORES, as_of)
        .join(cells.select(key), on=key, how="semi")
        .sort(SINGLE_RUN_STARTED, nulls_last=False)
        .group_by(key)
        .agg(pl.col(SOURCE_NAMES).last(), pl.col(SINGLE_RUN_STARTED).max())
    )
    return cells.join(episodes, on=key, how="left").collect(), str(night)


def _field(name: str) -> pl.Expr:
    """A field of ``source_names`` as text (null where the source gave none)."""
    return pl.col(SOURCE_NAMES).str.json_path_match(f"$.{name}")


def model_names(output: Output, as_of: str | None) -> pl.DataFrame:
    """Each model's published name and slug: the last a table gave it (its ``model_name``
    and ``model_slug``); else its own name, and its harness slug by the rule (the vendor
    prefix off, ``@`` as ``-``), else its name by the rule."""
    kept = (
        output.scan(EPISODE_SCORES, as_of)
        .select(Col.MODEL, SINGLE_RUN_STARTED, SOURCE_NAMES)
        .filter(pl.col(SOURCE_NAMES).is_not_null())
        .sort(SINGLE_RUN_STARTED, nulls_last=False)
        .group_by(Col.MODEL)
        .agg(
            _field(MODEL_NAME).drop_nulls().last().alias("__name"),
            _field(MODEL_SLUG).drop_nulls().last().alias("__slug"),
            _field(HARNESS_MODEL).drop_nulls().last().alias("__harness"),
        )
        .collect()
    )
    by_rule = model_by_rule(pl.col("__harness"))
    own = model_by_rule(pl.col(Col.MODEL))
    return kept.select(
        Col.MODEL,
        pl.coalesce("__name", Col.MODEL).alias(MODEL_NAME),
        pl.coalesce("__slug", by_rule, own).alias(MODEL_SLUG),
    )


def task_names(cells: pl.DataFrame) -> pl.DataFrame:
    """Each task's slug, category slug and place in the table's order: what the table that
    gave its first row wrote (its ``task_slug``, its ``category`` where that is one of the
    leaderboard's), else its name with ``-`` for ``_`` and its category's slug."""
    label = _field(CATEGORY_SLUG)
    known = label.is_in([*CATEGORY_SLUGS.values(), LEADERBOARD_UNKNOWN])
    own_slug = pl.col(Col.CATEGORY).replace_strict(CATEGORY_SLUGS, default=pl.col(Col.CATEGORY))
    return (
        cells.with_columns(
            _field(TASK_SLUG).alias("__slug"),
            pl.when(known).then(label).alias("__category"),
            _field(TABLE_ROW).cast(pl.Int64).alias("__row"),
        )
        .sort("__row", nulls_last=True)
        .group_by(Col.TASK, maintain_order=True)
        .agg(
            pl.col("__slug").drop_nulls().first(),
            pl.col("__category").drop_nulls().first(),
            pl.col(Col.CATEGORY).first(),
            pl.col("__row").min().alias("__task_order"),
        )
        .select(
            Col.TASK,
            pl.coalesce("__slug", task_slug(pl.col(Col.TASK))).alias(TASK_SLUG),
            pl.coalesce("__category", own_slug).alias(CATEGORY_SLUG),
            "__task_order",
        )
        .with_columns(pl.col("__task_order").fill_null(2**62))
    )


def model_means(cells: pl.DataFrame) -> pl.DataFrame:
    """Each model's mean over its task scores (each task weighing the same, exactly rounded:
    ``math.fsum``) and rank (1: the best; ties share the better), best first (ties by name)."""
    rows = []
    for (model, name, slug), group in cells.group_by(Col.MODEL, MODEL_NAME, MODEL_SLUG):
        scores = group[SCORE].to_list()
        rows.append((model, name, slug, math.fsum(scores) / len(scores)))
    rows.sort(key=lambda r: (-r[3], r[1]))
    ranked: list[tuple[str, str, str, float, int]] = []
    for place, row in enumerate(rows, start=1):
        tied = ranked[-1][4] if ranked and ranked[-1][3] == row[3] else place
        ranked.append((*row, tied))
    schema = {
        Col.MODEL: pl.String,
        MODEL_NAME: pl.String,
        MODEL_SLUG: pl.String,
        "mean": pl.Float64,
        "rank": pl.Int64,
    }
    return pl.DataFrame(ranked, schema=schema, orient="row")


def matrix(cells: pl.DataFrame) -> str:
    """The score matrix: a row per task (by category slug, then task slug), a column per
    model (by published name, in Python's string order), each score rounded to 6 places
    (empty where the model has no result on the task)."""
    models = sorted(set(cells[MODEL_NAME]))
    pairs = set(cells.select(TASK_SLUG, CATEGORY_SLUG).iter_rows())
    tasks = sorted(pairs, key=lambda t: (t[1], t[0]))
    scores = {(r[TASK_SLUG], r[MODEL_NAME]): r[SCORE] for r in cells.iter_rows(named=True)}
    rows = [
        [slug, category, *(_rounded(scores.get((slug, m))) for m in models)]
        for slug, category in tasks
    ]
    return _csv((*MATRIX_LEAD, *models), rows, TABLE_LINE_END)


def _rounded(score: float | None) -> str:
    return "" if score is None else repr(round(score, MATRIX_DIGITS))


def eval_date(started: datetime | None, night: str) -> str:
    """A run's start as the published table writes it (RFC 3339 in UTC, the fraction of a
    second without its trailing zeros); a result with none, its night.

    >>> from datetime import UTC
    >>> eval_date(datetime(2026, 4, 4, 11, 5, 56, 909740, tzinfo=UTC), "2026-04-04")
    '2026-04-04T11:05:56.90974Z'
    >>> eval_date(None, "2026-04-04")
    '2026-04-04'
    """
    if started is None:
        return night
    fraction = f"{started.microsecond:06d}".rstrip("0")
    return started.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _csv(header: Sequence[str], rows: list[list[str]], end: str) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=end)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _notes(cells: pl.DataFrame, means: pl.DataFrame) -> list[str]:
    """What a reader of the files needs told: models whose mean averages fewer tasks than
    others' (the authors rank every model by its mean over its own tasks)."""
    counts = cells.group_by(MODEL_NAME).len()
    most = max(counts["len"].to_list(), default=0)
    fewer = counts.filter(pl.col("len") < most).sort(MODEL_NAME)
    if fewer.is_empty():
        return []
    said = ", ".join(f"{n} ({k} of {most})" for n, k in fewer.iter_rows())
    return [
        f"the mean of {fewer.height} model(s) averages fewer tasks than others' (ranked by it "
        f"all the same, as the authors rank): {said}; cogscore's leaderboard ranks models "
        "only among those covering the same categories"
    ]


def write_publication(publication: Publication, folder: Path) -> list[Path]:
    """The files, written into ``folder`` (made where missing), each whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in publication.files.items():
        path = folder / name
        scratch = folder / f".{name}.tmp"
        scratch.write_bytes(text.encode("utf-8"))
        scratch.replace(path)
        written.append(path)
    return written
