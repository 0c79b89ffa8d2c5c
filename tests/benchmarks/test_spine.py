"""benchmarks/spine.py on a small dump of two nights: the nightly command's spine stays
within issue 30's target, and every crossing names the file it comes from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import spine
from simulator.dump import simulate_dump

# Issue 30's target for the calls at most four levels below the command: 60 crossings over
# 12 files. Issue 39 bounds a module at 500 lines: the run summary's leaderboard became a
# module of its own (flows/present/leaderboard.py, 232 lines, which summary.py's 323 could
# not take back), the one file the spine gained; it crosses files 32 times (issue 30: 121).
MOST_CROSSINGS, MOST_FILES, DEPTH = 60, 13, 4

# In a process of its own: the command line takes over this process's stderr and logging.
TRACED = """
import json, sys
from benchmarks import spine
edges, touched = spine.trace(sys.argv[1:], "nightly", int({depth}))
rows = [[a, b, n] for (a, b), n in edges.items()]
print(json.dumps({{"edges": rows, "touched": sorted(touched)}}))
"""


def test_nightly_spine_is_within_the_target_and_every_caller_is_known(tmp_path: Path) -> None:
    dump, out = tmp_path / "dump", tmp_path / "out"
    for seed, night in enumerate(("2026-11-30", "2026-12-01"), 1):
        simulate_dump(dump, date=night, episodes=20, seed=seed)
    args = ["nightly", str(dump), "--out", str(out), "--engine", "local", "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", TRACED.format(depth=DEPTH), *args],
        cwd=spine.ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    traced = json.loads(done.stdout.strip().splitlines()[-1])
    edges = {(a, b): n for a, b, n in traced["edges"]}
    touched = traced["touched"]
    assert (out / "runs").is_dir()  # the command ran to its end
    # A caller the trace cannot place is a frame whose level was forgotten or mistaken
    # (a frame id reused after its frame returned): the counts would be wrong.
    assert all(caller != "?" for caller, _ in edges)
    assert all(path.split("/")[0] in spine.PACKAGES for path in touched)
    assert "flows/cli/scoring.py" in touched
    assert sum(edges.values()) <= MOST_CROSSINGS
    assert len(touched) <= MOST_FILES, touched
