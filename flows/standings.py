"""The standings a run makes: the benchmark as it stands as of each night it touched.

A run that scores night N changes the standing as of N and of every later night the output
holds (a re-run or a rescore of N is the latest result of its tasks until a later night
re-runs them). ``Standings`` makes them night after night, in date order, each from the one
before (``transforms.standings.task_standing``): the first from the output's standing of
the night before, read once; the others from the standing it made just before. A nightly
that adds one night makes one standing; an output that never had standings (written by an
earlier cogscore) gets them all, once.

A standing's episodes are those of its tasks' nights: tonight's from memory, those of
nights this run staged from their staged files, the others from ``OUT`` (one query, only
those nights' partitions and the compared columns). Where a standing is the night itself
(every model's results are tonight's: a harness that runs everything every night) its
tables are the night's, renamed, and nothing more is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from flows.comparisons import compared
from flows.options import RegressionOptions
from flows.output import (
    CATEGORY_SCORES,
    EPISODE_SCORES,
    MODEL_COMPARISONS,
    MODEL_SCORES,
    TASK_SCORES,
    Output,
)
from flows.storage import delta
from flows.storage.delta import StagedFiles
from flows.warehouse import above_tasks
from schemas.contract import DUMP_DATE, Col
from schemas.tables import (
    AS_OF,
    CATEGORY_STANDINGS_TABLE,
    COMPARED_COLUMNS,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    PROVENANCE,
    STANDING_CHANGES_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDINGS_TABLE,
    TASK_STANDINGS_TABLE,
)
from transforms.aggregate import Bootstrap
from transforms.compact import plain
from transforms.compare import check_design, regressions
from transforms.standings import (
    CELL,
    CELL_CHANGE,
    NEW_NIGHT,
    OLD_NIGHT,
    cell_changes,
    standing_changes,
    task_standing,
)

TASK_STANDINGS = TASK_STANDINGS_TABLE.name
CATEGORY_STANDINGS = CATEGORY_STANDINGS_TABLE.name
STANDINGS = STANDINGS_TABLE.name
STANDING_COMPARISONS = STANDING_COMPARISONS_TABLE.name
STANDING_CHANGES = STANDING_CHANGES_TABLE.name
# A night's table -> the standing's table it becomes where the standing is the night.
_OF_NIGHT = {
    CATEGORY_SCORES: CATEGORY_STANDINGS,
    MODEL_SCORES: STANDINGS,
    MODEL_COMPARISONS: STANDING_COMPARISONS,
}


def _empty(table: str) -> pl.DataFrame:
    from flows.output import empty_table

    return empty_table(table).drop(PROVENANCE)


def standing_nights(
    held: Iterable[str], scored: Iterable[str | None], present: Iterable[str | None]
) -> list[str | None]:
    """The nights whose standing a run makes: every night it scored, and every night the
    output holds (``held``) from the earliest of them or of those without a standing yet
    (``present``: the standings the output has) on.

    >>> standing_nights(["01", "02", "03"], ["02"], ["01", "02", "03"])
    ['02', '03']
    >>> standing_nights(["01", "02", "03"], ["04"], [])
    ['01', '02', '03', '04']
    >>> standing_nights([], [None], [])
    [None]
    """
    chosen = set(scored)
    if None in chosen:  # an undated dump: one standing, its own
        return [None]
    have = set(present)
    nights = sorted({*held, *(n for n in chosen if n is not None)})
    starts = [n for n in nights if n in chosen or n not in have]
    return [n for n in nights if starts and n >= min(starts)]


@dataclass
class Standing:
    """One standing's rows (no provenance): its tasks, categories and models."""

    as_of: str | None
    tasks: pl.DataFrame
    categories: pl.DataFrame
    models: pl.DataFrame


