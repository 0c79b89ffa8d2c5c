"""From canonical rows to scored episodes and rejects (lazily: nothing is collected here).

``score_rows`` returns two LazyFrames sharing one plan; collect them together
(``pl.collect_all``) so the rows are scanned once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

from schemas.contract import DUMP_DATE, Category, Col
from schemas.tables import (
    EPISODE_SCORES,
    FORMULA_VERSION,
    N_ROWS,
    REJECTS,
    ROWS,
    STATUS,
    Component,
    EpisodeStatus,
)
from transforms import (
    associative,
    concept,
    observational,
    procedural,
    runtime_rl,
)
from transforms.episodes import KEY, episode_facts
from transforms.items import graded_items, unknown_answers
from transforms.params import with_params
from transforms.rules import (
    EPISODE_CATEGORY,
    OTHER_FILES,
    episode_category,
    explain,
    judge,
    with_status,
)

Scorer = Callable[[pl.LazyFrame, str], pl.LazyFrame]
# Each category: its formula, and the components it writes (the others stay null).
SCORERS: dict[Category, tuple[Scorer, tuple[Component, ...]]] = {
    Category.ASSOCIATIVE_LEARNING: (associative.score, associative.COMPONENTS),
    Category.CONCEPT_FORMATION: (concept.score, concept.COMPONENTS),
    Category.LANGUAGE_LEARNING: (concept.score, concept.COMPONENTS),
    Category.OBSERVATIONAL_LEARNING: (observational.score, observational.COMPONENTS),
    Category.RUNTIME_RL: (runtime_rl.score, runtime_rl.COMPONENTS),
    Category.PROCEDURAL_LEARNING: (procedural.score, procedural.COMPONENTS),
}
# Columns every scored row has, whatever its category.
BASE_COLUMNS: tuple[str, ...] = tuple(c for c in EPISODE_SCORES if c not in set(Component))


def judged_episodes(rows: pl.LazyFrame, duplicates: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """Every episode's facts, parameters, rules broken and status.

    ``duplicates`` holds (file, episode_id, other_files) for episode ids found in more than
    one file of the dump (see ``duplicate_episodes``).
    """
    return judge(_facts(rows, duplicates))


def _facts(rows: pl.LazyFrame, duplicates: pl.LazyFrame | None) -> pl.LazyFrame:
    facts = with_params(episode_facts(rows).with_columns(episode_category()), EPISODE_CATEGORY)
    facts = facts.join(unknown_answers(rows), on=KEY, how="left", nulls_equal=True)
    if duplicates is None:
        facts = facts.with_columns(pl.lit(None, pl.String).alias(OTHER_FILES))
    else:
        facts = facts.join(duplicates, on=KEY, how="left", nulls_equal=True)
    return facts


def duplicate_episodes(ids: pl.LazyFrame) -> pl.LazyFrame:
    """From (file, dump_date, episode_id) rows of a dump: the episode ids found in several
    files of one night, with the other files named. A night (``dump_date``; the whole dump
    where it is null) is scored on its own, so ids need only be unique within one."""
    night_id = [DUMP_DATE, Col.EPISODE_ID]
    pairs = ids.filter(pl.col(Col.EPISODE_ID).is_not_null()).unique([*KEY, DUMP_DATE])
    files = pairs.group_by(night_id).agg(pl.col("file").sort().alias("all_files"))
    return (
        pairs.join(files.filter(pl.col("all_files").list.len() > 1), on=night_id, nulls_equal=True)
        .with_columns(
            pl.col("all_files")
            .list.set_difference(pl.concat_list(pl.col("file")))
            .list.sort()
            .list.join(", ")
            .alias(OTHER_FILES)
        )
        .select(*KEY, OTHER_FILES)
    )


def score_rows(
    rows: pl.LazyFrame,
    formulas: Mapping[Category, str],
    duplicates: pl.LazyFrame | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(episode scores, rejects) for canonical rows (``transforms.ingest.normalise``)."""
    # The rows feed five aggregations and the judged episodes both outputs; polars does not
    # share those subplans by itself (a file was scanned 64 times, params parsed 7 times).
    rows = rows.cache()
    judged = with_status(_facts(rows, duplicates)).cache()
    scorable = judged.filter(pl.col(STATUS) == EpisodeStatus.SCORED).drop(Col.CATEGORY)
    rejects = (
        explain(judged.filter(pl.col(STATUS) != EpisodeStatus.SCORED))  # reasons: rejects only
        .rename({N_ROWS: ROWS})
        .select(*(pl.col(c).cast(t) for c, t in REJECTS.items()))
    )
    scorable = (
        scorable.rename({EPISODE_CATEGORY: Col.CATEGORY})
        .join(graded_items(rows), on=KEY, how="left")
        .join(runtime_rl.interaction_facts(rows), on=KEY, how="left")
        .join(procedural.round_facts(rows), on=KEY, how="left")
        .cache()  # six category branches read it: join once, not six times
    )
    per_category = [
        scorer(scorable.filter(pl.col(Col.CATEGORY) == category), formulas[category])
        .with_columns(pl.lit(formulas[category]).alias(FORMULA_VERSION))
        .select(*BASE_COLUMNS, *components)
        for category, (scorer, components) in SCORERS.items()
    ]
    scores = pl.concat(per_category, how="diagonal_relaxed").select(
        pl.col(c).cast(t) for c, t in EPISODE_SCORES.items()
    )
    return scores, rejects
