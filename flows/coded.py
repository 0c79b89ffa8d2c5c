"""A night assembled from its staged files: the driver of a cluster holds no episode row
while the files are scored (issue 48).

A Dask worker (``flows.mappers.dask_mapper``; a Prefect task still hands back the held
columns) scores its files, writes their episode rows as uncommitted data files of
``episode_scores`` where the output is (``flows.score.score_and_stage``) and hands back their
paths and statistics, the files' component sums, single runs, reject rows and counts:
nothing per scored episode. Once the night's files are done, the driver reads the rows back
a category at a time (the data files are partitioned by it), only the columns the night's
tables read, and holds each episode in 36 bytes (``schemas.columns.CODED_DTYPES``): the text
of few values as Categorical, ``episode_id`` and ``instance_id`` as their dense ranks among
the category's (``transforms.compact.coded``), which sort and compare within a task as the
text does. The row accounting is summed as the rows are read; the ids repeated across files
are looked for by a 64-bit hash of each (8 bytes an episode while the night is read), the
few candidates checked on their text; the runs a later one replaced (contract 1.4) are taken
out of their files as ``flows.score.assemble`` does. Where other nights' text meets the
night (regressions against a baseline, standings, a rescore's diff, ids already scored on
other nights) its compared columns are read back as text (``ScoreResult.text``).

The data files are the commit's: one Delta commit per table, as before; a file no commit
names (a killed run, a task retried after it wrote) is left to ``vacuum``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

import polars as pl
from deltalake.transaction import AddAction

from flows.mismatches import Mismatches
from flows.result import ScoreResult
from flows.score import FilePart, replaced_rows, restaged, settled
from flows.score import assemble as assemble_held
from flows.store.catalog import EPISODE_SCORES
from flows.store.delta.staged import StagedFiles, StageTarget, read_staged_columns
from schemas.columns import (
    CODED_DTYPES,
    COMPARED_COLUMNS,
    EPISODE_SCORES_DTYPES,
    FEEDBACK_OUT_OF_RANGE,
    FORMULA_VERSION,
    HELD_DTYPES,
    N_ROWS,
    REJECTS_DTYPES,
    SCORE,
)
from schemas.contract import DUMP_DATE, FILE, INSTANCE_ID, Col
from schemas.tables import REPLACED_EPISODES_TABLE
from transforms.compact import coded, compact
from transforms.duplicates import KEY as DUPLICATE_KEY
from transforms.duplicates import duplicate_episodes, episode_ids, reject_duplicates
from transforms.replaced import replaced_runs, single_runs

# The columns of a category read back for its coded episodes and the row accounting (the
# partition columns, night and category, are the files' own).
_READ: Final = [c for c in COMPARED_COLUMNS if c not in (DUMP_DATE, Col.CATEGORY)]
_COUNTED: Final = (N_ROWS, FEEDBACK_OUT_OF_RANGE)
_FEW: Final = (Col.MODEL, Col.TASK, FORMULA_VERSION)  # text of few values
_SEED: Final = 0x1D5  # of the ids' hashes (any seed: they are compared among themselves)


def assemble(
    parts: Sequence[FilePart], formulas: dict[str, str], target: StageTarget | None = None
) -> ScoreResult:
    """One result from a night's parts (``flows.score.assemble`` for parts holding their
    rows); parts staged by workers (``FilePart.in_files``) are assembled from their staged
    files, ids coded."""
    if target is None or not parts or not any(p.in_files for p in parts):
        return assemble_held(parts, formulas, target)
    if not all(p.in_files for p in parts):
        raise ValueError("a night's parts are all staged by workers, or none is")
    parts = sorted(parts, key=lambda p: min(r.file for r in p.reports))  # file order
    rejects = pl.concat([pl.DataFrame(schema=REJECTS_DTYPES), *(p.rejects for p in parts)])
    night = StagedNight(target, settled(p.staged for p in parts))
    scores, hashes, tally = night.read()
    copies = pl.concat([compact(pl.DataFrame(schema=HELD_DTYPES)), *(p.scores for p in parts)])
    duplicates = _duplicates(night, hashes, copies, rejects)
    del hashes
    if not duplicates.is_empty():  # a harness bug: the copies rejected, their files restaged
        del scores
        parts, moved = _restaged(parts, duplicates, night)
        held = pl.concat([compact(moved.select(list(HELD_DTYPES))), copies])
        _, marked = reject_duplicates(held.lazy(), rejects.lazy(), duplicates.lazy())
        rejects = marked.collect()
    parts, replaced = _replaced(parts, night)
    if not duplicates.is_empty() or not replaced.is_empty():  # read again, as it now is
        night = StagedNight(target, settled(p.staged for p in parts))
        scores, _, tally = night.read()
    return ScoreResult(
        scores=scores,
        rejects=rejects.sort(FILE, Col.EPISODE_ID, nulls_last=True),
        files=[report for p in parts for report in p.reports],
        formulas=formulas,
        sums=pl.concat([p.sums for p in parts if p.sums is not None]),
        staged=list(night.staged),
        mismatches=Mismatches.total(p.mismatches for p in parts if p.mismatches is not None),
        replaced=replaced,
        tally=tally,
        text=partial(read_compared, target, night.by_category()),
    )


def _replaced(parts: list[FilePart], night: StagedNight) -> tuple[list[FilePart], pl.DataFrame]:
    """The night's single runs that a later run of their model and task replaced (contract
    1.4, ``transforms.replaced``) taken out of the parts' staged files (those holding some
    written again): (the parts, the replaced episodes' whole rows with ``replaced_by``), as
    ``flows.score.assemble`` makes them. A night without two single runs costs nothing."""
    none = single_runs(pl.LazyFrame(schema=EPISODE_SCORES_DTYPES)).collect()
    runs = pl.concat([none, *(p.runs for p in parts if p.runs is not None)])
    replaced = replaced_runs(runs.lazy()).collect() if runs.height > 1 else pl.DataFrame()
    if replaced.is_empty():
        return parts, REPLACED_EPISODES_TABLE.empty()
    parts, taken = _restaged(parts, replaced, night)
    return parts, replaced_rows(taken, replaced)


@dataclass(frozen=True)
class StagedNight:
    """A night's staged files of ``episode_scores``, read back a category at a time."""

    target: StageTarget
    staged: Sequence[StagedFiles]

    def by_category(self) -> list[tuple[str | None, list[AddAction]]]:
        """Each category's data files, in the parts' order (file order), categories in
        text order."""
        grouped: dict[str | None, list[AddAction]] = {}
        for files in self.staged:
            for add in files.adds:
                grouped.setdefault(add.partition_values.get(Col.CATEGORY), []).append(add)
        return sorted(grouped.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))

    def read(self) -> tuple[pl.DataFrame, pl.Series, dict[str, int]]:
        """(the scored episodes coded, the hashes of their ids, the row accounting's sums),
        one category at a time, one text column of it at a time (its ids, then its
        instances; the text of few values made Categorical as it is read): memory holds one
        category's ids as text (and ranking them: ~100 bytes an episode of the category)."""
        coded_parts = [pl.DataFrame(schema=CODED_DTYPES)]
        hashes = [pl.Series(Col.EPISODE_ID, [], pl.UInt64)]
        tally = dict.fromkeys(_COUNTED, 0)
        for category, adds in self.by_category():
            read = partial(read_staged_columns, self.target.location, EPISODE_SCORES, adds)
            ids = read([Col.EPISODE_ID])  # each read: the same files, the same row order
            hashes.append(ids[Col.EPISODE_ID].hash(_SEED))
            ids = coded(ids)
            instances = coded(read([INSTANCE_ID]))
            few = [pl.col(c).cast(HELD_DTYPES[c]) for c in _FEW]
            rest = read([*few, SCORE, *_COUNTED])
            for column in _COUNTED:  # as Int64 (a night's sums)
                tally[column] += int(rest[column].cast(pl.Int64).sum())
            of_category = pl.concat([ids, instances, rest.drop(_COUNTED)], how="horizontal")
            del ids, instances, rest
            with_keys = _with_partitions(of_category, self.target.night, category)
            coded_parts.append(with_keys.cast(pl.Schema(CODED_DTYPES)))
            del of_category, with_keys
        return pl.concat(coded_parts), pl.concat(hashes), tally


