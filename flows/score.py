"""Scoring a dump: read each file, judge and score its episodes, write the tables.

The work is in plain functions (``score_file``, ``score_dump``) so that tests and other
flows call them directly; ``score_flow`` runs the same steps as a Prefect flow.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from flows.io import DumpFile, discover, row_count, staged_output, write_json, write_partitioned
from schemas.contract import DUMP_DATE, FILE, Category, Col
from schemas.formulas import resolve
from schemas.rules import Rule
from schemas.tables import (
    EPISODE_SCORES,
    REJECTS,
    ROWS,
    RULES,
    STATUS,
    EpisodeScores,
    EpisodeStatus,
    Rejects,
)
from transforms.ingest import normalise, schema_problems
from transforms.pipeline import duplicate_episodes, score_rows

SCORER_VERSION = "0.1.0"


@dataclass
class FileReport:
    file: str
    rows: int
    bytes: int
    status: str = "scored"  # or "rejected"
    problems: list[str] = field(default_factory=list)


@dataclass
class ScoreResult:
    scores: pl.DataFrame
    rejects: pl.DataFrame
    files: list[FileReport]
    formulas: dict[Category, str]

    @property
    def counts(self) -> dict[str, int]:
        rejected = self.rejects.filter(pl.col(Col.EPISODE_ID).is_not_null())
        harness = rejected.filter(pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR)
        rows_read = sum(f.rows for f in self.files)
        rows_scored = int(self.scores["n_rows"].sum())
        return {
            "files_read": len(self.files),
            "files_rejected": sum(f.status == "rejected" for f in self.files),
            "rows_read": rows_read,
            "rows_scored": rows_scored,
            "rows_rejected": int(self.rejects[ROWS].sum()),
            "episodes_scored": self.scores.height,
            "episodes_rejected": rejected.height - harness.height,
            "episodes_harness_error": harness.height,
        }


def _file_reject(dump_file: DumpFile, rows: int, problems: list[tuple[Rule, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                Col.EPISODE_ID: None,
                FILE: dump_file.relative,
                DUMP_DATE: dump_file.partitions.get(DUMP_DATE),
                STATUS: EpisodeStatus.REJECTED.value,
                RULES: sorted({r.value for r, _ in problems}),
                "reasons": [m for _, m in problems],
                ROWS: rows,
            }
        ],
        schema_overrides={c: t for c, t in REJECTS.items()},
    ).select(
        pl.col(c).cast(t) if c in REJECTS else pl.lit(None, t).alias(c) for c, t in REJECTS.items()
    )


def read_file(dump_file: DumpFile) -> tuple[pl.LazyFrame | None, FileReport, pl.DataFrame | None]:
    """The canonical rows of one file, or the reject row that says why it cannot be read."""
    report = FileReport(dump_file.relative, rows=0, bytes=dump_file.size)
    try:
        report.rows = row_count(dump_file.path)
        schema = dict(pl.read_parquet_schema(dump_file.path))
    except Exception as error:  # a file that is not (valid) Parquet
        problems = [(Rule.FILE_UNREADABLE, f"not a readable Parquet file: {error}")]
    else:
        problems = schema_problems(schema)
        if not problems:
            rows = normalise(
                pl.scan_parquet(dump_file.path),
                schema,
                file=dump_file.relative,
                partitions=dump_file.partitions,
            )
            return rows, report, None
    report.status = "rejected"
    report.problems = [m for _, m in problems]
    return None, report, _file_reject(dump_file, report.rows, problems)


def score_dump(
    input_root: Path,
    formulas: Mapping[str, str] | Sequence[str] = (),
    *,
    on_file: Callable[[int, int, str], None] | None = None,
) -> ScoreResult:
    """Judge and score every episode of a dump (no output written)."""
    chosen = resolve(formulas)
    files = discover(input_root)
    readable: list[tuple[DumpFile, pl.LazyFrame]] = []
    reports, rejects = [], []
    for dump_file in files:
        rows, report, reject = read_file(dump_file)
        reports.append(report)
        if rows is None:
            rejects.append(reject)
        else:
            readable.append((dump_file, rows))
    # Episodes never span files, but an id may be reused in another file: find those first.
    ids = (
        pl.concat([rows.select(FILE, Col.EPISODE_ID) for _, rows in readable]) if readable else None
    )
    duplicates = duplicate_episodes(ids).collect() if ids is not None else None
    scores = []
    for done, (dump_file, rows) in enumerate(readable, 1):
        dup = (
            duplicates.lazy().filter(pl.col(FILE) == dump_file.relative)
            if duplicates is not None
            else None
        )
        file_scores, file_rejects = score_rows(rows, chosen, dup)
        got_scores, got_rejects = pl.collect_all([file_scores, file_rejects])
        scores.append(got_scores)
        rejects.append(got_rejects)
        if on_file:
            on_file(done, len(readable), dump_file.relative)
    return ScoreResult(
        scores=_sorted(
            pl.concat(scores) if scores else pl.DataFrame(schema=EPISODE_SCORES),
            [FILE, Col.EPISODE_ID],
        ),
        rejects=_sorted(
            pl.concat(rejects) if rejects else pl.DataFrame(schema=REJECTS), [FILE, Col.EPISODE_ID]
        ),
        files=reports,
        formulas=chosen,
    )


def _sorted(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    # polars does not keep row order through group_by/joins: sort for identical output.
    return frame.sort(by, nulls_last=True)


def write_outputs(
    result: ScoreResult, input_root: Path, out: Path, started: datetime
) -> dict[str, Any]:
    """Validate and write ``episode_scores/``, ``rejects/`` and ``manifest.json`` atomically."""
    EpisodeScores.validate(result.scores)
    Rejects.validate(result.rejects)
    counts = result.counts
    if counts["rows_read"] != counts["rows_scored"] + counts["rows_rejected"]:
        raise RuntimeError(f"row accounting does not balance: {counts}")
    manifest = {
        "scorer_version": SCORER_VERSION,
        "input": str(input_root),
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "formula_versions": {str(c): v for c, v in result.formulas.items()},
        "counts": counts,
        "files": [asdict(f) for f in result.files],
    }
    with staged_output(out) as staging:
        write_partitioned(result.scores, staging / "episode_scores", [DUMP_DATE, Col.CATEGORY])
        write_partitioned(result.rejects, staging / "rejects", [DUMP_DATE])
        write_json(staging / "manifest.json", manifest)
    return manifest


def summary_lines(result: ScoreResult, out: Path) -> list[str]:
    """The short terminal summary: per category scored and rejected, top reasons, where."""
    scored = Counter(result.scores[Col.CATEGORY].to_list())
    unscored = Counter(result.rejects[Col.CATEGORY].fill_null("(unknown)").to_list())
    lines = [f"{'category':<24}{'scored':>8}{'not scored':>12}"]
    for category in sorted(set(scored) | set(unscored)):
        lines.append(f"{category:<24}{scored[category]:>8}{unscored[category]:>12}")
    reasons = Counter(rule for rules in result.rejects[RULES].to_list() for rule in rules)
    if reasons:
        lines.append("top reasons: " + ", ".join(f"{r} ({n})" for r, n in reasons.most_common(5)))
    counts = result.counts
    lines.append(
        f"{counts['episodes_scored']} episodes scored, {counts['episodes_rejected']} rejected, "
        f"{counts['episodes_harness_error']} harness errors; "
        f"{counts['rows_read']} rows read = {counts['rows_scored']} scored + {counts['rows_rejected']} rejected"
    )
    lines.append(f"tables in {out}/episode_scores, {out}/rejects; manifest {out}/manifest.json")
    return lines


def run(
    input_root: Path,
    out: Path,
    formulas: Sequence[str] = (),
    on_file: Callable[[int, int, str], None] | None = None,
) -> ScoreResult:
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    result = score_dump(input_root, formulas, on_file=on_file)
    write_outputs(result, input_root, out, started)
    result.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
    return result
