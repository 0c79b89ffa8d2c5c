"""The three ways users run cogscore, as plain functions: ``score`` (a whole dump),
``nightly`` (only the nights that are new or changed) and ``rescore`` (a range of history
with chosen formula versions, and what that moved).

Each takes a ``Mapper`` that runs the per-file work: in this process, on a Dask cluster, or
(``flows.prefect_flows``) as Prefect tasks. Files are the unit of distribution (episodes
never span files); nights are the unit of reduction: here, one night after another, each
night's parts are assembled, aggregated and written before the next night is scored.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from flows.comparisons import SLIM, NightWatch, RegressionOptions, slim
from flows.io import (
    DumpFile,
    InputError,
    content_digest,
    discover,
    local_path,
    marked_complete,
    one_layout,
)
from flows.io import dump_root as root_of
from flows.logs import log
from flows.logs import run_id as run_id_var
from flows.output import (
    CATEGORY_SCORES,
    EPISODE_SCORES,
    MODEL_SCORES,
    REGRESSIONS,
    RESCORE_DIFF,
    TABLES,
    Output,
    Writer,
    empty_table,
    fault_point,
    record_failure,
)
from flows.score import (
    MISMATCHES_LISTED,
    SCORER_VERSION,
    FilePart,
    FileReport,
    ScoreResult,
    StageTarget,
    assemble,
    night_tables,
    score_and_stage,
    vanished,
)
from flows.storage.runs_table import RunRow, RunStatus
from flows.warehouse import (
    fingerprint,
    run_details,
    with_provenance,
)
from schemas.comparisons import LEVEL_ALERT, LEVEL_WATCH
from schemas.contract import DUMP_DATE, Category, Col
from schemas.formulas import (
    VERSIONS,
    chosen,
    describe,
    ordered,
    overlay,
    resolve,
    split_key,
    version_of,
)
from schemas.tables import RULES
from schemas.validation import validate
from transforms.aggregate import Bootstrap
from transforms.compact import plain
from transforms.compare import rescore_significance
from transforms.diff import rescore_diff, with_significance

# (files, formulas, known digests) -> one part (scores, unscored rows, report) per file
# (files, formulas, digests, where to stage the episode scores or None) -> parts
Mapper = Callable[
    [Sequence[DumpFile], dict[str, str], Mapping[str, str], "StageTarget | None"],
    list[FilePart],
]
FILES_AT_ONCE = 2


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
    """Every file in this process, two at a time: polars runs much of a file's plan on one
    core, and releases the GIL while it does (1.6 s -> 1.4 s for ten files on 2 cores).
    Memory holds that many files' rows (and, with a ``target``, the slim columns of the
    files done: their rows are staged). Each file done is told to ``progress``."""
    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        futures = [
            pool.submit(score_and_stage, f, formulas, digests.get(f.relative), target)
            for f in files
        ]
        for future in as_completed(futures):
            (progress or NoProgress()).file_done(future.result().report)
        return [future.result() for future in futures]


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
            # A worker stages the rows it scored: only the slim columns come back.
            futures = [
                client.submit(
                    score_and_stage, f, formulas, digests.get(f.relative), target, pure=False
                )
                for f in files
            ]
            return list(client.gather(futures))

    return mapper


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
    nights_failed: dict[str, str] = field(default_factory=dict)  # night -> why
    # The output's formula set, and its nights scored with other versions (what differs).
    formula_set: dict[str, str] = field(default_factory=dict)
    nights_off_set: dict[str, str] = field(default_factory=dict)
    diff: pl.DataFrame | None = None
    # The regressions rows of the nights scored whose level is alert or watch.
    regressions: pl.DataFrame | None = None
    dry_run: bool = False
    seconds: float = 0.0
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def record(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 3),
            "nights_scored": self.nights_scored,
            "nights_unchanged": self.nights_unchanged,
            "nights_waiting": self.nights_waiting,
            "formula_set": self.formula_set,
            "nights_off_set": self.nights_off_set,
            "counts": dict(self.result.counts) if self.result else None,
            "formula_versions": (
                {str(c): v for c, v in self.result.formulas.items()} if self.result else None
            ),
        }


FLAGGED = (LEVEL_ALERT, LEVEL_WATCH)  # the regressions a run reports


def regression_options(
    baseline: str | None = None,
    baseline_nights: int | None = None,
    regression_margin: float | None = None,
    harness_error_tolerance: float | None = None,
) -> RegressionOptions:
    """The regression options from run arguments (the command line's, a flow's); those not
    given keep ``RegressionOptions``' defaults."""
    given = {
        "baseline": baseline,
        "nights": baseline_nights,
        "margin": regression_margin,
        "harness_error_tolerance": harness_error_tolerance,
    }
    return RegressionOptions(**{k: v for k, v in given.items() if v is not None})  # type: ignore[arg-type]


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


