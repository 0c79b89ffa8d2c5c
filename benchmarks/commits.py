"""What one commit per table costs: a 30-night nightly backfill and a 30-night rescore, time
and peak memory, before (a table committed per night) and after (each table committed once
per run, its nights staged first), the runs interleaved, each command in a fresh process.

python -m benchmarks.commits [--before REV] [--nights 30] [--episodes 3000] [--runs 2]

The "before" code is checked out in a temporary worktree (``benchmarks.before_after``);
both run ``python -m flows.cli`` from their own checkout on the same dump
(``benchmarks.run.history``). Prints a Markdown table: seconds, peak resident memory (from
``wait4``) and the commits each run made to ``episode_scores`` (its Delta versions).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.before_after import TOP, span, worktree
from benchmarks.run import history

# The last commit before a run committed each table once (issue 30).
BEFORE = "ce322e4"


def command(checkout: Path, *args: str) -> dict[str, Any]:
    """``cogscore ARGS`` from ``checkout`` in a fresh process: seconds and peak MiB."""
    import time

    env = {**os.environ, "PYTHONPATH": str(checkout), "COGSCORE_QUIET": "1"}
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 3):  # 3: the simulated dump's rejects are reported, not a failure
            err.seek(0)
            raise SystemExit(f"{checkout}: cogscore {' '.join(args)} exited {code}:\n{err.read()}")
    return {"seconds": time.perf_counter() - started, "peak_mib": usage.ru_maxrss / 1024}


def commits(out: Path, table: str = "episode_scores") -> int:
    from deltalake import DeltaTable

    return len(DeltaTable(str(out / table)).history())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=2)
    options = parser.parse_args()
    dump = history(options.nights, options.episodes)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with worktree(options.before) as before:
        checkouts = {f"before ({options.before})": before, "after (this checkout)": TOP}
        for _ in range(options.runs):
            for label, checkout in checkouts.items():
                with tempfile.TemporaryDirectory(prefix="cogscore-commits-") as scratch:
                    out = Path(scratch) / "out"
                    backfill = command(checkout, "nightly", str(dump), "--out", str(out))
                    backfill["commits"] = commits(out)
                    rescore = command(
                        checkout, "rescore", str(dump), "--out", str(out),
                        "--formula", "procedural_learning=v1",
                    )  # fmt: skip
                    rescore["commits"] = commits(out) - backfill["commits"]
                runs = results.setdefault(label, {"backfill": [], "rescore": []})
                runs["backfill"].append(backfill)
                runs["rescore"].append(rescore)
                print(f"  {label}: done", file=sys.stderr, flush=True)
    print(
        f"{options.nights} nights of {options.episodes:,} episodes, {options.runs} runs each, "
        "interleaved, fresh processes\n"
    )
    print("| run | code | seconds | peak MiB | commits to episode_scores |")
    print("|---|---|---:|---:|---:|")
    for kind in ("backfill", "rescore"):
        for label, runs in results.items():
            rows = runs[kind]
            print(
                f"| {'nightly backfill' if kind == 'backfill' else 'rescore'} | {label} | "
                f"{span([r['seconds'] for r in rows])} | {span([r['peak_mib'] for r in rows], 0)}"
                f" | {span([r['commits'] for r in rows], 0)} |"
            )


if __name__ == "__main__":
    main()
