"""What a night's files can cost at most on this machine: the ceiling of the throughput
targets of issue 17, measured on the files of one dump (``make bench`` runs it; README
"Performance", "Against the targets of issue 17").

python -m benchmarks.ceiling [DUMP] [--repeat 3]

- **one thread**: each step of a worker's job on one file, alone in the process, polars on one
  thread: ``score_file`` (read, order, verdict, grading, scores) and ``stage`` (validate and
  write the episode rows as uncommitted data files, the reject rows, the slim columns); and
  the parts of ``score_file`` (``scoring_steps``: the read, the sha256, the scoring plan, and
  of the plan the ordering and the contract's row-level rules alone).
- **threads**: every file scored and staged by the local engine's mapper (``FILES_AT_ONCE``
  threads in one process, polars' default thread pool), the night's reduction left out.
- **processes**: the same files split between as many processes as cores, started together
  (each warm: one file scored first), each with polars on one thread: what the cores can do
  when nothing is shared.

Prints one JSON line: the best of ``--repeat`` runs (at least 5) on one thread, the median of
``--repeat`` passes in threads, one timed span of ``--repeat`` passes in processes, and the
budget a file would have for the 3 M rows/s target on this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOP = Path(__file__).parents[1]
DEFAULT_DUMP = Path(__file__).parent / "data" / "e100000"
TARGET_ROWS_PER_S = 3e6


def _files(dump: Path) -> list[Any]:
    from flows.store.dumps import discover

    return discover(dump)


def _target(out: Path, dump_file: Any) -> Any:
    """Where ``dump_file``'s night is staged under ``out`` (never committed)."""
    from flows.store.delta.staged import StageTarget
    from flows.store.location import Location
    from schemas.contract import DUMP_DATE

    night = dump_file.partitions.get(DUMP_DATE)
    return StageTarget(Location.parse(str(out)), night, "sha256:ceiling")


def one_thread(dump: Path, repeat: int) -> dict[str, float]:
    """``score_file`` and ``stage`` of the dump's first file, alone, best of ``repeat``."""
    from flows.score import score_file, stage
    from transforms.registry import resolve

    formulas, first = resolve(()), _files(dump)[0]
    score_s, stage_s = [], []
    with tempfile.TemporaryDirectory() as out:
        stage(score_file(first, formulas), _target(Path(out) / "warm", first))  # first calls
        for n in range(repeat):
            t0 = time.perf_counter()
            part = score_file(first, formulas)
            t1 = time.perf_counter()
            stage(part, _target(Path(out) / str(n), first))
            t2 = time.perf_counter()
            score_s.append(t1 - t0)
            stage_s.append(t2 - t1)
    steps = scoring_steps(first, formulas, repeat)
    return {"score_s": min(score_s), "stage_s": min(stage_s), **steps, "rows": first_rows(first)}


def scoring_steps(dump_file: Any, formulas: dict[str, str], repeat: int) -> dict[str, float]:
    """The parts of ``score_file``, best of ``repeat`` each: reading the rows as the scorer
    does, their sha256, the scoring plan on the rows read and, of the plan, ordering the rows
    and the contract's row-level rules alone (one polars pass each over the ordered rows, as
    the verdict counts them): what any scorer of these rules in polars pays a file."""
    from flows.reading import read_file
    from flows.score import scored_rows
    from flows.store.dumps import content_digest
    from transforms.episodes import in_episode_order
    from transforms.rules import row_checks

    lazy = read_file(dump_file)[0]
    assert lazy is not None, f"{dump_file.relative} cannot be read"
    rows = lazy.collect()
    ordered = in_episode_order(rows.lazy()).collect()
    rules = [c.row.sum() for c in row_checks() if c.row is not None]
    steps: dict[str, Callable[[], object]] = {
        "read_s": lazy.collect,
        "digest_s": lambda: content_digest(dump_file),
        "plan_s": lambda: scored_rows(rows.lazy(), formulas),
        "order_s": lambda: in_episode_order(rows.lazy()).collect(),
        "row_rules_s": lambda: [ordered.select(rule) for rule in rules],
    }
    return {name: _best(step, repeat) for name, step in steps.items()}


def _best(step: Callable[[], object], repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t)
    return min(seconds)


def first_rows(dump_file: Any) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(dump_file.path).metadata.num_rows)