# -- formula versions: pinned per output ---------------------------------------------------


def formula_set(state: Mapping[str, Any]) -> dict[str, str] | None:
    """The formula versions an output scores with (None: a new output). A category the
    output never named takes this release's default; a task the output never named takes
    its category's pinned version (a task's own default does not enter a pinned set)."""
    recorded = state.get("formula_set")
    if not recorded:
        return None
    pinned = ordered(recorded)
    try:
        unknown = {k: v for k, v in pinned.items() if v not in VERSIONS[split_key(k)[0]]}
    except ValueError as error:
        raise InputError(f"the output's formula set: {error}") from None
    if unknown:
        raise InputError(
            f"the output was scored with {describe(unknown)}, which this cogscore "
            f"{SCORER_VERSION} does not have: run the version that wrote it, or a newer one"
        )
    defaults = resolve()
    return ordered({**{str(c): defaults[c] for c in Category}, **pinned})


def formulas_for(out: Output | Path | str, asked: Sequence[str]) -> dict[str, str]:
    """The versions ``score`` and ``nightly`` use: the output's set, whatever this release's
    defaults are (a new output: ``asked``, else the newest). Asking for another version
    there is refused: mixing versions across nights is what ``rescore`` does, on purpose."""
    output = Output.at(out)
    named = chosen(asked)
    pinned = formula_set(output.state())
    if pinned is None:
        return resolve(named)
    conflicts = {k: v for k, v in named.items() if version_of(pinned, *_category_task(k)) != v}
    if conflicts:
        now = {k: version_of(pinned, *_category_task(k)) for k in conflicts}
        raise InputError(
            f"{output} is scored with {describe(now)}; "
            f"--formula {describe(conflicts)} would mix versions across its nights. To change "
            f"them, rescore: cogscore rescore DUMP_ROOT --out {output} --formula "
            f"{' --formula '.join(f'{c}={v}' for c, v in conflicts.items())} "
            "(over every night it changes the output's set)"
        )
    return pinned


def _version_in(versions: Mapping[str, str], key: str) -> str | None:
    category, task = _category_task(key)
    return version_of(versions, category, task) if category in versions else None


def _category_task(key: str) -> tuple[str, str | None]:
    category, task = split_key(key)
    return str(category), task


def nights_off_set(state: Mapping[str, Any]) -> dict[str, str]:
    """The output's nights scored with versions other than its set: what differs, by night."""
    pinned = formula_set(state)
    if pinned is None:
        return {}
    off = {}
    for night, entry in state.get("nights", {}).items():
        versions = entry.get("formula_versions") or {}
        # A key either side names (a task's own entry, else its category's version).
        differ = {
            k: _version_in(versions, k) or "none"
            for k in {*versions, *pinned}
            if _version_in(versions, k) != _version_in(pinned, k)
        }
        if differ:
            off[night] = describe(differ)
    return dict(sorted(off.items()))


def _describe_set(versions: Mapping[str, str]) -> dict[str, str]:
    return ordered(versions)


class DryRun:
    """Stands for a writer in a dry run: checks each table as ``Writer`` does, writes
    nothing, records nothing."""

    def write(self, table: str, frame: pl.DataFrame, night: str | None) -> None:
        validate(TABLES[table][0], frame)

    def night_done(self) -> None:
        pass


# After the last night, with each night's input fingerprint: what the run records beside.
Finish = Callable[[dict[str | None, str]], dict[str, Any]]
# Per night: (night, its result, its tables) -> more tables of that night to write.
NightHook = Callable[[str | None, ScoreResult, dict[str, pl.DataFrame]], dict[str, pl.DataFrame]]


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
    """Who runs, for the run record: its id, its command and engine."""

    run_id: str = field(default_factory=new_run_id)
    command: str = ""
    engine: str = "local"
    progress: Progress = field(default_factory=NoProgress)
    regression: RegressionOptions = field(default_factory=RegressionOptions)