@dataclass
class Standings:
    """Standings of the nights a run touches, made in date order (``of_night``).

    ``staged``: the episode files a night was staged as in this run (``Writer.staged``), or
    none: that night's episodes are in ``OUT`` (the nights this run did not score or failed
    to write keep what ``OUT`` holds)."""

    output: Output
    bootstrap: Bootstrap
    options: RegressionOptions
    staged: Callable[[str | None], Sequence[StagedFiles]]
    before: Standing | None = None
    _read_before: bool = field(default=False, repr=False)
    _present: list[str | None] | None = field(default=None, repr=False)

    def present(self) -> list[str | None]:
        """The nights the output has a standing as of (read once)."""
        if self._present is None:
            column = self.output.scan(TASK_STANDINGS).select(AS_OF).unique().collect()[AS_OF]
            self._present = column.to_list()
        return self._present

    def nights_to_make(self, held: Iterable[str], scored: Iterable[str | None]) -> list[str | None]:
        """The nights whose standing the run makes (``standing_nights``)."""
        return standing_nights(held, scored, self.present())

    def of_night(
        self,
        night: str | None,
        tonight: NightInput,
    ) -> dict[str, pl.DataFrame]:
        """Every standing table as of ``night``, by name (no provenance)."""
        previous = self._previous(night)
        tasks = task_standing(
            None if previous is None else previous.tasks.lazy(), tonight.tasks.lazy(), night
        ).collect()
        if tonight.tables is not None and _is_the_night(previous, tonight.tasks):
            above = {_OF_NIGHT[name]: _as_of(tonight.tables[name]) for name in _OF_NIGHT}
        else:
            episodes = self._episodes(_sources(tasks), tonight)
            above = {
                _OF_NIGHT[name]: _as_of(frame)
                for name, frame in above_tasks(
                    _at(tasks.drop(AS_OF), night), _at(episodes, night), self.bootstrap
                ).items()
            }
        above[STANDINGS] = _with_nights(above[STANDINGS], tasks)
        current = Standing(night, tasks, above[CATEGORY_STANDINGS], above[STANDINGS])
        changes = self._changes(previous, current, tonight)
        self.before = current
        return {TASK_STANDINGS: tasks, **above, STANDING_CHANGES: changes}

    def _previous(self, night: str | None) -> Standing | None:
        """The standing before ``night``: the one made last, or the output's latest before
        it (read once, for the run's first standing)."""
        if self.before is not None or self._read_before or night is None:
            return self.before
        self._read_before = True
        earlier = [n for n in self.present() if n is not None and n < night]
        if not earlier:
            return None
        as_of = max(earlier)
        chosen = pl.col(AS_OF) == as_of
        frames = pl.collect_all(
            [
                self.output.scan(table).filter(chosen).drop(PROVENANCE)
                for table in (TASK_STANDINGS, CATEGORY_STANDINGS, STANDINGS)
            ]
        )
        self.before = Standing(as_of, *frames)
        return self.before

    def _episodes(self, cells: pl.DataFrame, tonight: NightInput) -> pl.DataFrame:
        """The compared columns of the episodes of ``cells`` (model, category, task and the
        night of each), text keys: from memory, this run's staged files, or ``OUT``."""
        frames: list[pl.LazyFrame] = []
        from_out: list[str | None] = []
        for (night,), wanted in cells.group_by(DUMP_DATE, maintain_order=True):
            if tonight.episodes is not None and night == tonight.night:
                rows = plain(tonight.episodes.select(COMPARED_COLUMNS)).lazy()
            elif staged := self.staged(night):  # type: ignore[arg-type]
                scanned = delta.scan_staged(
                    self.output.location, EPISODE_SCORES, staged, COMPARED_COLUMNS
                )
                assert scanned is not None
                rows = scanned
            else:
                from_out.append(night)  # type: ignore[arg-type]
                continue
            frames.append(rows.join(wanted.lazy(), on=[DUMP_DATE, *CELL], how="semi"))
        if from_out:
            nights = [n for n in from_out if n is not None]
            chosen = pl.col(DUMP_DATE).is_in(nights)
            if None in from_out:
                chosen = chosen | pl.col(DUMP_DATE).is_null()
            rows = self.output.scan(EPISODE_SCORES).filter(chosen).select(COMPARED_COLUMNS)
            wanted = cells.filter(pl.col(DUMP_DATE).is_in(nights) | pl.col(DUMP_DATE).is_null())
            frames.append(rows.join(wanted.lazy(), on=[DUMP_DATE, *CELL], how="semi"))
        if not frames:
            return compared(_empty(EPISODE_SCORES))
        collected = pl.collect_all(frames)
        return compared(pl.concat([plain(f) for f in collected], how="vertical_relaxed"))

    def _changes(
        self, previous: Standing | None, current: Standing, tonight: NightInput
    ) -> pl.DataFrame:
        """``standing_changes`` of ``current`` against ``previous`` (none for the first)."""
        if previous is None or previous.as_of is None or current.as_of is None:
            return _empty(STANDING_CHANGES)
        changes = cell_changes(previous.tasks.lazy(), current.tasks.lazy()).collect()
        if changes.is_empty():
            return _empty(STANDING_CHANGES)
        rerun = changes.filter(pl.col(CELL_CHANGE) == "rerun")
        old = self._episodes(_cells_of(rerun, OLD_NIGHT), tonight)
        new = self._episodes(_cells_of(rerun, NEW_NIGHT), tonight)
        tested = regressions(
            pl.concat([_at(plain(old), previous.as_of), _at(plain(new), current.as_of)]),
            baseline="previous",
            k=1,
            design=check_design(self.bootstrap.design),
            level=self.bootstrap.level,
        )
        return standing_changes(
            changes.lazy(),
            (previous.models.lazy(), previous.categories.lazy()),
            (current.models.lazy(), current.categories.lazy()),
            tested.lazy(),
            current.as_of,
            previous.as_of,
            margin=self.options.margin,
        ).collect()


