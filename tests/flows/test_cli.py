"""``cogscore score`` end to end: the command line, the Prefect flow and the tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


@pytest.fixture(scope="module")
def prefect_api() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def test_score_writes_the_tables_and_prints_the_leaderboard(
    prefect_api: None, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "oracle-large" in result.output and "rows read" in result.output
    scores = pl.scan_parquet(tmp_path / "episode_scores", hive_partitioning=True).collect()
    assert set(scores["dump_date"].cast(pl.String)) == {"2026-11-30", "2026-12-01"}
    assert (tmp_path / "manifest.json").exists()


def test_bad_formula_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["score", str(EXAMPLE_DUMP), "--out", str(tmp_path), "--formula", "runtime_rl=v7"]
    )
    assert result.exit_code == 2
    assert "runtime_rl has no formula 'v7'" in result.output


def test_missing_input_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["score", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_unwritable_output_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(blocker / "out")])
    assert result.exit_code == 2
    assert "not a writable folder" in result.output
