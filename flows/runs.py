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
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from flows.io import (
    DumpFile,
    InputError,
    discover,
    local_path,
    marked_complete,
    one_layout,
)
from flows.score import (
    SCORER_VERSION,
    FilePart,
    FileReport,
    ScoreResult,
    assemble,
    night_tables,
    score_file,
)
from flows.store import MANIFEST, current_snapshot, fault_point
from flows.warehouse import (
    CATEGORY_SCORES,
    MODEL_SCORES,
    RESCORE_DIFF,
    DryRunWriter,
    SnapshotWriter,
    file_digest,
    fingerprint,
    manifest_base,
    new_snapshot_of,
    with_provenance,
)
from schemas.contract import DUMP_DATE, Category, Col
from schemas.formulas import VERSIONS, chosen, describe, resolve
from schemas.tables import RULES
from transforms.aggregate import Bootstrap
from transforms.diff import rescore_diff

# (files, formulas, known digests) -> one part (scores, unscored rows, report) per file
Mapper = Callable[[Sequence[DumpFile], dict[Category, str], Mapping[str, str]], list[FilePart]]
RUN_LOG = "runs.jsonl"
FILES_AT_ONCE = 2


def local_mapper(
    files: Sequence[DumpFile], formulas: dict[Category, str], digests: Mapping[str, str]
) -> list[FilePart]:
    """Every file in this process, two at a time: polars runs much of a file's plan on one
    core, and releases the GIL while it does (1.6 s -> 1.4 s for ten files on 2 cores).
    Memory holds that many files' rows."""
    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        return list(pool.map(lambda f: score_file(f, formulas, digests.get(f.relative)), files))


def dask_mapper(address: str) -> Mapper:
    """Every file as a task of the Dask cluster at ``address`` (plain Dask: no Prefect)."""

    def mapper(
        files: Sequence[DumpFile], formulas: dict[Category, str], digests: Mapping[str, str]
    ) -> list[FilePart]:
        from distributed import Client

        with Client(address, timeout="30s") as client:
            futures = [
                client.submit(score_file, f, formulas, digests.get(f.relative), pure=False)
                for f in files
            ]
            return list(client.gather(futures))

    return mapper


@dataclass
class RunSummary:
    """What a run scored, kept small (the tables are on disk): counts, episodes scored and
    not per category, reasons, formula versions and timings, summed over its nights."""

    formulas: dict[Category, str]
    counts: Counter[str] = field(default_factory=Counter)
    scored: Counter[str] = field(default_factory=Counter)  # by category
    unscored: Counter[str] = field(default_factory=Counter)  # by category ("(unknown)")
    reasons: Counter[str] = field(default_factory=Counter)  # by rule
    timings: dict[str, float] = field(default_factory=dict)  # seconds by step

    def add(self, result: ScoreResult) -> None:
        self.counts.update(result.counts)
        self.scored.update(dict(result.scores.group_by(Col.CATEGORY).len().iter_rows()))
        unscored = result.rejects.group_by(pl.col(Col.CATEGORY).fill_null("(unknown)")).len()
        self.unscored.update(dict(unscored.iter_rows()))
        rules = result.rejects.select(pl.col(RULES).explode().drop_nulls()).to_series()
        self.reasons.update(dict(rules.value_counts().iter_rows()))


@dataclass
class Outcome:
    """What a run did, for the terminal, the run log and the Prefect artifact."""

    kind: str
    out: Path
    result: RunSummary | None = None
    nights_scored: list[str] = field(default_factory=list)
    nights_unchanged: list[str] = field(default_factory=list)
    nights_waiting: list[str] = field(default_factory=list)  # no _SUCCESS marker yet
    # The output's formula set, and its nights scored with other versions (what differs).
    formula_set: dict[str, str] = field(default_factory=dict)
    nights_off_set: dict[str, str] = field(default_factory=dict)
    diff: pl.DataFrame | None = None
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


def _log_run(out: Path, outcome: Outcome) -> None:
    """Append what the run did to ``OUT/runs.jsonl`` (one JSON object a line)."""
    if outcome.dry_run:
        return
    out.mkdir(parents=True, exist_ok=True)
    with open(out / RUN_LOG, "a") as log:
        log.write(json.dumps(outcome.record()) + "\n")