@dataclass(frozen=True)
class NightInput:
    """What a standing takes of its night: its task rows (``task_scores``), and where the
    run scored it, its other tables and its episodes (the compared columns)."""

    night: str | None
    tasks: pl.DataFrame
    tables: Mapping[str, pl.DataFrame] | None = None
    episodes: pl.DataFrame | None = None


def night_from_output(output: Output, night: str) -> NightInput:
    """A night this run does not score, as ``OUT`` holds it (its task rows alone)."""
    rows = output.scan(TASK_SCORES).filter(pl.col(DUMP_DATE) == night).drop(PROVENANCE)
    return NightInput(night, rows.collect())


def _is_the_night(previous: Standing | None, tonight: pl.DataFrame) -> bool:
    """Whether the standing is the night itself: every earlier result re-run tonight."""
    if previous is None:
        return True
    kept = previous.tasks.lazy().join(tonight.lazy(), on=CELL, how="anti")
    return kept.select(pl.len()).collect().item() == 0


def _sources(tasks: pl.DataFrame) -> pl.DataFrame:
    """Each cell of a standing and the night its result comes from."""
    return tasks.select(DUMP_DATE, *CELL)


def _cells_of(changes: pl.DataFrame, night: str) -> pl.DataFrame:
    return changes.select(pl.col(night).alias(DUMP_DATE), *CELL)


def _at(frame: pl.DataFrame, night: str | None) -> pl.DataFrame:
    """``frame`` as if of one night (``dump_date`` set): a standing's statistics are those
    of a night whose episodes are the standing's."""
    return frame.with_columns(
        pl.lit(night, frame.schema.get(DUMP_DATE, pl.String)).alias(DUMP_DATE)
    )


def _as_of(frame: pl.DataFrame) -> pl.DataFrame:
    """A night's table as a standing's: ``dump_date`` named ``as_of``."""
    return frame.rename({DUMP_DATE: AS_OF})


def _with_nights(models: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``standings`` rows with the oldest and newest night each model's results come from."""
    nights = tasks.group_by(Col.MODEL).agg(
        pl.col(DUMP_DATE).min().alias(OLDEST_NIGHT), pl.col(DUMP_DATE).max().alias(NEWEST_NIGHT)
    )
    joined = models.join(nights, on=Col.MODEL, how="left")
    return joined.select(c for c in STANDINGS_TABLE.dtypes if c in joined.columns)
