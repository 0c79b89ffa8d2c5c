"""What an output holds, as its runs table says (``Output.state``): what the manifest used
to say. The input and the formula set of the latest finished run, whether the output is a
dump of nights, and per night what the latest finished run that scored it recorded: its
input fingerprint, formula versions, counts, files and the level of its intervals.

>>> state = OutputState.empty()
>>> state.is_new, state.nights, state.undated
(True, {}, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Final

import polars as pl

from flows.store.runs_table import RunRow
from schemas.comparisons import DEFAULT_LEVEL


@dataclass(frozen=True)
class RecordedFile:
    """An input file of a night as the run that scored it recorded it (the runs table's
    ``files``, written by ``flows.reading.FileReport.record``). What a run of an older
    version did not record is None.

    >>> recorded = RecordedFile.of({"file": "a.parquet", "bytes": 10, "problems": ["x"], "new": 1})
    >>> recorded.bytes, recorded.digest, recorded.problems
    (10, None, ('x',))
    >>> RecordedFile.of({"file": "a.parquet", "sha256": "ab12"}).digest
    'ab12'
    """

    file: str
    rows: int | None = None
    bytes: int | None = None
    dump_date: str | None = None
    # Its content digest, which names its kind (``flows.store.prehash.digest_kind``): runs
    # before issue 48 recorded a sha256 as ``sha256`` (read here as the digest).
    digest: str | None = None
    mtime_ns: int | None = None
    status: str | None = None  # "scored", "rejected" or "gone"
    problems: tuple[str, ...] = ()
    link_target: str | None = None  # where a file reached through a symbolic link really is

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> RecordedFile:
        values = {f.name: record[f.name] for f in fields(cls) if f.name in record}
        if "digest" not in values and record.get(_LEGACY_DIGEST):
            values["digest"] = record[_LEGACY_DIGEST]  # a sha256, as bare hex
        return cls(**(values | {"problems": tuple(record.get("problems") or ())}))


# Where runs before issue 48 recorded a file's digest (a sha256, always).
_LEGACY_DIGEST: Final = "sha256"


@dataclass(frozen=True)
class NightState:
    """A night (or an undated dump) as the latest finished run that scored it left it."""

    run_id: str
    input_fingerprint: str
    input: str | None  # the dump root it was scored from
    formula_versions: Mapping[str, str]
    counts: Mapping[str, int]  # RUN_COUNTS; a count the run did not record is absent
    files: tuple[RecordedFile, ...]  # its input files
    models_unscored: Mapping[str, str]  # model -> why none of its episodes was scored
    level: float  # the level of its intervals

    @classmethod
    def of_row(cls, row: RunRow, level: float | None = None) -> NightState:
        """The night ``row`` scored; ``level``: the run's, where its details do not say it
        (a dry run's rows, before the commit)."""
        assert row.input_fingerprint is not None, f"run {row.run_id} scored no input"
        return cls(
            run_id=row.run_id,
            input_fingerprint=row.input_fingerprint,
            input=row.input,
            formula_versions=dict(row.formula_versions),
            counts=dict(row.counts),
            files=tuple(RecordedFile.of(f) for f in row.files),
            models_unscored=dict(row.details.get("models_unscored", {}).get(row.night, {})),
            level=recorded_level(row.details) if level is None else level,
        )


@dataclass(frozen=True)
class OutputState:
    """What the output holds; every field empty for a new output (``is_new``)."""

    run_id: str | None = None  # the latest finished run
    input: str | None = None  # the dump root it read
    formula_set: Mapping[str, str] = field(default_factory=dict)
    partitioned_by_dump_date: bool | None = None
    scorer_version: str | None = None
    finished: datetime | None = None
    nights: dict[str, NightState] = field(default_factory=dict)  # by night, sorted
    undated: NightState | None = None  # an undated dump's scores
    # As the latest run's details record them (absent from runs of an earlier cogscore).
    bootstrap: Mapping[str, Any] | None = None
    libraries: Mapping[str, str] | None = None
    cogscore_commit: str | None = None

    @classmethod
    def empty(cls) -> OutputState:
        """A new output's: no run finished in it."""
        return cls()

    @classmethod
    def of_runs(cls, rows: pl.DataFrame) -> OutputState:
        """The state the runs ``rows`` left (those that pin tables, oldest first): each
        night as the latest of them that scored it left it."""
        if rows.is_empty():
            return cls.empty()
        latest = RunRow.from_record(rows.row(-1, named=True))
        scored = rows.filter(pl.col("input_fingerprint").is_not_null())
        nights: dict[str, NightState] = {}
        undated: NightState | None = None
        for record in scored.iter_rows(named=True):  # later rows replace earlier ones
            row = RunRow.from_record(record)
            night = NightState.of_row(row)
            if row.night is None:
                undated = night
            else:
                nights[row.night] = night
        details = latest.details
        return cls(
            run_id=latest.run_id,
            input=latest.input,
            formula_set=dict(latest.formula_set),
            partitioned_by_dump_date=bool(latest.partitioned),
            scorer_version=latest.scorer_version,
            finished=latest.finished,
            nights=dict(sorted(nights.items())),
            undated=undated,
            bootstrap=details.get("bootstrap"),
            libraries=details.get("libraries"),
            cogscore_commit=details.get("cogscore_commit"),
        )

    @property
    def is_new(self) -> bool:
        """No run finished in the output: it holds nothing."""
        return self.run_id is None


def recorded_level(details: Mapping[str, Any]) -> float:
    """The level of the intervals a run wrote, as its row in the runs table records it (a
    run before the level was an option recorded none: it used the default).

    >>> recorded_level({"bootstrap": {"level": 0.9}}), recorded_level({})
    (0.9, 0.95)
    """
    return float(details.get("bootstrap", {}).get("level", DEFAULT_LEVEL))
