"""What one standing costs alone: its CPU and wall time, replayed in one process.

In a ``score`` of many nights a standing is made beside the next night's scoring, so its own
cost hides in the run's. This builds ``benchmarks.standings``' benchmark (``--nights`` nights
of LearningBench's shape), scores it once with standings on, keeping a copy of what the
standings of nights ``--first`` to ``--first + --count - 1`` start from (the standing before
and the night's input), then makes those standings again, one after the other and nothing
else running: ``--repeat`` rounds, each standing's CPU seconds (every thread of the process:
polars' pool too) and wall seconds, the medians per standing. ``--parts M:NAME,...`` also
times the functions named (a module and an attribute of it, ``Class.method`` too), each
call's CPU added up per standing, with the standing's second thread made inline so that the
process's CPU is the part's own (``flows.standings.ThreadPoolExecutor``).

    python -m benchmarks.standing_cpu [--nights 60] [--first 40] [--count 6] [--repeat 7]
        [--parts flows.standings:statistics_above,transforms.compare.pairs:variances]
"""

from __future__ import annotations

import argparse
import collections
import copy
import importlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.standings import EPISODES, MODELS, RERUNS, build

Captured = list[tuple[Any, str | None, Any]]


def captured(dump: Path, out: Path, first: int, count: int) -> Captured:
    """``score DUMP --out OUT`` (``flows.runs.score``: the command's run, without the
    command line's state), keeping a copy of each chosen standing's start."""
    from flows import standings
    from flows.mappers import local_mapper
    from flows.runs import score

    kept: Captured = []
    made = standings.Standings.of_night
    seen = 0

    def of_night(self: Any, night: str | None, tonight: Any) -> Any:
        nonlocal seen
        seen += 1
        if first <= seen < first + count:
            kept.append((copy.deepcopy(self), night, copy.deepcopy(tonight)))
        return made(self, night, tonight)

    standings.Standings.of_night = of_night  # type: ignore[method-assign]
    try:
        score(dump, out, (), local_mapper)
    finally:
        standings.Standings.of_night = made  # type: ignore[method-assign]
    return kept


def replay(kept: Captured) -> None:
    """Each standing kept made again from a copy of its start."""
    for standings, night, tonight in kept:
        copy.deepcopy(standings).of_night(night, copy.deepcopy(tonight))


class Inline:
    """An executor that runs what it is given at once (the standing's second thread)."""

    def __init__(self, *_: object, **__: object) -> None:
        pass

    def __enter__(self) -> Inline:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def submit(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(call(*args, **kwargs))
        except BaseException as error:  # handed on as the thread's future would
            done.set_exception(error)
        return done


@contextmanager
def timed_parts(names: list[str]) -> Iterator[dict[str, list[float]]]:
    """``names`` (``module:attribute``) wrapped to add up their calls' CPU seconds (calls,
    seconds), the standing's second thread inline; restored after."""
    from flows import standings

    found: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    restore: list[tuple[object, str, object]] = []

    def wrapped(call: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timing(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                found[label][0] += 1
                found[label][1] += time.process_time() - start

        return timing

    restore.append((standings, "ThreadPoolExecutor", standings.ThreadPoolExecutor))
    standings.ThreadPoolExecutor = Inline  # type: ignore[misc, assignment]
    for name in names:
        module, _, attribute = name.partition(":")
        owner: object = importlib.import_module(module)
        *path, last = attribute.split(".")
        for step in path:
            owner = getattr(owner, step)
        restore.append((owner, last, getattr(owner, last)))
        setattr(owner, last, wrapped(getattr(owner, last), name))
    try:
        yield found
    finally:
        for owner, attribute, value in reversed(restore):
            setattr(owner, attribute, value)


def measure(nights: int, first: int, count: int, repeat: int, parts: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="cogscore-standing-cpu-") as scratch:
        root = Path(scratch)
        build(root, nights, MODELS, EPISODES, RERUNS)
        kept = captured(root / "dump", root / "out", first, count)
        if not kept:
            raise SystemExit(f"no standing {first} of {nights} nights was made")
        replay(kept)  # first calls
        cpu, wall = [], []
        for _ in range(repeat):
            c, w = time.process_time(), time.perf_counter()
            replay(kept)
            cpu.append((time.process_time() - c) / len(kept))
            wall.append((time.perf_counter() - w) / len(kept))
        result: dict[str, Any] = {
            "standings": len(kept),
            "cpu_ms": round(1000 * statistics.median(cpu), 1),
            "wall_ms": round(1000 * statistics.median(wall), 1),
            "cpu_ms_runs": [round(1000 * c, 1) for c in cpu],
        }
        if parts:
            with timed_parts(parts) as found:
                replay(kept)
                found.clear()
                for _ in range(repeat):
                    replay(kept)
            made = repeat * len(kept)
            result["parts"] = {
                name: {"calls": calls / made, "cpu_ms": round(1000 * seconds / made, 2)}
                for name, (calls, seconds) in found.items()
            }
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=60)
    parser.add_argument("--first", type=int, default=40)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--parts", default="", help="module:attribute,... to time")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    found = measure(args.nights, args.first, args.count, args.repeat, parts)
    print(
        f"a standing of {args.nights} nights' benchmark (standings {args.first} to "
        f"{args.first + found['standings'] - 1}), replayed alone, medians of {args.repeat}: "
        f"{found['cpu_ms']} ms of CPU, {found['wall_ms']} ms of wall; CPU per round "
        f"{found['cpu_ms_runs']}"
    )
    for name, part in sorted(found.get("parts", {}).items(), key=lambda p: -p[1]["cpu_ms"]):
        print(f"  {name:<60} {part['calls']:5.1f} calls {part['cpu_ms']:8.2f} ms of CPU")


if __name__ == "__main__":
    main()
