"""The nightly of a harness benchmark: the harness runs that arrived, imported into the dump
before the nightly scores the nights they touched (``cogscore nightly --runs RUNS --tasks
TASKS``), and what became of each run kept in OUT's ``imports`` table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from flows.importers.kaggle import import_runs
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.importers.kaggle_report import ImportReport
from flows.store.location import Location
from schemas.columns import SCORER_VERSION
from schemas.contract import DUMP_DATE, FILE, Col
from schemas.kaggle import Outcome
from schemas.tables import IMPORTS_TABLE
from schemas.version import COGSCORE_VERSION

IMPORTS = IMPORTS_TABLE.name


@dataclass(frozen=True)
class Harvest:
    """The harness runs a nightly imports first: ``runs`` (a folder or an object-store URL,
    searched at any depth), the task files they replay through, and the replay's limits."""

    runs: str
    tasks: Path
    timeout: float = DEFAULT_TIMEOUT
    task_memory: int = DEFAULT_TASK_MEMORY

    def into(self, dump_root: Path | str) -> ImportReport:
        """Import every run below ``runs`` into the dump ``dump_root`` (``import-kaggle``)."""
        return import_runs(
            Location.parse(self.runs),
            self.tasks,
            Location.parse(str(dump_root)),
            timeout=self.timeout,
            task_memory=self.task_memory,
        )

    @property
    def source(self) -> str:
        """RUNS, safe to record (no credentials)."""
        return Location.parse(self.runs).display


def import_rows(report: ImportReport, source: str, run_id: str, when: datetime) -> pl.DataFrame:
    """The ``imports`` rows of an import (provenance aside): every run it wrote rows of, and
    every run it did not import, each with every reason; a run imported before and found
    unchanged (nothing written) is not repeated.

    >>> from flows.importers.kaggle_report import RunReport
    >>> from datetime import UTC
    >>> from flows.importers.kaggle_report import RunReport
    >>> rejected = RunReport("a/x.run.json", Outcome.REJECTED, reasons=["no_task_file"])
    >>> written = RunReport("a/y.run.json", Outcome.IMPORTED, file="dump_date=2026-04-12/y.pq",
    ...     written=True)
    >>> there = RunReport("a/z.run.json", Outcome.IMPORTED, file="dump_date=2026-04-12/z.pq")
    >>> rows = import_rows(ImportReport([rejected, written, there], 0.0), "runs", "r1",
    ...     datetime(2026, 12, 5, tzinfo=UTC))
    >>> rows.select("run_file", "outcome", "dump_date").rows()
    [('a/x.run.json', 'rejected', None), ('a/y.run.json', 'imported', '2026-04-12')]
    """
    kept = [r for r in report.runs if r.outcome is Outcome.REJECTED or r.written]
    schema = IMPORTS_TABLE.dtypes
    rows = [
        {
            "run_id": run_id,
            "imported": when,
            "source": source,
            "run_file": r.run,
            "run_sha256": r.digest,
            "outcome": str(r.outcome),
            "reasons": list(r.reasons),
            "detail": r.detail,
            DUMP_DATE: _night_of(r.file),
            FILE: r.file,
            Col.MODEL: r.model,
            Col.TASK: r.task,
            SCORER_VERSION: COGSCORE_VERSION,
        }
        for r in kept
    ]
    return pl.DataFrame(rows, schema=schema).sort("run_file")


def _night_of(file: str | None) -> str | None:
    """The night of a dump file's path (``dump_date=N/…``), else None.

    >>> _night_of("dump_date=2026-04-12/x.parquet"), _night_of(None)
    ('2026-04-12', None)
    """
    if file is None or not file.startswith(f"{DUMP_DATE}="):
        return None
    return file.split("/", 1)[0].split("=", 1)[1]
