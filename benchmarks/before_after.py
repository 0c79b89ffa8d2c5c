"""Issue 17's before and after: the code the issue started from against this checkout's, on
the same dumps, with the same harness (``benchmarks.measure``), runs interleaved, each in a
fresh process whose peak memory is measured (``make bench`` runs it; README "Performance",
"Against the targets of issue 17").

python -m benchmarks.before_after [--before 7a17ed9] [--runs 3] [--large-runs 2]

The "before" code is checked out in a temporary git worktree (removed afterwards), with this
checkout's ``benchmarks/data`` linked into it; each measurement runs from its own checkout
with ``PYTHONPATH`` set to it, so that ``python -m`` imports that checkout's code. Prints a
Markdown table: the 4 M-episode night in a fresh process, the 100,000-episode night warm
(beyond start-up), the peak growth per episode between them, and the realistic-text dump's
net against its read floor.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.run import measure, rows_of

TOP = Path(__file__).parents[1]
DATA = TOP / "benchmarks" / "data"
ISSUE_START = "7a17ed9"  # the code issue 17 started from


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """``rev`` checked out in a temporary worktree beside none of this checkout's files,
    with ``benchmarks/data`` linked to this checkout's (the same dumps)."""
    with tempfile.TemporaryDirectory(prefix="cogscore-before-") as scratch:
        where = Path(scratch) / "checkout"
        git = ["git", "-C", str(TOP)]
        quiet = {"check": True, "stdout": sys.stderr}  # the table alone on stdout
        subprocess.run([*git, "worktree", "add", "--detach", str(where), rev], **quiet)
        try:
            (where / "benchmarks" / "data").symlink_to(DATA.resolve())
            yield where
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(where)], **quiet)


def interleaved(
    checkouts: dict[str, Path], what: str, dump: Path, runs: int, *args: int
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` rounds, each measuring every checkout once, in turn."""
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in checkouts}
    for _ in range(runs):
        for label, checkout in checkouts.items():
            results[label].append(measure(what, dump, *args, checkout=checkout))
            print(f"  {label} {what} {dump.name}: done", file=sys.stderr, flush=True)
    return results


def span(values: Sequence[float], digits: int = 2) -> str:
    """The range of ``values``, as the README writes them.

    >>> span([2.5, 2.84, 2.7]), span([7060.2, 7203.4], 0), span([4.14])
    ('2.50-2.84', '7,060-7,203', '4.14')
    """
    low, high = f"{min(values):,.{digits}f}", f"{max(values):,.{digits}f}"
    return low if low == high else f"{low}-{high}"


def growth(large: Sequence[float], small: Sequence[float], episodes: int) -> list[float]:
    """Peak growth per episode added, in bytes, for every pair of a large and a small run.

    >>> [round(g, 1) for g in growth([1440.0], [564.0, 563.0], 3_900_000)]
    [235.5, 235.8]
    """
    return sorted((big - little) * 2**20 / episodes for big in large for little in small)


def table(
    results: dict[str, dict[str, list[dict[str, Any]]]],
    large: Path,
    small: Path,
    large_episodes: int,
    small_episodes: int,
) -> str:
    """The Markdown table of every measurement, a column per checkout."""
    labels = list(next(iter(results.values())))
    large_rows, small_rows = rows_of(large), rows_of(small)

    def cells(fmt: Any) -> str:
        return " | ".join(fmt(label) for label in labels)

    def seconds(what: str, label: str) -> list[float]:
        return [r["seconds"] for r in results[what][label]]

    def peaks(what: str, label: str) -> list[float]:
        return [r["peak_mib"] for r in results[what][label]]

    def rate(what: str, rows: int) -> Any:
        return lambda label: (
            f"{span([rows / s / 1e6 for s in seconds(what, label)])} M rows/s "
            f"({span(seconds(what, label), 1)} s)"
        )

    def floor_ratio(label: str) -> str:
        ratios = [
            r["net"]["seconds"] / min(r["read"]["seconds"], r["needed"]["seconds"])
            for r in results["floor"][label]
        ]
        return f"{span(ratios)}x"

    added = large_episodes - small_episodes

    def grown(label: str) -> str:
        return span(growth(peaks("large", label), peaks("small", label), added), 0)

    lines = [
        f"| | {' | '.join(labels)} |",
        f"|---|{'---:|' * len(labels)}",
        f"| {large_episodes:,} episodes ({large_rows / 1e6:.1f} M rows), fresh process "
        f"| {cells(rate('large', large_rows))} |",
        f"| {large_episodes:,} episodes, peak MiB "
        f"| {cells(lambda label: span(peaks('large', label), 0))} |",
        f"| {small_episodes:,} episodes, net (warm) | {cells(rate('small', small_rows))} |",
        f"| {small_episodes:,} episodes, peak MiB "
        f"| {cells(lambda label: span(peaks('small', label), 0))} |",
        f"| peak growth per episode added, bytes | {cells(grown)} |",
    ]
    if "floor" in results:
        lines.append(f"| realistic text, net against the read floor | {cells(floor_ratio)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default=ISSUE_START, help="the code to compare against")
    parser.add_argument("--runs", type=int, default=3, help="runs of each small measurement")
    parser.add_argument("--large-runs", type=int, default=2, help="runs of the large night")
    parser.add_argument("--large", type=Path, default=DATA / "e4000000")
    parser.add_argument("--small", type=Path, default=DATA / "e100000")
    parser.add_argument("--realistic", type=Path, default=DATA / "realistic-e100000")
    args = parser.parse_args(argv)
    large_episodes, small_episodes = (
        int(p.name.removeprefix("e")) for p in (args.large, args.small)
    )
    with worktree(args.before) as before:
        checkouts = {f"before ({args.before})": before, "after (this checkout)": TOP}
        results = {
            "small": interleaved(checkouts, "warm", args.small, args.runs),
            "large": interleaved(checkouts, "score", args.large, args.large_runs),
        }
        if args.realistic.exists():
            results["floor"] = interleaved(checkouts, "floor", args.realistic, 1, args.runs)
    return table(results, args.large, args.small, large_episodes, small_episodes)


if __name__ == "__main__":
    print(main())
