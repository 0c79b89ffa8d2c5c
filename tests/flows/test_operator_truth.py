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
from tests.learningbench import LEADERBOARD, RUNS, TASKS

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
        ["leaderboard", "{out}", "--scope", "runtime_rl"],
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
        chosen = set(rows["model"]) if models is None else models
        touched = spoiled.filter(pl.col("model").is_in(sorted(chosen)))
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
    import polars as pl

    from flows.present.report import write_report
    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02")
    code, text, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 3 and record is not None
    assert record["status"] == "failed" and record["exit_code"] == 3
    why = "no episode scored: 45 episode(s), 45 harness error(s), 0 rejected"
    assert record["nights_failed"] == {"2026-12-02": why}
    assert f"night 2026-12-02 FAILED: {why}" in text
    # Written as its input stands, every reason kept: its rejects, and no scores.
    output = Output.at(out)
    assert output.read("rejects").filter(pl.col("dump_date") == "2026-12-02").height == 45
    assert output.read("model_scores").filter(pl.col("dump_date") == "2026-12-02").is_empty()
    listed = json.loads(stdout("history", str(out), "--json"))
    assert (listed[0]["status"], listed[0]["exit_code"]) == ("failed", 3)
    assert listed[0]["nights_failed"] == ["2026-12-02"]
    assert listed[0]["nights"] == ["2026-11-30", "2026-12-01"]
    report = json.loads(stdout("status", str(out), "--json"))
    assert list(report["nights_failed"]) == ["2026-12-02"]
    assert "night 2026-12-02 FAILED: no episode scored" in stdout("status", str(out))
    page = write_report(out, tmp_path / "report.html").read_text()
    assert "night <b>2026-12-02</b> failed: no episode scored" in page


def test_a_model_whose_every_episode_is_a_harness_error_is_named_not_dropped(
    tmp_path: Path,
) -> None:
    import polars as pl

    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02", models={"oracle-large"})
    code, text, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 3 and record is not None and record["status"] == "failed"
    assert record["nights_scored"] == ["2026-11-30", "2026-12-01", "2026-12-02"]
    why = record["models_unscored"]["2026-12-02"]["oracle-large"]  # type: ignore[index]
    rejects = Output.at(out).read("rejects")
    errors = rejects.filter(
        (pl.col("model") == "oracle-large") & (pl.col("dump_date") == "2026-12-02")
    ).height
    assert why == f"no episode scored: {errors} episode(s), {errors} harness error(s), 0 rejected"
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

    from flows.store.output import Output

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
    files = Output.at(out).state().nights["2026-12-01"].files
    assert [f.link_target for f in files] == [
        str((elsewhere / "night" / f.file.split("/")[-1]).resolve()) for f in files
    ]
    assert all(f.link_target is None for f in Output.at(out).state().nights["2026-11-30"].files)
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

    from flows.store.output import Output

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
    assert moved[0] == 0 and Output.at(out).state().input == str(staging)


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


# --- 10: a killed run's lease from another host ---------------------------------------------