def _score_and_write(
    kind: str,
    dump_root: Path | str,
    output: Output,
    files: Sequence[DumpFile],
    formulas: dict[str, str],
    mapper: Mapper,
    digests: Mapping[str, str],
    finish: Finish | None = None,
    per_night: NightHook | None = None,
    new_set: dict[str, str] | None = None,
    dry_run: bool = False,
    context: RunContext | None = None,
    details: Mapping[str, Any] | None = None,
) -> Outcome:
    """Score ``files`` night after night into ``output``, then record the run.

    A night (``dump_date``) is the unit of reporting: its files are scored, its ids checked
    for copies, its tables made and written (one predicate overwrite per table), and its
    frames dropped before the next night, so memory holds one night however many a run
    scores (a rescore of years of history). The run's rows in the runs table, appended last,
    are the commit point. ``new_set``: the output's formula set after this run (default: as
    it was, or, for a new output, ``formulas``). ``dry_run``: tables made and checked,
    nothing written.
    """
    context = context or RunContext()
    started, t0 = datetime.now(UTC), time.perf_counter()
    bootstrap = Bootstrap()
    # Partition by dump_date only where every file has one (discover refuses a mix).
    dated = bool(files) and all(DUMP_DATE in f.partitions for f in files)
    state = output.state()
    _check_layout(output, state, dated)
    pinned = new_set or formula_set(state) or formulas
    groups: dict[str | None, list[DumpFile]] = {}
    for f in files:
        groups.setdefault(f.partitions[DUMP_DATE] if dated else None, []).append(f)
    summary = RunSummary(formulas)
    watch = NightWatch(output, context.regression, state.get("nights", {}) if dated else ())
    flagged: list[pl.DataFrame] = []
    rows: list[RunRow] = []
    fingerprints: dict[str | None, str] = {}
    failed: dict[str, str] = {}  # night -> why it could not be scored
    run: dict[str, Any] = {
        "run_id": context.run_id,
        "kind": kind,
        "started": started,
        "scorer_version": SCORER_VERSION,
        "input": str(dump_root),
        "partitioned": dated,
        "formula_versions": _describe_set(formulas),
        "formula_set": _describe_set(pinned),
    }
    writing = (
        contextlib.nullcontext(DryRun())
        if dry_run
        else output.writing(context.run_id, context.command)
    )
    progress = context.progress
    progress.begin(len(groups), len(files))
    run_id_var.set(context.run_id)
    log().info(
        "%s run started: %d night(s), %d file(s) from %s", kind, len(groups), len(files), dump_root
    )
    with writing as writer:
        clear_diff = not dry_run and finish is None and RESCORE_DIFF in output.versions()
        try:
            for night, night_files in sorted(groups.items(), key=lambda g: g[0] or ""):
                t1 = time.perf_counter()
                target, known = None, digests
                if isinstance(writer, Writer):  # workers write the episode rows they score
                    known = _digests(night_files, digests)
                    target = StageTarget(output.location, night, fingerprint(known.items()))
                parts = mapper(night_files, formulas, known, target)
                gone = [p.report for p in parts if p.report.status == "gone"]
                if gone:  # the night fails, unwritten; the other nights go on
                    if isinstance(writer, Writer):
                        writer.discard([p.staged for p in parts if p.staged is not None])
                    failed[night or "(undated)"] = "; ".join(
                        f"{r.file}: {r.problems[0]}" for r in gone
                    )
                    log().error("night %s failed: %s", night, failed[night or "(undated)"])
                    continue
                t2 = time.perf_counter()
                result = assemble(parts, formulas, target)
                del parts
                fault_point("scored")
                t3 = time.perf_counter()
                progress.step(f"night {night or '(undated)'}: aggregating (bootstrap)")
                tables = night_tables(result, bootstrap)
                progress.step(f"night {night or '(undated)'}: regressions")
                tables[REGRESSIONS] = watch.regressions(night, result.scores, result.rejects)
                flagged.append(tables[REGRESSIONS].filter(pl.col("level").is_in(FLAGGED)))
                if per_night is not None:
                    tables |= per_night(night, result, tables)
                t4 = time.perf_counter()
                progress.step(f"night {night or '(undated)'}: writing {len(tables)} tables")
                fingerprints[night] = fingerprint((r.file, r.sha256) for r in result.files)
                if result.staged is not None and isinstance(writer, Writer):
                    writer.commit_staged(EPISODE_SCORES, night, result.staged)
                for name, table in tables.items():
                    writer.write(name, with_provenance(table, SCORER_VERSION, fingerprints), night)
                if clear_diff:  # a night scored again: its old rescore diff no longer holds
                    writer.write(RESCORE_DIFF, _no_diff(), night)
                writer.night_done()
                progress.night_done(night)
                log().info(
                    "night %s written: %d episodes scored, %d rows read",
                    night or "(undated)",
                    result.counts["episodes_scored"],
                    result.counts["rows_read"],
                )
                summary.add(result)
                steps = {"files_s": t2 - t1, "assemble_s": t3 - t2, "aggregate_s": t4 - t3}
                steps["write_s"] = time.perf_counter() - t4
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
                        files=[asdict(r) for r in result.files],
                    )
                )
                del result, tables
            extra = finish(fingerprints) if finish else {}
        except BaseException:
            if isinstance(writer, Writer) and rows:
                record_failure(output, _finished(rows, {}))
            raise
        summary.timings = {step: round(v, 3) for step, v in summary.timings.items()}
        record = {
            **run_details(bootstrap),
            **(details or {}),
            **extra,
            "engine": context.engine,
            "command": context.command,
            "timings": dict(summary.timings),
            "nights_failed": failed,
        }
        if isinstance(writer, Writer) and rows:
            writer.commit(_finished(rows, record))
        elif isinstance(writer, Writer):  # every night failed: recorded, nothing pinned
            now = datetime.now(UTC)
            nothing = RunRow(
                **run, status=RunStatus.FAILED, finished=now, night=None, table_versions={}
            )
            record_failure(output, _finished([nothing], record))
    after = state_after(state, rows) if dry_run else output.state()
    log().info("%s run finished in %.1f s", kind, time.perf_counter() - t0)
    scored = sorted(n for n in groups if n is not None and n not in failed)
    outcome = Outcome(kind, output, summary if rows else None, scored)
    outcome.nights_failed = failed
    outcome.regressions = pl.concat([empty_table(REGRESSIONS), *flagged], how="diagonal_relaxed")
    outcome.dry_run = dry_run
    outcome.run_id = context.run_id
    outcome.formula_set = _describe_set(pinned)
    outcome.nights_off_set = nights_off_set({**after, "formula_set": outcome.formula_set})
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _digests(files: Sequence[DumpFile], known: Mapping[str, str]) -> dict[str, str]:
    """Every file's content digest (those known, else computed: the night's fingerprint goes
    into its staged rows before they are scored). A file gone since the listing has none:
    scoring it reports it gone, and its night fails."""
    digests = {}
    for f in files:
        try:
            digests[f.relative] = known.get(f.relative) or content_digest(f)
        except Exception as error:
            if not vanished(error):
                raise
    return digests


