"""What a nightly costs with the history behind it (issue 48): the nightly of one new night
after each of ``--nights`` histories of LearningBench's shape (``benchmarks.standings``:
``--models`` x 135 tasks the first night, then ``--reruns`` re-run cells a night, as
import-scores tables, scored by one ``score``), each in a fresh process from a copy of the
history's output, interleaved round by round (every history, every checkout: this one and
each ``--before`` and ``--checkout PATH``, which scores its own history with its own code
and, a checkout, its own ``.venv``), ``--repeat`` rounds;
medians, and every run. Each run also counts what it read: the Delta tables it opened (an
open replays the table's log) and the bytes it read (``rchar``); then one more nightly of
each is traced (``strace``, where there is one) for the files it opened: the Delta log files
and the data files, of which those of the nights before the last night of the history (the
new night's baseline and the standing it starts from), and what one open of each table of
this checkout's outputs costs. ``--off``: each measured with the
standings switched off too (their cost, at each history). ``--built nightly``: each history
built as production builds it, a ``nightly`` a night (a commit a table and a night in each
Delta log, a run a night in the runs table; in one process per checkout), not by one
``score`` (one commit a table). Each run's CPU seconds (user and system, ``wait4``) are told
beside its wall seconds: they move less with the machine's load. Each timed run starts after
a ``sync`` (``benchmarks.settled``): the copy made just before it is on disk, not written
back by the run's first ``fsync``.

    python -m benchmarks.history [--nights 30 150] [--before a960177 | --checkout PATH]
        [--repeat 3] [--off] [--built score|nightly]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import deltalake

from benchmarks import settled
from benchmarks.before_after import worktree
from benchmarks.standings import EPISODES, MODELS, RERUNS, build

TOP = Path(__file__).resolve().parents[1]
THIS = "this checkout"

# A child process: one cogscore command (the standings switched off where asked), counting
# the Delta tables it opens and the bytes it reads; each open told with its milliseconds and
# who asked for it (the innermost caller outside ``flows/store`` and the store's function).
CHILD = """
import atexit, collections, json, os, sys, time, traceback
import deltalake
opened = collections.Counter()
sites = []
top = os.getcwd() + os.sep
real = deltalake.DeltaTable.__init__
def asked_by():
    ours = [f for f in traceback.extract_stack()[:-2]
            if f.filename.startswith(top) and "/.venv/" not in f.filename]
    outside = [i for i, f in enumerate(ours) if "/flows/store/" not in f.filename]
    if not outside:
        return "?"
    caller = ours[outside[-1]]
    store = ours[outside[-1] + 1].name if outside[-1] + 1 < len(ours) else ""
    where = caller.filename[len(top):]
    return f"{where} {caller.name} -> {store}" if store else f"{where} {caller.name}"
def counting(self, uri, *args, **kwargs):
    t0 = time.perf_counter()
    real(self, uri, *args, **kwargs)
    table = str(uri).rstrip("/").rsplit("/", 1)[-1]
    opened[table] += 1
    sites.append([table, asked_by(), (time.perf_counter() - t0) * 1000])
deltalake.DeltaTable.__init__ = counting
def told():
    io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
    found = {"opens": sum(opened.values()), "opened": dict(opened), "rchar": int(io["rchar"])}
    found["sites"] = sites
    print("COUNTED", json.dumps(found), file=sys.stderr)
atexit.register(told)
if sys.argv[1] == "off":
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


# A child process building a history night by night: each night of SOURCE (in order) added
# to DUMP, then a nightly of DUMP into OUT, as a scheduled job does.
NIGHT_BY_NIGHT = """
import shutil, sys
from pathlib import Path
from flows import runs
source, dump, out = map(Path, sys.argv[1:4])
dump.mkdir()
for night in sorted(source.glob("dump_date=*")):
    shutil.copytree(night, dump / night.name)
    runs.nightly(dump, out)
"""