def previous_manifest(out: Path) -> dict[str, Any]:
    snapshot = current_snapshot(out)
    if snapshot is None or not (snapshot / MANIFEST).exists():
        return {}
    return dict(json.loads((snapshot / MANIFEST).read_text()))


# -- formula versions: pinned per output ---------------------------------------------------


def formula_set(manifest: Mapping[str, Any]) -> dict[Category, str] | None:
    """The formula versions an output was scored with (None: a new output). Outputs written
    before sets were recorded take their last run's versions."""
    recorded = manifest.get("formula_set") or manifest.get("formula_versions")
    if not recorded:
        return None
    pinned = {Category(c): v for c, v in recorded.items()}
    unknown = {c: v for c, v in pinned.items() if v not in VERSIONS[c]}
    if unknown:
        raise InputError(
            f"the output was scored with {describe(unknown)}, which this cogscore "
            f"{SCORER_VERSION} does not have: run the version that wrote it, or a newer one"
        )
    return {c: pinned.get(c, resolve()[c]) for c in Category}


def formulas_for(out: Path, asked: Sequence[str]) -> dict[Category, str]:
    """The versions ``score`` and ``nightly`` use: the output's set, whatever this release's
    defaults are (a new output: ``asked``, else the newest). Asking for another version
    there is refused: mixing versions across nights is what ``rescore`` does, on purpose."""
    named = chosen(asked)
    pinned = formula_set(previous_manifest(local_path(out, "output")))
    if pinned is None:
        return resolve(named)
    conflicts = {c: v for c, v in named.items() if pinned[c] != v}
    if conflicts:
        raise InputError(
            f"{out} is scored with {describe({c: pinned[c] for c in conflicts})}; "
            f"--formula {describe(conflicts)} would mix versions across its nights. To change "
            f"them, rescore: cogscore rescore DUMP_ROOT --out {out} --formula "
            f"{' --formula '.join(f'{c}={v}' for c, v in conflicts.items())} "
            "(over every night it changes the output's set)"
        )
    return pinned


