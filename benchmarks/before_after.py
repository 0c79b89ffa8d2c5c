"""Before and after, on the same dumps, with the same harness, runs interleaved, each in a
fresh process whose peak memory is measured (``make bench`` runs both comparisons; the
figures are in docs/).

python -m benchmarks.before_after [--before 7a17ed9] [--runs 3] [--large-runs 2]
python -m benchmarks.before_after --night [--before 584feea --before f5f6264 --before main]
    [--runs 5] [--small-runs 2] [--small-before main]

Issue 17's comparison (the default): the 4 M-episode night in a fresh process, the
100,000-episode night warm (beyond start-up), the peak growth per episode between them,
and the realistic-text dump's net against its read floor.

Issue 30's (``--night``): ``cogscore score DUMP --out OUT`` end to end, as users run it,
in a fresh process per run (its wall time from here, start-up included, its CPU time and
peak memory), on a tiny night (100 episodes), a night of 100,000 episodes of distinct
text in 8 files (``benchmarks.realistic``), and 10,000 one-episode files against the same
episodes in one file, with the data files of ``episode_scores`` each run leaves and the
time of ``cogscore sql OUT "SELECT count(*) FROM episode_scores"`` (a fresh process).
The small files are measured for ``--small-before`` and this checkout only (a run of them
took 282 s before).

Each "before" is checked out in a temporary git worktree (removed afterwards), with this
checkout's ``benchmarks/data`` linked into it; each measurement runs from its own checkout
with ``PYTHONPATH`` set to it, so that ``python -m`` imports that checkout's code. Prints
Markdown tables.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.run import dump, measure, rows_of, run_fresh

TOP = Path(__file__).parents[1]
DATA = TOP / "benchmarks" / "data"
ISSUE_START = "7a17ed9"  # the code issue 17 started from
# Issue 30: before the cycle that made a night slower, after it, and main as it stands.
NIGHT_BEFORE = ("584feea", "f5f6264", "main")
THIS = "this checkout"


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


def scored_night(night: Path, checkout: Path, count: bool = False) -> dict[str, Any]:
    """``cogscore score NIGHT --out OUT`` with ``checkout``'s code in a fresh process: its
    wall and CPU seconds and peak MiB; the data files of ``episode_scores`` it left, and
    (``count``) the seconds of ``cogscore sql OUT "SELECT count(*) FROM episode_scores"``
    in a fresh process (None where that checkout has no such command)."""
    with tempfile.TemporaryDirectory(prefix="cogscore-night-") as scratch:
        out = Path(scratch) / "out"
        run = run_fresh(["-m", "flows.cli", "score", str(night), "--out", str(out)], checkout)
        if run["returncode"]:
            raise SystemExit(f"{checkout}: score {night} failed:\n{run['stderr'][-3000:]}")
        result = {k: run[k] for k in ("seconds", "cpu_s", "peak_mib")}
        result["data_files"] = data_files(out / "episode_scores")
        if count:
            query = ["-m", "flows.cli", "sql", str(out), "SELECT count(*) FROM episode_scores"]
            counted = run_fresh(query, checkout)
            code = counted["returncode"]
            if code and "no such command" not in counted["stderr"].lower():
                raise SystemExit(
                    f"{checkout}: sql count of {out} exited {code}:\n{counted['stderr'][-3000:]}"
                )
            result["count_s"] = None if code else counted["seconds"]
        return result


def data_files(table: Path) -> int:
    """The data files of a table: of its latest version where it is a Delta table, else
    every Parquet file under it (the plain Parquet tables of older checkouts)."""
    if (table / "_delta_log").is_dir():
        from deltalake import DeltaTable

        return len(DeltaTable(str(table)).file_uris())
    return sum(1 for _ in table.rglob("*.parquet"))


NIGHTS = {  # label: (dump, measured for every checkout)
    "tiny night (100 episodes)": (lambda: dump(100), True),
    "100,000 episodes, distinct text, 8 files": (lambda: _realistic(100_000, 8), True),
    "10,000 episodes in one file": (lambda: dump(10_000, 1), False),
    "10,000 one-episode files": (lambda: dump(10_000, 10_000), False),
}
SMALL, ONE_FILE = "10,000 one-episode files", "10,000 episodes in one file"


def _realistic(episodes: int, files: int) -> Path:
    from benchmarks.realistic import realistic

    return realistic(episodes, files)


def nights(
    checkouts: dict[str, Path], small: Sequence[str], runs: int, small_runs: int
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every night's runs, interleaved: each round runs each checkout once on each night
    (the small-file nights for the ``small`` checkouts only, in the first ``small_runs``
    rounds)."""
    roots = {label: make() for label, (make, _) in NIGHTS.items()}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {n: {} for n in NIGHTS}
    for round_ in range(runs):
        for label, (_, everyone) in NIGHTS.items():
            if not everyone and round_ >= small_runs:
                continue
            for name, checkout in checkouts.items():
                if everyone or name in small:
                    run = scored_night(roots[label], checkout, count=label == SMALL)
                    results[label].setdefault(name, []).append(run)
                    print(f"  {name} {label}: {run['seconds']:.2f} s", file=sys.stderr, flush=True)
    return results


