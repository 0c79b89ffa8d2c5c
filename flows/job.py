"""One run's nights, scored one after another (under the lease ``flows.runs.held_run``
takes): ``score_nights`` is the loop ``score``, ``nightly`` and ``rescore`` share (each
night's files mapped, assembled, its tables made and staged, its standing made on a worker
beside the next night's files, its failure kept to that night), ``Job`` what it scores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any

import polars as pl

from flows.coded import assemble
from flows.comparisons import NightWatch, later_nights
from flows.logs import log
from flows.logs import run_id as run_id_var
from flows.mappers import FILES_AT_ONCE, Mapper, local_mapper_with
from flows.night import NightHook, tables_of_night
from flows.outcome import FLAGGED, Outcome, RunSummary, alerts, noticed, reran, unscored_night
from flows.plan import (
    check_layout,
    describe_set,
    fingerprint,
    formula_set,
    nights_off_set,
    state_after,
)
from flows.provenance import run_details, with_provenance
from flows.reading import vanished
from flows.records import RunContext, error_line, exit_code_of, run_status, verdict
from flows.repeats import SeenIds, repeat_reason
from flows.result import ScoreResult, resolved
from flows.score import settled
from flows.standing_writes import StandingWrites
from flows.standings import (
    STANDING_CHANGES,
    TASK_CHANGES,
    NightInput,
    Standings,
    night_from_output,
)
from flows.standings_beside import StandingsBeside
from flows.store.catalog import (
    EPISODE_SCORES,
    REGRESSIONS,
    RESCORE_DIFF,
    STANDING_EPISODES,
    TASK_SCORES,
    empty_table,
    fault_point,
)
from flows.store.dumps import DumpFile, content_digest
from flows.store.output import Output, night_levels
from flows.store.runs_table import RunRow
from flows.store.state import OutputState
from flows.store.writer import DryRun, TableWriter, record_failure
from schemas.columns import AS_OF, PROVENANCE, RunStatus
from schemas.comparisons import ALERT_LEVEL, REASON
from schemas.contract import DUMP_DATE, Col
from schemas.exits import ExitCode
from schemas.tables import TABLES
from schemas.version import COGSCORE_VERSION
from transforms.compare import check_design
from transforms.compare.night import ABSENT, models_without_scores

# After the last night, with each night's input fingerprint: what the run records beside.
Finish = Callable[[dict[str | None, str]], dict[str, Any]]


@dataclass
class Job:
    """What a run scores, decided from the output's state before it scores anything."""

    kind: str
    dump_root: Path | str
    output: Output
    files: Sequence[DumpFile]
    formulas: dict[str, str]
    digests: Mapping[str, str] = field(default_factory=dict)
    finish: Finish | None = None
    per_night: NightHook | None = None
    new_set: dict[str, str] | None = None  # the output's set after the run
    details: Mapping[str, Any] = field(default_factory=dict)
    # Nights scored with their own versions rather than ``formulas`` (a changed night of a
    # rescored range keeps the versions it was rescored with).
    kept: Mapping[str, dict[str, str]] = field(default_factory=dict)


