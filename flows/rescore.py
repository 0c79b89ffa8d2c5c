"""``rescore``'s work: the nights of a range scored again with chosen formula versions,
and ``rescore_diff``, what that moved (old and new scores, with their significance), for
each night and for the standings after it (the regressions of the nights after the range,
whose baseline it holds, are made again: ``flows.comparisons.later_nights``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from flows.job import Job, no_diff, score_nights
from flows.mappers import Mapper
from flows.outcome import Outcome
from flows.plan import formula_set
from flows.provenance import with_provenance
from flows.records import RunContext
from flows.result import ScoreResult, resolved
from flows.store.catalog import CATEGORY_SCORES, EPISODE_SCORES, MODEL_SCORES, RESCORE_DIFF
from flows.store.dumps import DumpFile, local_path
from flows.store.output import Output
from flows.store.state import OutputState
from flows.store.writer import TableWriter
from schemas.columns import COMPARED_COLUMNS, PROVENANCE
from schemas.contract import DUMP_DATE
from schemas.version import COGSCORE_VERSION
from transforms.compact import plain
from transforms.compare import check_design, rescore_significance
from transforms.compare.night import compared
from transforms.diff import reported_alone, rescore_diff, with_significance
from transforms.registry import overlay, resolve


def in_range(night: str, since: date | None, until: date | None) -> bool:
    day = date.fromisoformat(night)
    return (since is None or day >= since) and (until is None or day <= until)


def rescore_nights(
    dump_root: Path | str,
    output: Output,
    writer: TableWriter,
    state: OutputState,
    *,
    formulas: Sequence[str],
    files: Sequence[DumpFile],
    nights: list[str],
    mapper: Mapper | None,
    diff_out: Path | str | None,
    context: RunContext,
    since: date | None,
    until: date | None,
) -> Outcome:
    pinned = formula_set(state)
    versions = overlay(pinned or resolve(), formulas)
    bootstrap = context.options.bootstrap
    every_night = set(state.nights) <= set(nights)
    old = _old_tables(output, nights)  # before this run replaces them
    diffs: list[pl.DataFrame] = []
    not_rescored: list[int] = []  # per night: reported scores alone, left as they are

    def per_night(
        night: str | None, result: ScoreResult, tables: dict[str, pl.DataFrame]
    ) -> dict[str, pl.DataFrame]:
        """The night's rescore diff: what the formulas moved, with its significance (the
        same episodes under both formulas: exactly paired)."""
        this = pl.col(DUMP_DATE) == night
        diff = with_significance(
            rescore_diff(
                old[MODEL_SCORES].lazy().filter(this),
                old[CATEGORY_SCORES].lazy().filter(this),
                tables[MODEL_SCORES].lazy(),
                tables[CATEGORY_SCORES].lazy(),
            ).collect(),
            plain(
                rescore_significance(
                    _old_episodes(output, night),
                    resolved(result.episodes()),
                    design=check_design(bootstrap.design),
                    level=bootstrap.level,
                )
            ),
        )
        diffs.append(diff)
        not_rescored.append(reported_alone(result.scores))
        return {RESCORE_DIFF: diff}

    def finish(fingerprints: dict[str | None, str]) -> dict[str, Any]:
        if diff_out is not None:  # as the table holds it, provenance included
            target = local_path(diff_out, "--diff-out")
            target.parent.mkdir(parents=True, exist_ok=True)
            with_provenance(_diff_table(diffs), COGSCORE_VERSION, fingerprints).write_parquet(
                target
            )
        return {
            "rescore": {
                "since": str(since),
                "until": str(until),
                "nights": nights,
                "not_rescored": sum(not_rescored),
            }
        }

    job = Job(
        "rescore",
        dump_root,
        output,
        files,
        versions,
        finish=finish,
        per_night=per_night,
        new_set=versions if every_night or pinned is None else pinned,
    )
    outcome = score_nights(job, writer, state, mapper, context)
    outcome.diff = _diff_table(diffs)
    outcome.not_rescored = sum(not_rescored)
    return outcome


def _diff_table(diffs: list[pl.DataFrame]) -> pl.DataFrame:
    if not diffs:
        return no_diff().drop(*PROVENANCE)
    return pl.concat(diffs)


def _old_episodes(output: Output, night: str | None) -> pl.DataFrame:
    """The episode scores of ``night`` as the output holds them, before the run replaces
    them (the columns comparisons read)."""
    night_rows = output.scan(EPISODE_SCORES).filter(pl.col(DUMP_DATE) == night)
    return compared(night_rows.select(COMPARED_COLUMNS).collect())


def _old_tables(output: Output, nights: list[str]) -> dict[str, pl.DataFrame]:
    """The current model and category scores of ``nights`` (empty where never scored)."""
    return {
        name: output.read(name).filter(pl.col(DUMP_DATE).is_in(nights))
        for name in (MODEL_SCORES, CATEGORY_SCORES)
    }
