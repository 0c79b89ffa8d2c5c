"""Score tables in, contract rows out (``cogscore import-scores``).

A table of scores that a harness or a leaderboard already computed (CSV or Parquet: one row
per model and task) becomes dump rows: per row one episode of two rows, an ``episode_start``
and an ``episode_end`` whose ``reported_score`` (contract 1.2) is the table's score. There
is no formula input (no item, answer, action, feedback, round or example row): the scorer
takes the reported score as the episode's score (formula version ``reported``), and a
rescore leaves it as it is.

The table may use the contract's column names (``model``, ``task``, ``category``,
``score``, optionally ``dump_date``, ``instance_id``) or LearningBench's published ones
(``leaderboard_flat.csv``: ``model_name``, ``task_slug``, ``category`` with its slugs such
as ``assoc-learning``, ``score``, ``eval_date``), its categories kept as it publishes them
(``flows.importers.score_categories``: a task it puts in none of the six is
``uncategorised``; the task files of ``--tasks`` only say where they disagree).

Every row that cannot be imported is reported with every reason, never dropped silently:
a missing model or task, a score that is not a finite number or lies outside [0, 1], a
category name that is not known, a date that is not one, a second row for the same model,
task, night and time, a model, task and night another table imported into the dump already.
A row is one run (contract 1.4): of rows of one model, task and night at other times, the
latest stands when scored, the others are kept as replaced.

A row's ``instance_id`` is the table's where it has one, else the task's name: every model
that ran a LearningBench task faced its one instance (the task files fix their seeds), so
the models' scores of a task are paired.

Scores lie in [0, 1] (every LearningBench score does, and so does every formula's). A table
most of whose scores lie above 1 is on another scale (a 0-100 table, as leaderboards print
percentages) and is refused whole, its rows never imported one by one: dividing by 100 is the
user's call, not a guess made here.

Each table goes to its own file in a night's folder, named after the table's name and its
absolute path (``scores-<name>-<12 hex digits>.parquet``): tables of the same name in two
folders, or ``x.csv`` and ``x.parquet``, never share a file, and importing a table again
replaces (or leaves) its own file only. The file records the table's sha256 (Parquet
metadata): a table with the content of one imported already into the night is reported as a
copy of it, not imported a second time.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import polars as pl

from flows.importers.names import keep_names, names_for
from flows.importers.score_categories import CATEGORY_NAMES, disagreements, named
from flows.importers.score_held import held_runs, without_held
from flows.importers.score_names import CARRIED, name_columns, named_rows
from flows.store.location import Location
from schemas.contract import INSTANCE_ID, REPORTED_SCORE, Category, Col
from schemas.kaggle import UPSTREAM_CATEGORIES
from transforms.names import task_by_rule
from transforms.table_rows import contract_rows

# The night a row goes to, and the date column of the table it may come from.
NIGHT: Final = "dump_date"

# The contract's name of each column, and the names a score table may give it (first found
# wins): the contract's own, then LearningBench's published leaderboard's.
SOURCE_NAMES: Final[dict[str, tuple[str, ...]]] = {
    Col.MODEL: ("model", "model_name", "model_slug"),
    Col.TASK: ("task", "task_slug"),
    Col.CATEGORY: ("category",),
    REPORTED_SCORE: ("score", "reported_score"),
    NIGHT: ("dump_date", "eval_date", "date"),
    INSTANCE_ID: ("instance_id",),
}
REQUIRED_SOURCE: Final = (Col.MODEL, Col.TASK, Col.CATEGORY, REPORTED_SCORE)

# A table whose scores mostly lie above 1 is on another scale than [0, 1] (refused whole).
OTHER_SCALE_SHARE: Final = 0.5

# What a night's file records of the table it came from (Parquet key-value metadata).
SOURCE_DIGEST: Final = "cogscore_import_sha256"
SOURCE_PATH: Final = "cogscore_import_source"

# The unimportable rows' report: the source row (1-based, as a spreadsheet counts data rows
# after the header), its model and task as read, and every reason.
ROW: Final = "row"
REASONS: Final = "reasons"


class ImportError_(ValueError):
    """A table that cannot be read or lacks a column: nothing is written."""


@dataclass
class Imported:
    """What an import did: the nights written (file per night), the rows imported and
    those that could not be, each with every reason."""

    source: str
    rows_read: int = 0
    rows_imported: int = 0
    # Rows whose run the dump held already (the same model, task, night, time and score:
    # from another table, or a harness run file): not imported again, not reported one by one.
    rows_unchanged: int = 0
    written: dict[str, str] = field(default_factory=dict)  # night -> file (new or changed)
    unchanged: dict[str, str] = field(default_factory=dict)  # night -> file already so
    copies: dict[str, str] = field(default_factory=dict)  # night -> the earlier import's file
    # Per task whose file (--tasks) puts it in another category than the table does: the
    # task, the table's category (kept) and the task file's.
    disagreements: list[dict[str, str]] = field(default_factory=list)
    rejected: list[dict[str, object]] = field(default_factory=list)
    # The models new to the dump (no name of a known one): model -> the names it came from.
    new_models: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, object]:
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "rows_imported": self.rows_imported,
            "rows_unchanged": self.rows_unchanged,
            "rows_not_imported": len(self.rejected),
            "nights_written": self.written,
            "nights_unchanged": self.unchanged,
            "nights_copied": self.copies,
            "category_disagreements": self.disagreements,
            "new_models": self.new_models,
            "not_imported": self.rejected,
        }


def read_table(path: Path) -> pl.DataFrame:
    """The score table at ``path``: Parquet by its magic number, else CSV (every column
    read as text: the import checks each value itself)."""
    if not path.is_file():
        raise ImportError_(f"{path}: no such file")
    with path.open("rb") as handle:
        magic = handle.read(4)
    try:
        # The name as it is (``glob=False``): ``x*.csv`` is a file, not a pattern.
        if magic == b"PAR1":
            return pl.read_parquet(path, glob=False)
        return pl.read_csv(path, infer_schema=False, glob=False)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ImportError_(f"{path}: not a CSV or Parquet table ({error})") from None


def source_columns(table: pl.DataFrame) -> dict[str, str]:
    """Per contract column, the table's column that holds it (the first name found);
    refused where a required one is missing."""
    found = {
        target: next((n for n in names if n in table.columns), None)
        for target, names in SOURCE_NAMES.items()
    }
    missing = [t for t in REQUIRED_SOURCE if found[t] is None]
    if missing:
        wanted = "; ".join(f"{t}: one of {', '.join(SOURCE_NAMES[t])}" for t in missing)
        raise ImportError_(
            f"the table lacks a column ({wanted}); it has {', '.join(table.columns)}"
        )
    return {t: n for t, n in found.items() if n is not None}


def task_categories(tasks: Path) -> dict[str, Category]:
    """Task name -> category, from LearningBench's task files (``<folder>/<task>.py``, the
    folder a category name: ``associative_learning``, ``concept_learning``, ...)."""
    if not tasks.is_dir():
        raise ImportError_(f"--tasks {tasks}: not a folder of task files")
    out: dict[str, Category] = {}
    for file in sorted(tasks.glob("*/*.py")):
        category = UPSTREAM_CATEGORIES.get(file.parent.name)
        if category is not None:
            out[file.stem] = category
    if not out:
        raise ImportError_(f"--tasks {tasks}: no <category folder>/<task>.py file in it")
    return out


def importable_scores(
    table: pl.DataFrame,
    source: str,
    night: str | None = None,
    tasks: Mapping[str, Category] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[dict[str, str]]]:
    """(the importable rows, one per model and task and night, with the contract's names
    and the table's categories; the rows that are not, with every reason; each task whose
    file in ``tasks`` puts it in another category than the table: ``task``, ``table``,
    ``task_files``)."""
    names = source_columns(table)
    text = pl.col
    picked = table.with_row_index(ROW, offset=1).select(
        ROW,
        *(
            text(names[c]).cast(pl.String).str.strip_chars().alias(c)
            for c in (Col.MODEL, Col.TASK, Col.CATEGORY)
        ),
        text(names[REPORTED_SCORE]).cast(pl.String).str.strip_chars().alias("__score_text"),
        (
            text(names[INSTANCE_ID]).cast(pl.String).alias(INSTANCE_ID)
            if INSTANCE_ID in names
            else pl.lit(None, pl.String).alias(INSTANCE_ID)
        ),
        (
            text(names[NIGHT]).cast(pl.String).alias("__date_text")
            if NIGHT in names
            else pl.lit(None, pl.String).alias("__date_text")
        ),
        *name_columns(table, ROW),
    )
    score = pl.col("__score_text").cast(pl.Float64, strict=False)
    when = pl.col("__date_text").str.to_datetime(time_zone="UTC", strict=False)
    when = pl.coalesce(
        when,
        pl.col("__date_text").str.to_date("%Y-%m-%d", strict=False).cast(pl.Datetime("us", "UTC")),
    )
    category = named(Col.CATEGORY)  # the table's, as it publishes it
    rows = picked.with_columns(
        score.alias(REPORTED_SCORE),
        when.alias(Col.TS),
        category.alias("__category"),
        (pl.lit(night) if night is not None else when.dt.date().cast(pl.String)).alias(NIGHT),
    )
    checks: Sequence[tuple[pl.Expr, pl.Expr]] = [
        (pl.col(Col.MODEL).fill_null("") == "", pl.lit("no model")),
        (pl.col(Col.TASK).fill_null("") == "", pl.lit("no task")),
        (
            pl.col("__score_text").is_null() | (pl.col("__score_text") == ""),
            pl.lit("no score"),
        ),
        (
            pl.col("__score_text").fill_null("").ne("") & (score.is_null() | ~score.is_finite()),
            pl.format("score {} is not a finite number", pl.col("__score_text")),
        ),
        (
            score.is_finite() & ((score < 0.0) | (score > 1.0)),
            pl.format("score {} lies outside [0, 1]", pl.col("__score_text")),
        ),
        (
            category.is_null(),
            pl.format(
                "category {} is none of {}",
                Col.CATEGORY,
                pl.lit(", ".join(sorted(CATEGORY_NAMES))),
            ),
        ),
        (
            pl.lit(night is None) & pl.col("__date_text").is_null(),
            pl.lit("no date (--date puts every row in one night)"),
        ),
        (
            pl.lit(night is None) & pl.col("__date_text").is_not_null() & when.is_null(),
            pl.format("date {} is not a date", pl.col("__date_text")),
        ),
    ]
    judged = rows.with_columns(
        pl.concat_list([pl.when(broken).then(reason) for broken, reason in checks])
        .list.drop_nulls()
        .alias(REASONS)
    )
    # A row is one run of its model on its task (contract 1.4 ``single_run_started``: its
    # time): of several for one model, task and night the latest stands when scored, the
    # others are kept as replaced. Rows of one model, task, night and time: every copy is
    # reported (which of them is the later cannot be told).
    key = [Col.MODEL, Col.TASK, NIGHT, Col.TS]
    copies = pl.len().over(key) > 1
    tie = pl.lit("the table has another row for this model, task and night, at the same time")
    judged = judged.with_columns(
        pl.when(copies & (pl.col(REASONS).list.len() == 0))
        .then(pl.concat_list(tie))
        .otherwise(pl.col(REASONS))
        .alias(REASONS)
    )
    good = pl.col(REASONS).list.len() == 0
    kept = judged.filter(good).select(
        NIGHT,
        Col.MODEL,
        Col.TASK,
        pl.col("__category").alias(Col.CATEGORY),
        pl.coalesce(INSTANCE_ID, task_by_rule(pl.col(Col.TASK))).alias(INSTANCE_ID),
        REPORTED_SCORE,
        Col.TS,
        pl.lit(source).alias(Col.RUN_ID),
        ROW,
        *CARRIED,
    )
    rejected = judged.filter(~good).select(ROW, Col.MODEL, Col.TASK, REASONS)
    return kept, rejected, disagreements(judged.filter(good), "__category", tasks)


def check_scale(table: pl.DataFrame, path: Path) -> None:
    """Refuse (``ImportError_``) a table whose finite scores mostly lie above 1: it is on
    another scale than [0, 1] (a 0-100 table). A few such scores are rows reported one by
    one (``importable_scores``)."""
    column = table.get_column(source_columns(table)[REPORTED_SCORE])
    scores = column.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    finite = scores.filter(scores.is_finite())
    above = int((finite > 1.0).sum())
    if not finite.len() or above <= OTHER_SCALE_SHARE * finite.len():
        return
    largest = float(finite.max())  # type: ignore[arg-type]
    hundred = " (a 0-100 table: divide its scores by 100)" if largest <= 100 else ""
    raise ImportError_(
        f"{path}: {above} of its {finite.len()} scores lie above 1 (up to {largest:g}): a "
        f"table on another scale than [0, 1]{hundred}; nothing imported"
    )


def parquet_bytes(rows: pl.DataFrame, metadata: Mapping[str, str] | None = None) -> bytes:
    """The night's rows as Parquet (with ``metadata``), the same bytes for the same rows."""
    buffer = io.BytesIO()
    rows.write_parquet(
        buffer, compression="zstd", statistics=True, metadata=dict(metadata or {}) or None
    )
    return buffer.getvalue()


