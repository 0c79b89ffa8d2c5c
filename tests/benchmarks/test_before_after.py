"""benchmarks/before_after.py: each measurement runs the code of its own checkout, and the
whole comparison runs end to end on small dumps (the "before" in a worktree it removes)."""

from __future__ import annotations

import doctest
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks import before_after
from simulator import simulate


def test_doctests() -> None:
    assert doctest.testmod(before_after).failed == 0


def test_a_measurement_runs_its_own_checkout_s_code(tmp_path: Path) -> None:
    """``python -m`` imports from the working directory and ``PYTHONPATH``: both must be the
    checkout measured, or "before" would measure this checkout's code twice."""
    module = tmp_path / "checkout" / "benchmarks" / "measure.py"
    module.parent.mkdir(parents=True)
    (module.parent / "__init__.py").write_text("")
    module.write_text(
        "import json, sys\n"
        "big = bytearray(64 * 2**20)  # touched: resident\n"
        "print(json.dumps({'file': __file__, 'args': sys.argv[1:]}))\n"
    )
    result = before_after.measure("warm", Path("dump"), 3, checkout=tmp_path / "checkout")
    assert Path(result["file"]).resolve() == module.resolve()
    assert result["args"] == ["warm", "dump", "3"]
    assert result["peak_mib"] > 64


def _temporary_worktrees() -> set[str]:
    listed = subprocess.run(
        ["git", "-C", str(before_after.TOP), "worktree", "list"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    return {line for line in listed.stdout.splitlines() if "cogscore-before-" in line}


def test_before_and_after_on_small_dumps(tmp_path: Path) -> None:
    # another checkout's run may hold its own worktree meanwhile: only this run's must go
    held_before = _temporary_worktrees()
    data = tmp_path / "data"
    for episodes in (100, 200, 400):  # e100: the tiny night ``warm`` scores first
        simulate(data / f"e{episodes}", date="2026-12-01", episodes=episodes, seed=1)
    printed = before_after.main(
        ["--before", "HEAD", "--runs", "1", "--large-runs", "1", "--large", str(data / "e400"),
         "--small", str(data / "e200"), "--realistic", str(data / "none")]
    )  # fmt: skip
    lines = printed.splitlines()
    assert lines[0] == "| | before (HEAD) | after (this checkout) |"
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| 400 episodes (0.0 M rows), fresh process",
        "| 400 episodes, peak MiB",
        "| 200 episodes, net (warm)",
        "| 200 episodes, peak MiB",
        "| peak growth per episode added, bytes",
    ]
    assert all(line.count("|") == 4 for line in lines)
    assert _temporary_worktrees() <= held_before  # its own worktree removed


def test_a_night_is_scored_end_to_end_by_the_command_of_a_checkout(tmp_path: Path) -> None:
    """Issue 30's measurement: ``cogscore score`` in a fresh process, its data files and a
    count through ``cogscore sql``."""
    night = tmp_path / "e100"
    simulate(night, date="2026-12-01", episodes=100, seed=1)
    run = before_after.scored_night(night, before_after.TOP, count=True)
    assert run["seconds"] >= 0 and run["cpu_s"] >= 0 and run["peak_mib"] > 50
    assert run["data_files"] >= 6  # a file per category partition at least
    assert run["count_s"] is not None and run["count_s"] >= 0


def sql_failing(exit_code: int, said: str) -> Any:
    """``run_fresh`` where ``cogscore score`` succeeds and ``cogscore sql`` fails so."""

    def fresh(args: list[str], checkout: Path | None = None) -> dict[str, Any]:
        failed = "sql" in args
        return {
            "returncode": exit_code if failed else 0,
            "stdout": "",
            "stderr": said if failed else "",
            "seconds": 1.0,
            "cpu_s": 1.0,
            "peak_mib": 100.0,
        }

    return fresh


def test_a_failed_sql_count_stops_the_measurement_with_the_childs_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count through ``cogscore sql`` failing (it aborted at exit: 1 in 1,282 tests on a
    loaded machine) names the child's stderr, where it was a silent ``count_s`` None."""
    aborted = "terminate called without an active exception\n"
    monkeypatch.setattr(before_after, "run_fresh", sql_failing(-6, aborted))
    with pytest.raises(SystemExit, match="sql count of .* exited -6:\n" + aborted):
        before_after.scored_night(tmp_path, before_after.TOP, count=True)


def test_a_checkout_older_than_sql_has_no_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = "│ No such command 'sql'.                                                       │\n"
    monkeypatch.setattr(before_after, "run_fresh", sql_failing(2, box))  # typer's, as then
    assert before_after.scored_night(tmp_path, before_after.TOP, count=True)["count_s"] is None


def test_the_night_table_and_targets_read_every_run() -> None:
    def runs(*seconds: float) -> list[dict[str, float]]:
        return [{"seconds": s, "cpu_s": s, "peak_mib": 100 * s, "data_files": 6} for s in seconds]

    names = ["584feea", before_after.THIS]
    results = {
        "tiny night (100 episodes)": {"584feea": runs(1.6, 1.7), before_after.THIS: runs(1.1, 1.2)},
        "100,000 episodes, distinct text, 8 files": {
            "584feea": runs(3.7, 4.1),
            before_after.THIS: runs(4.5, 4.6),
        },
        before_after.ONE_FILE: {before_after.THIS: runs(2.0)},
        before_after.SMALL: {
            before_after.THIS: [{**runs(12.0)[0], "data_files": 72, "count_s": 1.2}]
        },
    }
    table = before_after.night_table(results, names)
    assert "| tiny night (100 episodes) | wall s | 1.60-1.70 | 1.10-1.20 |" in table
    assert "| | sql count(*) s |  | 1.20 |" in table
    targets = before_after.night_targets(results, "584feea").splitlines()
    assert targets == [
        "- tiny night (100 episodes), wall at or below 584feea's: met (1.15 s against 1.65 s)",
        "- 100,000 episodes, distinct text, 8 files, wall at or below 584feea's: NOT MET "
        "(4.55 s against 3.90 s)",
        "- 10,000 one-episode files, time at most 10x one file's: met (6.0x)",
        "- 10,000 one-episode files, peak memory at most 10x one file's: met (6.0x)",
    ]