def score_nights(
    job: Job,
    writer: TableWriter,
    state: OutputState,
    mapper: Mapper | None,
    context: RunContext,
) -> Outcome:
    """Score ``job``'s files night after night, stage each night's tables as it is done,
    then commit every table once and record the run.

    A night (``dump_date``) is the unit of reporting: its files are scored, its ids checked
    for copies, its tables made (``flows.night.tables_of_night``) and staged, and its frames
    dropped once its standing is made (on a worker, while the next night is scored), so
    memory holds a night and the night before's standing input however many a run scores.
    Once every night is staged, each table gets one commit that replaces all the run's
    nights of it (a reader of the tables' latest versions sees the whole run or none of it,
    table by table), and the run's rows in the runs table, appended last, are the commit
    point for cogscore's own readers. With a ``DryRun`` writer, the tables are made and
    checked and nothing is written. Files are scored by ``mapper``, by default here
    (``flows.mappers.local_mapper``), telling the run's progress of each file.
    """
    started, t0 = datetime.now(UTC), time.perf_counter()
    mapper = mapper or local_mapper_with(context.progress)
    output, files, formulas = job.output, job.files, job.formulas
    bootstrap = context.options.bootstrap
    dry_run = isinstance(writer, DryRun)
    # Partition by dump_date only where every file has one (discover refuses a mix).
    dated = bool(files) and all(DUMP_DATE in f.partitions for f in files)
    check_layout(output, state, dated)
    pinned = job.new_set or formula_set(state) or formulas
    groups: dict[str | None, list[DumpFile]] = {}
    for f in files:
        groups.setdefault(f.partitions[DUMP_DATE] if dated else None, []).append(f)
    summary = RunSummary(formulas)
    watch = NightWatch(
        output,
        context.options.regression,
        state.nights if dated else (),
        design=check_design(bootstrap.design),
        level=bootstrap.level,
    )
    seen = SeenIds(output, frozenset(state.nights))
    # Its ids' hashes (16 bytes an episode) would be kept for no night: not made.
    last_scored = max(groups, key=lambda n: n or "", default=None)
    flagged: list[pl.DataFrame] = []
    rows: list[RunRow] = []
    fingerprints: dict[str | None, str] = {}
    failed: dict[str, str] = {}  # night -> why it could not be scored
    unscored: dict[str, dict[str, str]] = {}  # night -> model -> why none of its was scored
    absent: dict[str, list[str]] = {}  # night -> models of its baseline that ran nothing
    refreshed: list[str] = []  # nights whose regressions only were made again
    restood: list[str] = []  # nights not scored whose standing was made again
    run: dict[str, Any] = {
        "run_id": context.run_id,
        "kind": job.kind,
        "started": started,
        "scorer_version": COGSCORE_VERSION,
        "input": str(job.dump_root),
        "partitioned": dated,
        "formula_versions": describe_set(formulas),
        "formula_set": describe_set(pinned),
    }
    progress = context.progress
    progress.begin(len(groups), len(files))
    run_id_var.set(context.run_id)
    log().info(
        "%s run started: %d night(s), %d file(s) from %s",
        job.kind,
        len(groups),
        len(files),
        job.dump_root,
    )

    def provenanced(name: str, table: pl.DataFrame) -> pl.DataFrame:
        return with_provenance(table, COGSCORE_VERSION, fingerprints, TABLES[name].night)

    def stage(tables: dict[str, pl.DataFrame], night: str | None) -> None:
        for name, table in tables.items():
            writer.stage(name, provenanced(name, table), night)

    held = sorted(state.nights) if dated else []
    # The nights not scored whose baseline holds a night scored (late, delivered again,
    # rescored): their regressions made again, as their standings are.
    to_score = [n for n in groups if n is not None]
    refresh = later_nights(held, to_score, context.options.regression.span)
    # The nights scored that the output holds (a rescore, a night delivered again): the
    # standings holding their results are compared with themselves as held (``rescored``).
    anew = frozenset(n for n in to_score if n in state.nights)
    standings = (
        None
        if dry_run
        else Standings(
            output,
            bootstrap,
            context.options.regression,
            planned=context.options.planned,
            anew=anew,
        )
    )
    to_stand = standings.nights_to_make(held, groups) if standings is not None else []

    def stand(night: str | None, tonight: NightInput) -> None:
        """The standing as of ``night`` made on the worker, beside the next night's files
        (``flows.standings_beside``); ``made`` takes it on this thread, in night order."""
        assert standings is not None
        beside.submit(night, tonight)

    def made(night: str | None, tables: dict[str, pl.DataFrame]) -> None:
        """A standing made: staged, its changes kept for the terminal."""
        moved.append(tables[STANDING_CHANGES].filter(noticed()))
        reruns.append(tables[TASK_CHANGES].filter(reran()))
        stood.add(night, tables)  # staged a few standings at a time

    def stand_as_held(night: str | None) -> None:
        """A night that failed unwritten keeps what ``OUT`` holds of it, if anything: its
        standing is made from that (an earlier night may have changed)."""
        if night in to_stand and night in held:
            assert night is not None
            fingerprints[night] = state.nights[night].input_fingerprint
            stand(night, night_from_output(output, night))
            restood.append(night)

    moved: list[pl.DataFrame] = []
    reruns: list[pl.DataFrame] = []
    stood = StandingWrites(writer, provenanced)
    beside = StandingsBeside(standings.of_night if standings else _no_standing, made)
    if standings is not None and to_stand:  # read while the first night is scored
        beside.ahead(partial(standings.previous, to_stand[0]))

    clear_diff = not dry_run and job.finish is None and RESCORE_DIFF in output.versions()
    recorded = False  # the run's rows are in the runs table: its outcome is told there
    try:
        for night in sorted({*groups, *refresh, *to_stand}, key=lambda n: n or ""):
            if night not in groups:  # not scored: its regressions or its standing again
                assert night is not None
                fingerprints[night] = state.nights[night].input_fingerprint
                if night in refresh:  # its baseline changed: its regressions again
                    table = watch.again(night, night_levels(state)[night])
                    flagged.append(table.filter(pl.col(ALERT_LEVEL).is_in(FLAGGED)))
                    stage({REGRESSIONS: table}, night)
                    refreshed.append(night)
                if night in to_stand:  # an earlier night changed: its standing again
                    stand(night, night_from_output(output, night))
                    restood.append(night)
                continue
            night_files = groups[night]
            t1 = time.perf_counter()
            known = job.digests if dry_run else _digests(night_files, job.digests)
            target = writer.target(night, fingerprint(known.items()))
            versions = job.kept.get(night or "", formulas)
            run["formula_versions"] = describe_set(versions)
            parts = mapper(night_files, versions, known, target)
            gone = [r for p in parts for r in p.reports if r.status == "gone"]
            if gone:  # the night fails, unwritten; the other nights go on
                writer.discard(settled(p.staged for p in parts))
                lost = "; ".join(f"{r.file}: {r.problems[0]}" for r in gone)
                rows.append(_failed_night(run, night, lost, failed))
                stand_as_held(night)
                progress.night_done(night)
                continue
            t2 = time.perf_counter()
            result = assemble(parts, versions, target)
            del parts
            fault_point("scored")
            ids = _ids_of(result)  # read back only where another night is to be checked
            if repeats := seen.repeats(night, ids):
                writer.discard(settled(result.staged or []))
                rows.append(_failed_night(run, night, repeat_reason(repeats), failed, True))
                stand_as_held(night)
                progress.night_done(night)
                continue
            if night != last_scored:  # the run's last night is checked against no later one
                seen.add(night, ids)
            # A night with no episode scored fails the run, but is written: its rejects
            # (every reason kept) and no scores, as its input now stands.
            if (why := unscored_night(result.counts)) is not None:
                failed[night or "(undated)"] = why
                log().error("night %s failed: %s", night or "(undated)", why)
            elif dark := models_without_scores(result.scores, result.rejects):
                unscored[night or "(undated)"] = dark
            t3 = time.perf_counter()
            progress.step(f"night {night or '(undated)'}: aggregating (bootstrap), regressions")
            # The night's standing starts from its own tables, beside its regressions and
            # staging, where the worker is free (else after them, as the worker finishes
            # the standing before: the run's thread stages meanwhile instead of waiting).
            early = night in to_stand and beside.idle()
            fingerprints[night] = fingerprint((r.file, r.digest) for r in result.files)
            tables = tables_of_night(
                night,
                result,
                bootstrap,
                watch,
                job.per_night,
                made=partial(_stand_from, stand, night, result) if early else None,
            )
            flagged.append(tables[REGRESSIONS].filter(pl.col(ALERT_LEVEL).is_in(FLAGGED)))
            gone_models = tables[REGRESSIONS].filter(pl.col(REASON) == ABSENT)[Col.MODEL]
            if gone_models.len():
                absent[night or "(undated)"] = sorted(gone_models.to_list())
            if clear_diff:  # a night scored again: its old rescore diff no longer holds
                tables[RESCORE_DIFF] = no_diff()
            t4 = time.perf_counter()
            progress.step(f"night {night or '(undated)'}: staging {len(tables)} tables")
            if result.staged is not None:  # written while the tables were made: waited for
                writer.stage_files(EPISODE_SCORES, night, settled(result.staged))
            stage(tables, night)
            t5 = time.perf_counter()
            if night in to_stand and not early:
                progress.step(f"night {night or '(undated)'}: the standing as of it")
                _stand_from(stand, night, result, tables)
            writer.night_done()
            progress.night_done(night)
            log().info(
                "night %s staged: %d episodes scored, %d rows read",
                night or "(undated)",
                result.counts["episodes_scored"],
                result.counts["rows_read"],
            )
            summary.add(result)
            steps = {"files_s": t2 - t1, "assemble_s": t3 - t2, "aggregate_s": t4 - t3}
            steps["stage_s"], steps["standing_s"] = t5 - t4, time.perf_counter() - t5
            for step, seconds in steps.items():
                summary.timings[step] = summary.timings.get(step, 0.0) + seconds
            rows.append(
                RunRow(
                    **run,
                    status=RunStatus.SUCCEEDED,
                    finished=started,  # set at the commit
                    night=night,
                    table_versions={},
                    counts=result.counts,
                    input_fingerprint=fingerprints[night],
                    files=[r.record() for r in result.files],
                )
            )
            del result, tables, ids
        beside.flush()
        summary.timings["standings_made_s"] = beside.seconds
        stood.flush()
        if standings is not None:  # the last standing's episodes, for the next run's
            for night, frame in standings.carried().items():
                stage({STANDING_EPISODES: frame}, night)
        extra = job.finish(fingerprints) if job.finish else {}
        summary.timings = {step: round(v, 3) for step, v in summary.timings.items()}
        flagged_rows = pl.concat([empty_table(REGRESSIONS), *flagged], how="diagonal_relaxed")
        moved_rows = pl.concat(
            [empty_table(STANDING_CHANGES).drop(PROVENANCE), *moved], how="diagonal_relaxed"
        )
        ended = verdict(
            nights_failed=failed,
            models_unscored=unscored,
            counts=summary.counts,
            alerts=alerts(flagged_rows) + alerts(moved_rows, AS_OF),
            strict=context.options.strict,
            fail_on_regression=context.options.fail_on_regression,
        )
        record = {
            **run_details(bootstrap),
            **job.details,
            **extra,
            "engine": context.engine,
            "command": context.command,
            "timings": dict(summary.timings),
            "nights_failed": failed,
            "models_unscored": unscored,
            "models_absent": absent,
            "regressions_refreshed": refreshed,
            "status": run_status(ended.code, scored=bool(rows)),
            "exit_code": int(ended.code),
            "error": ended.error,
        }
        progress.step("committing every table")
        if not any(r.status is RunStatus.SUCCEEDED for r in rows) and not (refreshed or restood):
            # every night failed unwritten: recorded, nothing committed, nothing pinned
            nothing = RunRow(
                **run, status=RunStatus.FAILED, finished=started, night=None, table_versions={}
            )
            if not dry_run:
                record_failure(output, _finished(rows or [nothing], record))
                recorded = True
        else:
            writer.commit(_finished(rows, record))
            recorded = True
            written = [r.night or "(undated)" for r in rows if r.status is RunStatus.SUCCEEDED]
            log().info("night(s) written: %s", ", ".join(written) or "-")
    except BaseException as error:
        beside.close()  # a standing being made: done before the failure is told
        stood.close()  # a batch of standings being staged: done before the failure is told
        if not dry_run and not recorded:
            record_failure(output, _stopped(rows, run, context, failed, error))
        if isinstance(error, KeyboardInterrupt) and not dry_run:
            raise Interrupted(context.run_id, recorded) from None
        raise
    after = (
        state_after(state, [r for r in rows if r.status is RunStatus.SUCCEEDED], bootstrap.level)
        if dry_run
        else output.state()
    )
    log().info("%s run finished in %.1f s", job.kind, time.perf_counter() - t0)
    scored = sorted(n for n in groups if n is not None and n not in failed)
    outcome = Outcome(job.kind, output, summary if rows else None, scored)
    outcome.nights_failed = failed
    outcome.models_unscored = unscored
    outcome.models_absent = absent
    outcome.regressions_refreshed = refreshed
    outcome.verdict = ended
    outcome.regressions = flagged_rows
    outcome.standing_changes = moved_rows
    outcome.reruns = pl.concat(
        [empty_table(TASK_CHANGES).drop(PROVENANCE), *reruns], how="diagonal_relaxed"
    )
    outcome.level = bootstrap.level
    outcome.levels = night_levels(after)
    outcome.dry_run = dry_run
    outcome.run_id = context.run_id
    outcome.formula_set = describe_set(pinned)
    outcome.nights_off_set = nights_off_set(replace(after, formula_set=outcome.formula_set))
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _failed_night(
    run: Mapping[str, Any], night: str | None, why: str, failed: dict[str, str], said: bool = False
) -> RunRow:
    """A night that failed unwritten (a file vanished while the run read it, it repeats
    another night's episodes): named in ``failed`` and the log, and its row of the runs
    table (status failed: it pins nothing, so the next run scores the night again).
    ``said``: ``why`` already says the night was not written."""
    why = why if said else f"not written: {why}"
    failed[night or "(undated)"] = why
    log().error("night %s failed, %s", night or "(undated)", why)
    return RunRow(
        **run,
        status=RunStatus.FAILED,
        finished=run["started"],  # set at the commit
        night=night,
        table_versions={},
    )


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run that held the output: its one line says what the runs table
    holds of it."""

    def __init__(self, run_id: str, recorded: bool) -> None:
        super().__init__(
            f"interrupted after run {run_id} was recorded"
            if recorded
            else f"interrupted: run {run_id} wrote no night (its runs row: failed, exit "
            f"{int(ExitCode.INTERRUPTED)})"
        )


def _stopped(
    rows: Sequence[RunRow],
    run: Mapping[str, Any],
    context: RunContext,
    failed: Mapping[str, str],
    error: BaseException,
) -> list[RunRow]:
    """What the runs table records of a run stopped by ``error`` (a bug, Ctrl-C, the store)
    before its commit point: one row of no night and no counts, since it wrote no night
    (the nights it staged carry no failure mark: a rescore's nights keep their scores), and
    the rows of the nights that had already failed on their own."""
    stopped = RunRow(
        **run, status=RunStatus.FAILED, finished=run["started"], night=None, table_versions={}
    )
    details = {
        "engine": context.engine,
        "command": context.command,
        "nights_failed": dict(failed),
        "status": "failed",
        "exit_code": int(exit_code_of(error)),
        "error": error_line(error),
    }
    own = [row for row in rows if row.status is RunStatus.FAILED]
    return _finished([stopped, *own], details)


def _ids_of(result: ScoreResult) -> Callable[[], pl.Series]:
    """What gives the night's scored episode ids as text, once (``flows.repeats``)."""
    return cache(lambda: resolved(result.episodes())[Col.EPISODE_ID])


def _digests(files: Sequence[DumpFile], known: Mapping[str, str]) -> dict[str, str]:
    """Every file's content digest (those known, else computed: the night's fingerprint goes
    into its staged rows before they are scored). A file gone since the listing has none:
    scoring it reports it gone, and its night fails. Two files at a time: hashing releases
    the GIL (0.2 s of a 100,000-episode night's critical path, one file at a time)."""

    def digest(f: DumpFile) -> str | None:
        try:
            return known.get(f.relative) or content_digest(f)
        except Exception as error:
            if not vanished(error):
                raise
            return None

    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        found = zip(files, pool.map(digest, files), strict=True)
        return {f.relative: d for f, d in found if d is not None}


def _finished(rows: Sequence[RunRow], details: Mapping[str, Any]) -> list[RunRow]:
    now = datetime.now(UTC)
    return [replace(row, finished=now, details=dict(details)) for row in rows]


def _stand_from(
    stand: Callable[[str | None, NightInput], None],
    night: str | None,
    result: ScoreResult,
    tables: dict[str, pl.DataFrame],
) -> None:
    """The standing as of ``night`` handed to ``stand``, from the night's result and its
    own tables."""
    stand(night, NightInput(night, tables[TASK_SCORES], tables, result.episodes()))


def _no_standing(night: str | None, tonight: NightInput) -> dict[str, pl.DataFrame]:
    raise AssertionError("a dry run makes no standing")


def no_diff() -> pl.DataFrame:

    return empty_table(RESCORE_DIFF)
