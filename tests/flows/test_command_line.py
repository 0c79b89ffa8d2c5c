"""The command line as a person meets it: its help read at any width (no sentence broken
where the next word fits), a pipe whose reader goes away (``| head``: the command ends
quietly, exit 141; a scoring run with the code its runs table records), an OUT that is a
file (bad input, exit 2) and the lease of a run killed on this host (stale, said so)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from flows.cli import app
from flows.overview import history
from flows.store import objects
from flows.store.lease import LEASE_KEY, Holder
from flows.store.output import Output
from schemas.exits import ExitCode
from tests.tables import read_table

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def broken_sentences(shown: str, width: int) -> list[str]:
    """The line breaks of a help page made where the next word would have fitted on the line:
    in the text under the usage line, and in the commands' list (each command's help is the
    last column: a line of it continues a row where the row's first cells are blank)."""
    found, panel = [], ""
    lines = shown.splitlines()
    for above, below in itertools.pairwise(lines):
        if above.startswith("╭"):
            panel = above
        room = width - 1  # rich leaves the last column free
        if above.startswith("│") and below.startswith("│"):
            if "Commands" not in panel:
                continue  # options: each help is one string, folded by rich alone
            above, below = above.strip("│ \n").rstrip(), below.rstrip().rstrip("│").rstrip()[1:]
            above = " " + above
            room -= 2
            if len(below) - len(below.lstrip()) < 3:
                continue  # a new row
        elif above[:1] in "╭╰│" or below[:1] in "╭╰│":
            continue
        above, below = above.rstrip(), below.rstrip()
        if not above.strip() or not below.strip() or "Usage:" in above:
            continue
        if len(above) + 1 + len(below.split()[0]) <= room:
            found.append(f"{above}\n{below}")
    return found


@pytest.mark.parametrize("width", [80, 200])
def test_help_breaks_no_sentence_where_the_next_word_fits(width: int) -> None:
    for name in ["", *COMMANDS]:
        shown = CliRunner().invoke(
            app, [*([name] if name else []), "--help"], env={"COLUMNS": str(width)}
        )
        assert shown.exit_code == 0, shown.output
        assert "Usage:" in shown.stdout
        assert broken_sentences(shown.stdout, width) == [], name


def test_each_command_is_one_line_in_the_commands_list() -> None:
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout
    rows = [line for line in shown.splitlines() if line.startswith("│ ")]
    listed = [row.split()[1] for row in rows if row.split()[1] in COMMANDS]
    assert listed == [c for c in typer.main.get_command(app).commands]  # type: ignore[attr-defined]
    assert all(row.split()[1] in COMMANDS or row.split()[1].startswith("-") for row in rows)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pipe") / "out"
    result = CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def closed_stdout(*args: str, stderr_too: bool = False) -> tuple[int, str]:
    """``cogscore ARGS`` whose stdout (``stderr_too``: and stderr, ``2>&1``) is a pipe nobody
    reads (its read end closed before the command starts: the first line it writes meets
    EPIPE, as after ``| head`` has read its line): the exit code and stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=ROOT, stdout=write, stderr=write if stderr_too else subprocess.PIPE, text=True,
            timeout=300, env={**os.environ, "COGSCORE_QUIET": "1"},
        )  # fmt: skip
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_a_reader_gone_ends_every_command_quietly(scored: Path) -> None:
    episode = read_table(scored, "episode_scores").row(0, named=True)
    out = str(scored)
    for args in (
        ["formulas"],
        ["--help"],
        ["explain", "--help"],
        ["explain", out, "--episode", episode["episode_id"], "--night", episode["dump_date"]],
        ["compare", out],
        ["sql", out, "FROM episode_scores"],
        ["status", out],
        ["history", out],
    ):
        assert closed_stdout(*args) == (ExitCode.CLOSED_PIPE, ""), args


@pytest.mark.parametrize("stderr_too", [False, True])
def test_a_scoring_run_whose_reader_is_gone_exits_with_the_code_it_recorded(
    tmp_path: Path, stderr_too: bool
) -> None:
    out = str(tmp_path / "out")
    code, said = closed_stdout("score", str(EXAMPLE_DUMP), "--out", out, stderr_too=stderr_too)
    said = said or ""  # none to read where stderr is the closed pipe too
    assert (code, "Traceback" in said, "internal error" in said) == (0, False, False), said
    (recorded,) = history(Output.at(out))["exit_code"].to_list()
    assert recorded == code


@pytest.mark.parametrize("command", ["status", "sql", "history", "compare", "explain", "unlock"])
def test_an_out_that_is_a_file_is_bad_input(command: str, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not an output")
    extra = {"sql": ["SELECT 1"], "explain": ["--episode", "e"], "unlock": ["--run", "r"]}
    for out, said in (
        (blocker, f"{blocker} is a file, not a folder"),
        (blocker / "out", f"{blocker / 'out'} is inside {blocker}, which is a file"),
    ):
        result = CliRunner().invoke(app, [command, str(out), *extra.get(command, [])])
        assert result.exit_code == ExitCode.USAGE, result.output
        assert said in result.output and "Errno" not in result.output
    assert blocker.read_text() == "not an output"  # nothing written


def test_status_says_a_lease_whose_process_this_host_killed_is_stale(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)]).exit_code == 0
    holding = (
        "import sys, time; from flows.store.lease import Lease; from flows.store.output import"
        " Output; Lease(Output.at(sys.argv[1]).location, 'killed-run', 'cogscore nightly')"
        ".acquire(); print('held', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holding, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        alive = CliRunner().invoke(app, ["status", str(out)]).stdout
        assert "run killed-run (cogscore nightly)" in alive and "stale" not in alive
    finally:
        holder.kill()  # kill -9
        holder.wait()
    said = " ".join(CliRunner().invoke(app, ["status", str(out)]).stdout.split())
    assert f"stale: its process {holder.pid} is gone (this host)" in said, said
    assert f"`cogscore unlock {out} --run killed-run` frees it now" in said
    report = json.loads(CliRunner().invoke(app, ["status", str(out), "--json"]).stdout)
    assert f"stale: its process {holder.pid} is gone" in report["lease"]
    # The next run on this host takes the stale lease over, as status says.
    again = CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "lease: free" in CliRunner().invoke(app, ["status", str(out)]).stdout


def test_status_cannot_tell_of_another_hosts_lease(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["score", str(EXAMPLE_DUMP), "--out", str(out)]).exit_code == 0
    now = datetime.now(UTC)
    far = Holder("another-host", 4242, "far-run", "cogscore nightly", now, now + timedelta(hours=6))
    assert objects.put_if_absent(Output.at(out).location, LEASE_KEY, far.to_json()) is not None
    shown = CliRunner().invoke(app, ["status", str(out)]).stdout
    assert "run far-run (cogscore nightly) on another-host" in shown and "stale" not in shown
