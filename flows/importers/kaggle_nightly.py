"""The nightly of a harness benchmark: the harness runs that arrived, imported into the dump
before the nightly scores the nights they touched (``cogscore nightly --runs RUNS --tasks
TASKS``), and what became of each run kept in OUT's ``imports`` table.

The import writes the dump's files first and the ledger's rows come with the run's commit,
so a run killed between the two left files the ledger does not name. The ledger is made to
agree with the dump on the next run, from what the dump holds: every run the import finds
imported already whose file and content the ledger does not record is recorded then
(``import_rows``, ``recorded_imports``)."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

import polars as pl

from flows.importers.kaggle import import_runs
from flows.importers.kaggle_limits import DEFAULT_TASK_MEMORY, DEFAULT_TIMEOUT
from flows.importers.kaggle_report import ImportReport, RunReport
from flows.store.location import Location
from flows.store.output import Output
from schemas.columns import SCORER_VERSION
from schemas.contract import DUMP_DATE, FILE, Col
from schemas.kaggle import Outcome
from schemas.tables import IMPORTS_TABLE
from schemas.version import COGSCORE_VERSION

IMPORTS = IMPORTS_TABLE.name


@dataclass(frozen=True)
class Harvest:
    """The harness runs a nightly imports first: ``runs`` (a folder or an object-store URL,
    searched at any depth), the task files they replay through, the replay's limits, and
    the names file their models are named by (``transforms.names``)."""

    runs: str
    tasks: Path
    timeout: float = DEFAULT_TIMEOUT
    task_memory: int = DEFAULT_TASK_MEMORY
    names: Path | None = None

    def into(self, dump_root: Path | str) -> ImportReport:
        """Import every run below ``runs`` into the dump ``dump_root`` (``import-kaggle``)."""
        return import_runs(
            Location.parse(self.runs),
            self.tasks,
            Location.parse(str(dump_root)),
            timeout=self.timeout,
            task_memory=self.task_memory,
            names=self.names,
        )

    @property
    def source(self) -> str:
        """RUNS, safe to record (no credentials)."""
        return Location.parse(self.runs).display


# Said of a run whose rows the dump held already but the ledger did not name.
FOUND_IN_DUMP: Final = (
    "its rows were in the dump already but not in this ledger (imported by an import that "
    "did not finish, or by import-kaggle): recorded now"
)


def recorded_imports(output: Output) -> set[tuple[str, str]]:
    """(file, run_sha256) of every run OUT's ``imports`` table records as imported, as the
    latest finished run left it (rows a killed run appended before its commit are not the
    ledger's: the next run's repair removes them)."""
    imported = output.scan(IMPORTS).filter(pl.col("outcome") == str(Outcome.IMPORTED))
    pairs = imported.select(FILE, "run_sha256").drop_nulls().unique().collect()
    return {(str(file), str(digest)) for file, digest in pairs.iter_rows()}


def import_rows(
    report: ImportReport,
    source: str,
    run_id: str,
    when: datetime,
    recorded: Set[tuple[str, str]] = frozenset(),
) -> pl.DataFrame:
    """The ``imports`` rows of an import (provenance aside): every run it wrote rows of,
    every run it did not import, each with every reason, and every run whose rows it found
    in the dump already that the ledger does not record (``recorded``: ``recorded_imports``;
    its files were written by an import that did not reach its commit); a run imported
    before, found unchanged and recorded, is not repeated.

    >>> from datetime import UTC
    >>> rejected = RunReport("a/x.run.json", Outcome.REJECTED, reasons=["no_task_file"])
    >>> written = RunReport("a/y.run.json", Outcome.IMPORTED, file="dump_date=2026-04-12/y.pq",
    ...     written=True, digest="d1")
    >>> there = RunReport("a/z.run.json", Outcome.IMPORTED, file="dump_date=2026-04-12/z.pq",
    ...     digest="d2")
    >>> found = RunReport("a/w.run.json", Outcome.IMPORTED, file="dump_date=2026-04-12/w.pq",
    ...     digest="d3")
    >>> rows = import_rows(ImportReport([rejected, written, there, found], 0.0), "runs", "r1",
    ...     datetime(2026, 12, 5, tzinfo=UTC), {("dump_date=2026-04-12/z.pq", "d2")})
    >>> rows.select("run_file", "outcome", "dump_date").rows()  # doctest: +NORMALIZE_WHITESPACE
    [('a/w.run.json', 'imported', '2026-04-12'), ('a/x.run.json', 'rejected', None),
     ('a/y.run.json', 'imported', '2026-04-12')]
    """
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
            "detail": _detail(r, recorded),
            DUMP_DATE: _night_of(r.file),
            FILE: r.file,
            Col.MODEL: r.model,
            Col.TASK: r.task,
            SCORER_VERSION: COGSCORE_VERSION,
        }
        for r in report.runs
        if r.outcome is Outcome.REJECTED or r.written or not _recorded(r, recorded)
    ]
    return pl.DataFrame(rows, schema=schema).sort("run_file")


def _recorded(run: RunReport, recorded: Set[tuple[str, str]]) -> bool:
    return (str(run.file), str(run.digest)) in recorded


def _detail(run: RunReport, recorded: Set[tuple[str, str]]) -> str | None:
    """A run's detail in the ledger: the report's, and where its rows were found in the dump
    and not in the ledger, that."""
    if run.outcome is Outcome.REJECTED or run.written or _recorded(run, recorded):
        return run.detail
    return f"{run.detail}; {FOUND_IN_DUMP}" if run.detail else FOUND_IN_DUMP


def _night_of(file: str | None) -> str | None:
    """The night of a dump file's path (``dump_date=N/…``), else None.

    >>> _night_of("dump_date=2026-04-12/x.parquet"), _night_of(None)
    ('2026-04-12', None)
    """
    if file is None or not file.startswith(f"{DUMP_DATE}="):
        return None
    return file.split("/", 1)[0].split("=", 1)[1]
