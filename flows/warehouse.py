"""The warehouse tables of a run: aggregates, provenance, validation and the atomic write.

Every table is per ``dump_date`` (a night is the unit of reporting) and carries
``scorer_version`` and the ``input_fingerprint`` of its night's input files.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import pandera.polars as pa
import polars as pl

from flows.io import partition_dir
from flows.store import (
    MANIFEST,
    carry_over,
    carry_over_foreign,
    commit,
    current_snapshot,
    discard,
    fault_point,
    foreign_entries,
    locked,
    new_snapshot,
)
from schemas.contract import DUMP_DATE, Col
from schemas.tables import (
    INPUT_FINGERPRINT,
    SCORER_VERSION,
    CategoryScores,
    EpisodeScores,
    ModelScores,
    Rejects,
    RescoreDiff,
    TaskScores,
)
from transforms.aggregate import (
    Bootstrap,
    category_replicates,
    category_scores,
    model_replicates,
    model_scores,
    task_replicates,
    task_scores,
)

EPISODE_SCORES: Final = "episode_scores"
REJECTS: Final = "rejects"
TASK_SCORES: Final = "task_scores"
CATEGORY_SCORES: Final = "category_scores"
MODEL_SCORES: Final = "model_scores"
RESCORE_DIFF: Final = "rescore_diff"  # written by rescores only
# name: (pandera model, partition columns after dump_date, sort key)
TABLES: Final[dict[str, tuple[type[pa.DataFrameModel], list[str], list[str]]]] = {
    EPISODE_SCORES: (EpisodeScores, [Col.CATEGORY], ["file", Col.EPISODE_ID]),
    REJECTS: (Rejects, [], ["file", Col.EPISODE_ID]),
    TASK_SCORES: (TaskScores, [], [Col.MODEL, Col.CATEGORY, Col.TASK]),
    CATEGORY_SCORES: (CategoryScores, [], [Col.MODEL, Col.CATEGORY]),
    MODEL_SCORES: (ModelScores, [], ["rank", Col.MODEL]),
    RESCORE_DIFF: (RescoreDiff, [], [Col.MODEL, "level", Col.CATEGORY]),
}
# The tables every run writes (rescore_diff only a rescore).
CORE_TABLES: Final = (EPISODE_SCORES, REJECTS, TASK_SCORES, CATEGORY_SCORES, MODEL_SCORES)
LIBRARIES: Final = ("polars", "pyarrow", "pandera", "prefect", "numpy")


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint(files: Iterable[tuple[str, str]]) -> str:
    """The digest of a night's input: its files' relative paths and content digests."""
    lines = "\n".join(f"{name}\t{digest}" for name, digest in sorted(files))
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def aggregate(scores: pl.DataFrame, bootstrap: Bootstrap) -> dict[str, pl.DataFrame]:
    """Task, category and model scores of the episode scores, with their intervals."""
    lazy = scores.lazy()
    task_reps = task_replicates(lazy, bootstrap).collect().lazy()  # reused by all three
    cat_reps = category_replicates(task_reps)
    tasks = task_scores(lazy, task_reps, bootstrap)
    categories = category_scores(tasks, cat_reps, bootstrap)
    models = model_scores(categories, model_replicates(cat_reps), bootstrap)
    collected = pl.collect_all([tasks, categories, models])
    return dict(zip((TASK_SCORES, CATEGORY_SCORES, MODEL_SCORES), collected, strict=True))


def with_provenance(
    table: pl.DataFrame, scorer_version: str, fingerprints: Mapping[str | None, str]
) -> pl.DataFrame:
    nights = pl.col(DUMP_DATE).replace_strict(
        {k: v for k, v in fingerprints.items() if k is not None},
        default=fingerprints.get(None, ""),
        return_dtype=pl.String,
    )
    return table.with_columns(
        pl.lit(scorer_version).alias(SCORER_VERSION), nights.alias(INPUT_FINGERPRINT)
    )


PROJECT_ROOT: Final = Path(__file__).resolve().parents[1]


@cache
def git_commit(top: Path = PROJECT_ROOT) -> str:
    """The commit of cogscore's own checkout, where it runs from one: ``top`` must be the
    root of a git work tree (not a folder inside another repository, as site-packages of a
    virtual environment kept in some project would be) whose ``pyproject.toml`` is
    cogscore's. Installed elsewhere: "unknown" (the version says what ran)."""
    pyproject = top / "pyproject.toml"
    if not (top / ".git").exists() or not pyproject.is_file():
        return "unknown"
    if 'name = "cogscore"' not in pyproject.read_text(errors="replace"):
        return "unknown"
    try:
        out = subprocess.run(
            ["git", "-C", str(top), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def environment() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


class SnapshotWriter:
    """The tables of a run written into a new snapshot of ``out``, a part at a time (a night
    after another), then committed at once: readers see the old snapshot until the commit.

    Get one from ``new_snapshot_of``. ``nights`` are the ``dump_date`` partitions the run
    replaces (the others are carried over from the current snapshot); None: the tables are
    not partitioned by night and the run replaces everything.
    """

    def __init__(
        self, out: Path, snapshot: Path, previous: Path | None, nights: set[str] | None
    ) -> None:
        self.out, self.snapshot, self.previous, self.nights = out, snapshot, previous, nights
        self.empty: dict[str, pl.DataFrame] = {}  # each table's columns, for a table of no rows
        self.committed = False

    def write(self, name: str, table: pl.DataFrame) -> None:
        """Validate ``table`` (pandera, data included) and write its partitions."""
        model, partitions, order = TABLES[name]
        model.validate(table, lazy=True)
        by = ([DUMP_DATE] if self.nights is not None else []) + partitions
        _write_table(table.sort(order, nulls_last=True), self.snapshot / name, by)
        self.empty.setdefault(name, table.clear())
        fault_point(f"wrote-{name}")

    def commit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Write the manifest (with the nights of earlier runs that this one kept) and make
        the snapshot the current one; the manifest as written."""
        for name, empty in self.empty.items():  # a table of no rows, on every night: readable
            table_dir = self.snapshot / name
            if not any(table_dir.rglob("*.parquet")):
                table_dir.mkdir(parents=True, exist_ok=True)
                empty.write_parquet(table_dir / "part-0.parquet")
        manifest = _merge_manifest(self.previous, manifest, self.nights)
        (self.snapshot / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        commit(self.out, self.snapshot, _present_tables(self.snapshot), self.previous, TABLES)
        self.committed = True
        return manifest


class DryRunWriter:
    """A writer that checks each table as ``SnapshotWriter`` does and writes nothing: a
    rescore's dry run computes what it would change and leaves the output as it is."""

    def __init__(self, out: Path | None = None, nights: set[str] | None = None) -> None:
        self.out, self.nights = out, nights

    def write(self, name: str, table: pl.DataFrame) -> None:
        TABLES[name][0].validate(table, lazy=True)

    def commit(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """The manifest the run would have written (nothing is written)."""
        previous = current_snapshot(self.out) if self.out is not None else None
        return _merge_manifest(previous, manifest, self.nights)


@contextmanager
def new_snapshot_of(out: Path, nights: set[str] | None) -> Iterator[SnapshotWriter]:
    """Hold ``OUT/.lock``, start a snapshot (the nights not replaced hard-linked from the
    current one) and yield its writer; a snapshot not committed is removed."""
    out = out.resolve()
    with locked(out):
        foreign = foreign_entries(out, [*TABLES, MANIFEST])
        if foreign:
            raise OutputConflict(
                f"{out} holds {', '.join(foreign)} that cogscore did not write there (not its "
                "links to the current snapshot); choose another --out, or move them away"
            )
        previous = current_snapshot(out)
        snapshot = new_snapshot(out)
        try:
            carry_over_foreign(previous, snapshot, _ours)
            if nights is not None:
                replaced = {partition_dir({DUMP_DATE: night}) for night in nights}
                carry_over(
                    previous,
                    snapshot,
                    lambda rel: (
                        len(rel.parts) > 2
                        and rel.parts[1].startswith(f"{DUMP_DATE}=")
                        and rel.parts[1] not in replaced
                    ),
                )
            fault_point("carried-over")
            writer = SnapshotWriter(out, snapshot, previous, nights)
            yield writer
            if not writer.committed:
                discard(snapshot)
        except BaseException:
            discard(snapshot)
            raise


class OutputConflict(Exception):
    """``OUT`` holds something this store did not write where it would write: refused."""


def _ours(relative: Path) -> bool:
    """Files this store writes in a snapshot: the manifest and the tables' part files."""
    if relative.as_posix() == MANIFEST:
        return True
    return relative.parts[0] in TABLES and relative.suffix == ".parquet"


def _present_tables(snapshot: Path) -> list[str]:
    return [name for name in TABLES if (snapshot / name).is_dir()]


def _write_table(frame: pl.DataFrame, table_dir: Path, by: list[str]) -> None:
    """Hive partitions ``by`` (the columns live in the folder names only), one file each."""
    table_dir.mkdir(parents=True, exist_ok=True)
    if not by:
        frame.write_parquet(table_dir / "part-0.parquet")
        return
    for values, part in frame.group_by(by, maintain_order=True):
        folder = table_dir / partition_dir(dict(zip(by, values, strict=True)))
        folder.mkdir(parents=True, exist_ok=True)
        part.drop(by).write_parquet(folder / "part-0.parquet")


def _merge_manifest(
    previous: Path | None, manifest: dict[str, Any], nights: set[str] | None
) -> dict[str, Any]:
    """This run's manifest, with the nights of earlier runs that this one kept."""
    kept: dict[str, Any] = {}
    if previous is not None and nights is not None and (previous / MANIFEST).exists():
        earlier = json.loads((previous / MANIFEST).read_text()).get("nights", {})
        kept = {night: info for night, info in earlier.items() if night not in nights}
    manifest["nights"] = dict(sorted({**kept, **manifest.get("nights", {})}.items()))
    return manifest


def manifest_base(started: datetime, bootstrap: Bootstrap) -> dict[str, Any]:
    return {
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "cogscore_commit": git_commit(),
        "libraries": environment(),
        "bootstrap": {
            **asdict(bootstrap),
            "method": "percentile, episodes resampled within "
            "each (dump_date, model, category, task); categories and models average "
            "the replicates of their tasks and categories",
        },
    }