def read_compared(
    target: StageTarget, categories: Sequence[tuple[str | None, Sequence[AddAction]]]
) -> pl.DataFrame:
    """The compared columns of a staged night's episodes, ids as text, compact (``text``
    of its ``ScoreResult``: where another night's text meets it)."""
    frames = [compact(pl.DataFrame(schema={c: HELD_DTYPES[c] for c in COMPARED_COLUMNS}))]
    for category, adds in categories:
        text = read_staged_columns(target.location, EPISODE_SCORES, adds, _READ)
        frames.append(compact(_with_partitions(text, target.night, category)))
    return pl.concat(frames, how="vertical_relaxed").select(COMPARED_COLUMNS)


def _with_partitions(frame: pl.DataFrame, night: str | None, category: str | None) -> pl.DataFrame:
    """``frame`` of one category's data files with their partition columns (compact)."""
    values = {DUMP_DATE: night, Col.CATEGORY: category}
    return frame.with_columns(
        pl.lit(v, pl.String).cast(HELD_DTYPES[c]).alias(c) for c, v in values.items()
    ).select(c for c in COMPARED_COLUMNS if c in frame.columns or c in values)


def _duplicates(
    night: StagedNight, hashes: pl.Series, copies: pl.DataFrame, rejects: pl.DataFrame
) -> pl.DataFrame:
    """The ids of the night found in several of its files (``duplicate_episodes``): looked
    for among the hashes of every id (staged, repeated within a batch, rejected), the few
    whose hash repeats then read back and checked on their text."""
    others = [f.select(pl.col(Col.EPISODE_ID).cast(pl.String)) for f in (copies, rejects)]
    every = pl.concat([hashes, *(f.to_series().drop_nulls().hash(_SEED) for f in others)])
    # Sorted, a repeat is beside its copy (``is_duplicated``'s hash table took ~100 bytes a
    # row: +50 MiB for a night of 500,000 episodes, against 5 sorted).
    every = every.sort()
    repeated = every.filter((every == every.shift(1)) | (every == every.shift(-1))).unique()
    if repeated.is_empty():
        return pl.DataFrame(schema=dict.fromkeys(DUPLICATE_KEY, pl.String))
    candidates = []
    for _, adds in night.by_category():
        rows = read_staged_columns(
            night.target.location, EPISODE_SCORES, adds, [FILE, Col.EPISODE_ID]
        )
        candidates.append(rows.filter(pl.col(Col.EPISODE_ID).hash(_SEED).is_in(repeated.implode())))
    held = copies.select(pl.col(FILE).cast(pl.String), Col.EPISODE_ID)
    scored = pl.concat([*candidates, held])
    scored = scored.with_columns(pl.lit(night.target.night, pl.String).alias(DUMP_DATE))
    return duplicate_episodes(episode_ids(scored.lazy(), rejects.lazy())).collect()


def _restaged(
    parts: Sequence[FilePart], episodes: pl.DataFrame, night: StagedNight
) -> tuple[list[FilePart], pl.DataFrame]:
    """The parts without ``episodes`` (their key: copies of ids repeated across files, or
    runs replaced; rare): those of the files holding some staged again without them
    (``flows.score.restaged``), and the staged rows taken out (whole)."""
    files = set(episodes[FILE].to_list())
    kept_parts, moved = [], [pl.DataFrame(schema=EPISODE_SCORES_DTYPES)]
    for part in parts:
        written = settled([part.staged])
        if not written or not files & {r.file for r in part.reports}:
            kept_parts.append(part)
            continue
        kept, taken = restaged(part, written[0], episodes, night.target, in_files=True)
        kept_parts.append(kept)
        moved.append(taken)
    return kept_parts, pl.concat(moved, how="vertical_relaxed")
