"""Reading what a run wrote, whatever the store: tests compare tables, not files, so the
same tests hold for every storage layout. Read with deltalake/pyarrow directly (a reader
cogscore did not write), at the versions the latest finished run recorded."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
from deltalake import DeltaTable

from flows.store.catalog import CORE_TABLES
from flows.store.output import TABLES
from schemas.columns import RUN_COUNTS


def latest_versions(out: Path | str) -> dict[str, int]:
    """The table versions named by the latest run that left a state (runs table, read with
    deltalake)."""
    runs = pl.from_arrow(DeltaTable(str(Path(out) / "runs")).to_pyarrow_table())
    assert isinstance(runs, pl.DataFrame)
    pinning = runs.filter(pl.col("status").is_in(["succeeded", "nothing_to_do"]))
    last = pinning.sort("finished", "started").row(-1, named=True)
    return dict(json.loads(last["table_versions"]))


def read_table(out: Path | str, name: str) -> pl.DataFrame:
    """Every row of table ``name`` in ``out``, ``dump_date`` a string, in a stable order."""
    version = latest_versions(out)[name]
    arrow = DeltaTable(str(Path(out) / name), version=version).to_pyarrow_table()
    frame = pl.from_arrow(arrow)
    assert isinstance(frame, pl.DataFrame)
    if "dump_date" in frame.columns:
        frame = frame.with_columns(pl.col("dump_date").cast(pl.String))
    columns = [c for c in frame.columns if frame[c].dtype != pl.List(pl.String)]
    return frame.select(sorted(frame.columns)).sort(columns, nulls_last=True)


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON is (RFC 8259): no NaN or Infinity, which Python's ``json``
    reads and writes but no Delta reader parses (a log holding one wedges its table)."""

    def refuse(token: str) -> object:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def assert_finite_everywhere(out: Path) -> None:
    """Every Delta log of ``out`` is JSON, the statistics of its add actions too, and no
    float of any table at its pinned version is NaN or infinite (issue 46)."""
    logs = sorted(out.rglob("_delta_log/*.json"))
    assert logs
    for log in logs:
        for line in log.read_text().splitlines():
            stats = strict_json(line).get("add", {}).get("stats")
            if stats:
                strict_json(stats)
    for name in latest_versions(out):
        table = read_table(out, name)
        for column, dtype in table.schema.items():
            if dtype.is_float():
                values = table[column].drop_nulls()
                assert values.is_finite().all(), (name, column)


def with_infinite_stats(commit: bytes, column: str) -> bytes:
    """A Delta commit file's content with ``column``'s bounds in the statistics of its add
    actions made infinite, written as cogscore wrote a staged file's statistics before
    contract 1.4 (Python's ``json``: ``Infinity``, which no Delta reader parses)."""
    lines = commit.decode().split("\n")
    for i, line in enumerate(lines):
        action = json.loads(line) if line.strip() else {}
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats["minValues"][column] = -math.inf
            stats["maxValues"][column] = math.inf
            action["add"]["stats"] = json.dumps(stats)
            lines[i] = json.dumps(action, separators=(",", ":"))
    return "\n".join(lines).encode()


def break_latest_commit(out: Path, table: str, column: str) -> Path:
    """``with_infinite_stats`` on the latest commit of ``out``'s ``table`` (a local output)."""
    commit = sorted((out / table / "_delta_log").glob("*.json"))[-1]
    commit.write_bytes(with_infinite_stats(commit.read_bytes(), column))
    return commit


def read_tables(out: Path | str, names: tuple[str, ...] = CORE_TABLES) -> dict[str, pl.DataFrame]:
    return {name: read_table(out, name) for name in names if name in TABLES}


def night_files(out: Path | str, night: str) -> dict[str, set[str]]:
    """Per table, the data files that hold night ``night`` at the pinned version: a night
    that was not rewritten keeps the same files (Delta never changes a file in place)."""
    files = {}
    for name, version in latest_versions(out).items():
        uris = DeltaTable(str(Path(out) / name), version=version).file_uris()
        files[name] = {uri for uri in uris if f"dump_date={night}/" in uri}
    return files


def assert_same_tables(a: Path | str, b: Path | str) -> None:
    """Both outputs hold the same rows in every table (provenance included)."""
    from polars.testing import assert_frame_equal

    names = tuple(name for name in TABLES if name in latest_versions(a))
    assert names == tuple(name for name in TABLES if name in latest_versions(b))
    for name in names:
        assert_frame_equal(read_table(a, name), read_table(b, name))


def run_rows(out: Path | str) -> pl.DataFrame:
    """The runs table, oldest first (read with deltalake)."""
    runs = pl.from_arrow(DeltaTable(str(Path(out) / "runs")).to_pyarrow_table())
    assert isinstance(runs, pl.DataFrame)
    return runs.sort("finished", "started", "night", nulls_last=False)


def last_run(out: Path | str) -> dict[str, object]:
    """What the latest run recorded (what manifest.json held): its files and counts summed
    over its nights, the nights the output holds, versions, bootstrap and timings."""
    rows = run_rows(out)
    run_id = rows["run_id"][-1]
    mine = rows.filter(pl.col("run_id") == run_id)
    details = json.loads(mine["details"][-1])
    counts = {c: int(mine[c].sum()) for c in RUN_COUNTS}
    nights: dict[str, dict[str, object]] = {}
    for row in rows.filter(pl.col("input_fingerprint").is_not_null()).iter_rows(named=True):
        if row["status"] in ("succeeded", "nothing_to_do") and row["night"] is not None:
            nights[row["night"]] = {
                "input_fingerprint": row["input_fingerprint"],
                "formula_versions": json.loads(row["formula_versions"]),
                "files": json.loads(row["files"]),
                "counts": {c: row[c] for c in RUN_COUNTS},
            }
    return {
        **details,
        "run_id": run_id,
        "status": mine["status"][-1],
        "scorer_version": mine["scorer_version"][-1],
        "input": mine["input"][-1],
        "formula_versions": json.loads(mine["formula_versions"][-1]),
        "formula_set": json.loads(mine["formula_set"][-1]),
        "files": [f for files in mine["files"] for f in json.loads(files)],
        "counts": counts,
        "nights": nights,
    }


def referenced(out: Path, latest_only: bool = False) -> set[str]:
    """Every data file some version (or the latest) of some table refers to."""
    files = set()
    for name in (*TABLES, "runs"):
        if not (out / name / "_delta_log").exists():
            continue
        table = DeltaTable(str(out / name))
        first = table.version() if latest_only else 0
        for version in range(first, table.version() + 1):
            table.load_as_version(version)
            files |= {Path(uri).resolve().as_posix() for uri in table.file_uris()}
    return files


def data_files(out: Path) -> set[str]:
    """Every data file in the tables' folders of `out`, referenced or not."""
    return {p.resolve().as_posix() for p in out.rglob("*.parquet") if "_delta_log" not in p.parts}
