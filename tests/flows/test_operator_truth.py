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
    """Exit code, what it wrote (stdout and stderr) and (with --json) the run record of
    ``cogscore ARGS``."""
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, list(args), terminal_width=100)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    record = json.loads(last) if "--json" in args and last.startswith("{") else None
    return result.exit_code, result.output, record


def stdout(*args: str) -> str:
    """What ``cogscore ARGS`` printed on stdout (it must succeed)."""
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, list(args), terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.stdout


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
    listed = json.loads(stdout("history", str(out), "--json"))
    assert (listed[0]["status"], listed[0]["exit_code"]) == ("failed", 3)
    assert listed[0]["nights_failed"] == ["2026-12-02"]
    report = json.loads(stdout("status", str(out), "--json"))
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
    assert json.loads(stdout("status", str(out), "--json"))["models_unscored"] == {
        "2026-12-02": {"oracle-large": why}
    }


def test_a_strict_run_with_rejects_is_recorded_as_failed_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, record = cli("score", str(EXAMPLE_DUMP), "--out", str(out), "--strict", "--json")
    assert code == 3 and record is not None
    listed = json.loads(stdout("history", str(out), "--json"))
    assert (record["status"], record["exit_code"]) == ("failed", 3)
    assert (listed[0]["status"], listed[0]["exit_code"]) == ("failed", 3)
    assert listed[0]["error"] == record["error"]
    last = json.loads(stdout("status", str(out), "--json"))["last_runs"][0]
    assert (last["status"], last["exit_code"]) == ("failed", 3)


# --- 2: symbolic links are followed, and recorded -------------------------------------------


def test_a_night_folder_that_is_a_symbolic_link_is_scored_and_its_target_recorded(
    tmp_path: Path,
) -> None:
    import shutil

    from flows.output import Output

    elsewhere = tmp_path / "harness-output"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", elsewhere / "night")
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-11-30", dump / "dump_date=2026-11-30")
    (dump / "dump_date=2026-12-01").symlink_to(elsewhere / "night", target_is_directory=True)
    (dump / "loop").symlink_to(dump, target_is_directory=True)  # walked once, not forever
    out = tmp_path / "out"
    code, _, record = cli("nightly", str(dump), "--out", str(out), "--strict", "--json")
    assert record is not None and record["nights_scored"] == ["2026-11-30", "2026-12-01"]
    assert code == 3  # the example dump's rejects: strict, but nothing was skipped
    files = Output.at(out).state()["nights"]["2026-12-01"]["files"]
    assert [f["link_target"] for f in files] == [
        str((elsewhere / "night" / f["file"].split("/")[-1]).resolve()) for f in files
    ]
    assert all(
        f["link_target"] is None for f in Output.at(out).state()["nights"]["2026-11-30"]["files"]
    )
    assert json.loads(stdout("status", str(out), str(dump), "--json"))["dump"]["unchanged"] == [
        "2026-11-30",
        "2026-12-01",
    ]


def test_a_broken_symbolic_link_in_a_dump_is_refused_by_name(tmp_path: Path) -> None:
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    (dump / "dump_date=2026-12-01" / "part-9.parquet").symlink_to(tmp_path / "gone.parquet")
    code, text, _ = cli("nightly", str(dump), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "dump_date=2026-12-01/part-9.parquet is a broken symbolic link" in text
    assert not (tmp_path / "out").exists()


# --- 4, 5: one dump root per output; outputs and dumps apart ---------------------------------


def test_another_dump_root_into_an_output_is_refused_unless_the_dump_moved(
    tmp_path: Path,
) -> None:
    import shutil

    from flows.output import Output

    production, staging, out = tmp_path / "production", tmp_path / "staging", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP, production)
    shutil.copytree(EXAMPLE_DUMP, staging)
    assert cli("nightly", str(production), "--out", str(out))[0] == 0
    before = Output.at(out).runs().height
    for command in ("nightly", "score"):
        code, text, _ = cli(command, str(staging), "--out", str(out))
        assert code == 2 and "--input-root-changed" in text and str(production) in text
    code, _, _ = cli("rescore", str(staging), "--out", str(out), "--formula", "runtime_rl=v1")
    assert code == 2
    assert Output.at(out).runs().height == before  # refused before any work
    moved = cli("nightly", str(staging), "--out", str(out), "--input-root-changed")
    assert moved[0] == 0 and Output.at(out).state()["input"] == str(staging)


def test_nights_whose_input_is_gone_are_named_by_nightly_and_status(tmp_path: Path) -> None:
    import shutil

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    shutil.rmtree(dump / "dump_date=2026-11-30")
    code, text, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 0 and record is not None
    assert record["nights_input_gone"] == ["2026-11-30"]
    assert "whose input is gone from the dump (kept as scored): 2026-11-30" in text
    report = json.loads(stdout("status", str(out), str(dump), "--json"))
    assert report["dump"]["input_gone"] == ["2026-11-30"]


@pytest.mark.parametrize("inside", ["out_in_dump", "dump_in_out"])
def test_an_output_and_a_dump_that_overlap_are_refused_on_the_first_run(
    tmp_path: Path, inside: str
) -> None:
    import shutil

    if inside == "out_in_dump":
        dump, out = tmp_path / "dump", tmp_path / "dump" / "out"
    else:
        dump, out = tmp_path / "out" / "dump", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP, dump)
    code, text, _ = cli("nightly", str(dump), "--out", str(out))
    assert code == 2 and f"the output {out} lies" in text
    assert not (out / "runs").exists()