def threads(dump: Path, repeat: int) -> dict[str, float]:
    """The local engine's mapper (its threads, polars' default pool) over every file, its
    last chunk's write waited for (``settled``: a run waits for it before the commit)."""
    from flows.mappers import local_mapper
    from flows.score import settled
    from transforms.registry import resolve

    formulas, files = resolve(()), _files(dump)
    runs = []
    with tempfile.TemporaryDirectory() as out:
        warm = local_mapper(files[:2], formulas, {}, _target(Path(out) / "warm", files[0]))
        settled(p.staged for p in warm)
        for n in range(repeat):
            t = time.perf_counter()
            parts = local_mapper(files, formulas, {}, _target(Path(out) / str(n), files[0]))
            settled(p.staged for p in parts)
            runs.append(time.perf_counter() - t)
    return {"seconds": statistics.median(runs), "files": len(files)}


def worker(dump: Path, index: int, of: int, repeat: int) -> dict[str, float]:
    """One of ``of`` processes: after a warm file, scores and stages its share of the files
    ``repeat`` times; wall-clock start and end of the timed part, for the parent."""
    from flows.score import score_and_stage
    from transforms.registry import resolve

    formulas, files = resolve(()), _files(dump)
    mine = files[index::of]
    with tempfile.TemporaryDirectory() as out:
        score_and_stage([mine[0]], formulas, None, _target(Path(out) / "warm", mine[0]))
        print("ready", file=sys.stderr, flush=True)
        sys.stdin.readline()  # the parent starts every worker's timed part at once
        start = time.time()
        for n in range(repeat):
            for f in mine:
                score_and_stage([f], formulas, None, _target(Path(out) / str(n), f))
        end = time.time()
    return {"start": start, "end": end, "files": len(mine) * repeat}


def processes(dump: Path, repeat: int, count: int = 2) -> dict[str, float]:
    """``count`` worker processes, polars on one thread each, timed from a common start."""
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    command = [sys.executable, "-m", "benchmarks.ceiling", str(dump), "--repeat", str(repeat)]
    workers = [
        subprocess.Popen(
            [*command, "--worker", f"{i}/{count}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=TOP,
        )
        for i in range(count)
    ]
    for w in workers:
        assert w.stderr is not None and w.stderr.readline().strip() == "ready"
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    results = []
    for w in workers:
        out, err = w.communicate()
        if w.returncode:
            raise SystemExit(f"a worker failed:\n{err}")
        results.append(json.loads(out))
    seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {"seconds": seconds, "files": sum(r["files"] for r in results)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("dump", type=Path, nargs="?", default=DEFAULT_DUMP)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", help="i/n: run as worker i of n (internal)")
    args = parser.parse_args(argv)
    import flows  # noqa: F401  (first: its allocator setting applies as polars loads)

    if args.worker:
        index, of = (int(x) for x in args.worker.split("/"))
        return worker(args.dump, index, of, args.repeat)

    single = _in_process_with_one_thread(args.dump, args.repeat)
    rows = single["rows"]
    in_threads = threads(args.dump, args.repeat)
    cores = os.cpu_count() or 1
    in_processes = processes(args.dump, args.repeat, cores)
    per_file = single["score_s"] + single["stage_s"]
    return {
        "rows_per_file": rows,
        "one_thread": {k: round(v, 4) for k, v in single.items() if k != "rows"},
        "one_thread_rows_per_s": round(rows / per_file),
        "threads_rows_per_s": round(rows * in_threads["files"] / in_threads["seconds"]),
        "processes_rows_per_s": round(rows * in_processes["files"] / in_processes["seconds"]),
        "cores": cores,
        # A file's whole job (score and stage) for 3 M rows/s on every core at once, with
        # nothing left for the night's reduction, which runs after the files.
        "budget_per_file_s_for_3M": round(cores * rows / TARGET_ROWS_PER_S, 4),
    }


def _in_process_with_one_thread(dump: Path, repeat: int) -> dict[str, float]:
    """``one_thread`` in a child process whose polars runs on one thread (the pool's size is
    fixed when polars loads)."""
    code = (
        "import json, sys; from pathlib import Path; import flows; "
        "from benchmarks.ceiling import one_thread; "
        f"print(json.dumps(one_thread(Path({str(dump)!r}), {max(repeat, 5)})))"
    )
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=TOP
    )
    if done.returncode:
        raise SystemExit(f"the one-thread measurement failed:\n{done.stderr}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    print(json.dumps(main()))