def test_a_dead_runs_lease_from_another_host_is_broken_by_unlock_and_named_when_busy(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime, timedelta

    from flows.store import objects
    from flows.store.lease import LEASE_KEY, Holder, Lease
    from flows.store.output import Output

    out = tmp_path / "out"
    assert cli("score", str(EXAMPLE_DUMP), "--out", str(out))[0] == 0
    now = datetime.now(UTC)
    dead = Holder(
        "another-host", 4242, "killed-run", "cogscore nightly", now, now + timedelta(hours=6)
    )
    location = Output.at(out).location
    assert objects.put_if_absent(location, LEASE_KEY, dead.to_json()) is not None
    code, text, _ = cli("score", str(EXAMPLE_DUMP), "--out", str(out))
    assert code == 5 and f"cogscore unlock {out} --run killed-run" in text
    code, text, _ = cli("unlock", str(out), "--run", "another-run")
    assert code == 2 and "held by run killed-run, not another-run" in text
    code, text, _ = cli("unlock", str(out), "--run", "killed-run")
    assert code == 0 and "broke the lease of run killed-run" in text
    assert cli("score", str(EXAMPLE_DUMP), "--out", str(out))[0] == 0
    with Lease(location, "live-run", "cogscore nightly"):  # alive here: never broken
        code, text, _ = cli("unlock", str(out), "--run", "live-run")
        assert code == 2 and "alive on this host" in text
    assert cli("unlock", str(out), "--run", "live-run")[1].startswith("error: ")


# --- 10: a rescore's later nights; a rescored night delivered again ------------------------


def test_a_rescore_makes_the_next_nights_regressions_again_against_the_new_baseline(
    tmp_path: Path,
) -> None:
    import polars as pl

    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02", models=set())  # a third night, nothing spoiled
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    before = Output.at(out).read("regressions").filter(pl.col("dump_date") == "2026-12-02")
    code, text, _ = cli(
        "rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1",
        "--since", "2026-12-01", "--until", "2026-12-01",
    )  # fmt: skip
    assert code == 0
    assert "regressions made again against the nights scored before them: 2026-12-02" in text
    after = Output.at(out).read("regressions").filter(pl.col("dump_date") == "2026-12-02")
    procedural = pl.col("scope") == "procedural_learning"
    # The baseline (2026-12-01) is now scored with v1, the night with v2: not comparable.
    assert set(after.filter(procedural)["level"]) == {"not_comparable"}
    assert set(before.filter(procedural)["level"]) != {"not_comparable"}


def test_a_rescored_night_delivered_again_keeps_its_rescored_versions(tmp_path: Path) -> None:
    import polars as pl

    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    rescore = ["rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1"]
    assert cli(*rescore, "--since", "2026-12-01")[0] == 0
    night = dump / "dump_date=2026-12-01"
    first = sorted(night.glob("*.parquet"))[0]
    pl.read_parquet(first).head(-1).write_parquet(first)  # delivered again, changed
    code, text, _ = cli("nightly", str(dump), "--out", str(out))
    assert code == 0 and "night 2026-12-01 scored with other versions" in text
    versions = (
        Output.at(out)
        .read("category_scores")
        .filter(
            (pl.col("dump_date") == "2026-12-01") & (pl.col("category") == "procedural_learning")
        )["formula_version"]
    )
    assert set(versions) == {"v1"}


# --- 10: the same episode ids on two nights --------------------------------------------------


def test_a_night_that_repeats_another_nights_episodes_fails_unwritten(tmp_path: Path) -> None:
    import shutil

    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    shutil.copytree(dump / "dump_date=2026-12-01", dump / "dump_date=2026-12-02")  # a copy
    code, _, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 3 and record is not None
    why = record["nights_failed"]["2026-12-02"]  # type: ignore[index]
    assert why.startswith("not written: ") and "already scored on 2026-12-01" in why
    assert "2026-12-02" not in Output.at(out).state().nights
    assert "2026-12-02" in json.loads(stdout("status", str(out), "--json"))["nights_failed"]
    # Within one run as well: a night copied into a new night of the same run.
    again = tmp_path / "again"
    code, _, record = cli("nightly", str(dump), "--out", str(again), "--json")
    assert code == 3 and record is not None and list(record["nights_failed"]) == ["2026-12-02"]
    # A night's own ids are not a repeat: rescoring it succeeds.
    rescore = ["rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1"]
    assert cli(*rescore, "--since", "2026-12-01", "--until", "2026-12-01")[0] == 0


# --- 7: exit codes and one-line errors -------------------------------------------------------


def test_an_unreachable_prefect_api_is_one_line_and_exit_4(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run(
        [sys.executable, "-c", "from flows.cli import run; run()", "nightly", str(EXAMPLE_DUMP),
         "--out", str(tmp_path / "out")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the Prefect API at http://127.0.0.1:9/api does not answer")
    assert "Traceback" not in done.stderr


FLAT = str(LEADERBOARD / "leaderboard_flat.csv")
KAGGLE = [str(RUNS / "google_gemini-2.5-flash"), "--tasks", str(TASKS)]
RESCORE = ["rescore", str(EXAMPLE_DUMP), "--out", "{out}", "--formula", "runtime_rl=v1"]


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["report", "{out}", "--html", "{folder}"], 2, "--html: {folder} is a folder"),
        (["report", "{out}", "--html", "{file}/r.html"], 2, "--html: {file} is a file"),
        (["simulate", "--out", "{file}", "--episodes", "10"], 2, "--out: {file} is a file"),
        (["import-scores", FLAT, "--out", "{file}"], 2, "--out: {file} is a file"),
        (["import-kaggle", *KAGGLE, "--out", "{file}"], 2, "--out: {file} is a file"),
        ([*RESCORE, "--diff-out", "{folder}"], 2, "--diff-out: {folder} is a folder"),
        (["compare", "{out}", "--date", "2026-13-01"], 2, "'2026-13-01' is not a date"),
        (["compare", "{out}", "--date", "2026-01-01"], 2, "has no scores of 2026-01-01"),
        (["compare", "{out}", "--scope", "concept"], 2, "--scope: 'concept': one of overall"),
        (["compare", "{out}", "--models", "nosuchmodel"], 2, "no comparison of 'nosuchmodel'"),
        (
            ["leaderboard", "{out}", "--scope", "rl"],
            2,
            "--scope: 'rl' is no scope of a leaderboard: one of overall, associative_learning",
        ),
        (["score", str(EXAMPLE_DUMP), "--ot", "x"], 2, "no such option: --ot (did you mean --out"),
        (["nightl"], 2, "no such command 'nightl'. Did you mean 'nightly'?"),
        (["score", "--out", "{out}"], 2, "missing argument 'DUMP_ROOT'"),
        (["--log-level", "loud", "formulas"], 2, "invalid value for --log-level: 'loud'"),
    ],
)
def test_each_error_is_one_line_with_its_documented_exit_code(
    args: list[str], code: int, said: str, scored_out: Path, tmp_path: Path
) -> None:
    """Where there was a traceback (a folder for a file, a file for a folder), the wrong exit
    code (4 for a usage error), exit 0 ("no pair of models to compare" for a night, scope or
    model that does not exist) or typer's box of 5-7 lines: one ``error:`` line, exit 2."""
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "a-folder").mkdir()
    places = {"out": scored_out, "file": tmp_path / "a-file", "folder": tmp_path / "a-folder"}
    code_seen, text, _ = cli(*[a.format(**places) for a in args])
    assert code_seen == code, text
    assert text.strip().splitlines() == [text.strip()], text  # one line
    assert text.startswith("error: ") and said.format(**places) in text, text
    assert not list(tmp_path.rglob("*.partial"))  # report: no half-written page left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder"]


