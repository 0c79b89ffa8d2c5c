"""Memory flat with the night (issue 39): ``cogscore score`` of one simulated night into a new
output, peak resident memory (``wait4``, as ``/usr/bin/time -f %M`` reports it) at several
night sizes, before and after, the runs interleaved, each command in a fresh process; and the
peak's growth per episode from the smallest night to each larger one.

python -m benchmarks.night_memory [--before REV] [--episodes 100000 500000 2000000] [--runs 2]
    [--dask WORKERS [--prefect]]

``--dask WORKERS`` (issue 48): the command runs with ``--dask-address`` on a local Dask
cluster of that many worker processes (one thread each, ``POLARS_MAX_THREADS=1``), one
cluster per checkout running its own code, started once; the peak is the driver's (the
command's process) alone. ``--prefect``: through Prefect (``--engine prefect``, its
``DaskTaskRunner``), with a Prefect server of its own started for the run (the driver and the
workers report to it: ``PREFECT_API_URL``).

The dumps are the issue's: ``cogscore simulate --date 2026-12-01 --seed 4
--episodes-per-file 25000`` (cached under ``benchmarks/data/night-memory/``). The "before"
code is checked out in a temporary worktree (``benchmarks.before_after``); both run
``python -m flows.cli`` from their own checkout (``benchmarks.commits.command``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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


# A local cluster of the checkout it is started in, its scheduler's address printed; it
# stops when its standard input closes. ``flows`` first: the workers' allocator settings.
_CLUSTER = (
    "import sys, flows; from distributed import LocalCluster; "
    "c = LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True, "
    "dashboard_address=None); print(c.scheduler_address, flush=True); sys.stdin.read()"
)


@contextmanager
def cluster(checkout: Path, workers: int) -> Iterator[str]:
    """A local Dask cluster of ``workers`` processes running ``checkout``'s code: its
    scheduler's address."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "POLARS_MAX_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CLUSTER, str(workers)],
        cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        address = child.stdout.readline().strip()
        if not address.startswith("tcp://"):
            raise SystemExit(f"{checkout}: the local Dask cluster did not start")
        yield address
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextmanager
def prefect_server() -> Iterator[str]:
    """A Prefect API server of its own (Prefect's test harness: a temporary database),
    started for the run and stopped after it; this process's environment (which the
    clusters and commands inherit) points at it: its address."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):  # a cold start takes 15-25 s
        url = str(PREFECT_API_URL.value())
        saved = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url
        try:
            yield url
        finally:
            if saved is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--episodes", type=int, nargs="+", default=[100_000, 500_000, 2_000_000])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--dask", type=int, default=0, metavar="WORKERS")
    parser.add_argument("--prefect", action="store_true", help="through Prefect's DaskTaskRunner")
    options = parser.parse_args()
    if options.prefect and not options.dask:
        parser.error("--prefect measures the Dask task runner: give --dask WORKERS too")
    sizes = sorted(options.episodes)
    dumps = {n: night_dump(n) for n in sizes}
    results: dict[str, dict[int, list[dict[str, Any]]]] = {}
    with worktree(options.before) as before, ExitStack() as clusters:
        via = ["--engine", "prefect"] if options.prefect else []
        if options.prefect:  # before the clusters: their workers report to it too
            clusters.enter_context(prefect_server())
        checkouts = {f"before ({options.before})": before, "after (this checkout)": TOP}
        engine = {
            label: [*via, "--dask-address", clusters.enter_context(cluster(checkout, options.dask))]
            if options.dask
            else []
            for label, checkout in checkouts.items()
        }
        for _ in range(options.runs):
            for n, dump in dumps.items():
                for label, checkout in checkouts.items():
                    with tempfile.TemporaryDirectory(prefix="cogscore-night-memory-") as scratch:
                        out = str(Path(scratch) / "out")
                        run = command(checkout, "score", str(dump), "--out", out, *engine[label])
                    results.setdefault(label, {}).setdefault(n, []).append(run)
                    print(f"  {label}, {n:,} episodes: done", file=sys.stderr, flush=True)
    smallest = sizes[0]
    where = f", on Dask ({options.dask} local worker processes)" if options.dask else ""
    where += " through Prefect's DaskTaskRunner" if options.prefect else ""
    print(
        f"one night each{where}, {options.runs} runs each, interleaved, fresh processes and "
        "outputs\n"
    )
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
