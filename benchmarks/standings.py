"""What the standings cost a nightly, on a year of a harness benchmark's nights.

Builds a benchmark of LearningBench's shape run as a harness runs it: on the first night
every model runs every task (``--models`` x 135 tasks, ``--episodes`` each), then each
night a few models re-run some tasks (``--reruns`` tasks a night, one model or two), and now
and then a model is added. The score tables go through ``import-scores`` (one file a night),
``--nights`` nights are scored into one output by one ``score`` (a standing a night, each
from the one before), then one more night arrives and ``nightly`` scores it (one standing).
Measured, each in a fresh process, ``--repeat`` times, on and off interleaved:

- the nightly of the new night, with standings, and the same nightly with the standings
  switched off (``Standings.nights_to_make`` returning nothing): the difference is what the
  standing of one night costs, with a year of history behind it;
- the ``score`` of every night, with and without standings (a rescore of history pays the
  same: one standing per night);
- the peak memory of each (``ru_maxrss`` of the child).

The nightly takes a couple of seconds and its ratio moves with the machine's load by more
than the standing costs, so it is run ``--nightly-repeat`` times (default 7), each on and off
in turn; each ratio is of the medians.

    python -m benchmarks.standings [--nights 365] [--models 14] [--repeat 3]
        [--nightly-repeat 7]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from benchmarks import settled

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = {
    "associative_learning": 20,
    "concept_formation": 18,
    "language_learning": 26,
    "observational_learning": 30,
    "runtime_rl": 30,
    "procedural_learning": 11,
}
FIRST = date(2026, 1, 1)
# LearningBench's shape, the benchmarks' default: its models on the first night, an episode
# a model and task, the tasks re-run a night.
MODELS = 14
EPISODES = 1
RERUNS = 20
NIGHTLY_REPEAT = 7

# A child process: the command, with the standings switched off when asked.
CHILD = """
import atexit, resource, sys
peak = lambda: print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
atexit.register(peak)
off = sys.argv[1] == "off"
if off:
    from flows.standings import Standings
    Standings.nights_to_make = lambda self, held, scored: []
from flows.cli import run
sys.argv = ["cogscore", *sys.argv[2:]]
try:
    run()
except SystemExit as end:
    if end.code:
        raise
