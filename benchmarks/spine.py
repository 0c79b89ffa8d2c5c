"""The spine of a command: how often its calls cross from one of cogscore's files to another.

Traces ``cogscore nightly DUMP --out OUT`` (local engine) over a dump of two nights, as the
design review of main at f5f6264 did: every call of cogscore's own code (``flows``,
``transforms``, ``schemas``) at most ``--depth`` levels below the command's function, where a
level is one of cogscore's frames (library frames in between are transparent). A crossing is
such a call whose caller is in another file. Prints the crossings, the files touched, and
the busiest edges.

    python -m benchmarks.spine [--depth 4] [--episodes 600]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections import Counter
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "transforms", "schemas")


@cache  # asked at every call the trace sees: resolving the path each time was most of its cost
def _ours(path: str) -> str | None:
    """``path`` relative to the checkout where it is cogscore's code, else None."""
    try:
        relative = Path(path).resolve().relative_to(ROOT)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts[0] in PACKAGES else None


def trace(args: list[str], command: str, depth: int) -> tuple[Counter[tuple[str, str]], set[str]]:
    """(caller file, callee file) counts of the crossing calls, and every file touched, of
    ``cogscore ARGS`` in this thread, from the frame of function ``command`` in
    ``flows/cli/scoring.py`` down to ``depth`` levels."""
    from flows.cli import run

    edges: Counter[tuple[str, str]] = Counter()
    touched: set[str] = set()
    levels: dict[int, int] = {}  # id(frame) -> its level (cogscore frames only)
    rooted: list[int] = []  # the command's frame, once met

    def level_of(frame: FrameType | None) -> tuple[int | None, str | None]:
        while frame is not None:
            if id(frame) in levels:
                return levels[id(frame)], _ours(frame.f_code.co_filename)
            frame = frame.f_back
        return None, None

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "return":  # a frame's id is reused once it is gone: forget its level
            levels.pop(id(frame), None)
            return
        if event != "call":
            return
        if frame.f_code.co_name == "<module>":  # an import, and what it runs: not the spine
            if rooted:
                levels[id(frame)] = depth
            return
        here = _ours(frame.f_code.co_filename)
        if here is None:
            return
        if here == "flows/cli/scoring.py" and frame.f_code.co_name == command and not rooted:
            rooted.append(id(frame))
            levels[id(frame)] = 0
            touched.add(here)
            return
        above, caller = level_of(frame.f_back)
        if above is None or above >= depth:
            return
        levels[id(frame)] = above + 1
        touched.add(here)
        if caller != here:
            edges[(caller or "?", here)] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run(args)
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return edges, touched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=600)
    options = parser.parse_args()
    from simulator.dump import simulate_dump

    with tempfile.TemporaryDirectory() as scratch:
        dump, out = Path(scratch) / "dump", Path(scratch) / "out"
        for seed, night in enumerate(("2026-11-30", "2026-12-01"), 1):
            simulate_dump(dump, date=night, episodes=options.episodes, seed=seed)
        args = ["nightly", str(dump), "--out", str(out), "--engine", "local", "--quiet"]
        edges, touched = trace(args, "nightly", options.depth)
    print(f"crossings: {sum(edges.values())} over {len(touched)} files (depth {options.depth})")
    for (caller, callee), n in edges.most_common(15):
        print(f"  {n:4d}  {caller} -> {callee}")
    print("files: " + ", ".join(sorted(touched)))


if __name__ == "__main__":
    main()
