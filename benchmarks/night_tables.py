"""The night's tables over 20 models (issue 48): what ``flows.night.night_tables`` costs a
night of 100,000 episodes of 20 models (task, category and model scores with the bootstrap,
the rank intervals and tiers, every pair of models compared), against the scoring of one of
its files, before and after, interleaved.

python -m benchmarks.night_tables [--before REV] [--episodes 100000] [--runs 3] [--repeat 5]
python -m benchmarks.night_tables --profile   # cProfile of one night's tables, this checkout

The dump: ``simulator.simulate`` of one night (seed 0, 10,000 episodes a file) by 20 models,
five of each skill (cached under ``benchmarks/data/m20-e<episodes>``). Each run is a fresh
process of one checkout (``--before``'s in a temporary worktree, ``benchmarks.before_after``):
it scores the files (``score_file``, as many at a time as the local engine), assembles the
night, makes its tables once (first calls), then ``--repeat`` times, timing each with the
process's CPU time and the wall clock; and scores the night's first file ``--repeat`` times
(its CPU time), the yardstick. Prints the medians of each run and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOP = Path(__file__).parents[1]
DATA = TOP / "benchmarks" / "data"
BEFORE = "a960177"  # main where issue 48 was filed
MODELS_PER_SKILL = 5
NIGHT = "2026-12-01"


def dump20(episodes: int) -> Path:
    """One simulated night of ``episodes`` episodes by 20 models (made once)."""
    root = DATA / f"m20-e{episodes}"
    if not (root / ".complete").exists():
        from simulator import simulate
        from simulator.models import Model, Skill

        models = [Model(f"{s.value}-{i}", s) for s in Skill for i in range(MODELS_PER_SKILL)]
        print(f"generating {root} ...", file=sys.stderr, flush=True)
        simulate(root, date=NIGHT, episodes=episodes, seed=0, models=models)
        (root / ".complete").touch()
    return root


def scored_night(dump: Path) -> Any:
    """The night's result as a local run assembles it (``flows.score``), unstaged."""
    from concurrent.futures import ThreadPoolExecutor

    from flows.mappers import FILES_AT_ONCE
    from flows.score import assemble, score_file
    from flows.store.dumps import discover
    from transforms.registry import resolve

    formulas = resolve(())
    with ThreadPoolExecutor(FILES_AT_ONCE) as pool:
        parts = list(pool.map(lambda f: score_file(f, formulas), discover(dump)))
    return assemble(parts, formulas)


def one_run(dump: Path, repeat: int) -> dict[str, Any]:
    """This process's measures (run in the checkout measured)."""
    from flows.night import night_tables
    from flows.score import score_file
    from flows.store.dumps import discover
    from transforms.aggregate import Bootstrap
    from transforms.registry import resolve

    result = scored_night(dump)
    night_tables(result, Bootstrap())  # first calls
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        night_tables(result, Bootstrap())
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    first, formulas = discover(dump)[0], resolve(())
    file_cpu = []
    for _ in range(repeat):
        c = time.process_time()
        score_file(first, formulas)
        file_cpu.append(time.process_time() - c)
    models = result.scores.select("model").n_unique()
    return {
        "episodes": result.scores.height,
        "models": models,
        "tables_cpu_s": statistics.median(cpu),
        "tables_wall_s": statistics.median(wall),
        "file_cpu_s": statistics.median(file_cpu),
    }


def profile(dump: Path) -> None:
    import cProfile
    import pstats

    from flows.night import night_tables
    from transforms.aggregate import Bootstrap

    result = scored_night(dump)
    night_tables(result, Bootstrap())
    profiler = cProfile.Profile()
    profiler.enable()
    night_tables(result, Bootstrap())
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def _run_in(checkout: Path, dump: Path, repeat: int) -> dict[str, Any]:
    code = (
        "import json, sys; from pathlib import Path; import flows; "
        "from benchmarks.night_tables import one_run; "
        f"print(json.dumps(one_run(Path({str(dump)!r}), {repeat})))"
    )
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=checkout
    )
    if done.returncode:
        raise SystemExit(f"a run in {checkout} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    dump = dump20(options.episodes)
    if options.profile:
        profile(dump)
        return
    from benchmarks.before_after import worktree

    results: dict[str, list[dict[str, Any]]] = {}
    with worktree(options.before) as before:
        # The "before" checkout measures with this module (it may predate it).
        (before / "benchmarks" / "night_tables.py").write_text(Path(__file__).read_text())
        checkouts = {f"before ({options.before})": before, "after (this checkout)": TOP}
        for _ in range(options.runs):
            for label, checkout in checkouts.items():
                run = _run_in(checkout, dump, options.repeat)
                results.setdefault(label, []).append(run)
                print(f"  {label}: {json.dumps(run)}", file=sys.stderr, flush=True)
    print(
        f"the night's tables, {options.episodes:,} episodes of 20 models, medians of "
        f"{options.repeat} in each of {options.runs} fresh processes a checkout, interleaved\n"
    )
    print("| code | tables CPU s | tables wall s | one file scored, CPU s | tables / file |")
    print("|---|---:|---:|---:|---:|")
    for label, runs in results.items():
        tables = [r["tables_cpu_s"] for r in runs]
        files = [r["file_cpu_s"] for r in runs]
        ratio = [t / f for t, f in zip(tables, files, strict=True)]
        print(
            f"| {label} | {_span(tables)} | {_span([r['tables_wall_s'] for r in runs])} "
            f"| {_span(files)} | {_span(ratio)} |"
        )


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.3f}" if round(low, 3) == round(high, 3) else f"{low:.3f}-{high:.3f}"


if __name__ == "__main__":
    main()