def _finished(rows: Sequence[RunRow], details: Mapping[str, Any]) -> list[RunRow]:
    from dataclasses import replace

    now = datetime.now(UTC)
    return [replace(row, finished=now, details=dict(details)) for row in rows]


def state_after(state: Mapping[str, Any], rows: Sequence[RunRow]) -> dict[str, Any]:
    """``state`` with the nights of ``rows`` as they would be (a dry run's view)."""
    nights = dict(state.get("nights", {}))
    for row in rows:
        if row.night is not None:
            nights[row.night] = {"formula_versions": dict(row.formula_versions)}
    return {**state, "nights": nights}


def _no_diff() -> pl.DataFrame:
    from flows.output import empty_table

    return empty_table(RESCORE_DIFF)


def _ready(
    dump_root: Path | str, files: Sequence[DumpFile], require_marker: bool
) -> tuple[list[DumpFile], list[str]]:
    """The files of nights a run may score, and the nights still waiting for the harness's
    ``_SUCCESS`` marker (only where markers are required)."""
    if not require_marker:
        return list(files), []
    nights = {f.partitions.get(DUMP_DATE) for f in files}
    waiting = {n for n in nights if not marked_complete(dump_root, n)}
    ready = [f for f in files if f.partitions.get(DUMP_DATE) not in waiting]
    return ready, sorted(n or "(undated)" for n in waiting)


