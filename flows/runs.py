"""The three ways users run cogscore, as plain functions: ``score`` (a whole dump),
``nightly`` (only the nights that are new or changed) and ``rescore`` (a range of history
with chosen formula versions, and what that moved).

Each takes a ``Mapper`` that runs the per-file work: in this process, on a Dask cluster, or
(``flows.prefect_flows``) as Prefect tasks. Files are the unit of distribution (episodes
never span files); nights are the unit of reduction: here, one night after another, each
night's parts are assembled, aggregated and written before the next night is scored.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from flows.comparisons import NightWatch
from flows.importers.kaggle_nightly import IMPORTS, Harvest, import_rows
from flows.importers.kaggle_report import ImportReport
from flows.logs import log
from flows.logs import run_id as run_id_var
from flows.night import NightHook, tables_of_night
from flows.options import RunOptions
from flows.plan import (
    NightlyPlan,
    check_places,
    describe_set,
    fingerprint,
    formula_set,
    formulas_for,
    nights_off_set,
    plan_nightly,
    ready,
    rescored_versions,
)
from flows.records import Verdict, error_line, exit_code_of, run_status, verdict
from flows.repeats import SeenIds, repeat_reason
from flows.score import (
    MISMATCHES_LISTED,
    FilePart,
    FileReport,
    ScoreResult,
    Stager,
    StageTarget,
    assemble,
    batches,
    score_and_stage,
    score_batch,
    settled,
    vanished,
)
from flows.standings import STANDING_CHANGES, NightInput, Standings, night_from_output
from flows.store.dumps import (
    DumpFile,
    InputError,
    content_digest,
    discover,
    local_path,
    one_layout,
)
from flows.store.dumps import dump_root as root_of
from flows.store.errors import StorageError
from flows.store.output import (
    CATEGORY_SCORES,
    EPISODE_SCORES,
    MODEL_SCORES,
    REGRESSIONS,
    RESCORE_DIFF,
    TASK_SCORES,
    DryRun,
    Output,
    TableWriter,
    empty_table,
    fault_point,
    night_levels,
    record_failure,
)
from flows.store.runs_table import RunRow
from flows.warehouse import (
    run_details,
    with_provenance,
)
from schemas.comparisons import (
    ALERT_LEVEL,
    CHANGE_KIND,
    DEFAULT_LEVEL,
    LEVEL_ALERT,
    LEVEL_WATCH,
    OVERALL,
    REASON,
    SCOPE,
    ChangeKind,
)
from schemas.contract import DUMP_DATE, Col
from schemas.exits import ExitCode
from schemas.tables import AS_OF, COMPARED_COLUMNS, PROVENANCE, RULES, TABLES, RunStatus
from schemas.version import COGSCORE_VERSION
from transforms.compact import plain
from transforms.compare import check_design, rescore_significance
from transforms.compare.night import ABSENT, compared, models_without_scores, nothing_scored
from transforms.diff import reported_alone, rescore_diff, with_significance
from transforms.registry import overlay, resolve

# (files, formulas, known digests) -> one part (scores, unscored rows, report) per file
# (files, formulas, digests, where to stage the episode scores or None) -> parts
Mapper = Callable[
    [Sequence[DumpFile], dict[str, str], Mapping[str, str], "StageTarget | None"],
    list[FilePart],
]
FILES_AT_ONCE = 2
# Batches submitted and not yet taken by the driver: one more than the threads, so that a
# thread never waits for the driver to hand it the next.
IN_FLIGHT = FILES_AT_ONCE + 1


class Progress(Protocol):
    """Where a run says how far it is (the terminal's progress bar; nothing by default)."""

    def begin(self, nights: int, files: int) -> None: ...
    def file_done(self, report: FileReport) -> None: ...
    def step(self, what: str) -> None: ...
    def night_done(self, night: str | None) -> None: ...


class NoProgress:
    """Progress told to nobody (not a terminal, ``--quiet``, the Prefect engine's logs)."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def begin(self, nights: int, files: int) -> None:
        pass

    def file_done(self, report: FileReport) -> None:
        pass

    def step(self, what: str) -> None:
        pass

    def night_done(self, night: str | None) -> None:
        pass


def local_mapper(
    files: Sequence[DumpFile],
    formulas: dict[str, str],
    digests: Mapping[str, str],
    target: StageTarget | None = None,
    progress: Progress | None = None,
) -> list[FilePart]:
    """Every file in this process, two at a time (small files in batches: ``batches``):
    polars runs much of a file's plan on one core, and releases the GIL while it does (1.6 s
    -> 1.4 s for ten files on 2 cores). With a ``target``, this thread stages the files
    done in chunks (``Stager``) while the others score, each chunk's rows written on the
    stager's thread (the last chunk's while the night's tables are made: its parts' files
    are ``settled`` before they are committed). Memory holds that many files' rows, two
    chunks, and the held columns of the chunks staged. Each file done is told to
    ``progress``."""
    stager = Stager(target) if target is not None else None
    parts: list[FilePart] = []
    queued = iter(batches(files))
    try:
        with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
            # A batch is submitted as one is taken: a file scored waits (its rows in memory)
            # only while the one before is staged. Submitted all at once, the threads scored
            # ahead of the stager and every file's rows of a night could pile up in the done
            # futures (memory grew with the night: 700-1,300 bytes an episode).
            running = {
                pool.submit(score_batch, batch, formulas, digests)
                for batch in islice(queued, IN_FLIGHT)
            }
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for batch in islice(queued, len(done)):
                    running.add(pool.submit(score_batch, batch, formulas, digests))
                while done:  # each future let go of as its part is taken
                    part = done.pop().result()
                    for report in part.reports:
                        (progress or NoProgress()).file_done(report)
                    parts.extend([part] if stager is None else stager.add(part))
                    del part
        return parts if stager is None else [*parts, *stager.flush()]
    finally:
        if stager is not None:
            stager.close()


def local_mapper_with(progress: Progress) -> Mapper:
    """The local mapper, telling ``progress`` of each file as it is done."""

    def mapper(
        files: Sequence[DumpFile],
        formulas: dict[str, str],
        digests: Mapping[str, str],
        target: StageTarget | None = None,
    ) -> list[FilePart]:
        return local_mapper(files, formulas, digests, target, progress)

    return mapper


def dask_mapper(address: str) -> Mapper:
    """Every file as a task of the Dask cluster at ``address`` (plain Dask: no Prefect)."""

    def mapper(
        files: Sequence[DumpFile],
        formulas: dict[str, str],
        digests: Mapping[str, str],
        target: StageTarget | None = None,
    ) -> list[FilePart]:
        from distributed import Client

        with Client(address, timeout="30s") as client:
            # A worker stages the rows it scored: only the held columns come back.
            futures = [
                client.submit(
                    score_and_stage, batch, formulas, _of(batch, digests), target, pure=False
                )
                for batch in batches(files)
            ]
            return list(client.gather(futures))

    return mapper


def _of(batch: Sequence[DumpFile], digests: Mapping[str, str]) -> dict[str, str]:
    """The digests of ``batch``'s files (what a task is sent, not the night's)."""
    return {f.relative: digests[f.relative] for f in batch if f.relative in digests}


@dataclass
class RunSummary:
    """What a run scored, kept small (the tables are on disk): counts, episodes scored and
    not per category, reasons, formula versions and timings, summed over its nights."""

    formulas: dict[str, str]
    counts: Counter[str] = field(default_factory=Counter)
    scored: Counter[str] = field(default_factory=Counter)  # by category
    unscored: Counter[str] = field(default_factory=Counter)  # by category ("(unknown)")
    reasons: Counter[str] = field(default_factory=Counter)  # by rule
    timings: dict[str, float] = field(default_factory=dict)  # seconds by step
    rejected_files: list[tuple[str, list[str]]] = field(default_factory=list)
    # The first episodes (MISMATCHES_LISTED) whose score differs from the reported one.
    mismatched: list[dict[str, Any]] = field(default_factory=list)

    def add(self, result: ScoreResult) -> None:
        self.counts.update(result.counts)
        room = MISMATCHES_LISTED - len(self.mismatched)
        self.mismatched += result.mismatches.listed[:room]
        self.rejected_files += [
            (f.file, f.problems) for f in result.files if f.status == "rejected"
        ]
        # Lazily: polars' eager group_by of a night's episodes by one compact key took
        # 280 MB at 4 M episodes.
        scored = result.scores.lazy().group_by(Col.CATEGORY).len().collect()
        self.scored.update(dict(scored.iter_rows()))
        unscored = result.rejects.group_by(pl.col(Col.CATEGORY).fill_null("(unknown)")).len()
        self.unscored.update(dict(unscored.iter_rows()))
        rules = result.rejects.select(pl.col(RULES).explode().drop_nulls()).to_series()
        self.reasons.update(dict(rules.value_counts().iter_rows()))


@dataclass
class Outcome:
    """What a run did, for the terminal, the run log and the Prefect artifact."""

    kind: str
    out: Output
    result: RunSummary | None = None
    nights_scored: list[str] = field(default_factory=list)
    nights_unchanged: list[str] = field(default_factory=list)
    nights_waiting: list[str] = field(default_factory=list)  # no _SUCCESS marker yet
    nights_input_gone: list[str] = field(default_factory=list)  # in OUT, input deleted
    nights_failed: dict[str, str] = field(default_factory=dict)  # night -> why
    # night -> model -> why: models with episodes on a night but none scored
    models_unscored: dict[str, dict[str, str]] = field(default_factory=dict)
    # night -> the models of its baseline night that ran nothing on it
    models_absent: dict[str, list[str]] = field(default_factory=dict)
    verdict: Verdict = field(default_factory=Verdict)
    # Nights not scored whose regressions were made again (their baseline was rescored).
    regressions_refreshed: list[str] = field(default_factory=list)
    # The output's formula set, and its nights scored with other versions (what differs).
    formula_set: dict[str, str] = field(default_factory=dict)
    nights_off_set: dict[str, str] = field(default_factory=dict)
    diff: pl.DataFrame | None = None
    not_rescored: int = 0  # a rescore's reported scores alone (no formula input): kept as they are
    # The regressions rows of the nights scored whose level is alert or watch.
    regressions: pl.DataFrame | None = None
    # The standing_changes rows the run made that it reports (``_noticed``).
    standing_changes: pl.DataFrame | None = None
    # The harness runs a nightly imported first (``--runs``), each run's outcome.
    imports: ImportReport | None = None
    level: float = DEFAULT_LEVEL  # the level of the intervals this run made (``--level``)
    # Each night's interval level in the output after the run (the run that scored it).
    levels: dict[str | None, float] = field(default_factory=dict)
    dry_run: bool = False
    seconds: float = 0.0
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


FLAGGED = (LEVEL_ALERT, LEVEL_WATCH)  # the regressions a run reports
# Standing changes a run reports beside its flagged ones: a model new, gone, or whose tasks
# covered changed (its score averages other tasks now).
NOTICED_KINDS = (ChangeKind.NEW_MODEL, ChangeKind.VANISHED, ChangeKind.COVERAGE)


def _noticed() -> pl.Expr:
    """The standing changes a run reports: every flagged one, and each model's overall row
    where it is new, gone or covers other tasks."""
    kinds = (pl.col(SCOPE) == OVERALL) & pl.col(CHANGE_KIND).is_in([k.value for k in NOTICED_KINDS])
    return pl.col(ALERT_LEVEL).is_in(FLAGGED) | kinds


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


# After the last night, with each night's input fingerprint: what the run records beside.
Finish = Callable[[dict[str | None, str]], dict[str, Any]]


def _check_layout(output: Output, state: Mapping[str, Any], dated: bool) -> None:
    """A run replaces only the nights it scores: an undated dump cannot go into an output of
    nights (it would replace them all), nor nights into an undated output."""
    if not state or state.get("partitioned_by_dump_date", True) == dated:
        return
    if dated:
        raise InputError(
            f"{output} holds the scores of an undated dump (no dump_date); scoring nights into "
            "it would replace them: give another --out"
        )
    raise InputError(
        f"{output} holds nights ({', '.join(sorted(state.get('nights', {}))[:3])}, …); an "
        "undated dump would replace them all: put its files in a dump_date=YYYY-MM-DD "
        "folder, or give another --out"
    )


@dataclass
class RunContext:
    """Who runs and how, decided once (the command line, the environment or a flow's
    parameters) and passed down whole: its id, command and engine, its progress display,
    the regression options, and what ends it failed."""

    run_id: str = field(default_factory=new_run_id)
    command: str = ""
    engine: str = "local"
    progress: Progress = field(default_factory=NoProgress)
    options: RunOptions = field(default_factory=RunOptions)


def _nothing_scored(counts: Mapping[str, int]) -> str | None:
    """Why a night with no episode scored fails (None where some episode was scored).

    >>> _nothing_scored({"episodes_scored": 0, "episodes_harness_error": 3,
    ...     "episodes_rejected": 1, "rows_read": 40})
    'no episode scored: 4 episode(s), 3 harness error(s), 1 rejected'
    """
    if counts.get("episodes_scored", 0):
        return None
    errors, rejected = counts.get("episodes_harness_error", 0), counts.get("episodes_rejected", 0)
    if not (errors or rejected):
        return f"no episode scored: no episode in {counts.get('rows_read', 0)} row(s)"
    return nothing_scored(errors, rejected)


# What a run does once it holds the output: (writer) -> outcome.
Work = Callable[[TableWriter], "Outcome"]
_PLAN_ATTEMPTS = 3


def _held(
    output: Output,
    context: RunContext,
    prepare: Callable[[dict[str, Any]], Work],
    dry_run: bool = False,
) -> Outcome:
    """Read the output's state once, ``prepare`` the run from it (what can refuse the run
    does so here, before the output is touched: a refused first run creates nothing), then
    take the lease and do the work. Should another run have committed between the read and
    the lease (the runs table moved), plan again from the new state. A dry run takes no
    lease and writes nothing."""
    for _ in range(_PLAN_ATTEMPTS):
        seen = output.runs_version()
        work = prepare(output.state())
        if dry_run:
            return work(DryRun())
        with output.writing(context.run_id, context.command) as writer:
            if output.runs_version() == seen:
                return work(writer)
        log().info("another run committed to %s meanwhile: planning again", output)
    raise StorageError(f"{output} changed under this run {_PLAN_ATTEMPTS} times: run again")


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
    # Nights not scored whose regressions are made again (their baseline was rescored).
    refresh: Sequence[str] = ()


def _score_nights(
    job: Job,
    writer: TableWriter,
    state: Mapping[str, Any],
    mapper: Mapper,
    context: RunContext,
) -> Outcome:
    """Score ``job``'s files night after night, stage each night's tables as it is done,
    then commit every table once and record the run.

    A night (``dump_date``) is the unit of reporting: its files are scored, its ids checked
    for copies (within it and against the other nights), its tables made
    (``flows.night.tables_of_night``) and staged, and its frames dropped before the next
    night, so memory holds one night however many a run scores (a rescore of years of
    history). Once every night is staged, each table gets one commit that replaces all the
    run's nights of it (a reader of the tables' latest versions sees the whole run or none
    of it, table by table), and the run's rows in the runs table, appended last, are the
    commit point for cogscore's own readers. With a ``DryRun`` writer, the tables are made
    and checked and nothing is written.
    """
    started, t0 = datetime.now(UTC), time.perf_counter()
    output, files, formulas = job.output, job.files, job.formulas
    bootstrap = context.options.bootstrap
    dry_run = isinstance(writer, DryRun)
    # Partition by dump_date only where every file has one (discover refuses a mix).
    dated = bool(files) and all(DUMP_DATE in f.partitions for f in files)
    _check_layout(output, state, dated)
    pinned = job.new_set or formula_set(state) or formulas
    groups: dict[str | None, list[DumpFile]] = {}
    for f in files:
        groups.setdefault(f.partitions[DUMP_DATE] if dated else None, []).append(f)
    summary = RunSummary(formulas)
    watch = NightWatch(
        output,
        context.options.regression,
        state.get("nights", {}) if dated else (),
        design=check_design(bootstrap.design),
        level=bootstrap.level,
    )
    seen = SeenIds(output, frozenset(state.get("nights", {})))
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

    def stage(tables: dict[str, pl.DataFrame], night: str | None) -> None:
        for name, table in tables.items():
            column = TABLES[name].night
            writer.stage(
                name, with_provenance(table, COGSCORE_VERSION, fingerprints, column), night
            )

    held = sorted(state.get("nights", {})) if dated else []
    standings = None if dry_run else Standings(output, bootstrap, context.options.regression)
    to_stand = standings.nights_to_make(held, groups) if standings is not None else []

    def stand(night: str | None, tonight: NightInput) -> None:
        """The standing as of ``night`` staged, its changes kept for the terminal."""
        assert standings is not None
        tables = standings.of_night(night, tonight)
        moved.append(tables[STANDING_CHANGES].filter(_noticed()))
        stage(tables, night)

    def stand_as_held(night: str | None) -> None:
        """A night that failed unwritten keeps what ``OUT`` holds of it, if anything: its
        standing is made from that (an earlier night may have changed)."""
        if night in to_stand and night in held:
            assert night is not None
            fingerprints[night] = state["nights"][night]["input_fingerprint"]
            stand(night, night_from_output(output, night))
            restood.append(night)

    moved: list[pl.DataFrame] = []

    clear_diff = not dry_run and job.finish is None and RESCORE_DIFF in output.versions()
    recorded = False  # the run's rows are in the runs table: its outcome is told there
    try:
        for night in sorted({*groups, *job.refresh, *to_stand}, key=lambda n: n or ""):
            if night not in groups:  # not scored: its regressions or its standing again
                assert night is not None
                fingerprints[night] = state["nights"][night]["input_fingerprint"]
                if night in job.refresh:  # its baseline changed: its regressions again
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
            if repeats := seen.repeats(night, result.scores[Col.EPISODE_ID]):
                writer.discard(settled(result.staged or []))
                rows.append(_failed_night(run, night, repeat_reason(repeats), failed, True))
                stand_as_held(night)
                progress.night_done(night)
                continue
            seen.add(night, result.scores[Col.EPISODE_ID])
            # A night with no episode scored fails the run, but is written: its rejects
            # (every reason kept) and no scores, as its input now stands.
            if (why := _nothing_scored(result.counts)) is not None:
                failed[night or "(undated)"] = why
                log().error("night %s failed: %s", night or "(undated)", why)
            elif dark := models_without_scores(result.scores, result.rejects):
                unscored[night or "(undated)"] = dark
            t3 = time.perf_counter()
            progress.step(f"night {night or '(undated)'}: aggregating (bootstrap), regressions")
            tables = tables_of_night(night, result, bootstrap, watch, job.per_night)
            flagged.append(tables[REGRESSIONS].filter(pl.col(ALERT_LEVEL).is_in(FLAGGED)))
            gone_models = tables[REGRESSIONS].filter(pl.col(REASON) == ABSENT)[Col.MODEL]
            if gone_models.len():
                absent[night or "(undated)"] = sorted(gone_models.to_list())
            if clear_diff:  # a night scored again: its old rescore diff no longer holds
                tables[RESCORE_DIFF] = _no_diff()
            t4 = time.perf_counter()
            progress.step(f"night {night or '(undated)'}: staging {len(tables)} tables")
            fingerprints[night] = fingerprint((r.file, r.sha256) for r in result.files)
            if result.staged is not None:  # written while the tables were made: waited for
                writer.stage_files(EPISODE_SCORES, night, settled(result.staged))
            stage(tables, night)
            t5 = time.perf_counter()
            if night in to_stand:
                progress.step(f"night {night or '(undated)'}: the standing as of it")
                stand(night, NightInput(night, tables[TASK_SCORES], tables, result.scores))
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
            del result, tables
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
            alerts=_alerts(flagged_rows) + _alerts(moved_rows, AS_OF),
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
    outcome.level = bootstrap.level
    outcome.levels = night_levels(after)
    outcome.dry_run = dry_run
    outcome.run_id = context.run_id
    outcome.formula_set = describe_set(pinned)
    outcome.nights_off_set = nights_off_set({**after, "formula_set": outcome.formula_set})
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


def _alerts(regressions: pl.DataFrame, night: str = DUMP_DATE) -> list[str]:
    """Each regression alert (of ``regressions`` or ``standing_changes``: ``night`` its
    night column), named: model (scope, night)."""
    fired = regressions.filter(pl.col(ALERT_LEVEL) == LEVEL_ALERT)
    where = " standing as of " if night == AS_OF else " "
    return [f"{m} ({s},{where}{n})" for n, m, s in fired.select(night, Col.MODEL, SCOPE).rows()]


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
    from dataclasses import replace

    now = datetime.now(UTC)
    return [replace(row, finished=now, details=dict(details)) for row in rows]


def state_after(state: Mapping[str, Any], rows: Sequence[RunRow], level: float) -> dict[str, Any]:
    """``state`` with the nights of ``rows`` as they would be (a dry run's view; ``level``:
    the run's)."""
    nights = dict(state.get("nights", {}))
    for row in rows:
        if row.night is not None and row.status is RunStatus.SUCCEEDED:
            nights[row.night] = {"formula_versions": dict(row.formula_versions), "level": level}
    return {**state, "nights": nights}


def _no_diff() -> pl.DataFrame:

    return empty_table(RESCORE_DIFF)


def _nothing_to_do(
    kind: str,
    dump_root: Path | str,
    output: Output,
    writer: TableWriter,
    state: Mapping[str, Any],
    *,
    context: RunContext,
    details: Mapping[str, Any] | None = None,
) -> Outcome:
    """A run with nothing to score: recorded all the same (status ``nothing_to_do``)."""
    now = datetime.now(UTC)
    row = RunRow(
        run_id=context.run_id,
        kind=kind,
        status=RunStatus.NOTHING_TO_DO,
        started=now,
        finished=now,
        night=None,
        table_versions={},
        scorer_version=COGSCORE_VERSION,
        input=str(dump_root),
        partitioned=state.get("partitioned_by_dump_date"),
        formula_set=state.get("formula_set", {}),
        details={
            **(details or {}),
            "engine": context.engine,
            "command": context.command,
            "status": "nothing_to_do",
            "exit_code": 0,
        },
    )
    writer.commit([row])
    outcome = Outcome(kind, output)
    outcome.run_id = context.run_id
    outcome.level = context.options.level
    outcome.levels = night_levels(state)
    outcome.formula_set = dict(state.get("formula_set", {}))
    outcome.nights_off_set = nights_off_set(state)
    return outcome


def score(
    input_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    context: RunContext | None = None,
) -> Outcome:
    """Score every file of the dump; replace the nights it holds (or, undated, everything)
    with the output's formula set (``formulas``: for a new output, else they must agree)."""
    t0 = time.perf_counter()
    context = context or RunContext()
    input_root, output = root_of(input_root), Output.at(out)
    listed = one_layout(input_root, discover(input_root))
    files, waiting = ready(input_root, listed, context.options.require_marker)

    def prepare(state: dict[str, Any]) -> Work:
        check_places(input_root, output, state, context.options.input_root_changed)
        versions = formulas_for(output, formulas, state)
        if not files:
            details = {"waiting": waiting}
            return lambda w: _nothing_to_do(
                "score", input_root, output, w, state, context=context, details=details
            )
        job = Job("score", input_root, output, files, versions)
        return lambda writer: _score_nights(job, writer, state, mapper, context)

    outcome = _held(output, context, prepare)
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


def nightly(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    *,
    verify: bool = False,
    context: RunContext | None = None,
    harvest: Harvest | None = None,
) -> Outcome:
    """Score the nights that are new or changed since the last run into ``out`` with the
    output's formula set; leave the others untouched (not rewritten). With nothing to do,
    the run is recorded and nothing else is written. ``harvest``: first import the harness
    runs that arrived into the dump (``import-kaggle``), what became of each run appended to
    OUT's ``imports`` table with the run's commit."""
    t0 = time.perf_counter()
    context = context or RunContext()
    dump_root, output = root_of(dump_root), Output.at(out)
    imported = None
    if harvest is not None:
        context.progress.step(f"importing the harness runs of {harvest.source}")
        imported = harvest.into(dump_root)
        log().info("%d run(s) imported, %d not", imported.imported, imported.rejected)
    listed = discover(dump_root) if imported is None or imported.imported else []
    plans: list[NightlyPlan] = []

    def prepare(state: dict[str, Any]) -> Work:
        check_places(dump_root, output, state, context.options.input_root_changed)
        versions = formulas_for(output, formulas, state)
        marker = context.options.require_marker
        plan = plan_nightly(dump_root, output, verify, marker, state, listed)
        plans.append(plan)
        details = {
            "nightly": {
                "new": plan.new,
                "changed": plan.changed,
                "unchanged": plan.unchanged,
                "waiting": plan.waiting,
            }
        }
        if imported is None:
            return scoring(plan, versions, details, state)
        assert harvest is not None
        # The import's counts with the run; each run's outcome in the imports table.
        details["imports"] = imported.as_json() | {"details": None}
        rows = import_rows(imported, harvest.source, context.run_id, datetime.now(UTC))
        score_them = scoring(plan, versions, details, state)

        def work(writer: TableWriter) -> Outcome:
            writer.append(IMPORTS, rows)
            return score_them(writer)

        return work

    def scoring(
        plan: NightlyPlan, versions: dict[str, str], details: dict[str, Any], state: Any
    ) -> Work:
        if not plan.to_score:
            return lambda w: _nothing_to_do(
                "nightly", dump_root, output, w, state, context=context, details=details
            )
        job = Job(
            "nightly",
            dump_root,
            output,
            [f for night in plan.to_score for f in plan.nights[night]],
            versions,
            plan.digests,
            details=details,
            kept=rescored_versions(state, plan.changed, versions),
        )
        return lambda writer: _score_nights(job, writer, state, mapper, context)

    outcome = _held(output, context, prepare)
    outcome.imports = imported
    plan = plans[-1]
    outcome.nights_unchanged = plan.unchanged
    outcome.nights_waiting = plan.waiting
    outcome.nights_input_gone = plan.gone
    outcome.seconds = time.perf_counter() - t0
    return outcome


def later_nights(held: Sequence[str], rescored: Sequence[str], span: int) -> list[str]:
    """The nights of ``held`` not rescored whose baseline (the ``span`` nights before each)
    holds a rescored night: their regressions must be made again.

    >>> later_nights(["01", "02", "03", "04", "05"], ["02"], 1)
    ['03']
    >>> later_nights(["01", "02", "03", "04", "05"], ["02", "03"], 2)
    ['04', '05']
    """
    every = sorted({*held, *rescored})
    chosen = set(rescored)
    return [
        night
        for i, night in enumerate(every)
        if night not in chosen and chosen.intersection(every[max(0, i - span) : i])
    ]


def _in_range(night: str, since: date | None, until: date | None) -> bool:
    day = date.fromisoformat(night)
    return (since is None or day >= since) and (until is None or day <= until)


def rescore(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str],
    *,
    since: date | None = None,
    until: date | None = None,
    mapper: Mapper = local_mapper,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    context: RunContext | None = None,
) -> Outcome:
    """Rescore the nights in [since, until] with ``formulas`` (the output's set for the
    categories not named), replacing them, and write ``rescore_diff``: old and new scores
    and ranks of each model and category. Over every night the output holds, the versions
    become its formula set; over part of history the set stays, and those nights are
    reported as scored with other versions. ``dry_run``: compute and show the diff (and
    write it to ``diff_out``), change nothing in ``out``."""
    t0 = time.perf_counter()
    context = context or RunContext()
    dump_root, output = root_of(dump_root), Output.at(out)
    listed = [
        f
        for f in discover(dump_root)
        if DUMP_DATE in f.partitions and _in_range(f.partitions[DUMP_DATE], since, until)
    ]
    files, waiting = ready(dump_root, listed, context.options.require_marker)
    nights = sorted({f.partitions[DUMP_DATE] for f in files})
    if not nights:
        raise InputError(f"no dump_date partition of {dump_root} lies in the range given")

    def prepare(state: dict[str, Any]) -> Work:
        check_places(dump_root, output, state, context.options.input_root_changed)
        return lambda writer: _rescore(
            dump_root, output, writer, state, formulas=formulas, files=files, nights=nights,
            mapper=mapper, diff_out=diff_out, context=context, since=since, until=until,
        )  # fmt: skip

    outcome = _held(output, context, prepare, dry_run)
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _rescore(
    dump_root: Path | str,
    output: Output,
    writer: TableWriter,
    state: Mapping[str, Any],
    *,
    formulas: Sequence[str],
    files: Sequence[DumpFile],
    nights: list[str],
    mapper: Mapper,
    diff_out: Path | str | None,
    context: RunContext,
    since: date | None,
    until: date | None,
) -> Outcome:
    pinned = formula_set(state)
    versions = overlay(pinned or resolve(), formulas)
    bootstrap = context.options.bootstrap
    every_night = set(state.get("nights", {})) <= set(nights)
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
                    compared(result.scores),
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
        refresh=later_nights(
            sorted(state.get("nights", {})), nights, context.options.regression.span
        ),
    )
    outcome = _score_nights(job, writer, state, mapper, context)
    outcome.diff = _diff_table(diffs)
    outcome.not_rescored = sum(not_rescored)
    return outcome


def _diff_table(diffs: list[pl.DataFrame]) -> pl.DataFrame:
    if not diffs:
        return _no_diff().drop(*PROVENANCE)
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