def night_table(results: dict[str, dict[str, list[dict[str, Any]]]], names: list[str]) -> str:
    """The Markdown table of ``nights``: for each night, a row of wall seconds, one of CPU
    seconds and one of peak MiB (each the range of the runs), per checkout."""
    lines = [f"| night | | {' | '.join(names)} |", f"|---|---|{'---:|' * len(names)}"]

    def cells(night: str, key: str, digits: int) -> str:
        runs = results[night]
        return " | ".join(
            span([r[key] for r in runs[n]], digits)
            if n in runs and runs[n][0].get(key) is not None
            else ""
            for n in names
        )

    for night in results:
        lines.append(f"| {night} | wall s | {cells(night, 'seconds', 2)} |")
        lines.append(f"| | CPU s | {cells(night, 'cpu_s', 2)} |")
        lines.append(f"| | peak MiB | {cells(night, 'peak_mib', 0)} |")
        lines.append(f"| | episode_scores data files | {cells(night, 'data_files', 0)} |")
        if night == SMALL:
            lines.append(f"| | sql count(*) s | {cells(night, 'count_s', 2)} |")
    return "\n".join(lines)


def night_targets(results: dict[str, dict[str, list[dict[str, Any]]]], base: str) -> str:
    """Issue 30's targets, on medians: this checkout at or below ``base`` on the tiny and
    the 100,000-episode nights; the small files within 10x of one file's time and memory."""

    def median(night: str, name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[night][name])

    lines = []
    for night in list(NIGHTS)[:2]:
        if base in results[night]:
            mine, theirs = median(night, THIS, "seconds"), median(night, base, "seconds")
            met = "met" if mine <= theirs else "NOT MET"
            lines.append(
                f"- {night}, wall at or below {base}'s: {met} ({mine:.2f} s against {theirs:.2f} s)"
            )
    if not results[SMALL].get(THIS):  # --small-runs 0
        return "\n".join(lines)
    for key, what in (("seconds", "time"), ("peak_mib", "peak memory")):
        ratio = median(SMALL, THIS, key) / median(ONE_FILE, THIS, key)
        met = "met" if ratio <= 10 else "NOT MET"
        lines.append(
            f"- 10,000 one-episode files, {what} at most 10x one file's: {met} ({ratio:.1f}x)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--night", action="store_true", help="issue 30's comparison")
    parser.add_argument(
        "--before", action="append", help="the code to compare against (repeat: several)"
    )
    parser.add_argument("--runs", type=int, default=None, help="runs of each small measurement")
    parser.add_argument("--large-runs", type=int, default=2, help="runs of the large night")
    parser.add_argument("--small-runs", type=int, default=2, help="runs of the small-file nights")
    parser.add_argument(
        "--small-before",
        action="append",
        help="befores run on small files (none: this checkout only)",
    )
    parser.add_argument("--large", type=Path, default=DATA / "e4000000")
    parser.add_argument("--small", type=Path, default=DATA / "e100000")
    parser.add_argument("--realistic", type=Path, default=DATA / "realistic-e100000")
    args = parser.parse_args(argv)
    if args.night:
        befores = args.before or list(NIGHT_BEFORE)
        small = [b for b in args.small_before or [befores[-1]] if b != "none"]
        with ExitStack() as stack:
            checkouts = {rev: stack.enter_context(worktree(rev)) for rev in befores}
            checkouts[THIS] = TOP
            results = nights(checkouts, [*small, THIS], args.runs or 5, args.small_runs)
        return night_table(results, list(checkouts)) + "\n\n" + night_targets(results, befores[0])
    before, runs = (args.before or [ISSUE_START])[0], args.runs or 3
    large_episodes, small_episodes = (
        int(p.name.removeprefix("e")) for p in (args.large, args.small)
    )
    with worktree(before) as old:
        checkouts = {f"before ({before})": old, "after (this checkout)": TOP}
        results = {
            "small": interleaved(checkouts, "warm", args.small, runs),
            "large": interleaved(checkouts, "score", args.large, args.large_runs),
        }
        if args.realistic.exists():
            results["floor"] = interleaved(checkouts, "floor", args.realistic, 1, runs)
    return table(results, args.large, args.small, large_episodes, small_episodes)


if __name__ == "__main__":
    print(main())
