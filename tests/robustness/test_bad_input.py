"""Bad input files and paths: named, counted, the rest scored; clear errors, no tracebacks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.dumps import example_dump_counts
from tests.tables import last_run, read_table

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"
NIGHT = "dump_date=2026-12-01"


def _table(rows: int = 1) -> pa.Table:
    return pa.table(
        {
            "run_id": ["r"] * rows,
            "episode_id": [f"bad-{i}" for i in range(rows)],
            "model": ["m"] * rows,
            "task": ["t"] * rows,
            "category": ["associative_learning"] * rows,
            "turn": pa.array(range(rows), pa.int64()),
            "role": ["environment"] * rows,
            "kind": ["episode_start"] * rows,
            "params": ["{}"] * rows,
        }
    )


def truncated(path: Path) -> None:
    pq.write_table(_table(50), path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def corrupt_pages(path: Path) -> None:
    """A valid footer over data pages that fail to decompress."""
    pq.write_table(_table(2000), path, compression="zstd")
    data = bytearray(path.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))


BREAKERS: dict[str, tuple[Callable[[Path], None], str, int]] = {
    # name: (how to write the bad file, the rule, the rows it must be counted with)
    "truncated": (truncated, "file_unreadable", 0),
    "corrupt-pages": (corrupt_pages, "file_unreadable", 2000),
    "not-parquet": (lambda p: p.write_text("id,score\n1,0.5\n"), "file_unreadable", 0),
    "empty-file": (lambda p: p.write_bytes(b""), "file_unreadable", 0),
    "value-as-string": (
        lambda p: pq.write_table(_table(3).append_column("value", pa.array(["0.5"] * 3)), p),
        "wrong_column_type",
        3,
    ),
    "missing-column": (
        lambda p: pq.write_table(_table(4).drop_columns(["kind"]), p),
        "missing_column",
        4,
    ),
}


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("name", BREAKERS)
def test_a_bad_file_is_named_counted_and_the_rest_scored(name: str, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    breaker, rule, rows = BREAKERS[name]
    breaker(dump / NIGHT / f"{name}.parquet")
    code, output = run("score", dump, "--out", tmp_path / "out", "--engine", "local")
    assert code == 0, output
    assert "completed with rejected input: 1 file(s)" in output
    assert f"file not scored: {NIGHT}/{name}.parquet: " in output  # named, with its reason
    manifest = last_run(tmp_path / "out")
    bad = [f for f in manifest["files"] if f["file"] == f"{NIGHT}/{name}.parquet"]
    assert bad and bad[0]["status"] == "rejected" and bad[0]["problems"]
    built = example_dump_counts()
    assert manifest["counts"]["episodes_scored"] == built["episodes_scored"]  # the rest scored
    import polars as pl

    rejects = read_table(tmp_path / "out", "rejects")
    row = rejects.filter(pl.col("file") == f"{NIGHT}/{name}.parquet").row(0, named=True)
    assert row["rules"] == [rule] and row["rows"] == rows
    counts = manifest["counts"]
    assert counts["rows_read"] == counts["rows_scored"] + counts["rows_rejected"]
    assert counts["rows_read"] == built["rows_read"] + rows  # the bad file's rows counted
    assert counts["rows_scored"] == built["rows_scored"]
    code, _ = run("score", dump, "--out", tmp_path / "strict", "--engine", "local", "--strict")
    assert code == 3  # README "Exit codes": input not scored under --strict


def test_the_run_record_names_each_file_not_scored_with_its_problems(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    (dump / NIGHT / "notes.parquet").write_text("id,score\n1,0.5\n")
    result = CliRunner().invoke(app, ["score", str(dump), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout.strip().splitlines()[-1])
    [rejected] = record["rejected_files"]
    assert rejected["file"] == f"{NIGHT}/notes.parquet"
    assert (
        len(rejected["problems"]) == 1 and "not a readable Parquet file" in rejected["problems"][0]
    )


def test_a_file_with_zero_rows_is_read_and_adds_nothing(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    pq.write_table(_table(0), dump / NIGHT / "zero.parquet")
    code, output = run("score", dump, "--out", tmp_path / "out", "--engine", "local")
    assert code == 0 and f"{example_dump_counts()['rows_read']} rows read" in output


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "nope", "does not exist"),
        (lambda d: (d / "empty").mkdir() or d / "empty", "holds no .parquet files"),
    ],
)
def test_unusable_input_is_a_clear_error(make, message: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, output = run("score", make(tmp_path), "--out", tmp_path / "out")
    assert code == 2 and message in output


def test_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    code, output = run("nightly", EXAMPLE_DUMP, "--out", tmp_path / "file" / "out")
    assert code == 2 and "not a writable folder" in output


@pytest.mark.parametrize("name", ["out[1]", "out|a", "out%41", "out^"])
def test_an_output_path_delta_rs_cannot_use_is_refused_before_any_write(
    name: str, tmp_path: Path
) -> None:
    """delta-rs panics on `[`, `]`, `^`, `|` in a local table's path and decodes `%41`: the
    run staged its files, then crashed (exit 1, a Rust panic) at its first commit."""
    code, output = run("score", EXAMPLE_DUMP, "--out", tmp_path / name, "--engine", "local")
    assert code == 2 and "a local output's path cannot hold" in output
    assert output.count("\n") == 1 and not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["sp ace", "a#b", "caf\u00e9"])
def test_an_output_path_with_a_space_is_written_and_read_as_any_other(
    name: str, tmp_path: Path
) -> None:
    """polars' Delta reader looked for a folder "sp ace" as "sp%20ace": the run wrote its
    tables, then failed reading them back (exit 1), and every read command after it."""
    from tests.tables import assert_same_tables

    plain, odd = tmp_path / "plain", tmp_path / name / "out"
    for out in (plain, odd):
        code, output = run("score", EXAMPLE_DUMP, "--out", out, "--engine", "local")
        assert code == 0, output
    assert_same_tables(plain, odd)
    code, output = run("sql", odd, "SELECT count(*) AS n FROM leaderboard")
    assert code == 0 and "n" in output
    code, output = run("report", odd, "--html", tmp_path / "page.html")
    assert code == 0, output


@pytest.mark.parametrize("name", ["sp ace", "a#b?c", "caf\u00e9"])
def test_as_of_reads_an_output_whose_path_a_file_uri_percent_encodes(
    name: str, tmp_path: Path
) -> None:
    """delta-rs names a table's files by URI (a folder "sp ace" as "sp%20ace"): compared
    with the folder's own path, every file of the run looked deleted, and ``--as-of`` (sql,
    compare, report, explain) was refused with a false "vacuum deleted them"."""
    out = tmp_path / name / "out"
    code, output = run("score", EXAMPLE_DUMP, "--out", out, "--engine", "local")
    assert code == 0, output
    code, output = run("history", out, "--json")
    assert code == 0, output
    first = json.loads(output)[0]["run_id"]
    code, output = run("sql", out, "SELECT episode_id FROM episode_scores", "--format", "json")
    assert code == 0, output
    episode = json.loads(output)[0]["episode_id"]
    for args in (
        ["sql", out, "SELECT count(*) AS n FROM episode_scores"],
        ["compare", out],
        ["explain", out, "--episode", episode],
        ["report", out, "--html", tmp_path / "page.html"],
    ):
        latest, pinned = run(*args), run(*args, "--as-of", first)
        assert pinned[0] == 0 and "vacuum" not in pinned[1], pinned[1]
        if args[0] != "report":  # the page names its --as-of run
            assert pinned == latest