def import_scores(
    source: Path,
    out: Path,
    night: str | None = None,
    tasks: Path | None = None,
    names: Path | None = None,
) -> Imported:
    """Import the score table ``source`` into the dump ``out``: per night a file
    ``dump_date=<night>/scores-<source name>-<path key>.parquet`` (replaced where it differs;
    left alone where it holds the same bytes) and a ``_SUCCESS`` marker beside it. A night
    another import gave the same table's content is a copy (``Imported.copies``), not
    written; rows whose model, task and night another table's file holds are reported."""
    table = read_table(source)
    check_scale(table, source)
    categories = task_categories(tasks) if tasks is not None else None
    run_id = f"import-scores/{source.name}"
    kept, rejected, disagreements = importable_scores(table, run_id, night, categories)
    done = Imported(str(source), rows_read=table.height)
    done.disagreements = disagreements
    done.rejected = rejected.to_dicts()
    # One name a model (the names file, the dump's names, the rule), kept for the next import.
    named = names_for(Location.parse(str(out)), names)
    kept, refused = named_rows(kept, named, ROW, REASONS)
    done.rejected = sorted([*done.rejected, *refused], key=lambda r: int(str(r[ROW])))
    keep_names(Location.parse(str(out)), named)
    done.new_models = named.new
    origin = source.resolve()
    digest = _digest(origin.read_bytes())
    name = f"scores-{_safe(source.stem)}-{_digest(str(origin).encode())[:12]}.parquet"
    legacy = f"scores-{_safe(source.stem)}.parquet"  # an earlier cogscore's name for it
    for (when,), scores in kept.group_by(NIGHT, maintain_order=True):
        folder = out / f"dump_date={when}"
        target = folder / name
        others = _other_imports(folder, target)
        copy = next((f for f, m in others.items() if m.get(SOURCE_DIGEST) == digest), None)
        if copy is not None:
            done.copies[str(when)] = str(copy)
            continue
        rows = contract_rows(scores)
        own = folder / legacy if legacy in {p.name for p in others} else None
        if own is not None and not pl.read_parquet(own).equals(rows.drop(NIGHT)):
            own = None  # another table's (of the same name), or this one's before a change
        # Rows whose run another table holds already, with their score: unchanged, counted.
        tables = [p for p in others if p != own]
        scores, same = without_held(scores, held_runs(tables))
        done.rows_unchanged += same
        scores, taken = _not_imported_twice(scores, tables)
        done.rejected.extend(taken)
        done.rows_imported += scores.height
        if scores.is_empty():
            continue
        rows = contract_rows(scores)
        data = parquet_bytes(rows.drop(NIGHT), {SOURCE_DIGEST: digest, SOURCE_PATH: str(origin)})
        if target.is_file() and _digest(target.read_bytes()) == _digest(data):
            done.unchanged[str(when)] = str(target)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        scratch = folder / f".{name}.{os.getpid()}.tmp"
        scratch.write_bytes(data)
        scratch.replace(target)  # readers see the old file or the new one, never half
        if own is not None:  # now under its new name
            own.unlink()
        (folder / "_SUCCESS").touch()
        done.written[str(when)] = str(target)
    return done


