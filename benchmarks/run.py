"""The performance benchmarks of the README's "Performance" section (``make bench``).

Generates simulated dumps (cached under benchmarks/data/, git-ignored), then measures, each
in a fresh process under ``/usr/bin/time`` (peak resident memory): one full polars read of
the files (the baseline), the sha256 of every file, the scorer end to end (``flows.runs.score``
with the local mapper, tables written) and the row-wise reference of the tests. Prints
medians of ``--repeat`` runs, ratios and peak memory.

python -m benchmarks.run [--repeat 3] [--large] [--reference-episodes 12500]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).parent / "data"
TINY = 100
GROWTH = (12_500, 25_000, 50_000, 100_000)  # episodes: ~26 rows each
LARGE = 1_500_000  # ~40 M rows: larger than memory as one in-memory frame of all columns


def dump(episodes: int) -> Path:
    """The simulated dump of ``episodes`` episodes (one night), generated once."""
    root = DATA / f"e{episodes}"
    if not (root / ".complete").exists():
        from simulator import simulate

        print(f"generating {root} ...", file=sys.stderr, flush=True)
        simulate(root, date="2026-12-01", episodes=episodes, seed=0)
        (root / ".complete").touch()
    return root


def measure(what: str, root: Path) -> dict[str, float]:
    """One measurement in a fresh process: its JSON line plus ``peak_mib``."""
    with tempfile.NamedTemporaryFile("r") as peak:
        timed = ["/usr/bin/time", "-f", "%M", "-o", peak.name, sys.executable]
        done = subprocess.run(
            [*timed, "-m", "benchmarks.measure", what, str(root)],
            capture_output=True,
            text=True,
            check=True,
        )
        kib = int(peak.read().strip().splitlines()[-1])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    result["peak_mib"] = kib / 1024
    return result


def median(what: str, root: Path, repeat: int) -> dict[str, float]:
    runs = [measure(what, root) for _ in range(repeat)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def rows_of(root: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in root.rglob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", action="store_true", help=f"also {LARGE:,} episodes, once")
    parser.add_argument("--reference-episodes", type=int, default=GROWTH[0])
    args = parser.parse_args()

    cpus = os.cpu_count()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(
        f"machine: {platform.machine()}, {cpus} cores, {mem:.0f} GiB, Python "
        f"{platform.python_version()}; medians of {args.repeat} runs, each a fresh process"
    )

    tiny = median("score", dump(TINY), args.repeat)
    startup = tiny["total_s"]
    print(
        f"\nstart-up: scoring a {TINY}-episode dump takes {startup:.2f} s in all "
        f"(process start and imports included), peak {tiny['peak_mib']:.0f} MiB"
    )

    header = (
        f"{'episodes':>9} {'rows':>11} {'read s':>7} {'hash s':>7} {'score s':>8} "
        f"{'-startup':>8} {'ratio':>6} {'rows/s':>10} {'read MiB':>9} {'score MiB':>9}"
    )
    print("\n" + header)
    for episodes in GROWTH:
        root = dump(episodes)
        read = median("read", root, args.repeat)
        hashed = median("hash", root, args.repeat)
        scored = median("score", root, args.repeat)
        net = scored["total_s"] - startup
        print(
            f"{episodes:>9,} {rows_of(root):>11,} {read['seconds']:>7.2f} "
            f"{hashed['seconds']:>7.2f} {scored['total_s']:>8.2f} {net:>8.2f} "
            f"{net / read['seconds']:>6.2f} {rows_of(root) / net:>10,.0f} "
            f"{read['peak_mib']:>9.0f} {scored['peak_mib']:>9.0f}",
            flush=True,
        )
        steps = {k: v for k, v in scored.items() if k.endswith("_s") and k != "total_s"}
        print(f"{'':>9} scorer steps: {steps}")

    root = dump(args.reference_episodes)
    ref = measure("reference", root)
    scored = median("score", root, args.repeat)
    print(
        f"\nreference (row-wise, tests.reference) on {args.reference_episodes:,} episodes: "
        f"{ref['seconds']:.1f} s (peak {ref['peak_mib']:.0f} MiB) against the scorer's "
        f"{scored['seconds']:.2f} s: {ref['seconds'] / scored['seconds']:.0f}x faster"
    )

    if args.large:
        root = dump(LARGE)
        once = measure("score", root)
        print(
            f"\nlarge: {LARGE:,} episodes, {rows_of(root):,} rows: scored in "
            f"{once['total_s']:.1f} s, peak {once['peak_mib']:.0f} MiB (one run)"
        )


if __name__ == "__main__":
    main()
