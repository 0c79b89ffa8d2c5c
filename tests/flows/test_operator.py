"""What the operator sees on the command line: version, formulas, help that renders."""

from __future__ import annotations

from datetime import date
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from schemas.contract import Category
from tests.leaderboards import LONG_NAMES, three_models
from transforms.registry import DEFAULTS, TASK_DEFAULTS, VERSIONS
from transforms.registry import DEFAULTS as _DEFAULTS

# A new output pins the registry's default (the task files' rounding, v3, since issue 28).
DEFAULT_PROCEDURAL = _DEFAULTS["procedural_learning"]  # type: ignore[index]  # a str key

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_version_is_the_installed_package_version() -> None:
    assert run("--version").strip() == f"cogscore {metadata.version('cogscore')}"


def test_formulas_lists_every_version_with_a_description_and_the_defaults() -> None:
    lines = run("formulas").splitlines()
    expected = [(f"{c}={v}", DEFAULTS[c] == v) for c in Category for v in VERSIONS[c]]
    expected += [(f"{key}={v}", True) for key, v in TASK_DEFAULTS.items()]
    assert len(lines) == len(expected)
    for line, (key, default) in zip(lines, expected, strict=True):
        head, _, description = line.partition(": ")
        assert head == key + (" (default)" if default else "") and len(description) > 10


def words(text: str) -> str:
    """Help text without its box drawing and line breaks."""
    return " ".join(text.replace("│", " ").split())


def test_help_shows_defaults_in_words_not_swallowed_as_markup() -> None:
    assert "YYYY-MM-DD (default: the latest night)." in words(run("report", "--help"))
    assert "YYYY-MM-DD (default: today, UTC)." in words(run("simulate", "--help"))


def test_the_leaderboard_names_every_model_in_full_within_100_columns() -> None:
    from flows.present.leaderboard import leaderboard_table
    from schemas.comparisons import DEFAULT_LEVEL

    models, categories = three_models()
    lines = leaderboard_table(models, categories, DEFAULT_LEVEL, width=100)
    assert max(len(line) for line in lines) <= 100
    start, end = lines[0].index("model"), lines[0].index("score") - 1
    text = "".join(line[start:end].strip() for line in lines[2:])  # the model column, joined
    # Each name whole, in rank order; under a name, its rank's interval where it spans places.
    names = LONG_NAMES
    assert text == names[0] + names[1] + "ranks 2-3" + names[2] + "ranks 2-3"
    header = lines[0].split()
    assert header[-6:] == ["assoc.", "concept", "lang.", "obs.", "RL", "proc."]


def test_history_lists_the_runs_newest_first_and_status_says_what_the_output_holds(
    tmp_path: Path,
) -> None:
    import json
    import shutil

    from flows import runs
    from flows.store.lease import Lease
    from flows.store.output import Output

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-11-30", dump / "dump_date=2026-11-30")
    out = tmp_path / "out"
    first = runs.nightly(dump, out)
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", dump / "dump_date=2026-12-01")
    second = runs.rescore(dump, out, ["procedural_learning=v1"], since=date(2026, 12, 1))
    third = runs.nightly(dump, out)  # nothing new
    listed = json.loads(run("history", str(out), "--json"))
    assert [r["run_id"] for r in listed] == [third.run_id, second.run_id, first.run_id]
    assert [r["status"] for r in listed] == ["nothing_to_do", "succeeded", "succeeded"]
    assert listed[1]["nights"] == ["2026-12-01"] and listed[2]["nights"] == ["2026-11-30"]
    table = run("history", str(out))
    assert table.index(third.run_id[:8]) < table.index(first.run_id[:8])

    (dump / "dump_date=2026-12-02").mkdir()
    shutil.copy(
        EXAMPLE_DUMP / "dump_date=2026-12-01" / "part-0.parquet", dump / "dump_date=2026-12-02"
    )
    (dump / "dump_date=2026-11-30" / "_SUCCESS").touch()
    with Lease(Output.at(out).location, "a-run-in-flight", "cogscore nightly"):
        report = json.loads(run("status", str(out), str(dump), "--json"))
    assert report["nights"] == ["2026-11-30", "2026-12-01"]
    assert report["formula_set"]["procedural_learning"] == DEFAULT_PROCEDURAL
    assert report["nights_off_set"] == {"2026-12-01": "procedural_learning=v1"}
    assert (
        report["unscored"]["2026-11-30"]["episodes_harness_error"]
        == (Output.at(out).state().nights["2026-11-30"].counts["episodes_harness_error"])
    )
    assert "a-run-in-flight" in report["lease"]
    assert report["dump"]["new"] == ["2026-12-02"]
    assert report["dump"]["unchanged"] == ["2026-11-30", "2026-12-01"]
    assert report["dump"]["without_success_marker"] == ["2026-12-01", "2026-12-02"]
    assert set(report["table_versions"]) >= {"episode_scores", "model_scores"}
    lines = run("status", str(out))
    assert "night 2026-12-01 scored with other versions: procedural_learning=v1" in lines
    assert "lease: free" in lines


