"""Two standings compared (issue 48): a standing's rows (``Standing``), the cells that changed
between two and their re-runs tested (``tested_between``: what a standing's worker makes
aside, ``flows.standings_aside``), and how far each model's standing moved
(``moved_between``); ``changes_between`` both, for ``compare --against``."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from flows.options import RegressionOptions
from flows.result import Episodes, resolved
from flows.store.catalog import EPISODE_SCORES, empty_table
from flows.store.output import Output
from schemas.columns import COMPARED_COLUMNS, PROVENANCE
from schemas.comparisons import ChangeKind
from schemas.contract import DUMP_DATE
from schemas.tables import STANDING_CHANGES_TABLE, TASK_CHANGES_TABLE
from transforms.aggregate import Bootstrap
from transforms.compact import compact, plain
from transforms.compare import check_design, regressions
from transforms.compare.night import compared, no_regressions
from transforms.exact import exactly
from transforms.standings import CELL, CELL_CHANGE, cell_changes, standing_changes, task_changes

STANDING_CHANGES = STANDING_CHANGES_TABLE.name
TASK_CHANGES = TASK_CHANGES_TABLE.name


def empty_of(table: str) -> pl.DataFrame:
    """``table`` without rows, as a standing's tables are made (no provenance yet)."""
    return empty_table(table).drop(PROVENANCE)


@dataclass
class Standing:
    """One standing's rows (no provenance): its tasks, categories and models, the compared
    columns of its episodes (None: not read yet; each keeps its night as ``dump_date``), its
    comparisons (None: not read) and score intervals (None: not made in this run)."""

    as_of: str | None
    tasks: pl.DataFrame
    categories: pl.DataFrame
    models: pl.DataFrame
    episodes: Episodes | None = None
    comparisons: pl.DataFrame | None = None
    intervals: pl.DataFrame | None = None


def read_reruns(output: Output, before: Standing, after: Standing, run: str | None = None) -> None:
    """Each standing's ``episodes``: those of the results whose night differs between the
    two (the re-runs ``changes_between`` tests), read from ``OUT`` (their nights'
    partitions and the compared columns only)."""
    key = [DUMP_DATE, *CELL]
    moved = before.tasks.select(key).join(after.tasks.select(key), on=CELL, suffix="__after")
    moved = moved.filter(pl.col(DUMP_DATE).ne_missing(pl.col(f"{DUMP_DATE}__after")))
    old = moved.select(key)
    new = moved.select(pl.col(f"{DUMP_DATE}__after").alias(DUMP_DATE), *CELL)
    nights = sorted(set(old[DUMP_DATE].drop_nulls()) | set(new[DUMP_DATE].drop_nulls()))
    chosen = output.scan(EPISODE_SCORES, run).filter(pl.col(DUMP_DATE).is_in(nights))
    rows = plain(compared(chosen.select(COMPARED_COLUMNS).collect()))
    for standing, cells in ((before, old), (after, new)):
        standing.episodes = compared(rows.join(cells, on=key, how="semi", nulls_equal=True))


def changes_between(
    previous: Standing, current: Standing, *, bootstrap: Bootstrap, options: RegressionOptions
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``standing_changes`` and ``task_changes`` of the standing ``current`` against an
    earlier one, ``previous`` (the night before, or any: ``compare --against``): each model
    and task whose result changed, and per model and scope how far its standing moved, its
    re-run tasks tested (``current``'s episodes of them against ``previous``'s, which each
    standing's ``episodes`` must hold) and its rank before and now."""
    assert current.as_of is not None and current.episodes is not None
    tested = tested_between(previous, current.as_of, (current.tasks, current.episodes), bootstrap)
    return moved_between(previous, current, tested, options)


# The cells that changed between two standings and their re-runs' regressions tested.
Tested = tuple[pl.DataFrame, pl.DataFrame]


def tested_between(
    previous: Standing, as_of: str, current: tuple[pl.DataFrame, Episodes], bootstrap: Bootstrap
) -> Tested:
    """The cells of the standing as of ``as_of`` (its task rows and episodes, ``current``)
    whose result changed since ``previous`` (``cell_changes``), and its re-runs tested
    against ``previous``'s episodes of them (``regressions``; none: nothing changed)."""
    assert previous.as_of is not None and previous.episodes is not None
    tasks, episodes = current
    (changes,) = exactly(cell_changes(previous.tasks.lazy(), tasks.lazy()))
    if changes.is_empty():
        return changes, no_regressions()
    rerun = compact(changes.filter(pl.col(CELL_CHANGE) == ChangeKind.RERUN.value).select(CELL))
    old = resolved(previous.episodes).join(rerun, on=CELL, how="semi")
    new = resolved(episodes).join(rerun, on=CELL, how="semi")
    tested = regressions(
        together(as_night(old, previous.as_of), as_night(new, as_of)),
        baseline="previous",
        k=1,
        design=check_design(bootstrap.design),
        level=bootstrap.level,
    )
    return changes, tested


def moved_between(
    previous: Standing, current: Standing, tested: Tested, options: RegressionOptions
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``changes_between``'s tables from the cells that changed and their re-runs
    ``tested`` (``tested_between``)."""
    assert previous.as_of is not None and current.as_of is not None
    changes, regressed = tested
    if changes.is_empty():
        return empty_of(STANDING_CHANGES), empty_of(TASK_CHANGES)
    moved = standing_changes(
        changes.lazy(),
        (previous.models.lazy(), previous.categories.lazy()),
        (current.models.lazy(), current.categories.lazy()),
        regressed.lazy(),
        as_of=current.as_of,
        previous_as_of=previous.as_of,
        margin=options.regression_margin,
    )
    each = task_changes(changes.lazy(), as_of=current.as_of, previous_as_of=previous.as_of)
    rows, cells = exactly(moved, each)
    return rows, cells


def together(*frames: pl.DataFrame) -> pl.DataFrame:
    """Compared episodes of several sources as one frame (text keys meet, then compact)."""
    return compared(pl.concat([plain(f) for f in frames], how="vertical_relaxed"))


def as_night(frame: pl.DataFrame, night: str | None) -> pl.DataFrame:
    """``frame`` as if of one night (``dump_date`` set): a standing's statistics are those
    of a night whose episodes are the standing's."""
    return frame.with_columns(
        pl.lit(night, frame.schema.get(DUMP_DATE, pl.String)).alias(DUMP_DATE)
    )
