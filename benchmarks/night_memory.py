"""Memory flat with the night (issue 39): ``cogscore score`` of one simulated night into a new
output, peak resident memory (``wait4``, as ``/usr/bin/time -f %M`` reports it) at several
night sizes, before and after, the runs interleaved, each command in a fresh process; and the
peak's growth per episode from the smallest night to each larger one.

python -m benchmarks.night_memory [--before REV] [--episodes 100000 500000 2000000] [--runs 2]

The dumps are the issue's: ``cogscore simulate --date 2026-12-01 --seed 4
--episodes-per-file 25000`` (cached under ``benchmarks/data/night-memory/``). The "before"
code is checked out in a temporary worktree (``benchmarks.before_after``); both run
``python -m flows.cli`` from their own checkout (``benchmarks.commits.command``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.before_after import DATA, TOP, growth, span, worktree
from benchmarks.commits import command

# The last commit before issue 39's changes.
BEFORE = "bd04193"
NIGHT = "2026-12-01"


def night_dump(episodes: int) -> Path:
    """The issue's simulated night of ``episodes`` episodes (made once)."""
    root = DATA / "night-memory" / f"d{episodes}"
    if not root.exists():
        partial = root.with_name(root.name + ".partial")
        subprocess.run(
            [
                sys.executable, "-m", "flows.cli", "simulate", "--out", str(partial),
                "--date", NIGHT, "--episodes", str(episodes), "--seed", "4",
                "--episodes-per-file", "25000",
            ],
            cwd=TOP, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        partial.rename(root)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--episodes", type=int, nargs="+", default=[100_000, 500_000, 2_000_000])
    parser.add_argument("--runs", type=int, default=2)
    options = parser.parse_args()
    sizes = sorted(options.episodes)
    dumps = {n: night_dump(n) for n in sizes}
    results: dict[str, dict[int, list[dict[str, Any]]]] = {}
    with worktree(options.before) as before:
        checkouts = {f"before ({options.before})": before, "after (this checkout)": TOP}
        for _ in range(options.runs):
            for n, dump in dumps.items():
                for label, checkout in checkouts.items():
                    with tempfile.TemporaryDirectory(prefix="cogscore-night-memory-") as scratch:
                        out = str(Path(scratch) / "out")
                        run = command(checkout, "score", str(dump), "--out", out)
                    results.setdefault(label, {}).setdefault(n, []).append(run)
                    print(f"  {label}, {n:,} episodes: done", file=sys.stderr, flush=True)
    smallest = sizes[0]
    print(f"one night each, {options.runs} runs each, interleaved, fresh processes and outputs\n")
    print("| code | episodes | seconds | peak MiB | growth B/episode from the smallest |")
    print("|---|---:|---:|---:|---:|")
    for label, by_size in results.items():
        small = [r["peak_mib"] for r in by_size[smallest]]
        for n, runs in by_size.items():
            peaks = [r["peak_mib"] for r in runs]
            grown = span(growth(peaks, small, n - smallest), 0) if n > smallest else ""
            print(
                f"| {label} | {n:,} | {span([r['seconds'] for r in runs])} | {span(peaks, 0)}"
                f" | {grown} |"
            )


if __name__ == "__main__":
    main()