def record_of(args: list[str], code: int) -> dict[str, object]:
    """The run record that ``--json`` prints as the last line of stdout."""
    import json

    result = CliRunner().invoke(app, [*args, "--json"], terminal_width=100)
    assert result.exit_code == code, result.output
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_the_json_run_record_and_the_exit_codes(tmp_path: Path) -> None:
    from flows.records import RECORD_KEYS
    from flows.store.lease import Lease
    from flows.store.output import Output
    from schemas.exits import ExitCode

    out = str(tmp_path / "out")
    done = record_of(["score", str(EXAMPLE_DUMP), "--out", out, "--engine", "local"], 0)
    assert tuple(done) == RECORD_KEYS
    assert done["status"] == "succeeded" and done["exit_code"] == ExitCode.SUCCESS == 0
    assert done["run_id"] in set(Output.at(out).runs()["run_id"])
    assert done["nights_scored"] == ["2026-11-30", "2026-12-01"]
    assert done["counts"]["rows_read"] == (  # type: ignore[index]
        done["counts"]["rows_scored"] + done["counts"]["rows_rejected"]  # type: ignore[index]
    )
    assert set(done["table_versions"]) >= {"episode_scores", "model_scores"}  # type: ignore[arg-type]
    strict = record_of(["score", str(EXAMPLE_DUMP), "--out", out, "--strict"], 3)
    assert strict["status"] == "failed" and "strict run failed" in str(strict["error"])
    refused = record_of(["score", str(tmp_path / "nowhere"), "--out", out], 2)
    assert refused["status"] == "refused" and "does not exist" in str(refused["error"])
    with Lease(Output.at(out).location, "holder-run", "cogscore nightly"):
        busy = record_of(["nightly", str(EXAMPLE_DUMP), "--out", out], 5)
    assert busy["status"] == "refused" and "holder-run" in str(busy["error"])
    nothing = record_of(["nightly", str(EXAMPLE_DUMP), "--out", out], 0)
    assert nothing["status"] == "nothing_to_do" and nothing["nights_unchanged"]


def test_an_internal_error_is_one_line_and_exit_1_unless_debugging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows import runs

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("an invariant broke\nsecond line")

    monkeypatch.setattr(runs, "score", broken)
    args = ["score", str(EXAMPLE_DUMP), "--out", str(tmp_path / "out"), "--engine", "local"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        "error: internal error: RuntimeError: an invariant broke (COGSCORE_DEBUG=1 shows where)"
    )
    monkeypatch.setenv("COGSCORE_DEBUG", "1")
    assert isinstance(CliRunner().invoke(app, args).exception, RuntimeError)


