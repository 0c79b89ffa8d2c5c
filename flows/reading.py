"""A dump's files read: each file's rows (a batch of small files in one scan, grouped by
schema), validated against the contract, retried where an object store failed for a
moment; what could not be read is one reject row naming the file and every problem, and
each file's ``FileReport`` says how it went. ``vanished`` tells a file gone since the
listing (its night fails, to be scored again) from a file that is bad."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Final, TypeVar

import polars as pl

from flows.store.dumps import (
    DumpFile,
    read_schema,
    row_count,
    scan,
    scan_together,
)
from schemas.columns import REASONS, REJECTS_DTYPES, ROWS, RULES, STATUS, EpisodeStatus
from schemas.contract import DUMP_DATE, FILE, canonical_schema
from schemas.rules import Rule
from transforms.ingest import normalise, schema_problems


@dataclass
class FileReport:
    file: str
    rows: int
    bytes: int
    dump_date: str | None = None
    digest: str = ""  # its content digest, its kind named (``flows.store.prehash.digest_kind``)
    mtime_ns: int = 0
    status: str = "scored"  # or "rejected", or "gone" (deleted after the dump was listed)
    problems: list[str] = field(default_factory=list)
    link_target: str | None = None  # where a file reached through a symbolic link really is

    def record(self) -> dict[str, object]:
        """The report as the runs table records it (``dataclasses.asdict``'s dict, made
        without its deep copies: 0.3 s for a night of 10,000 files).

        >>> from dataclasses import asdict
        >>> report = FileReport("f.parquet", 3, 10, "2026-12-01", problems=["unreadable"])
        >>> report.record() == asdict(report)
        True
        """
        return {name: getattr(self, name) for name in _REPORT_FIELDS} | {
            "problems": list(self.problems)
        }


_REPORT_FIELDS: Final = tuple(f.name for f in fields(FileReport))


def _file_reject(dump_file: DumpFile, rows: int, problems: list[tuple[Rule, str]]) -> pl.DataFrame:
    """The reject row of a file that cannot be read: its rows are counted, not scored."""
    values: dict[str, object] = dict.fromkeys(REJECTS_DTYPES)
    values |= {
        FILE: dump_file.relative,
        DUMP_DATE: dump_file.partitions.get(DUMP_DATE),
        STATUS: EpisodeStatus.REJECTED.value,
        RULES: list(dict.fromkeys(r.value for r, _ in problems)),
        REASONS: [m for _, m in problems],
        ROWS: rows,
    }
    return pl.DataFrame([values], schema=REJECTS_DTYPES, orient="row")


def read_file(dump_file: DumpFile) -> tuple[pl.LazyFrame | None, FileReport, pl.DataFrame | None]:
    """The canonical rows of one file, or the reject row that says why it cannot be read."""
    report = _report_of(dump_file)
    # An object's footer is fetched once, by this scan, for its count, schema and rows.
    scanned = None if dump_file.is_local else scan(dump_file)
    schema, problems = _footer(dump_file, report, scanned)
    if report.status == "gone":
        return None, report, pl.DataFrame(schema=REJECTS_DTYPES)
    if schema is None:
        return None, report, reject_file(report, dump_file, problems)
    rows = normalise(
        scan(dump_file) if scanned is None else scanned,
        schema,
        file=dump_file.relative,
        partitions=dump_file.partitions,
    )
    return _validated(rows), report, None


def _report_of(dump_file: DumpFile) -> FileReport:
    report = FileReport(dump_file.relative, 0, dump_file.size, dump_file.partitions.get(DUMP_DATE))
    report.link_target = dump_file.target
    return report


def _footer(
    dump_file: DumpFile,
    report: FileReport,
    scanned: pl.LazyFrame | None = None,
    count: bool = True,
) -> tuple[dict[str, pl.DataType] | None, list[tuple[Rule, str]]]:
    """The file's schema from its footer, or None and what makes it unreadable or breaks
    the contract (none where it is gone since the listing: ``report`` says so). Its rows
    are counted in ``report`` from the footer, unless ``count`` is False and it is
    readable (its rows are counted as they are read)."""
    try:
        schema = retrying(lambda: read_schema(dump_file, scanned))
        problems = schema_problems(schema)
        if count or problems:
            report.rows = retrying(lambda: row_count(dump_file, scanned))
    except Exception as error:  # a file that is not (valid) Parquet, or is gone
        if vanished(error):  # listed, then deleted: its night cannot be scored whole
            report.status = "gone"
            report.problems = [f"deleted after the dump was listed: {_first_line(error)}"]
            return None, []
        return None, [(Rule.FILE_UNREADABLE, f"not a readable Parquet file: {error}")]
    return (None if problems else schema), problems


def vanished(error: BaseException) -> bool:
    """Whether reading failed because the file or object no longer exists."""
    if isinstance(error, FileNotFoundError):
        return True
    # Not any "not found": a file that is not Parquet says "magic bytes not found".
    text = str(error).lower()
    gone = ("nosuchkey", "no such file or directory", "the specified key does not exist")
    return any(mark in text for mark in gone) or (
        "object at location" in text and "not found" in text
    )


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def reject_file(
    report: FileReport, dump_file: DumpFile, problems: list[tuple[Rule, str]]
) -> pl.DataFrame:
    """Mark the file rejected with its problems; its one reject row (rows counted)."""
    report.status = "rejected"
    report.problems = [m for _, m in problems]
    return _file_reject(dump_file, report.rows, problems)


T = TypeVar("T")


READ_ATTEMPTS = 3


def retrying(read: Callable[[], T], attempts: int | None = None, delay: float = 0.5) -> T:
    """``read()``, tried again after an OS-level error (a file briefly unreadable, a network
    filesystem hiccup); what is still failing after ``attempts`` (``READ_ATTEMPTS``, read
    when called) is raised."""
    attempts = READ_ATTEMPTS if attempts is None else attempts
    for attempt in range(1, attempts + 1):
        try:
            return read()
        except OSError:
            if attempt == attempts:
                raise
            time.sleep(delay * attempt)
    raise AssertionError("unreachable")


_VALID_SCHEMAS: set[tuple[tuple[str, str], ...]] = set()


def _validated(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``DumpRows`` checks names and dtypes only (no data read, no coercion), so the verdict
    depends on the canonical schema alone: check each schema once. pandera resolving the plan
    cost 84 ms a file, twice per file (plan and score): 1.7 s of a 10-file dump. The
    canonical schema itself (what ``normalise`` makes of every readable file) is the one
    ``DumpRows`` declares, passed without importing pandera (about 1.2 s)."""
    schema = rows.collect_schema()
    key = tuple((name, str(dtype)) for name, dtype in schema.items())
    if key not in _VALID_SCHEMAS:
        if list(schema.items()) != list(canonical_schema().items()):
            from schemas.rows import DumpRows  # pandera: it decides, and reports

            DumpRows.validate(rows)
        _VALID_SCHEMAS.add(key)
    return rows