def nights_off_set(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The output's nights scored with versions other than its set: what differs, by night."""
    pinned = formula_set(manifest)
    if pinned is None:
        return {}
    off = {}
    for night, entry in manifest.get("nights", {}).items():
        versions = entry.get("formula_versions")
        if versions is None:
            continue  # recorded before nights kept their versions
        differ = {c: v for c, v in versions.items() if pinned.get(Category(c)) != v}
        if differ:
            off[night] = describe(differ)
    return dict(sorted(off.items()))


def _describe_set(versions: Mapping[Category, str]) -> dict[str, str]:
    return {str(c): v for c, v in versions.items()}


# What a run writes after its nights (a rescore's diff): (writer, the new model and category
# tables of every night, every night's input fingerprint) -> manifest entries
Finish = Callable[
    [SnapshotWriter | DryRunWriter, dict[str, pl.DataFrame], dict[str | None, str]],
    dict[str, Any],
]


def _check_layout(out: Path, manifest: Mapping[str, Any], dated: bool) -> None:
    """A run replaces only the nights it scores: an undated dump cannot go into an output of
    nights (it would replace them all), nor nights into an undated output."""
    if not manifest or manifest.get("partitioned_by_dump_date", True) == dated:
        return
    if dated:
        raise InputError(
            f"{out} holds the scores of an undated dump (no dump_date); scoring nights into "
            "it would replace them: give another --out"
        )
    raise InputError(
        f"{out} holds nights ({', '.join(sorted(manifest.get('nights', {}))[:3])}, …); an "
        "undated dump would replace them all: put its files in a dump_date=YYYY-MM-DD "
        "folder, or give another --out"
    )


def _score_and_write(
    kind: str,
    dump_root: Path,
    out: Path,
    files: Sequence[DumpFile],
    formulas: dict[Category, str],
    mapper: Mapper,
    digests: Mapping[str, str],
    finish: Finish | None = None,
    new_set: dict[Category, str] | None = None,
    dry_run: bool = False,
) -> Outcome:
    """Score ``files`` night after night into a new snapshot of ``out``, then commit it.

    A night (``dump_date``) is the unit of reporting: its files are scored, its ids checked
    for copies, its tables made and written, and its frames dropped before the next night,
    so memory holds one night however many a run scores (a rescore of years of history).
    ``new_set``: the output's formula set after this run (default: as it was, or, for a new
    output, ``formulas``). ``dry_run``: tables made and checked, nothing written.
    """
    started, t0 = datetime.now(UTC), time.perf_counter()
    bootstrap = Bootstrap()
    # Partition by dump_date only where every file has one (discover refuses a mix).
    dated = bool(files) and all(DUMP_DATE in f.partitions for f in files)
    previous = previous_manifest(out)
    _check_layout(out, previous, dated)
    pinned = new_set or formula_set(previous) or formulas
    groups: dict[str | None, list[DumpFile]] = {}
    for f in files:
        groups.setdefault(f.partitions[DUMP_DATE] if dated else None, []).append(f)
    nights = {n for n in groups if n is not None} if dated else None
    summary = RunSummary(formulas)
    kept: dict[str, list[pl.DataFrame]] = {MODEL_SCORES: [], CATEGORY_SCORES: []}
    entries: dict[str, Any] = {}
    reports: list[FileReport] = []
    fingerprints: dict[str | None, str] = {}
    writing = (
        contextlib.nullcontext(DryRunWriter(out, nights))
        if dry_run
        else new_snapshot_of(out, nights)
    )
    with writing as writer:
        for night, night_files in sorted(groups.items(), key=lambda g: g[0] or ""):
            t1 = time.perf_counter()
            parts = mapper(night_files, formulas, digests)
            t2 = time.perf_counter()
            result = assemble(parts, formulas)
            del parts
            fault_point("scored")
            t3 = time.perf_counter()
            tables = night_tables(result, bootstrap)
            t4 = time.perf_counter()
            fingerprints[night] = fingerprint((r.file, r.sha256) for r in result.files)
            for name, table in tables.items():
                writer.write(name, with_provenance(table, SCORER_VERSION, fingerprints))
            for name, frames in kept.items():
                frames.append(tables[name])
            summary.add(result)
            steps = {"files_s": t2 - t1, "assemble_s": t3 - t2, "aggregate_s": t4 - t3}
            steps["write_s"] = time.perf_counter() - t4
            for step, seconds in steps.items():
                summary.timings[step] = summary.timings.get(step, 0.0) + seconds
            if night is not None:
                entries[night] = {
                    "input_fingerprint": fingerprints[night],
                    "formula_versions": _describe_set(formulas),
                    "counts": result.counts,
                    "files": [asdict(r) for r in result.files],
                }
            reports += result.files
            del result, tables
        new = {name: pl.concat(frames) for name, frames in kept.items()}
        extra = finish(writer, new, fingerprints) if finish else {}
        summary.timings = {step: round(v, 3) for step, v in summary.timings.items()}
        manifest = {
            "scorer_version": SCORER_VERSION,
            "input": str(dump_root),
            **manifest_base(started, bootstrap),
            "formula_set": _describe_set(pinned),
            "formula_versions": _describe_set(formulas),
            "timings": dict(summary.timings),
            "partitioned_by_dump_date": dated,
            "counts": dict(summary.counts),
            "nights": entries,
            "files": [asdict(r) for r in reports],
            **extra,
        }
        if not dated:
            manifest["input_fingerprint"] = fingerprints.get(None)
        committed = writer.commit(manifest)
    outcome = Outcome(kind, out, summary, sorted(nights or []), dry_run=dry_run)
    outcome.formula_set = _describe_set(pinned)
    outcome.nights_off_set = nights_off_set(committed)
    outcome.seconds = time.perf_counter() - t0
    return outcome


def _ready(
    dump_root: Path, files: Sequence[DumpFile], require_marker: bool
) -> tuple[list[DumpFile], list[str]]:
    """The files of nights a run may score, and the nights still waiting for the harness's
    ``_SUCCESS`` marker (only where markers are required)."""
    if not require_marker:
        return list(files), []
    nights = {f.partitions.get(DUMP_DATE) for f in files}
    waiting = {n for n in nights if not marked_complete(dump_root, n)}
    ready = [f for f in files if f.partitions.get(DUMP_DATE) not in waiting]
    return ready, sorted(n or "(undated)" for n in waiting)


def _nothing_to_do(kind: str, out: Path, manifest: Mapping[str, Any]) -> Outcome:
    outcome = Outcome(kind, out)
    outcome.formula_set = {str(c): v for c, v in (formula_set(manifest) or {}).items()}
    outcome.nights_off_set = nights_off_set(manifest)
    return outcome


def score(
    input_root: Path | str,
    out: Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    require_marker: bool = False,
) -> Outcome:
    """Score every file of the dump; replace the nights it holds (or, undated, everything)
    with the output's formula set (``formulas``: for a new output, else they must agree)."""
    t0 = time.perf_counter()
    input_root, out = local_path(input_root, "input"), local_path(out, "output")
    versions = formulas_for(out, formulas)
    files = one_layout(input_root, discover(input_root))
    files, waiting = _ready(input_root, files, require_marker)
    if files:
        outcome = _score_and_write("score", input_root, out, files, versions, mapper, {})
    else:
        outcome = _nothing_to_do("score", out, previous_manifest(out))
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    _log_run(out, outcome)
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
    dump_root: Path | str, out: Path | str, verify: bool = False, require_marker: bool = False
) -> NightlyPlan:
    """Which ``dump_date`` partitions are new, changed (their content fingerprint differs
    from the one scored last), unchanged, or waiting for their ``_SUCCESS`` marker (where
    ``require_marker``). A file whose size and modification time are those recorded last
    keeps its recorded digest unless ``verify``; every other file is read and hashed."""
    dump_root, out = local_path(dump_root, "input"), local_path(out, "output")
    files = discover(dump_root)
    undated = [f.relative for f in files if DUMP_DATE not in f.partitions]
    if undated:
        raise InputError(
            f"nightly needs dump_date=YYYY-MM-DD folders; not in one: {', '.join(undated[:3])}"
        )
    files, waiting = _ready(dump_root, files, require_marker)
    earlier = previous_manifest(out).get("nights", {})
    known = {entry["file"]: entry for night in earlier.values() for entry in night.get("files", [])}
    digests = {}
    nights: dict[str, list[DumpFile]] = {}
    for f in files:
        nights.setdefault(f.partitions[DUMP_DATE], []).append(f)
        stat = f.path.stat()
        seen = known.get(f.relative)
        if (
            not verify
            and seen
            and seen.get("bytes") == stat.st_size
            and seen.get("mtime_ns") == stat.st_mtime_ns
            and seen.get("sha256")
        ):
            digests[f.relative] = seen["sha256"]
        else:
            digests[f.relative] = file_digest(f.path)
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
    out: Path | str,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    verify: bool = False,
    require_marker: bool = False,
) -> Outcome:
    """Score the nights that are new or changed since the last run into ``out`` with the
    output's formula set; leave the others untouched (not rewritten). With nothing to do,
    write nothing but the run log."""
    t0 = time.perf_counter()
    dump_root, out = local_path(dump_root, "input"), local_path(out, "output")
    versions = formulas_for(out, formulas)
    plan = plan_nightly(dump_root, out, verify, require_marker)
    if plan.to_score:
        files = [f for night in plan.to_score for f in plan.nights[night]]
        planned = {"new": plan.new, "changed": plan.changed, "unchanged": plan.unchanged}
        outcome = _score_and_write(
            "nightly",
            dump_root,
            out,
            files,
            versions,
            mapper,
            plan.digests,
            lambda _writer, _tables, _fingerprints: {"nightly": planned},
        )
    else:
        outcome = _nothing_to_do("nightly", out, previous_manifest(out))
    outcome.nights_unchanged = plan.unchanged
    outcome.nights_waiting = plan.waiting
    outcome.seconds = time.perf_counter() - t0
    _log_run(out, outcome)
    return outcome