def test_ctrl_c_in_a_read_command_is_one_line_and_exit_130(
    scored_out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.present import status

    def interrupted(*args: object) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(status, "history_lines", interrupted)
    code, text, _ = cli("history", str(scored_out))
    assert (code, text) == (130, "error: interrupted\n")


def test_an_internal_error_in_a_read_command_is_one_line_and_exit_1(
    scored_out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the scoring commands' (README "Exit codes": 1), where it was a traceback."""
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.present import status

    def broken(*args: object) -> list[str]:
        raise RuntimeError("an invariant broke\nsecond line")

    monkeypatch.setattr(status, "history_lines", broken)
    code, text, _ = cli("history", str(scored_out))
    assert (code, text) == (
        1,
        "error: internal error: RuntimeError: an invariant broke (COGSCORE_DEBUG=1 shows where)\n",
    )
    monkeypatch.setenv("COGSCORE_DEBUG", "1")
    shown = CliRunner().invoke(app, ["history", str(scored_out)])
    assert isinstance(shown.exception, RuntimeError)


def test_help_still_answers_and_a_report_not_written_leaves_no_partial_file(
    scored_out: Path, tmp_path: Path
) -> None:
    from flows.present.report import write_report

    code, text, _ = cli("score", "--help")
    assert code == 0 and "Usage: " in text and "--out" in text and "error: " not in text
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        write_report(scored_out, folder)  # past the command's check: the page's own write
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder"]


def test_read_commands_on_a_missing_output_exit_2_and_create_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "TYPO"
    for args in (
        ["status", str(typo)],
        ["history", str(typo)],
        ["sql", str(typo), "SELECT 1"],
        ["compare", str(typo)],
        ["leaderboard", str(typo)],
        ["vacuum", str(typo), "--dry-run"],
        ["report", str(typo), "--html", str(tmp_path / "r.html")],
        ["unlock", str(typo), "--run", "x"],
    ):
        code, text, _ = cli(*args)
        assert code == 2 and text.strip().splitlines() == [
            f"error: no cogscore output at {typo} (it holds no runs table): check the path; a "
            "score or nightly run creates the output"
        ], args
    assert not typo.exists()


def test_as_of_a_vacuumed_or_unknown_run_exits_2_naming_it(tmp_path: Path) -> None:
    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    first = json.loads(stdout("history", str(out), "--json"))[0]["run_id"]
    rescore = ["rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1"]
    assert cli(*rescore)[0] == 0  # replaces every night's files
    assert cli("vacuum", str(out), "--retain", "0h")[0] == 0
    for args in (
        ["sql", str(out), "SELECT count(*) FROM model_scores"],
        ["compare", str(out)],
        ["leaderboard", str(out)],
        ["report", str(out), "--html", str(tmp_path / "r.html")],
    ):
        code, text, _ = cli(*args, "--as-of", first)
        lines = text.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: --as-of {first}:")
        assert "vacuum deleted them" in lines[0]
    code, text, _ = cli("sql", str(out), "SELECT 1", "--as-of", "no-such-run")
    assert code == 2 and "no such run" in text


def test_the_record_names_the_command_as_typed_and_a_usage_error_still_prints_it(
    tmp_path: Path,
) -> None:
    import os

    args = ["rescore", str(EXAMPLE_DUMP), "--out", str(tmp_path / "out"),
            "--formula", "procedural_learning=v9", "--json",
            "--storage-option", "aws_secret_access_key=hush"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", "from flows.cli import run; run()", *args],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["status"] == "refused" and record["exit_code"] == 2
    assert "procedural_learning has no formula 'v9'" in record["error"]
    assert record["command"] == (
        f"cogscore rescore {EXAMPLE_DUMP} --out {tmp_path / 'out'} --formula "
        "procedural_learning=v9 --json --storage-option 'aws_secret_access_key=***'"
    )


def test_log_options_are_taken_after_the_command_too(tmp_path: Path) -> None:
    import os

    done = subprocess.run(
        [sys.executable, "-c", "from flows.cli import run; run()", "score", str(EXAMPLE_DUMP),
         "--out", str(tmp_path / "out"), "--log-format", "json", "--log-level=info"],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    logged = [json.loads(line) for line in done.stderr.strip().splitlines()]
    assert {"run started" in r["message"] for r in logged} == {True, False}


# --- 9: the error line is the last thing on stderr -------------------------------------------


def test_rust_panic_text_on_stderr_is_dropped_and_the_rest_passed_on() -> None:
    panic = (
        b"\nthread 'tokio-rt-worker' (4693) panicked at object_store/src/buffered.rs:369:41:"
        b"\nAlready shut down\nstack backtrace:\n"
        b"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
    )
    code = (
        "import os, sys\n"
        "from flows.present.native import NativeStderr\n"
        "with NativeStderr():\n"
        "    os.write(2, b'native line\\n')\n"
        f"    os.write(2, {panic!r})\n"
        "    os.write(2, b'after\\n')\n"
        "print('error: the last line', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stderr.splitlines() == ["native line", "after", "error: the last line"]


def test_with_the_prefect_engine_the_error_line_is_still_the_last_on_stderr(
    tmp_path: Path,
) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # its own temporary server
    done = subprocess.run(
        [sys.executable, "-c", "from flows.cli import run; run()", "score", str(EXAMPLE_DUMP),
         "--out", str(tmp_path / "out"), "--engine", "prefect", "--strict"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: strict run failed: completed with rejected input")


# --- Ctrl-C: one line, exit 130, recorded as such, no night marked ----------------------------


@pytest.mark.parametrize(
    ("command", "point"),
    [("rescore", "before-commit"), ("nightly", "scored")],
)
def test_ctrl_c_is_one_line_exit_130_recorded_and_marks_no_night(
    tmp_path: Path, command: str, point: str
) -> None:
    """SIGINT sent to ``cogscore`` (a real process, stopped at ``point``): after every night
    is staged and every table committed (``before-commit``, a rescore), or while the first
    night is scored (``scored``, a nightly of a new night). It commits no night: the runs
    table says so (exit 130, no counts, no night), and once a later run has succeeded,
    ``status`` marks no night failed."""
    import os
    import signal
    import time

    from flows.store.catalog import PAUSE_AT, PAUSE_FLAG
    from flows.store.output import Output

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    assert cli("nightly", str(dump), "--out", str(out))[0] == 0
    night_of_errors(dump, "2026-12-02", models=set())  # a third night, nothing spoiled
    args = [str(dump), "--out", str(out), "--engine", "local"]
    if command == "rescore":
        args += ["--formula", "procedural_learning=v1"]
    flag = tmp_path / "paused"
    victim = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", command, *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, PAUSE_AT: point, PAUSE_FLAG: str(flag)},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not flag.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists(), victim.communicate()
    victim.send_signal(signal.SIGINT)
    shown, said = victim.communicate(timeout=120)
    assert victim.returncode == 130, said
    assert shown == ""
    (line,) = said.strip().splitlines()
    assert line.startswith("error: interrupted: run ") and "wrote no night" in line, said

    runs_rows = Output.at(out).runs()
    mine = runs_rows.filter(runs_rows["run_id"] == runs_rows["run_id"][-1])  # the latest
    assert mine.height == 1, mine
    row = mine.row(0, named=True)
    assert (row["kind"], row["status"], row["night"]) == (command, "failed", None)
    assert row["episodes_scored"] is None  # it committed nothing
    details = json.loads(row["details"])
    assert (details["exit_code"], details["status"]) == (130, "failed")
    assert details["error"] == "interrupted"
    latest = json.loads(stdout("history", str(out), "--json"))[0]
    assert (latest["run_id"], latest["exit_code"], latest["nights"]) == (row["run_id"], 130, [])
    assert latest["episodes_scored"] in (None, 0)

    code, _, record = cli("nightly", str(dump), "--out", str(out), "--json")
    assert code == 0 and record is not None and record["nights_scored"] == ["2026-12-02"]
    report = json.loads(stdout("status", str(out), "--json"))
    assert report["nights"] == ["2026-11-30", "2026-12-01", "2026-12-02"]
    assert report["nights_failed"] == {}
    assert "FAILED" not in stdout("status", str(out))


# --- output that is not a terminal: no value cut or folded ------------------------------------


def test_off_a_terminal_no_value_is_cut_or_folded(tmp_path: Path) -> None:
    """Every command's output in a pipe with ``TERM=dumb`` (a cron log): a model name of 98
    characters whole on one line in the run summary's leaderboard, a rescore's diff,
    ``compare`` and ``sql``; ``history``'s nights on one line; no ``…`` anywhere."""
    import os

    import polars as pl

    from flows.store.output import Output

    long = "meta-llama/Llama-3.1-405B-Instruct-FP8-" + "extended-context-" * 3 + "a" * 8
    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"
    night_of_errors(dump, "2026-12-02", models=set())  # a third night, nothing spoiled
    for file in dump.rglob("*.parquet"):
        rows = pl.read_parquet(file)
        named = pl.when(pl.col("model") == "oracle-large").then(pl.lit(long))
        rows.with_columns(named.otherwise(pl.col("model")).alias("model")).write_parquet(file)
    env = {**os.environ, "TERM": "dumb"}

    def piped(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "…" not in done.stdout, done.stdout
        return done.stdout

    def whole(text: str) -> bool:
        return any(long in line for line in text.splitlines())

    assert whole(piped("score", str(dump), "--out", str(out), "--engine", "local"))
    rescore = ["rescore", str(dump), "--out", str(out), "--formula", "procedural_learning=v1"]
    moved = piped(*rescore)
    assert whole(moved.split("what the rescore moved")[1])
    assert whole(piped("compare", str(out)))
    assert whole(piped("sql", str(out), "FROM leaderboard"))  # every column: CSV here
    assert whole(piped("sql", str(out), "FROM leaderboard", "--format", "table"))
    assert whole(piped("leaderboard", str(out)))  # CSV here
    assert whole(piped("leaderboard", str(out), "--scope", "runtime_rl", "--format", "table"))
    table = piped("sql", str(out), "SELECT details FROM runs", "--format", "table")
    details = Output.at(out).runs()["details"]
    assert all(any(d in line for line in table.splitlines()) for d in details)
    nights = "2026-11-30, 2026-12-01, 2026-12-02"
    assert sum(nights in line for line in piped("history", str(out)).splitlines()) == 2
    assert "nights: 3" in piped("status", str(out))


# --- the nightly summary: "nothing new" only when nothing is -----------------------------------


def test_the_nightly_summary_says_nothing_new_only_when_every_night_is_unchanged(
    tmp_path: Path,
) -> None:
    import shutil

    dump, out = dump_of_two_nights(tmp_path), tmp_path / "out"

    def headline(*extra: str) -> tuple[int, str]:
        code, text, _ = cli("nightly", str(dump), "--out", str(out), *extra)
        (line,) = [line for line in text.splitlines() if line.startswith("nightly: ")]
        return code, line

    assert headline() == (0, "nightly: 2 night(s) scored (2026-11-30, 2026-12-01), 0 unchanged")
    assert headline() == (0, "nightly: 0 night(s) scored (nothing new), 2 unchanged")
    for night in ("2026-11-30", "2026-12-01"):
        (dump / f"dump_date={night}" / "_SUCCESS").touch()
    night_of_errors(dump, "2026-12-02", models=set())  # a new night, its marker not yet there
    assert headline("--require-marker") == (
        0,
        "nightly: no night scored, 1 waiting for _SUCCESS (2026-12-02), 2 unchanged",
    )
    shutil.rmtree(dump / "dump_date=2026-12-02")
    shutil.copytree(dump / "dump_date=2026-12-01", dump / "dump_date=2026-12-03")  # repeats
    assert headline() == (3, "nightly: no night scored, 1 failed (2026-12-03), 2 unchanged")
    shutil.rmtree(dump / "dump_date=2026-12-03")
    night_of_errors(dump, "2026-12-04")  # every episode a harness error: written, failed
    night_of_errors(dump, "2026-12-05", models=set())
    assert headline() == (
        3,
        "nightly: 1 night(s) scored (2026-12-05), 1 failed (2026-12-04), 2 unchanged",
    )


# --- sql in a fresh process: no Arrow thread left calling into Python at exit ---------------


def test_sql_reads_a_local_output_with_no_python_in_arrows_io(scored_out: Path) -> None:
    """deltalake's default file system for a pyarrow dataset is its storage handler behind
    a Python file system: Arrow's I/O threads take the GIL to use it, and one still doing
    so as the interpreter exits aborts the process ("terminate called without an active
    exception", exit -6, after the result was printed: the flaky ``sql`` count of
    tests/benchmarks/test_before_after.py). Every table of a local output is read through
    Arrow's own file system."""
    from pyarrow import fs

    from flows.present.sql import connect
    from flows.store.output import Output

    registered: dict[str, object] = {}

    class Recorded:
        def register(self, name: str, relation: object) -> None:
            registered[name] = relation

        def execute(self, query: str) -> None:
            pass

    connect(Output.at(scored_out), con=Recorded())
    datasets = {n: r for n, r in registered.items() if hasattr(r, "filesystem")}
    assert {"episode_scores", "runs"} <= set(datasets)  # tables with rows: datasets
    for name, dataset in datasets.items():
        system = dataset.filesystem  # type: ignore[attr-defined]
        assert isinstance(system, fs.SubTreeFileSystem), (name, system)
        assert isinstance(system.base_fs, fs.LocalFileSystem), (name, system.base_fs)
