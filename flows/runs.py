"""The three ways users run cogscore, as plain functions: ``score`` (a whole dump),
``nightly`` (only the nights that are new or changed) and ``rescore`` (a range of history
with chosen formula versions, and what that moved).

Each takes a ``Mapper`` that runs the per-file work: in this process, on a Dask cluster, or
(``flows.prefect_flows``) as Prefect tasks. Files are the unit of distribution (episodes
never span files); the reduction to aggregates happens once, here.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from flows.io import DumpFile, InputError, discover
from flows.score import (
    FilePart,
    ScoreResult,
    assemble,
    build_tables,
    score_file,
)
from flows.store import MANIFEST, current_snapshot, fault_point
from flows.warehouse import (
    CATEGORY_SCORES,
    MODEL_SCORES,
    RESCORE_DIFF,
    file_digest,
    fingerprint,
    with_provenance,
    write_run,
)
from schemas.contract import DUMP_DATE, Category
from schemas.formulas import resolve
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
class Outcome:
    """What a run did, for the terminal, the run log and the Prefect artifact."""

    kind: str
    out: Path
    result: ScoreResult | None = None
    nights_scored: list[str] = field(default_factory=list)
    nights_unchanged: list[str] = field(default_factory=list)
    diff: pl.DataFrame | None = None
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
            "counts": self.result.counts if self.result else None,
            "formula_versions": (
                {str(c): v for c, v in self.result.formulas.items()} if self.result else None
            ),
        }


def _log_run(out: Path, outcome: Outcome) -> None:
    """Append what the run did to ``OUT/runs.jsonl`` (one JSON object a line)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / RUN_LOG, "a") as log:
        log.write(json.dumps(outcome.record()) + "\n")


def _score(
    input_root: Path,
    nights: Collection[str | None] | None,
    formulas: dict[Category, str],
    mapper: Mapper,
    digests: Mapping[str, str],
) -> ScoreResult:
    t0 = time.perf_counter()
    files = discover(input_root)
    if nights is not None:
        files = [f for f in files if f.partitions.get(DUMP_DATE) in nights]
    parts = mapper(files, formulas, digests)
    t1 = time.perf_counter()
    result = assemble(parts, formulas)
    t2 = time.perf_counter()
    result.timings |= {
        "files_s": round(t1 - t0, 3),
        "assemble_s": round(t2 - t1, 3),
        "score_s": round(t2 - t0, 3),
    }
    fault_point("scored")
    return result


def score(
    input_root: Path, out: Path, formulas: Sequence[str] = (), mapper: Mapper = local_mapper
) -> Outcome:
    """Score every file of the dump; replace the nights it holds (or, undated, everything)."""
    started, t0 = datetime.now(UTC), time.perf_counter()
    result = _score(input_root, None, resolve(formulas), mapper, {})
    built = build_tables(result, input_root, started)
    write_run(out, built.tables, built.manifest, built.nights)
    outcome = Outcome("score", out, result, sorted(built.nights or []))
    outcome.seconds = time.perf_counter() - t0
    _log_run(out, outcome)
    return outcome


def previous_manifest(out: Path) -> dict[str, Any]:
    snapshot = current_snapshot(out)
    if snapshot is None or not (snapshot / MANIFEST).exists():
        return {}
    return dict(json.loads((snapshot / MANIFEST).read_text()))


@dataclass
class NightlyPlan:
    nights: dict[str, list[DumpFile]]
    digests: dict[str, str]  # relative path -> sha256
    new: list[str]
    changed: list[str]
    unchanged: list[str]

    @property
    def to_score(self) -> list[str]:
        return sorted([*self.new, *self.changed])


def plan_nightly(dump_root: Path, out: Path, verify: bool = False) -> NightlyPlan:
    """Which ``dump_date`` partitions are new, changed (their content fingerprint differs
    from the one scored last) or unchanged. A file whose size and modification time are
    those recorded last keeps its recorded digest unless ``verify``; every other file is
    read and hashed."""
    files = discover(dump_root)
    undated = [f.relative for f in files if DUMP_DATE not in f.partitions]
    if undated:
        raise InputError(
            f"nightly needs dump_date=YYYY-MM-DD folders; not in one: {', '.join(undated[:3])}"
        )
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
    return NightlyPlan(nights, digests, new, changed, unchanged)


def nightly(
    dump_root: Path,
    out: Path,
    formulas: Sequence[str] = (),
    mapper: Mapper = local_mapper,
    verify: bool = False,
) -> Outcome:
    """Score the nights that are new or changed since the last run into ``out``; leave the
    others untouched (not rewritten). With nothing to do, write nothing but the run log."""
    started, t0 = datetime.now(UTC), time.perf_counter()
    plan = plan_nightly(dump_root, out, verify)
    outcome = Outcome("nightly", out, nights_scored=plan.to_score, nights_unchanged=plan.unchanged)
    if plan.to_score:
        outcome.result = _score(dump_root, plan.to_score, resolve(formulas), mapper, plan.digests)
        built = build_tables(outcome.result, dump_root, started)
        built.manifest["nightly"] = {
            "new": plan.new,
            "changed": plan.changed,
            "unchanged": plan.unchanged,
        }
        write_run(out, built.tables, built.manifest, built.nights)
    outcome.seconds = time.perf_counter() - t0
    _log_run(out, outcome)
    return outcome


def _in_range(night: str, since: date | None, until: date | None) -> bool:
    day = date.fromisoformat(night)
    return (since is None or day >= since) and (until is None or day <= until)


def rescore(
    dump_root: Path,
    out: Path,
    formulas: Sequence[str],
    since: date | None = None,
    until: date | None = None,
    mapper: Mapper = local_mapper,
) -> Outcome:
    """Rescore the nights in [since, until] with ``formulas``, replacing them atomically, and
    write ``rescore_diff``: old and new scores and ranks of each model and category."""
    started, t0 = datetime.now(UTC), time.perf_counter()
    files = discover(dump_root)
    nights = sorted(
        {
            f.partitions[DUMP_DATE]
            for f in files
            if DUMP_DATE in f.partitions and _in_range(f.partitions[DUMP_DATE], since, until)
        }
    )
    if not nights:
        raise InputError(f"no dump_date partition of {dump_root} lies in the range given")
    result = _score(dump_root, nights, resolve(formulas), mapper, {})
    built = build_tables(result, dump_root, started)
    old = _old_tables(out, nights)
    diff = rescore_diff(
        old[MODEL_SCORES],
        old[CATEGORY_SCORES],
        built.tables[MODEL_SCORES].lazy(),
        built.tables[CATEGORY_SCORES].lazy(),
    ).collect()
    fingerprints: dict[str | None, str] = {
        n: built.manifest["nights"][n]["input_fingerprint"] for n in nights
    }
    built.tables[RESCORE_DIFF] = with_provenance(
        diff.drop("scorer_version", "input_fingerprint", strict=False),
        built.manifest["scorer_version"],
        fingerprints,
    )
    built.manifest["rescore"] = {"since": str(since), "until": str(until), "nights": nights}
    write_run(out, built.tables, built.manifest, built.nights)
    outcome = Outcome("rescore", out, result, nights, diff=diff)
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
