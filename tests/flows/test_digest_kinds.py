"""The content digest's kind (issue 48): runs hash a dump's files with BLAKE3 and record
``blake3:<hex>``; an output whose runs recorded sha256 (as every run did before) keeps its
fingerprints: a file is hashed again with the kind its night recorded, so a night is never
scored again because the digest's kind changed, and ``explain`` compares like with like."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import blake3
import polars as pl
import pytest
from deltalake import write_deltalake
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.plan import fingerprint, plan_nightly
from flows.present.explain import ExplainError, Which, explain
from flows.store.output import Output
from flows.store.state import RecordedFile
from tests.tables import read_table, run_rows

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def as_recorded_before_blake3(out: Path, dump: Path) -> None:
    """The runs table rewritten as a cogscore before issue 48 wrote it: each file's digest
    its sha256, bare hex, under ``sha256``, and each night's fingerprint made of those."""
    rows = run_rows(out)

    def legacy(files: str | None) -> tuple[str | None, str | None]:
        if files is None:
            return None, None
        recorded = json.loads(files)
        for entry in recorded:
            del entry["digest"]
            entry["sha256"] = sha256_of(dump / entry["file"])
        night = fingerprint((entry["file"], entry["sha256"]) for entry in recorded)
        return json.dumps(recorded), night

    rewritten = [legacy(files) for files in rows["files"]]
    scored = pl.col("input_fingerprint").is_not_null()
    older = rows.with_columns(
        pl.Series("files", [files for files, _ in rewritten], pl.String),
        pl.when(scored)
        .then(pl.Series([night for _, night in rewritten], dtype=pl.String))
        .alias("input_fingerprint"),
    )
    write_deltalake(
        str(out / "runs"), older.to_arrow(compat_level=pl.CompatLevel.oldest()), mode="overwrite"
    )
    assert all(f.digest == sha256_of(dump / f.file) for f in _recorded(out))


def _recorded(out: Path) -> list[RecordedFile]:
    return [f for night in Output.at(out).state().nights.values() for f in night.files]


def touched(dump: Path) -> None:
    """Every file's modification time moved, its bytes the same (a copy that does not keep
    times, a harness that writes a night again)."""
    for path in dump.rglob("*.parquet"):
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def scored(tmp_path: Path) -> tuple[Path, Path]:
    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP, dump)
    runs.nightly(dump, out)
    return dump, out


def test_a_run_records_each_files_blake3(scored: tuple[Path, Path]) -> None:
    dump, out = scored
    recorded = {f.file: f.digest for f in _recorded(out)}
    assert recorded == {
        p.relative_to(dump).as_posix(): "blake3:" + blake3.blake3(p.read_bytes()).hexdigest()
        for p in dump.rglob("*.parquet")
    }


def test_a_night_recorded_with_sha256_is_not_scored_again_for_the_new_kind(
    scored: tuple[Path, Path],
) -> None:
    """Its files' times moved (so each is hashed again), or every file rehashed with
    ``--verify``: hashed with sha256, as recorded, its nights are unchanged."""
    dump, out = scored
    as_recorded_before_blake3(out, dump)
    nights = sorted(Output.at(out).state().nights)
    assert plan_nightly(dump, out).unchanged == nights  # size and time as recorded
    touched(dump)
    assert plan_nightly(dump, out).unchanged == nights
    assert plan_nightly(dump, out, verify=True).unchanged == nights
    again = runs.nightly(dump, out)
    assert again.nights_scored == [] and again.nights_unchanged == nights


def test_a_file_recorded_with_sha256_that_changed_is_found_changed(
    scored: tuple[Path, Path],
) -> None:
    """Like with like: a file whose bytes changed still differs, its night scored again,
    and then recorded with the digests the plan made of it."""
    dump, out = scored
    as_recorded_before_blake3(out, dump)
    target = sorted((dump / "dump_date=2026-12-01").glob("*.parquet"))[0]
    pl.read_parquet(target).head(-1).write_parquet(target)
    plan = plan_nightly(dump, out)
    assert plan.changed == ["2026-12-01"] and plan.unchanged == ["2026-11-30"]
    runs.nightly(dump, out)
    night = Output.at(out).state().nights["2026-12-01"]
    digests = {f.file: f.digest for f in night.files}
    assert digests[target.relative_to(dump).as_posix()] == sha256_of(target)
    assert night.input_fingerprint == fingerprint(digests.items())
    assert plan_nightly(dump, out).changed == []


def test_explain_reads_a_night_recorded_with_either_kind(scored: tuple[Path, Path]) -> None:
    dump, out = scored
    row = read_table(out, "episode_scores").row(0, named=True)
    for kind in ("blake3", "sha256"):
        if kind == "sha256":
            as_recorded_before_blake3(out, dump)
        assert explain(Output.at(out), Which(row["episode_id"]))["recomputed_equal"]
        file = dump / row["file"]
        saved = file.read_bytes()
        file.write_bytes(saved + b"\0")
        with pytest.raises(ExplainError, match="changed since it was scored"):
            explain(Output.at(out), Which(row["episode_id"]))
        result = CliRunner().invoke(app, ["explain", str(out), "--episode", row["episode_id"]])
        assert result.exit_code == 2 and "changed since it was scored" in result.output
        file.write_bytes(saved)
