"""What the report reads of an output: its tables as a run left them, its state (the
runs table's), and the ``round_end`` rows of the shown night's input files (the learning
curve: round scores are not in the tables)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import polars as pl

from flows.present.report.shape import of_night
from flows.store.dumps import DumpFile, scan
from flows.store.output import Output
from flows.store.state import OutputState
from schemas.contract import DUMP_DATE, Col, Kind
from schemas.exits import ExitCode


class ReportError(Exception):
    """OUT holds no tables to report on."""

    code: ClassVar[ExitCode] = ExitCode.USAGE


@dataclass
class Warehouse:
    """The tables of one output as a run left them (``dump_date`` as a string), and its
    manifest. A table of every night is read once, when first asked (``wh[name]``); a
    night's rows (``night``) read only that night's files: an output holding months of
    history is not read whole for one night's page."""

    out: Output
    manifest: OutputState  # what the output holds (``Output.state``)
    as_of: str | None = None
    read: dict[str, pl.DataFrame] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self.read:
            self.read[name] = self.out.read(name, self.as_of)
        return self.read[name]

    def scan(self, name: str) -> pl.LazyFrame:
        return self.out.scan(name, self.as_of)

    def night(self, name: str, night: str | None, column: str = DUMP_DATE) -> pl.DataFrame:
        """Table ``name``'s rows of ``night`` in its night column ``column`` (a standing's:
        ``as_of``; ``None``: the undated night)."""
        return of_night(self.scan(name), night, column).collect()


def read_warehouse(out: Output | Path | str, as_of: str | None = None) -> Warehouse:
    """The tables of ``out`` as its latest finished run (or run ``as_of``) left them."""
    out = Output.at(out)
    warehouse = Warehouse(out, out.state(as_of), as_of)
    if warehouse.manifest.is_new or warehouse["model_scores"].is_empty():
        raise ReportError(f"{out} holds no scores: run cogscore score or nightly into it first")
    return warehouse


def round_rows(manifest: OutputState, night: str | None) -> tuple[pl.DataFrame | None, str]:
    """The ``round_end`` rows (episode_id, round, value) of the night's input files, read from
    the dump named in the manifest, and where they came from; ``None`` and why not when a
    file is gone or changed since it was scored (its size or modification time differ)."""
    entry = manifest.nights.get(night) if night is not None else manifest.undated
    root = str((entry.input if entry is not None else None) or manifest.input or "")
    recorded_files = entry.files if entry is not None else ()
    entries = [e for e in recorded_files if e.status == "scored"]
    if not entries:
        return None, "the manifest lists no scored input file for this night"
    files = [_input_file(root, e.file) for e in entries]
    for dump_file, recorded in zip(files, entries, strict=True):
        if not dump_file.is_local:
            continue  # an object is read as it is now; its ETag was not kept to compare
        try:
            stat = Path(dump_file.path).stat()
        except OSError:
            return None, f"the input file {dump_file.path} is no longer there"
        if stat.st_size != recorded.bytes or stat.st_mtime_ns != recorded.mtime_ns:
            return None, f"the input file {dump_file.path} changed since it was scored"
    frames = [
        scan(dump_file)
        .filter(pl.col(Col.KIND) == Kind.ROUND_END)
        .select(
            pl.col(Col.EPISODE_ID).cast(pl.String),
            pl.col(Col.ROUND).cast(pl.Int64),
            pl.col(Col.VALUE).cast(pl.Float64),
        )
        for dump_file in files
    ]
    where = f"the round_end rows of {len(entries)} input file(s) under {root}"
    return pl.concat(frames).collect(), where


def _input_file(root: str, relative: str) -> DumpFile:
    """An input file named by the runs table: below a local root, or an object's URL."""
    if "://" in root:
        return DumpFile(f"{root.rstrip('/')}/{relative}", relative)
    return DumpFile(Path(root) / relative, relative)