"""


def benchmark_rows(nights: int, models: int, episodes: int, reruns: int, seed: int) -> list[dict]:
    """The score table of ``nights`` nights (see the module's docstring): each row a model,
    task, night and score; ``episodes`` rows per model, task and night."""
    rng = random.Random(seed)
    tasks = [(c, f"{c[:5]}-{i:02}") for c, n in CATEGORIES.items() for i in range(n)]
    skill = {f"model-{m:02}": rng.uniform(0.2, 0.8) for m in range(models)}
    rows: list[dict] = []

    def run(model: str, category: str, task: str, night: date) -> None:
        for k in range(episodes):
            p = skill[model]
            rows.append(
                {
                    "dump_date": night.isoformat(),
                    "model": model,
                    "task": task,
                    "category": category,
                    "score": round(min(1.0, max(0.0, rng.gauss(p, 0.2))), 4),
                    "instance_id": f"{task}#{k}",
                }
            )

    for model in skill:
        for category, task in tasks:
            run(model, category, task, FIRST)
    for day in range(1, nights):
        night = FIRST + timedelta(days=day)
        if day % 60 == 0:  # a model is added, and runs everything
            added = f"model-{len(skill):02}"
            skill[added] = rng.uniform(0.2, 0.8)
            for category, task in tasks:
                run(added, category, task, night)
            continue
        for model in rng.sample(sorted(skill), rng.choice((1, 2))):
            for category, task in rng.sample(tasks, reruns):
                run(model, category, task, night)
    return rows


def build(root: Path, nights: int, models: int, episodes: int, reruns: int) -> Path:
    """The dump of ``nights`` + 1 nights under ``root``: the last one kept apart (the new
    night a nightly finds), returned."""
    import polars as pl

    from flows.importers.scores import import_scores

    rows = pl.DataFrame(benchmark_rows(nights + 1, models, episodes, reruns, seed=7))
    last = (FIRST + timedelta(days=nights)).isoformat()
    for name, part in (
        ("year", rows.filter(pl.col("dump_date") != last)),
        ("new", rows.filter(pl.col("dump_date") == last)),
    ):
        table = root / f"{name}.csv"
        part.write_csv(table)
        import_scores(table, root / ("dump" if name == "year" else "new-dump"))
    return root / "new-dump" / f"dump_date={last}"


def timed(args: list[str], off: bool) -> tuple[float, float]:
    """Wall seconds and peak MiB of ``cogscore ARGS`` in a fresh process."""
    settled()
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "off" if off else "on", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"cogscore {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK ")]
    return seconds, int(peaks[-1]) / 1024


def measure(
    nights: int,
    models: int,
    episodes: int,
    reruns: int,
    repeat: int,
    nightly_repeat: int = NIGHTLY_REPEAT,
) -> dict:
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cogscore-standings-") as scratch:
        root = Path(scratch)
        new_night = build(root, nights, models, episodes, reruns)
        modes = {"on": False, "off": True}
        for _ in range(repeat):  # interleaved: on, off, on, off...
            for label, off in modes.items():
                base = root / f"out-{label}"
                shutil.rmtree(base, ignore_errors=True)
                results.setdefault(f"score {nights} nights, standings {label}", []).append(
                    timed(["score", str(root / "dump"), "--out", str(base), "--quiet"], off)
                )
        # The new night arrives: the nightly of it, each time from a copy of the year's output.
        shutil.copytree(new_night, root / "dump" / new_night.name)
        for _ in range(nightly_repeat):
            for label, off in modes.items():
                out = root / f"night-{label}"
                shutil.rmtree(out, ignore_errors=True)
                shutil.copytree(root / f"out-{label}", out)
                results.setdefault(f"nightly of night {nights + 1}, standings {label}", []).append(
                    timed(["nightly", str(root / "dump"), "--out", str(out), "--quiet"], off)
                )
    return {
        name: {
            "seconds": [round(s, 2) for s, _ in runs],
            "median_s": round(statistics.median(s for s, _ in runs), 2),
            "peak_mib": round(max(m for _, m in runs)),
        }
        for name, runs in results.items()
    }


def ratios(found: dict) -> dict[str, float]:
    """Per measure (``score N nights``, ``nightly of night N``), the median with standings
    over the median without (the issue's targets: 1.5x and 1.2x).

    >>> ratios({"a, standings on": {"median_s": 3.0}, "a, standings off": {"median_s": 2.0}})
    {'a': 1.5}
    """
    suffix = ", standings on"
    on = {name.removesuffix(suffix): r for name, r in found.items() if name.endswith(suffix)}
    return {
        what: round(r["median_s"] / found[f"{what}, standings off"]["median_s"], 3)
        for what, r in on.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--models", type=int, default=MODELS)
    parser.add_argument("--episodes", type=int, default=EPISODES)
    parser.add_argument("--reruns", type=int, default=RERUNS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nightly-repeat", type=int, default=NIGHTLY_REPEAT)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = measure(
        args.nights, args.models, args.episodes, args.reruns, args.repeat, args.nightly_repeat
    )
    if args.json:
        print(json.dumps(found | {"ratios": ratios(found)}))
        return
    for name, result in found.items():
        print(
            f"{name:<45} median {result['median_s']:>7.2f} s, peak {result['peak_mib']:>5} MiB"
            f"  runs {result['seconds']}"
        )
    for what, ratio in ratios(found).items():
        print(f"{what}: standings on / off {ratio:.2f}x")


if __name__ == "__main__":
    main()
