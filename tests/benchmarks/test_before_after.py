"""benchmarks/before_after.py: each measurement runs the code of its own checkout, and the
whole comparison runs end to end on small dumps (the "before" in a worktree it removes)."""

from __future__ import annotations

import doctest
import subprocess
from pathlib import Path

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


def test_before_and_after_on_small_dumps(tmp_path: Path) -> None:
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
    worktrees = subprocess.run(
        ["git", "-C", str(before_after.TOP), "worktree", "list"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "cogscore-before-" not in worktrees  # removed