def test_progress_shows_on_a_terminal_and_not_in_a_pipe_or_when_quiet(tmp_path: Path) -> None:
    """A recorded terminal run (``script`` gives the command a pseudo-terminal)."""
    import os
    import re
    import shlex
    import subprocess
    import sys

    from tests.dumps import example_dump_counts

    files = len(list(EXAMPLE_DUMP.rglob("*.parquet")))

    def command(out: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", "flows.cli", "score", str(EXAMPLE_DUMP), "--out",
                str(tmp_path / out), "--engine", "local", *extra]  # fmt: skip

    root = Path(__file__).parents[2]
    # The terminal the test runs in must not matter: a capable one is asked for here (a
    # dumb terminal gets no live display, as checked below).
    capable = {**os.environ, "TERM": "xterm-256color"}

    def recorded(args: list[str], env: dict[str, str]) -> str:
        """What the terminal showed of ``args`` (its stderr too: the failure names it)."""
        log = tmp_path / f"{Path(args[6]).name}.log"  # by the output's name
        done = subprocess.run(
            ["script", "-qfec", shlex.join(args), str(log)],
            cwd=root, capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        shown = log.read_text(errors="replace")
        assert done.returncode == 0, shown[-3000:] + done.stderr
        return shown

    seen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", recorded(command("tty"), capable))
    assert re.search(rf"files\b.*\b{files}/{files}\b", seen), seen[-2000:]
    assert re.search(r"nights\b.*\b2/2\b", seen) and "M rows/s" in seen
    assert "aggregating (bootstrap)" in seen  # a long step says what it is doing
    assert f"{example_dump_counts()['rows_read']} rows read" in seen  # and the summary follows
    piped = subprocess.run(command("pipe"), cwd=root, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert "files" not in piped.stderr and "━" not in piped.stderr
    assert "━" not in recorded(command("quiet", "--quiet"), capable)
    dumb = {**os.environ, "TERM": "dumb"}  # a terminal that cannot redraw: no live display
    shown = recorded(command("dumb"), dumb)
    assert "━" not in shown and f"{example_dump_counts()['rows_read']} rows read" in shown


def test_json_logs_are_one_object_per_line_each_with_the_run_id(tmp_path: Path) -> None:
    import json

    args = ["--log-level", "info", "--log-format", "json", "score", str(EXAMPLE_DUMP)]
    args += ["--out", str(tmp_path / "out"), "--engine", "local", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout.strip().splitlines()[-1])
    lines = [json.loads(line) for line in result.stderr.strip().splitlines()]
    assert len(lines) >= 4 and all(line["run_id"] == record["run_id"] for line in lines[:-1])
    assert any("night 2026-12-01 staged" in line["message"] for line in lines)
    assert any("2026-11-30, 2026-12-01" in line["message"] for line in lines)  # then written
    assert lines[-1]["message"].startswith("done in")
    missing = CliRunner().invoke(app, [*args[:4], "score", str(tmp_path / "nope"), "--out", "x"])
    (error,) = [json.loads(line) for line in missing.stderr.strip().splitlines()]
    assert (
        missing.exit_code == 2
        and error["level"] == "error"
        and "does not exist" in error["message"]
    )


PRODUCTION = (
    "score",
    "nightly",
    "rescore",
    "report",
    "sql",
    "vacuum",
    "status",
    "history",
    "compare",
    "leaderboard",
)


def test_every_option_of_the_production_commands_has_an_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.main import get_command

    group = get_command(app)
    for name in PRODUCTION:
        command = group.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            if param.name in ("help", "query", "storage_option"):
                continue  # storage options: COGSCORE_STORAGE_OPTIONS, read by the stores
            assert param.envvar, f"{name} --{param.name} has no environment variable"
            assert str(param.envvar).startswith("COGSCORE_")
        assert "COGSCORE_" in words(run(name, "--help"))  # and --help shows them
    monkeypatch.setenv("COGSCORE_DUMP_ROOT", str(EXAMPLE_DUMP))
    monkeypatch.setenv("COGSCORE_OUT", str(tmp_path / "from-env"))
    monkeypatch.setenv("COGSCORE_ENGINE", "local")
    monkeypatch.setenv("COGSCORE_FORMULA", "procedural_learning=v1 runtime_rl=v1")
    assert "nightly: 2 night(s) scored" in run("nightly")
    from flows.store.output import Output

    state = Output.at(tmp_path / "from-env").state()
    assert state.formula_set["procedural_learning"] == "v1"


def test_compare_prints_every_pair_with_the_difference_of_the_model_scores(
    tmp_path: Path,
) -> None:
    import json

    from tests.tables import read_table

    out = tmp_path / "out"
    run("score", str(EXAMPLE_DUMP), "--out", str(out), "--engine", "local")
    rows = json.loads(run("compare", str(out), "--json"))
    board = read_table(out, "model_scores").filter(dump_date="2026-12-01")
    score = dict(board.select("model", "score").iter_rows())
    assert len(rows) == len(score) * (len(score) - 1)  # every ordered pair of the night
    for row in rows:
        assert row["scope"] == "overall"
        assert row["diff"] == score[row["model_a"]] - score[row["model_b"]]
        if row["se"] is None:  # too few instances of a task to estimate it: no verdict
            assert row["ci_low"] is None and row["verdict"] == "unresolved"
        else:
            assert row["ci_low"] <= row["diff"] <= row["ci_high"]
            assert row["verdict"] in ("a_better", "b_better", "unresolved")
    some = sorted(score)[:2]
    picked = json.loads(run("compare", str(out), "--json", "--scope", "runtime_rl",
                            "--models", some[0], "--models", some[1]))  # fmt: skip
    assert {(r["model_a"], r["model_b"]) for r in picked} == {tuple(some), tuple(reversed(some))}
    assert all(r["scope"] == "runtime_rl" for r in picked)
    assert "a - b" in run("compare", str(out), "--date", "2026-11-30")


def test_the_read_commands_follow_the_same_exit_codes(tmp_path: Path) -> None:
    from flows.store.lease import Lease
    from flows.store.output import Output

    out = tmp_path / "out"
    run("score", str(EXAMPLE_DUMP), "--out", str(out), "--engine", "local")
    with Lease(Output.at(out).location, "holder-run", "cogscore nightly"):
        busy = CliRunner().invoke(app, ["vacuum", str(out)])
    assert busy.exit_code == 5 and "holder-run" in busy.stderr
    empty = CliRunner().invoke(app, ["report", str(tmp_path / "none"), "--html", "x.html"])
    assert empty.exit_code == 2 and "no cogscore output at" in empty.stderr
    bad = CliRunner().invoke(app, ["history", "s3:/not-a-url"])
    assert bad.exit_code == 2 and "malformed URL" in bad.stderr  # the user's to fix


def test_the_command_leaves_what_it_made_uncollected_at_exit() -> None:
    """``cogscore`` (``flows.cli.run``) freezes the garbage collector once its command is
    done: the process ends there, and a night's final collection took 0.1-0.2 s after its
    last line. The exit handlers still run, after the command's whole output."""
    import subprocess
    import sys

    code = (
        "import atexit, gc; from flows.cli import run; "
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0)); run()"
    )
    command = [sys.executable, "-c", code, "--version"]
    shown = subprocess.run(command, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    *output, last = shown.stdout.splitlines()
    assert output == [run("--version").strip()] and last == "frozen: True"