def _other_imports(folder: Path, target: Path) -> dict[Path, dict[str, str]]:
    """The files other tables were imported into in night folder ``folder`` (all but
    ``target``), each with what it records of its table."""
    if not folder.is_dir():
        return {}
    return {
        path: pl.read_parquet_metadata(path)
        for path in sorted(folder.iterdir())
        if path.name.startswith("scores-") and path.suffix == ".parquet" and path != target
    }


def _not_imported_twice(
    scores: pl.DataFrame, others: Sequence[Path]
) -> tuple[pl.DataFrame, list[dict[str, object]]]:
    """``scores`` (a night's, of ``importable_scores``) without those whose episode (night, model
    and task) another table's file in the night holds already: imported twice, the scorer
    would reject both copies. The report of each row left out."""
    if not others:
        return scores, []
    held = pl.concat(
        pl.read_parquet(path, columns=[str(Col.EPISODE_ID)]).select(
            pl.col(Col.EPISODE_ID), pl.lit(path.name).alias("__file")
        )
        for path in others
    ).unique(Col.EPISODE_ID, keep="first", maintain_order=True)
    keyed = scores.with_columns(
        pl.concat_str(NIGHT, Col.MODEL, Col.TASK, separator="/").alias(Col.EPISODE_ID)
    )
    clash = keyed.join(held, on=Col.EPISODE_ID, how="inner")
    taken: list[dict[str, object]] = [
        {
            ROW: row[ROW],
            Col.MODEL: row[Col.MODEL],
            Col.TASK: row[Col.TASK],
            REASONS: [
                f"night {row[NIGHT]} has a score of this model and task from another table "
                f"already ({row['__file']}): imported twice, the scorer would reject both"
            ],
        }
        for row in clash.iter_rows(named=True)
    ]
    kept = keyed.join(held, on=Col.EPISODE_ID, how="anti").drop(Col.EPISODE_ID)
    return kept, taken


def _safe(stem: str) -> str:
    """A file name's stem made safe as part of another (letters, digits, ``-``, ``_``).

    >>> _safe("leaderboard flat/../x")
    'leaderboard_flat____x'
    """
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
