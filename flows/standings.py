"""The standings a run makes: the benchmark as it stands as of each night it touched.

A run that scores night N changes the standing as of N and of every later night the output
holds (a re-run or a rescore of N is the latest result of its tasks until a later night
re-runs them). ``Standings`` makes them in date order, each from the one before
(``transforms.standings.task_standing``; the first from the output's standing of the night
before, read once). A nightly that adds one night makes one standing; an output that never
had standings (an earlier cogscore's) gets them all, once.

A standing the output already had, made again because a night it holds was scored anew, is
also compared with itself as the output held it: each result of the same night whose score
or formula moved is a ``rescored`` change (``standing_changes`` against ``previous_as_of`` =
its own night). The old standing is read only where the new one holds such a night's.

A standing's episodes (the compared columns) are carried from one standing to the next:
the previous standing's less the tasks re-run tonight, with tonight's. ``OUT`` is read for
the output's standing before the run's first (its nights' partitions, once, where the next
standing needs them) and for the nights the run did not score. A standing that is the night
itself (every model's results are tonight's) has the night's tables, renamed; a night that
Dask workers staged (``flows.coded``) has its episodes read back only if a later one needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from flows.night import statistics_above, tables_above
from flows.options import RegressionOptions
from flows.result import Episodes, resolved
from flows.standings_aside import HEALTH_TABLES, of_categories, of_tasks
from flows.standings_between import (
    Standing,
    Tested,
    as_night,
    empty_of,
    moved_between,
    tested_between,
    together,
)
from flows.store.catalog import (
    CATEGORY_SCORES,
    EPISODE_SCORES,
    MODEL_COMPARISONS,
    MODEL_SCORES,
    STANDING_EPISODES,
    TASK_SCORES,
)
from flows.store.output import Output
from schemas.columns import (
    AS_OF,
    COMPARED_COLUMNS,
    NEWEST_NIGHT,
    OLDEST_NIGHT,
    PROVENANCE,
    SCORER_VERSION,
)
from schemas.comparisons import DF, ChangeKind, Design
from schemas.contract import DUMP_DATE, Col
from schemas.hypotheses import HYPOTHESES_TABLE, Hypothesis
from schemas.tables import (
    CATEGORY_STANDINGS_TABLE,
    STANDING_CHANGES_TABLE,
    STANDING_COMPARISONS_TABLE,
    STANDINGS_TABLE,
    TASK_CHANGES_TABLE,
    TASK_STANDINGS_TABLE,
)
from schemas.version import COGSCORE_VERSION
from transforms.aggregate import Bootstrap
from transforms.compact import compact, plain
from transforms.compare import Known
from transforms.compare.night import compared, no_regressions
from transforms.compare.pairs import KNOWN_COLUMNS
from transforms.compare.preparation import TASK_KEY
from transforms.exact import exactly
from transforms.standings import (
    CELL,
    CELL_CHANGE,
    cell_changes,
    standing_changes,
    task_changes,
    task_standing,
)

TASK_STANDINGS = TASK_STANDINGS_TABLE.name
CATEGORY_STANDINGS = CATEGORY_STANDINGS_TABLE.name
STANDINGS = STANDINGS_TABLE.name
STANDING_COMPARISONS = STANDING_COMPARISONS_TABLE.name
STANDING_CHANGES = STANDING_CHANGES_TABLE.name
TASK_CHANGES = TASK_CHANGES_TABLE.name
HYPOTHESES = HYPOTHESES_TABLE.name
# A night's table -> the standing's table it becomes where the standing is the night.
_OF_NIGHT = {
    CATEGORY_SCORES: CATEGORY_STANDINGS,
    MODEL_SCORES: STANDINGS,
    MODEL_COMPARISONS: STANDING_COMPARISONS,
}


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
class Standings:
    """Standings of the nights a run touches, made in date order (``of_night``), each from
    the one before (its task rows and episodes, less the tasks re-run tonight, with
    tonight's). Memory holds one standing's episodes (the compared columns), never
    history's; ``OUT`` is read as the module says."""

    output: Output
    bootstrap: Bootstrap
    options: RegressionOptions
    planned: tuple[Hypothesis, ...] = ()  # --hypotheses: tested on every standing
    # The nights the run scores that the output held already: a standing holding a result
    # of one is compared with itself as held (its ``rescored`` cells).
    anew: frozenset[str] = frozenset()
    before: Standing | None = None
    _read_before: bool = field(default=False, repr=False)
    _present: list[str | None] | None = field(default=None, repr=False)

    def present(self) -> list[str | None]:
        """The nights the output has a standing as of (read once)."""
        if self._present is None:  # (from the table's log: no night's file read)
            self._present = self.output.nights_held(TASK_STANDINGS, AS_OF)
        return self._present

    def nights_to_make(self, held: Iterable[str], scored: Iterable[str | None]) -> list[str | None]:
        """The nights whose standing the run makes (``standing_nights``)."""
        return standing_nights(held, scored, self.present())

    def of_night(self, night: str | None, tonight: NightInput) -> dict[str, pl.DataFrame]:
        """Every standing table as of ``night``, by name (no provenance). What needs the
        task rows and episodes alone (the comparisons held, the re-runs tested, the tasks'
        health, the hypotheses) is made aside (``flows.standings_aside``), beside the
        reads of the standing before and the statistics above the tasks."""
        previous = self.previous(night)
        tasks = task_standing(
            None if previous is None else previous.tasks.lazy(), tonight.tasks.lazy(), night
        ).collect()
        with ThreadPoolExecutor(1, thread_name_prefix="cogscore-standing-aside") as aside:
            return self._made(night, tonight, (previous, tasks), aside)

    def _made(
        self,
        night: str | None,
        tonight: NightInput,
        standings: tuple[Standing | None, pl.DataFrame],
        aside: ThreadPoolExecutor,
    ) -> dict[str, pl.DataFrame]:
        """``of_night``'s tables, from the standing before and the new one's task rows."""
        previous, tasks = standings
        ran, intervals = self._tonight(tonight), None
        if tonight.tables is not None and _is_the_night(previous, tonight.tasks):
            episodes = ran  # the night's, as they are: the standing is the night
            tested = aside.submit(self._tested, previous, night, tasks, episodes)
            health = aside.submit(of_tasks, tasks, self.planned, self.bootstrap.level)
            above = {_OF_NIGHT[name]: _as_of(tonight.tables[name]) for name in _OF_NIGHT}
        else:
            assert previous is not None or tonight.tables is None
            held = aside.submit(self._known, previous, tasks, tonight.tasks)
            kept = None if previous is None else self._episodes_of(previous)
            if kept is not None:
                kept = kept.join(compact(tonight.tasks.select(CELL)), on=CELL, how="anti")
            episodes = resolved(ran) if kept is None else together(kept, resolved(ran))
            known = held.result()
            tested = aside.submit(self._tested, previous, night, tasks, episodes)
            health = aside.submit(of_tasks, tasks, self.planned, self.bootstrap.level)
            made = statistics_above(
                as_night(tasks.drop(AS_OF), night), as_night(episodes, night), self.bootstrap, known
            )
            intervals = made.intervals
            above = {_OF_NIGHT[name]: _as_of(frame) for name, frame in tables_above(made).items()}
        above[STANDINGS] = _with_nights(above[STANDINGS], tasks)
        made_above = (above[CATEGORY_STANDINGS], above[STANDINGS], episodes)
        current = Standing(night, tasks, *made_above, above[STANDING_COMPARISONS], intervals)
        moved = self._changes(previous, current, tested.result())
        changes, cells = _together_changes(moved, self._anew(current))
        self.before = current
        of_standing = {**health.result(), **of_categories(above[CATEGORY_STANDINGS])}
        return {
            TASK_STANDINGS: tasks,
            **above,
            STANDING_CHANGES: changes,
            TASK_CHANGES: cells,
            **{name: of_standing[name] for name in HEALTH_TABLES},
            HYPOTHESES: of_standing[HYPOTHESES],
        }

    def previous(self, night: str | None) -> Standing | None:
        """The standing before ``night``: the one made last, or the output's latest before
        it (its rows read once, for the run's first standing; its episodes when needed)."""
        if self.before is not None or self._read_before or night is None:
            return self.before
        self._read_before = True
        earlier = [n for n in self.present() if n is not None and n < night]
        if not earlier:
            return None
        self.before = standing_of(self.output, max(earlier))
        return self.before

    def _known(
        self, previous: Standing | None, tasks: pl.DataFrame, tonight: pl.DataFrame
    ) -> Known | None:
        """The comparisons (and score intervals) of the standing before whose models'
        results this one keeps (the models without a result tonight), where they hold to the
        bit: its models and the same tasks (a model added ran tonight), made by this cogscore
        with this design (earlier in the run; else as ``OUT`` holds them, no intervals)."""
        if previous is None:
            return None
        models_before, models, tasks_before, task_keys = _keys(
            (previous.tasks, [Col.MODEL]),
            (tasks, [Col.MODEL]),
            (previous.tasks, TASK_KEY),
            (tasks, TASK_KEY),
        )
        if not models_before <= models or tasks_before != task_keys:
            return None
        if previous.comparisons is None:
            previous.comparisons = self._comparisons_held(previous.as_of)
        if previous.comparisons is None:
            return None
        changed = tonight[Col.MODEL].cast(pl.String).unique().to_list()
        return Known(previous.comparisons, frozenset(changed), previous.intervals)

    def _comparisons_held(self, as_of: str | None) -> pl.DataFrame | None:
        """The standing comparisons as of ``as_of`` as ``OUT`` holds them (one partition),
        where this cogscore made them with the two-level design; else None (made again)."""
        if as_of is None or self.bootstrap.design != Design.TWO_LEVEL:
            return None
        scan = self.output.scan(STANDING_COMPARISONS).filter(pl.col(AS_OF) == as_of)
        rows = scan.select(*KNOWN_COLUMNS, SCORER_VERSION).collect()
        made_here = (rows[SCORER_VERSION] == COGSCORE_VERSION).all()
        if rows.is_empty() or not made_here or rows[DF].is_null().all():
            return None
        return rows.drop(SCORER_VERSION)

    def _tonight(self, tonight: NightInput) -> Episodes:
        """The night's compared episodes: the run's (coded: read when needed), or ``OUT``'s."""
        if isinstance(tonight.episodes, pl.DataFrame):
            return tonight.episodes.select(COMPARED_COLUMNS)  # no copy
        return self._read({tonight.night}) if tonight.episodes is None else tonight.episodes

    def _episodes_of(self, standing: Standing) -> pl.DataFrame:
        """A standing's episodes, read from ``OUT`` where not held (the output's own
        standing before the run's first, once): its own night's partitions, and those it
        takes from earlier nights as ``standing_episodes`` keeps them (``_carried``; else
        their nights' partitions)."""
        if standing.episodes is None:
            nights = set(standing.tasks[DUMP_DATE].unique().to_list())
            carried = self._carried(standing, nights - {standing.as_of})
            if carried is not None:
                nights &= {standing.as_of}
            rows = self._read(nights)
            cells = standing.tasks.select(DUMP_DATE, *CELL)
            own = compared(
                plain(rows).join(cells, on=[DUMP_DATE, *CELL], how="semi", nulls_equal=True)
            )
            standing.episodes = own if carried is None else together(carried, own)
        standing.episodes = resolved(standing.episodes)
        return standing.episodes

    def _carried(self, standing: Standing, earlier: set[str | None]) -> pl.DataFrame | None:
        """The episodes ``standing`` takes from the ``earlier`` nights, as ``OUT``'s
        ``standing_episodes`` keeps them for it (the latest standing's): one partition
        instead of a partition of every night. None where it keeps another standing's, or
        not each of the results (an output an earlier cogscore wrote): read from the nights."""
        as_of = standing.as_of
        if not earlier or as_of is None:
            return None
        if self.output.nights_held(STANDING_EPISODES, AS_OF) != [as_of]:
            return None
        kept = self.output.scan(STANDING_EPISODES).filter(pl.col(AS_OF) == as_of)
        rows = kept.select(COMPARED_COLUMNS).collect()
        cells = standing.tasks.filter(pl.col(DUMP_DATE) != as_of)
        held, wanted = _keys((rows, [DUMP_DATE, *CELL]), (cells, [DUMP_DATE, *CELL]))
        if held != wanted:
            return None
        return compared(rows)

    def carried(self) -> dict[str | None, pl.DataFrame]:
        """``standing_episodes`` as the run leaves it, by as_of: the episodes the last
        standing it made takes from nights before it (what the next nightly reads instead
        of those nights), and the standing ``OUT`` kept there emptied. Nothing where the
        run made no standing."""
        last = self.before
        if last is None or last.as_of is None or last.episodes is None:
            return {}
        held = self.output.nights_held(STANDING_EPISODES, AS_OF)
        kept = {night: empty_of(STANDING_EPISODES) for night in held if night != last.as_of}
        if not isinstance(last.episodes, pl.DataFrame):  # not read: the night's own, no other
            return {**kept, last.as_of: empty_of(STANDING_EPISODES)}
        earlier = plain(last.episodes).filter(pl.col(DUMP_DATE) != last.as_of)
        as_of = pl.lit(last.as_of, pl.String).alias(AS_OF)
        kept[last.as_of] = earlier.select(as_of, *COMPARED_COLUMNS)
        return kept

    def _read(self, nights: set[str | None]) -> pl.DataFrame:
        """The compared columns of ``nights``' episodes in ``OUT`` (their partitions only)."""
        dated = [n for n in nights if n is not None]
        chosen = pl.col(DUMP_DATE).is_in(dated)
        if None in nights:
            chosen = chosen | pl.col(DUMP_DATE).is_null()
        rows = self.output.scan(EPISODE_SCORES).filter(chosen).select(COMPARED_COLUMNS)
        return compared(rows.collect())

    def _tested(
        self, previous: Standing | None, night: str | None, tasks: pl.DataFrame, episodes: Episodes
    ) -> Tested | None:
        """The cells of the standing as of ``night`` (``tasks``, ``episodes``) that changed
        since ``previous`` and its re-runs tested (``tested_between``; None for the first)."""
        if previous is None or previous.as_of is None or night is None:
            return None
        self._episodes_of(previous)
        return tested_between(previous, night, (tasks, episodes), self.bootstrap)

    def _changes(
        self, previous: Standing | None, current: Standing, tested: Tested | None
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """``standing_changes`` and ``task_changes`` of ``current`` against ``previous``
        (none for the first), its re-runs ``tested`` already."""
        if previous is None or tested is None:
            return empty_of(STANDING_CHANGES), empty_of(TASK_CHANGES)
        return moved_between(previous, current, tested, self.options)

    def _anew(self, current: Standing) -> tuple[pl.DataFrame, pl.DataFrame]:
        """``rescored`` rows of ``current``: against the same standing as ``OUT`` held it
        before the run (its rows read here, where it holds a result of a night scored anew),
        the results of the same night whose score or formula moved, per model and scope
        (and per task)."""
        night = current.as_of
        nothing = empty_of(STANDING_CHANGES), empty_of(TASK_CHANGES)
        if night is None or night not in self.present():
            return nothing
        if not current.tasks[DUMP_DATE].is_in(sorted(self.anew)).any():
            return nothing
        held = standing_of(self.output, night)
        cells = (
            cell_changes(held.tasks.lazy(), current.tasks.lazy())
            .filter(pl.col(CELL_CHANGE) == ChangeKind.RESCORED.value)
            .collect()
        )
        if cells.is_empty():
            return nothing
        moved = standing_changes(
            cells.lazy(),
            (held.models.lazy(), held.categories.lazy()),
            (current.models.lazy(), current.categories.lazy()),
            no_regressions().lazy(),  # nothing tested: a rescore is not comparable
            as_of=night,
            previous_as_of=night,
            margin=self.options.regression_margin,
        )
        each = task_changes(cells.lazy(), as_of=night, previous_as_of=night)
        rows, tasks_moved = pl.collect_all([moved, each])
        return rows, tasks_moved


def standing_of(output: Output, as_of: str, run: str | None = None) -> Standing:
    """The standing as of ``as_of`` as ``OUT`` holds it (as the latest finished run, or run
    ``run``, left it): its task, category and model rows; its episodes not read."""
    chosen = pl.col(AS_OF) == as_of
    tasks, categories, models = pl.collect_all(
        [
            output.scan(table, run).filter(chosen).drop(PROVENANCE)
            for table in (TASK_STANDINGS, CATEGORY_STANDINGS, STANDINGS)
        ]
    )
    return Standing(as_of, tasks, categories, models)


def _together_changes(*pairs: tuple[pl.DataFrame, pl.DataFrame]) -> tuple[pl.DataFrame, ...]:
    """A standing's changes (``standing_changes``, ``task_changes``) against the night
    before and against itself, each in its table's order (then the standing compared with)."""
    moved = pl.concat([m for m, _ in pairs]).sort(list(STANDING_CHANGES_TABLE.sort))
    cells = pl.concat([c for _, c in pairs]).sort(list(TASK_CHANGES_TABLE.sort))
    return moved, cells


@dataclass(frozen=True)
class NightInput:
    """What a standing takes of its night: its task rows (``task_scores``), and where the
    run scored it, its other tables and its episodes (the compared columns)."""

    night: str | None
    tasks: pl.DataFrame
    tables: Mapping[str, pl.DataFrame] | None = None
    episodes: Episodes | None = None


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


def _keys(*frames: tuple[pl.DataFrame, Sequence[str]]) -> list[set[tuple[object, ...]]]:
    """Each frame's distinct keys (its ``columns``, as text), every frame's in one query."""
    plans = [f.lazy().select(pl.col(columns).cast(pl.String)).unique() for f, columns in frames]
    return [set(keys.rows()) for keys in exactly(*plans)]


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