def child(checkout: Path, mode: str, args: list[str], trace: Path | None = None) -> dict:
    """``cogscore ARGS`` in a fresh process of ``checkout``'s code: its wall and CPU seconds
    and counts (``trace``: under strace, its opens written there)."""
    command = [_python(checkout), "-c", CHILD, mode, *args]
    if trace is not None:
        command = ["strace", "-f", "-e", "trace=openat", "-o", str(trace), *command]
    done, seconds, cpu_s = _timed(command, checkout)
    if done.returncode:
        raise RuntimeError(f"cogscore {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    counted = [line for line in done.stderr.splitlines() if line.startswith("COUNTED ")]
    return {"seconds": seconds, "cpu_s": cpu_s, **json.loads(counted[-1].split(" ", 1)[1])}


def _python(checkout: Path) -> str:
    own = checkout / ".venv" / "bin" / "python"  # its own environment, where it has one
    return str(own) if own.exists() else sys.executable


def _timed(command: list[str], checkout: Path) -> tuple[subprocess.CompletedProcess, float, float]:
    """``command`` run in ``checkout`` (its code first on the path): the process done, its
    wall seconds and its CPU seconds (user and system, its children's included)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    settled()
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    after = os.times()
    cpu_s = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return done, seconds, cpu_s


def build_history(checkout: Path, history: Path, out: Path, built: str) -> None:
    """``history``'s dump scored into ``out`` by ``checkout``'s code: by one ``score``, or
    (``built`` nightly) a ``nightly`` a night, the dump growing a night at a time."""
    dump = history / "dump"
    if built == "score":
        child(checkout, "on", ["score", str(dump), "--out", str(out), "--quiet"])
        return
    # The nights set apart once, then the dump grown again from them for each checkout (the
    # same path, the files' times kept): every output was scored from the dump its nightly
    # reads.
    source = history / "all-nights"
    if not source.exists():
        dump.rename(source)
    shutil.rmtree(dump, ignore_errors=True)
    command = [_python(checkout), "-c", NIGHT_BY_NIGHT, str(source), str(dump), str(out)]
    done, _, _ = _timed(command, checkout)
    if done.returncode:
        raise RuntimeError(f"the history night by night failed:\n{done.stderr[-3000:]}")


def traced_files(trace: Path, out: Path, nights: list[str]) -> dict[str, int]:
    """Files a traced run opened for reading below ``out``: Delta log files, data files, and
    of these the files of the ``nights`` before the last (the history before the night the
    new night's regressions and standing start from)."""
    opened = re.compile(r'openat\([^"]*"([^"]+)", ([A-Z_|]+)')
    counts = {"log_files": 0, "data_files": 0, "history_data_files": 0}
    nights = nights[:-1]
    for line in trace.read_text().splitlines():
        found = opened.search(line)
        if not found or "ENOENT" in line or "O_RDONLY" not in found.group(2):
            continue
        path = found.group(1)
        if not path.startswith(str(out)) or "O_DIRECTORY" in found.group(2):
            continue
        if "/_delta_log/" in path:
            counts["log_files"] += 1
        elif path.endswith(".parquet"):
            counts["data_files"] += 1
            if any(f"={night}/" in path for night in nights):
                counts["history_data_files"] += 1
    return counts


def measure(
    checkouts: dict[str, Path],
    histories: list[int],
    repeat: int,
    modes: list[str],
    built: str = "score",
    **shape: int,
) -> dict[str, Any]:
    """Every nightly measured (see the module), by (checkout, history, mode)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cogscore-history-") as scratch:
        root = Path(scratch)
        nights_of: dict[int, list[str]] = {}
        for n in histories:
            (root / str(n)).mkdir()
            new_night = build(root / str(n), n, shape["models"], shape["episodes"], shape["reruns"])
            dump = root / str(n) / "dump"
            nights_of[n] = sorted(p.name.split("=", 1)[1] for p in dump.glob("dump_date=*"))
            for label, checkout in checkouts.items():
                t0 = time.perf_counter()
                out = root / str(n) / f"out-{_slug(label)}"
                build_history(checkout, root / str(n), out, built)
                print(f"  {label}: {n} nights scored ({built}) in "
                      f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
            shutil.copytree(new_night, dump / new_night.name)
        for _ in range(repeat):
            for n in histories:
                for label, checkout in checkouts.items():
                    for mode in modes:
                        run = _nightly(root / str(n), label, checkout, mode)
                        key = f"{label} | {n} nights | standings {mode}"
                        results.setdefault(key, []).append(run)
        for n in histories:  # what one open of each table costs, at each history
            out = root / str(n) / f"out-{_slug(THIS)}"
            results[f"{THIS} | {n} nights | open ms"] = open_costs(out)
        if shutil.which("strace"):
            for n in histories:
                for label, checkout in checkouts.items():
                    trace = root / "trace.txt"
                    _nightly(root / str(n), label, checkout, "on", trace)
                    out = root / str(n) / "night"
                    counted = traced_files(trace, out, nights_of[n])
                    results[f"{label} | {n} nights | traced"] = counted
    return results


def open_costs(out: Path, times: int = 5) -> dict[str, float]:
    """Per Delta table of ``out``: the milliseconds one open takes (the log replayed),
    median of ``times``."""
    costs = {}
    for table in sorted(p for p in out.iterdir() if (p / "_delta_log").is_dir()):
        took = []
        for _ in range(times):
            t0 = time.perf_counter()
            deltalake.DeltaTable(str(table))
            took.append((time.perf_counter() - t0) * 1000)
        costs[table.name] = statistics.median(took)
    return costs


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower())


def _nightly(
    history: Path, label: str, checkout: Path, mode: str, trace: Path | None = None
) -> dict:
    """The nightly of the new night, from a copy of the history's output."""
    out = history / "night"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(history / f"out-{_slug(label)}", out)
    args = ["nightly", str(history / "dump"), "--out", str(out), "--quiet"]
    return child(checkout, mode, args, trace)


def _cell(key: str) -> str:
    """A result's key as one table cell (its parts are joined by ' | ' in the results)."""
    return key.replace(" | ", ", ")


def each_open(runs: list[dict]) -> dict[tuple[str, str, int], float]:
    """Per open of a table in a run (table, who asked, the how-manieth such open): its
    median milliseconds over ``runs``."""
    took: dict[tuple[str, str, int], list[float]] = {}
    for run in runs:
        seen: collections.Counter[tuple[str, str]] = collections.Counter()
        for table, site, ms in run.get("sites", []):
            seen[(table, site)] += 1
            took.setdefault((table, site, seen[(table, site)]), []).append(ms)
    return {key: statistics.median(ms) for key, ms in took.items()}


def _opens_table(results: dict[str, Any]) -> list[str]:
    """Markdown: each open of a nightly with the standings on, its milliseconds at each
    history (this checkout's runs)."""
    kinds = {
        k.split(" | ")[1]: each_open(v)
        for k, v in results.items()
        if k.startswith(f"{THIS} |") and k.endswith("standings on")
    }
    if not any(kinds.values()):
        return []
    lines = ["", "| table opened | asked by | " + " | ".join(f"ms, {h}" for h in kinds) + " |"]
    lines.append("|---|---|" + "---:|" * len(kinds))
    keys = list(dict.fromkeys(key for opens in kinds.values() for key in opens))
    for table, site, nth in keys:
        cells = " | ".join(
            f"{opens.get((table, site, nth), float('nan')):.1f}" for opens in kinds.values()
        )
        lines.append(f"| {table} | {site}{f' ({nth})' if nth > 1 else ''} | {cells} |")
    totals = " | ".join(f"{sum(opens.values()):.0f}" for opens in kinds.values())
    return [*lines, f"| all | | {totals} |"]


def summary(results: dict[str, Any]) -> list[str]:
    """Markdown: per run kind its median seconds, every run, and its counts."""
    lines = [
        "| checkout, history, standings | median s | runs (s) | median CPU s | runs (CPU s) "
        "| tables opened | MB read |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    for key, runs in results.items():
        if key.endswith(("traced", "open ms")):
            continue
        seconds = [r["seconds"] for r in runs]
        cpu = [r.get("cpu_s", float("nan")) for r in runs]
        lines.append(
            f"| {_cell(key)} | {statistics.median(seconds):.2f}"
            f" | {', '.join(f'{s:.2f}' for s in seconds)}"
            f" | {statistics.median(cpu):.2f} | {', '.join(f'{s:.2f}' for s in cpu)}"
            f" | {runs[-1]['opens']} | {runs[-1]['rchar'] / 1e6:.1f} |"
        )
    traced = {k: v for k, v in results.items() if k.endswith("traced")}
    if traced:
        lines += ["", "| checkout, history | log files read | data files read | older nights' |"]
        lines.append("|---|---:|---:|---:|")
        for key, c in traced.items():
            name = key.removesuffix(" | traced")
            files = f"{c['log_files']} | {c['data_files']} | {c['history_data_files']}"
            lines.append(f"| {_cell(name)} | {files} |")
    costs = {k: v for k, v in results.items() if k.endswith("open ms")}
    if costs:
        names = sorted({t for c in costs.values() for t in c})
        lines += [
            "",
            "| table | " + " | ".join(_cell(k.removesuffix(" | open ms")) for k in costs) + " |",
        ]
        lines.append("|---|" + "---:|" * len(costs))
        for name in names:
            each = " | ".join(f"{c.get(name, float('nan')):.1f}" for c in costs.values())
            lines.append(f"| {name} (ms an open) | {each} |")
    return lines + _opens_table(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, nargs="+", default=[30, 150])
    parser.add_argument("--before", action="append", default=[])
    parser.add_argument("--checkout", action="append", default=[], type=Path)
    parser.add_argument("--models", type=int, default=MODELS)
    parser.add_argument("--episodes", type=int, default=EPISODES)
    parser.add_argument("--reruns", type=int, default=RERUNS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--off", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--built", choices=["score", "nightly"], default="score")
    args = parser.parse_args()
    modes = ["on", "off"] if args.off else ["on"]
    with ExitStack() as stack:
        checkouts = {THIS: TOP}
        for rev in args.before:
            checkouts[rev] = stack.enter_context(worktree(rev))
        for path in args.checkout:  # a checkout as it is (with its .venv, where it has one)
            head = ["git", "-C", str(path), "rev-parse", "--short", "HEAD"]
            checkouts[subprocess.run(head, capture_output=True, text=True).stdout.strip()] = path
        found = measure(
            checkouts,
            args.nights,
            args.repeat,
            modes,
            args.built,
            models=args.models,
            episodes=args.episodes,
            reruns=args.reruns,
        )
    print(json.dumps(found) if args.json else "\n".join(summary(found)))


if __name__ == "__main__":
    main()
