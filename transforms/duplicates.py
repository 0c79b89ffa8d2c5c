"""The one rule that needs the whole night: an ``episode_id`` must be unique within a night.

Every file is judged and scored on its own (``transforms.pipeline.score_rows``); afterwards
``reject_duplicates`` looks at the episode ids of every file of a night (``dump_date``; the
whole dump where it is null) and rejects every copy of an id found in several files. A
file's own result therefore depends on that file alone (what lets a run cache it).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import N_ROWS, REASONS, REJECTS_DTYPES, ROWS, RULES, STATUS, EpisodeStatus
from schemas.contract import DUMP_DATE, FILE, Col
from schemas.rules import Rule
from transforms.episodes import KEY
from transforms.rules import OTHER_FILES

_ALL_FILES: Final = "all_files"


def episode_ids(scores: pl.LazyFrame, rejects: pl.LazyFrame) -> pl.LazyFrame:
    """(file, dump_date, episode_id) of every episode scored or not: one row per episode
    of each file."""
    # As Categorical: the scores' keys may be (a night's episodes held compact), the rejects'
    # are few.
    keys = [pl.col(FILE).cast(pl.Categorical), pl.col(DUMP_DATE).cast(pl.Categorical)]
    return pl.concat([frame.select(*keys, Col.EPISODE_ID) for frame in (scores, rejects)])


def duplicate_episodes(ids: pl.LazyFrame) -> pl.LazyFrame:
    """From (file, dump_date, episode_id) rows, one per episode of each file: the ids found
    in several files of one night, one row per copy, with the other files named
    (``other_files``)."""
    night_id = [DUMP_DATE, Col.EPISODE_ID]
    # Only an id whose hash repeats in the night can repeat (a number per episode is checked,
    # not its text: 8 bytes, against ~200 to hash the text keys); the few candidates are then
    # checked exactly.
    night_hash = pl.col(Col.EPISODE_ID).hash(0) ^ pl.col(DUMP_DATE).hash(1)
    candidates = ids.filter(pl.col(Col.EPISODE_ID).is_not_null() & night_hash.is_duplicated())
    present = candidates.with_columns(pl.col(FILE, DUMP_DATE).cast(pl.String)).unique()
    copies = present.filter(pl.struct(night_id).is_duplicated())  # few: a harness bug
    files = copies.group_by(night_id).agg(pl.col(FILE).sort().alias(_ALL_FILES))
    return (
        copies.join(files, on=night_id, nulls_equal=True)
        .with_columns(
            pl.col(_ALL_FILES)
            .list.set_difference(pl.concat_list(pl.col(FILE)))
            .list.sort()
            .list.join(", ")
            .alias(OTHER_FILES)
        )
        .select(*KEY, OTHER_FILES)
    )


def _reason() -> pl.Expr:
    return pl.format("the episode_id also appears in {}", pl.col(OTHER_FILES))


def reject_duplicates(
    scores: pl.LazyFrame, rejects: pl.LazyFrame, duplicates: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(scores, rejects) with every copy in ``duplicates`` (``duplicate_episodes``)
    rejected: a scored copy becomes a reject row, an unscored one gets the rule and its
    reason added."""
    rule = pl.lit([Rule.DUPLICATE_EPISODE_ACROSS_FILES.value], pl.List(pl.String))
    keys = scores.collect_schema()  # the scores' keys may be Categorical
    scores_duplicates = duplicates.with_columns(pl.col(c).cast(keys[c]) for c in KEY)
    moved = scores.join(scores_duplicates, on=KEY).select(
        *(c for c in REJECTS_DTYPES if c not in (STATUS, RULES, REASONS, ROWS)),
        pl.lit(EpisodeStatus.REJECTED.value).alias(STATUS),
        rule.alias(RULES),
        pl.concat_list(_reason()).alias(REASONS),
        pl.col(N_ROWS).alias(ROWS),
    )
    duplicated = pl.col(OTHER_FILES).is_not_null()
    marked = rejects.join(duplicates, on=KEY, how="left").with_columns(
        pl.when(duplicated).then(pl.col(RULES).list.concat(rule)).otherwise(pl.col(RULES)),
        pl.when(duplicated)
        .then(pl.col(REASONS).list.concat(pl.concat_list(_reason())))
        .otherwise(pl.col(REASONS)),
    )
    kept = scores.join(scores_duplicates, on=KEY, how="anti")
    as_rejects = [pl.col(c).cast(t) for c, t in REJECTS_DTYPES.items()]
    return kept, pl.concat([marked.select(as_rejects), moved.select(as_rejects)])