_PATH: Final = "__path"


BatchRead = tuple[pl.DataFrame | None, list[FileReport], list[pl.DataFrame]]


def read_batch(batch: Sequence[DumpFile]) -> BatchRead | None:
    """The canonical rows of a batch's readable files, read at once, a report per file (its
    rows counted) and the reject row of each file that cannot be read. None where the rows
    cannot be read together or a file is gone: the batch is scored file by file.

    Files are read in one scan per schema: a scan per file, and the scoring plan over a
    union of hundreds of them, cost 8 s for 300 one-episode files against 1.5 s. The first
    file's footer is read, then every file is scanned with it in one scan, which reads the
    other footers itself (in polars' threads, 0.2 ms a file less): polars refuses a file
    whose columns or dtypes differ, so where it reads them all, each file has the first
    one's schema (in any column order) and is judged as it would be alone. Where it does
    not, each footer is read (``_read_by_schema``)."""
    first = _report_of(batch[0])
    schema, problems = _footer(batch[0], first, count=False)
    if first.status == "gone":
        return None
    if schema is not None:
        try:
            rows = retrying(lambda: _rows_of(batch, schema).collect(engine="in-memory"))
        except (pl.exceptions.PolarsError, OSError):
            pass  # a file of another schema, unreadable, or gone: each footer says which
        else:
            reports = [first, *(_report_of(f) for f in batch[1:])]
            return _counted(rows, reports), reports, []
    return _read_by_schema(batch, first, schema, problems)


def _read_by_schema(
    batch: Sequence[DumpFile],
    first: FileReport,
    schema: dict[str, pl.DataType] | None,
    problems: list[tuple[Rule, str]],
) -> BatchRead | None:
    """``_read_batch`` with every footer read: the files of each schema scanned together,
    a file that cannot be read rejected (the first file's footer as already read)."""
    reports: list[FileReport] = []
    rejects: list[pl.DataFrame] = []
    together: dict[tuple[tuple[str, str], ...], list[DumpFile]] = {}
    schemas: dict[tuple[tuple[str, str], ...], dict[str, pl.DataType]] = {}
    for index, dump_file in enumerate(batch):
        report = first if index == 0 else _report_of(dump_file)
        if index:
            schema, problems = _footer(dump_file, report, count=False)
        reports.append(report)
        if report.status == "gone":
            return None
        if schema is None:
            rejects.append(reject_file(report, dump_file, problems))
            continue
        key = tuple((name, str(dtype)) for name, dtype in schema.items())
        together.setdefault(key, []).append(dump_file)
        schemas[key] = schema
    if not together:
        return None, reports, rejects
    frames = [_rows_of(files, schemas[key]) for key, files in together.items()]
    try:
        rows = retrying(lambda: pl.concat(frames).collect(engine="in-memory"))
    except (pl.exceptions.PolarsError, OSError):
        return None
    return _counted(rows, reports), reports, rejects


def _rows_of(files: Sequence[DumpFile], schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    """The canonical rows of ``files`` (of one night, each of ``schema``) in one scan."""
    relative = {str(f.path): f.relative for f in files}
    path = pl.col(_PATH).replace_strict(relative, return_dtype=pl.String)
    partitions = files[0].partitions  # one night's files: only dump_date is read
    scanned = scan_together(files, _PATH)
    return _validated(normalise(scanned, schema, file=path, partitions=partitions))


def _counted(rows: pl.DataFrame, reports: Sequence[FileReport]) -> pl.DataFrame:
    """``rows``, each readable file's rows counted in its report (as its footer says)."""
    counted = dict(rows.group_by(FILE).len().iter_rows())
    for report in reports:
        if report.status == "scored":
            report.rows = counted.get(report.file, 0)
    return rows


def decodes(dump_file: DumpFile) -> bool:
    try:
        scan(dump_file).collect()
    except (pl.exceptions.ComputeError, OSError):
        return False
    return True