def _nothing_to_do(
    kind: str,
    dump_root: Path | str,
    output: Output,
    context: RunContext,
    details: Mapping[str, Any] | None = None,
) -> Outcome:
    """A run with nothing to score: recorded all the same (status ``nothing_to_do``)."""
    state = output.state()
    now = datetime.now(UTC)
    row = RunRow(
        run_id=context.run_id,
        kind=kind,
        status=RunStatus.NOTHING_TO_DO,
        started=now,
        finished=now,
        night=None,
        table_versions={},
        scorer_version=SCORER_VERSION,
        input=str(dump_root),
        partitioned=state.get("partitioned_by_dump_date"),
        formula_set=state.get("formula_set", {}),
        details={**(details or {}), "engine": context.engine, "command": context.command},
    )
    with output.writing(context.run_id, context.command) as writer:
        writer.commit([row])
    outcome = Outcome(kind, output)
    outcome.run_id = context.run_id
    outcome.formula_set = dict(state.get("formula_set", {}))
    outcome.nights_off_set = nights_off_set(state)
    return outcome


def score(
    input_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    require_marker: bool = False,
    context: RunContext | None = None,
) -> Outcome:
    """Score every file of the dump; replace the nights it holds (or, undated, everything)
    with the output's formula set (``formulas``: for a new output, else they must agree)."""
    t0 = time.perf_counter()
    context = context or RunContext()
    input_root, output = root_of(input_root), Output.at(out)
    versions = formulas_for(output, formulas)
    files = one_layout(input_root, discover(input_root))
    files, waiting = _ready(input_root, files, require_marker)
    if files:
        outcome = _score_and_write(
            "score", input_root, output, files, versions, mapper, {}, context=context
        )
    else:
        outcome = _nothing_to_do("score", input_root, output, context, {"waiting": waiting})
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


@dataclass
class NightlyPlan:
    nights: dict[str, list[DumpFile]]
    digests: dict[str, str]  # relative path -> sha256
    new: list[str]
    changed: list[str]
    unchanged: list[str]
    waiting: list[str] = field(default_factory=list)  # no _SUCCESS marker yet

    @property
    def to_score(self) -> list[str]:
        return sorted([*self.new, *self.changed])


def plan_nightly(
    dump_root: Path | str,
    out: Output | Path | str,
    verify: bool = False,
    require_marker: bool = False,
) -> NightlyPlan:
    """Which ``dump_date`` partitions are new, changed (their content fingerprint differs
    from the one scored last), unchanged, or waiting for their ``_SUCCESS`` marker (where
    ``require_marker``). A file whose size and modification time are those recorded last
    keeps its recorded digest unless ``verify``; every other file is read and hashed."""
    dump_root, output = root_of(dump_root), Output.at(out)
    files = discover(dump_root)
    undated = [f.relative for f in files if DUMP_DATE not in f.partitions]
    if undated:
        raise InputError(
            f"nightly needs dump_date=YYYY-MM-DD folders; not in one: {', '.join(undated[:3])}"
        )
    files, waiting = _ready(dump_root, files, require_marker)
    earlier = output.state().get("nights", {})
    known = {entry["file"]: entry for night in earlier.values() for entry in night.get("files", [])}
    digests = {}
    nights: dict[str, list[DumpFile]] = {}
    for f in files:
        nights.setdefault(f.partitions[DUMP_DATE], []).append(f)
        seen = known.get(f.relative)
        if (
            f.is_local
            and not verify
            and seen
            and seen.get("bytes") == f.size
            and str(seen.get("mtime_ns")) == f.version
            and seen.get("sha256")
        ):
            digests[f.relative] = seen["sha256"]
        else:  # hashed (a local file), or the object's ETag as listed
            digests[f.relative] = content_digest(f)
    new, changed, unchanged = [], [], []
    for night, night_files in sorted(nights.items()):
        now = fingerprint((f.relative, digests[f.relative]) for f in night_files)
        if night not in earlier:
            new.append(night)
        elif earlier[night].get("input_fingerprint") != now:
            changed.append(night)
        else:
            unchanged.append(night)
    return NightlyPlan(nights, digests, new, changed, unchanged, waiting)