def _in_range(night: str, since: date | None, until: date | None) -> bool:
    day = date.fromisoformat(night)
    return (since is None or day >= since) and (until is None or day <= until)


def rescore(
    dump_root: Path | str,
    out: Path | str,
    formulas: Sequence[str],
    since: date | None = None,
    until: date | None = None,
    mapper: Mapper = local_mapper,
    dry_run: bool = False,
    diff_out: Path | str | None = None,
    require_marker: bool = False,
) -> Outcome:
    """Rescore the nights in [since, until] with ``formulas`` (the output's set for the
    categories not named), replacing them atomically, and write ``rescore_diff``: old and
    new scores and ranks of each model and category. Over every night the output holds, the
    versions become its formula set; over part of history the set stays, and those nights
    are reported as scored with other versions. ``dry_run``: compute and show the diff
    (and write it to ``diff_out``), change nothing in ``out``."""
    t0 = time.perf_counter()
    dump_root, out = local_path(dump_root, "input"), local_path(out, "output")
    previous = previous_manifest(out)
    pinned = formula_set(previous)
    versions = {**(pinned or resolve()), **chosen(formulas)}
    files = [
        f
        for f in discover(dump_root)
        if DUMP_DATE in f.partitions and _in_range(f.partitions[DUMP_DATE], since, until)
    ]
    files, waiting = _ready(dump_root, files, require_marker)
    nights = sorted({f.partitions[DUMP_DATE] for f in files})
    if not nights:
        raise InputError(f"no dump_date partition of {dump_root} lies in the range given")
    every_night = set(previous.get("nights", {})) <= set(nights)
    new_set = versions if every_night or pinned is None else pinned
    old = _old_tables(out, nights)  # before this run's snapshot replaces them
    diffs: list[pl.DataFrame] = []

    def finish(
        writer: SnapshotWriter | DryRunWriter,
        new: dict[str, pl.DataFrame],
        fingerprints: dict[str | None, str],
    ) -> dict[str, Any]:
        diff = rescore_diff(
            old[MODEL_SCORES],
            old[CATEGORY_SCORES],
            new[MODEL_SCORES].lazy(),
            new[CATEGORY_SCORES].lazy(),
        ).collect()
        table = with_provenance(
            diff.drop("scorer_version", "input_fingerprint", strict=False),
            SCORER_VERSION,
            fingerprints,
        )
        writer.write(RESCORE_DIFF, table)
        if diff_out is not None:
            target = local_path(diff_out, "--diff-out")
            target.parent.mkdir(parents=True, exist_ok=True)
            table.write_parquet(target)
        diffs.append(diff)
        return {"rescore": {"since": str(since), "until": str(until), "nights": nights}}

    outcome = _score_and_write(
        "rescore", dump_root, out, files, versions, mapper, {}, finish, new_set, dry_run
    )
    outcome.diff = diffs[0]
    outcome.nights_waiting = waiting
    outcome.seconds = time.perf_counter() - t0
    _log_run(out, outcome)
    return outcome


def _old_tables(out: Path, nights: list[str]) -> dict[str, pl.LazyFrame]:
    """The current model and category scores of ``nights`` (empty where never scored)."""
    snapshot = current_snapshot(out)
    tables = {}
    for name in (MODEL_SCORES, CATEGORY_SCORES):
        if snapshot is not None and any((snapshot / name).rglob("*.parquet")):
            frame = pl.scan_parquet(snapshot / name, hive_partitioning=True).with_columns(
                pl.col(DUMP_DATE).cast(pl.String)
            )
            tables[name] = frame.filter(pl.col(DUMP_DATE).is_in(nights))
        else:
            tables[name] = pl.LazyFrame(
                schema={
                    DUMP_DATE: pl.String,
                    "model": pl.String,
                    "category": pl.String,
                    "score": pl.Float64,
                    "rank": pl.Int64,
                    "formula_version": pl.String,
                    "formula_versions": pl.String,
                }
            )
    return tables
