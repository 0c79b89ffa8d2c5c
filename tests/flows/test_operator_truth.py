"""What an operator is told (issue 27): no night, model or failure passes silently, every
command answers quickly where it can, and the exit code, the run record, ``history`` and
``status`` agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flows import runs

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
# pandera (pandas with it) takes about 2 s to import, Prefect about 2 s more. (DuckDB loads
# pandas for itself: `sql` pays for that, as DuckDB's own cost.)
HEAVY = ("pandera", "prefect")


@pytest.fixture(scope="module")
def scored_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scored") / "out"
    runs.score(EXAMPLE_DUMP, out)
    return out


def modules_imported_by(args: list[str]) -> list[str]:
    """The heavy modules a fresh process has imported after running ``cogscore ARGS``."""
    code = (
        "import sys\n"
        "from flows.cli import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')))


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["formulas"],
        ["status", "{out}"],
        ["history", "{out}"],
        ["sql", "{out}", "SELECT count(*) FROM model_scores"],
        ["compare", "{out}"],
    ],
)
def test_quick_commands_import_neither_pandera_nor_prefect(
    args: list[str], scored_out: Path
) -> None:
    """Only the commands that validate tables or run flows may pay for pandera or Prefect."""
    assert modules_imported_by([a.format(out=scored_out) for a in args]) == []


# --- 1, 3: a night or a model with episodes but none scored; the outcome recorded ----------


def night_of_errors(dump: Path, night: str, models: set[str] | None = None) -> None:
    """Night ``night`` of ``dump``: a copy of the example dump's last night (new episode ids)
    whose episodes of ``models`` (None: every model) all end in a harness error."""
    import polars as pl

    target = dump / f"dump_date={night}"
    target.mkdir(parents=True)
    for source in sorted((EXAMPLE_DUMP / "dump_date=2026-12-01").glob("*.parquet")):
        rows = pl.read_parquet(source)
        hit = pl.col("kind") == "episode_end"
        if models is not None:
            hit = hit & pl.col("model").is_in(sorted(models))
        spoiled = rows.with_columns(
            pl.when(hit).then(pl.lit("error")).otherwise(pl.col("status")).alias("status"),
            (pl.col("episode_id") + f"-{night}").alias("episode_id"),
        )
        touched = spoiled.filter(pl.col("model").is_in(sorted(models or set(rows["model"]))))
        assert spoiled.filter(hit).height == touched["episode_id"].n_unique()  # each ends
        spoiled.write_parquet(target / source.name)


def cli(*args: str) -> tuple[int, str, dict[str, object] | None]:
    """Exit code, stdout and (with --json) the run record of ``cogscore ARGS``."""
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, list(args), terminal_width=100)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    record = json.loads(last) if "--json" in args and last.startswith("{") else None
    return result.exit_code, result.stdout, record


def dump_of_two_nights(tmp_path: Path) -> Path:
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    return dump


def test_a_night_whose_every_episode_is_a_harness_error_fails_the_run_visibly(
    tmp_path: Path,
) -> None:
    from flows.output import Output
    from flows.report import write_report

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02")
    code, text, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 3 and record is not None
    assert record["status"] == "failed" and record["exit_code"] == 3
    assert record["nights_scored"] == ["2026-11-30", "2026-12-01"]
    assert "no episode scored" in record["nights_failed"]["2026-12-02"]  # type: ignore[index]
    assert "night 2026-12-02 failed, not written" in text
    assert "2026-12-02" not in Output.at(out).state()["nights"]  # the next run tries again
    listed = json.loads(cli("history", str(out), "--json")[1])
    assert (listed[0]["status"], listed[0]["exit_code"]) == ("failed", 3)
    assert listed[0]["nights_failed"] == ["2026-12-02"]
    report = json.loads(cli("status", str(out), "--json")[1])
    assert list(report["nights_failed"]) == ["2026-12-02"]
    assert "FAILED" in cli("status", str(out))[1]
    page = write_report(out, tmp_path / "report.html").read_text()
    assert "night <b>2026-12-02</b> failed" in page
    # Retried by the next run, and failing again, visibly: the night is never taken as done.
    assert cli("nightly", str(dump), "--out", str(out))[0] == 3


def test_a_model_whose_every_episode_is_a_harness_error_is_named_not_dropped(
    tmp_path: Path,
) -> None:
    import polars as pl

    from flows.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02", models={"oracle-large"})
    code, text, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 3 and record is not None and record["status"] == "failed"
    assert record["nights_scored"] == ["2026-11-30", "2026-12-01", "2026-12-02"]
    why = record["models_unscored"]["2026-12-02"]["oracle-large"]  # type: ignore[index]
    assert why == "no episode scored: 15 harness error(s), 0 rejected"
    assert "model oracle-large has no score on 2026-12-02" in text
    regressions = Output.at(out).read("regressions").filter(pl.col("model") == "oracle-large")
    row = regressions.filter(pl.col("dump_date") == "2026-12-02").row(0, named=True)
    assert (row["scope"], row["level"], row["reason"]) == ("overall", "not_comparable", why)
    assert json.loads(cli("status", str(out), "--json")[1])["models_unscored"] == {
        "2026-12-02": {"oracle-large": why}
    }


def test_a_strict_run_with_rejects_is_recorded_as_failed_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, record = cli("score", str(EXAMPLE_DUMP), "--out", str(out), "--strict", "--json")
    assert code == 3 and record is not None
    listed = json.loads(cli("history", str(out), "--json")[1])
    assert (record["status"], record["exit_code"]) == ("failed", 3)
    assert (listed[0]["status"], listed[0]["exit_code"]) == ("failed", 3)
    assert listed[0]["error"] == record["error"]
    last = json.loads(cli("status", str(out), "--json")[1])["last_runs"][0]
    assert (last["status"], last["exit_code"]) == ("failed", 3)