def nightly(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    verify: bool = False,
    require_marker: bool = False,
    context: RunContext | None = None,
) -> Outcome:
    """Score the nights that are new or changed since the last run into ``out`` with the
    output's formula set; leave the others untouched (not rewritten). With nothing to do,
    the run is recorded and nothing else is written."""
    t0 = time.perf_counter()
    context = context or RunContext()
    dump_root, output = root_of(dump_root), Output.at(out)
    versions = formulas_for(output, formulas)
    plan = plan_nightly(dump_root, output, verify, require_marker)
    planned = {
        "new": plan.new,
        "changed": plan.changed,
        "unchanged": plan.unchanged,
        "waiting": plan.waiting,
    }
    if plan.to_score:
        files = [f for night in plan.to_score for f in plan.nights[night]]
        outcome = _score_and_write(
            "nightly",
            dump_root,
            output,
            files,
            versions,
            mapper,
            plan.digests,
            context=context,
            details={"nightly": planned},
        )
    else:
        outcome = _nothing_to_do("nightly", dump_root, output, context, {"nightly": planned})
    outcome.nights_unchanged = plan.unchanged
    outcome.nights_waiting = plan.waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _in_range(night: str, since: date | None, until: date | None) -> bool:
    day = date.fromisoformat(night)
    return (since is None or day >= since) and (until is None or day <= until)


def rescore(
    dump_root: Path | str,
    out: Output | Path | str,
    formulas: Sequence[str],
    since: date | None = None,
    until: date | None = None,
    mapper: Mapper = local_mapper,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    require_marker: bool = False,
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
    state = output.state()
    pinned = formula_set(state)
    versions = overlay(pinned or resolve(), formulas)
    files = [
        f
        for f in discover(dump_root)
        if DUMP_DATE in f.partitions and _in_range(f.partitions[DUMP_DATE], since, until)
    ]
    files, waiting = _ready(dump_root, files, require_marker)
    nights = sorted({f.partitions[DUMP_DATE] for f in files})
    if not nights:
        raise InputError(f"no dump_date partition of {dump_root} lies in the range given")
    every_night = set(state.get("nights", {})) <= set(nights)
    new_set = versions if every_night or pinned is None else pinned
    old = _old_tables(output, nights)  # before this run replaces them
    diffs: list[pl.DataFrame] = []

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
            plain(rescore_significance(_old_episodes(output, night), slim(result.scores))),
        )
        diffs.append(diff)
        return {RESCORE_DIFF: diff}

    def finish(fingerprints: dict[str | None, str]) -> dict[str, Any]:
        if diff_out is not None:  # as the table holds it, provenance included
            target = local_path(diff_out, "--diff-out")
            target.parent.mkdir(parents=True, exist_ok=True)
            with_provenance(_diff_table(diffs), SCORER_VERSION, fingerprints).write_parquet(target)
        return {"rescore": {"since": str(since), "until": str(until), "nights": nights}}

    outcome = _score_and_write(
        "rescore",
        dump_root,
        output,
        files,
        versions,
        mapper,
        {},
        finish,
        per_night,
        new_set,
        dry_run,
        context,
    )
    outcome.diff = _diff_table(diffs)
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _diff_table(diffs: list[pl.DataFrame]) -> pl.DataFrame:
    if not diffs:
        return _no_diff().drop("scorer_version", "input_fingerprint")
    return pl.concat(diffs)


def _old_episodes(output: Output, night: str | None) -> pl.DataFrame:
    """The episode scores of ``night`` as the output holds them, before the run replaces
    them (the columns comparisons read)."""
    night_rows = output.scan(EPISODE_SCORES).filter(pl.col(DUMP_DATE) == night)
    return slim(night_rows.select(SLIM).collect())


def _old_tables(output: Output, nights: list[str]) -> dict[str, pl.DataFrame]:
    """The current model and category scores of ``nights`` (empty where never scored)."""
    return {
        name: output.read(name).filter(pl.col(DUMP_DATE).is_in(nights))
        for name in (MODEL_SCORES, CATEGORY_SCORES)
    }
