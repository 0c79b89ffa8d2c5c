"""Scale-out, object storage and a cost model (issue 17): ``python -m benchmarks.scale``.

python -m benchmarks.scale [--repeat 3] [--episodes 100000] [--configs local,dask-1,...]

One night of the simulated dump (``benchmarks.run.dump(EPISODES)``, generated once under
benchmarks/data/) is scored by ``flows.runs.score`` into a fresh output, in these
configurations, each run in a fresh process (the *driver*):

- ``local``: the local engine (``local_mapper``: two files at a time in threads), local disk;
- ``dask-1`` / ``dask-2``: ``dask_mapper`` on a ``distributed.LocalCluster`` of 1 / 2 worker
  processes, one thread each (``POLARS_MAX_THREADS=1`` in the workers), local disk;
- ``s3-local`` / ``s3-dask-2``: the local engine / 2 Dask workers, the dump read from and the
  output written to a moto S3 server (its own process, started here; the dump uploaded once
  with boto3), credentials and endpoint given as the standard ``AWS_*`` variables, as the
  README says a user gives them.

Each driver first starts its cluster (timed: ``cluster_s``), warms every worker (imports,
first calls: each scores the 100-episode dump's file) and scores the 100-episode dump once
through ``score`` (``warm_s``); then it scores the big night once (``net_s``: wall time beyond
start-up). Configurations run interleaved, ``--repeat`` rounds; medians and the spread
(min-max) are reported, as this machine's speed varies by up to a third between runs.

Also measured in the driver: its resident memory before the big run and its peak during it
(``/proc/self/status``: VmRSS, and VmHWM reset through ``/proc/self/clear_refs``; falling back
to ``getrusage``); the run's own timings (``files_s``, ``assemble_s``, ``aggregate_s``,
``stage_s``); each table's ``delta.write_night`` (validation excluded) and the runs-table
commit, timed by wrapping those functions in the driver; on Dask, every task's compute time
(the scheduler's task stream); on S3, every request the server saw (a WSGI wrapper around
moto counts requests, ``Range`` headers and bytes per object), compared per dump file with
the file's size and its columns' byte ranges (which columns were fetched, which were not,
whether any GET fetched a whole file). With the local engine, a Delta commit of staged files
(``delta.write_data_files`` + ``commit_files``, the write path issue 17 asks for) is timed
for 10 and 100 staged files: the commit cost per file.

From those points a cost model (rows per second per core, driver bytes per episode, driver
time per episode, write cost per file) predicts each measured configuration (printed beside
the measurement) and a night of 1 billion rows on 1, 2, 8 and 32 workers.

Prints markdown tables; writes every figure to benchmarks/data/scale.json.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

T0 = time.perf_counter()  # before the heavy imports of a driver

DATA = Path(__file__).parent / "data"
RESULT = DATA / "scale.json"
TINY = 100
NIGHT = "2026-12-01"
BILLION = 1_000_000_000
PROJECTED_WORKERS = (1, 2, 8, 32)
STAGED = (10, 1000)  # files staged per commit: the commit cost per file
STAGED_ROWS = 100  # rows per staged file (the commit's cost is in its actions, not bytes)
MIB = 2**20
OTHER_LOAD = 0.2  # cores other processes may use during a run before it is run again


@dataclass(frozen=True)
class Config:
    engine: str  # "local" or "dask"
    workers: int  # Dask worker processes (0: the local engine, in the driver)
    store: str  # "disk" or "s3"


CONFIGS: dict[str, Config] = {
    "local": Config("local", 0, "disk"),
    "dask-1": Config("dask", 1, "disk"),
    "dask-2": Config("dask", 2, "disk"),
    "s3-local": Config("local", 0, "s3"),
    "s3-dask-2": Config("dask", 2, "s3"),
}


# -- the S3 server: moto in its own process, every request counted ---------------------------

# moto's own server (as tests/s3server.py starts it), its WSGI app wrapped: each request's
# method, path, Range header and bytes in and out are kept; GET /_bench/requests returns
# them, POST /_bench/requests returns them and starts afresh.
_COUNTING_MOTO = """
import json, logging, sys, threading
logging.getLogger("werkzeug").setLevel(logging.ERROR)
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app)

LOG, LOCK = [], threading.Lock()

def counting(app):
    def wrapped(environ, start_response):
        if environ.get("PATH_INFO") == "/_bench/requests":
            with LOCK:
                body = json.dumps(LOG).encode()
                if environ["REQUEST_METHOD"] == "POST":
                    LOG.clear()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        entry = {"method": environ["REQUEST_METHOD"], "path": environ.get("PATH_INFO", ""),
                 "query": environ.get("QUERY_STRING", ""), "range": environ.get("HTTP_RANGE"),
                 "in": int(environ.get("CONTENT_LENGTH") or 0), "out": 0}
        with LOCK:
            LOG.append(entry)
        def body():
            for chunk in app(environ, start_response):
                entry["out"] += len(chunk)
                yield chunk
        return body()
    return wrapped

run_simple("127.0.0.1", int(sys.argv[1]), counting(DomainDispatcherApplication(
    create_backend_app)), threaded=True, request_handler=MotoRequestHandler)
"""


def start_counting_s3() -> Any:
    """moto in its own process (``tests.s3server.S3Server``), counting every request."""
    from tests.s3server import free_port, launch_s3_server

    port = free_port()
    return launch_s3_server([_COUNTING_MOTO, str(port)], port, timeout=20)


def s3_requests(endpoint: str, reset: bool = False) -> list[dict[str, Any]]:
    """The requests the counting server saw (since the last reset); ``reset``: start afresh."""
    request = urllib.request.Request(
        endpoint + "/_bench/requests",
        data=b"" if reset else None,
        method="POST" if reset else "GET",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        requests: list[dict[str, Any]] = json.loads(response.read())
        return requests


def upload(server: Any, bucket: str, root: Path, prefix: str) -> str:
    """The dump's Parquet files under ``s3://bucket/prefix/``: its URL."""
    client = server.client()
    for path in sorted(root.rglob("*.parquet")):
        client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(root).as_posix()}")
    return f"s3://{bucket}/{prefix}"


# -- byte ranges -----------------------------------------------------------------------------


def byte_range(header: str | None, size: int) -> tuple[int, int]:
    """The half-open byte interval a GET with this ``Range`` header fetches from an object
    of ``size`` bytes (no header: all of it).

    >>> byte_range(None, 100), byte_range("bytes=10-19", 100), byte_range("bytes=-30", 100)
    ((0, 100), (10, 20), (70, 100))
    >>> byte_range("bytes=90-", 100), byte_range("bytes=90-500", 100)
    ((90, 100), (90, 100))
    """
    if not header:
        return 0, size
    first, _, last = header.removeprefix("bytes=").split(",")[0].strip().partition("-")
    if not first:
        return max(0, size - int(last)), size
    return int(first), min(size, int(last) + 1) if last else size


def merged(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of half-open intervals, sorted and disjoint.

    >>> merged([(5, 10), (0, 3), (8, 12), (12, 13)])
    [(0, 3), (5, 13)]
    """
    out: list[tuple[int, int]] = []
    for start, stop in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def overlap(a: Sequence[tuple[int, int]], b: tuple[int, int]) -> int:
    """Bytes of interval ``b`` that the disjoint intervals ``a`` cover.

    >>> overlap([(0, 3), (5, 13)], (2, 6))
    2
    """
    return sum(max(0, min(stop, b[1]) - max(start, b[0])) for start, stop in a)


def column_ranges(path: Path) -> tuple[dict[str, list[tuple[int, int]]], int]:
    """Each column's byte ranges in a Parquet file (its chunks in every row group), and the
    length of the footer (metadata and the 8 closing bytes)."""
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    ranges: dict[str, list[tuple[int, int]]] = {}
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(index)
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
                start = min(start, chunk.dictionary_page_offset)
            ranges.setdefault(chunk.path_in_schema, []).append(
                (start, start + chunk.total_compressed_size)
            )
    return ranges, metadata.serialized_size + 8


def fetched_per_file(
    requests: Sequence[dict[str, Any]], bucket: str, prefix: str, dump: Path
) -> list[dict[str, Any]]:
    """For each file of ``dump`` (uploaded under ``s3://bucket/prefix``): its size, the GETs
    of it, the bytes they moved, the distinct bytes they covered, which columns they
    covered (whole, part, not at all) and whether any GET fetched the whole file."""
    rows = []
    for path in sorted(dump.rglob("*.parquet")):
        key = f"/{bucket}/{prefix}/{path.relative_to(dump).as_posix()}"
        size = path.stat().st_size
        gets = [r for r in requests if r["method"] == "GET" and r["path"] == key]
        spans = [byte_range(r["range"], size) for r in gets]
        covered = merged(spans)
        columns, footer = column_ranges(path)
        fetched: list[str] = []
        partly: list[str] = []
        skipped: list[str] = []
        for name, chunks in columns.items():
            inside = sum(overlap(covered, c) for c in chunks)
            whole = sum(stop - start for start, stop in chunks)
            (fetched if inside == whole else skipped if inside == 0 else partly).append(name)
        rows.append(
            {
                "file": path.relative_to(dump).as_posix(),
                "size": size,
                "footer_bytes": footer,
                "gets": len(gets),
                "ranged_gets": sum(r["range"] is not None for r in gets),
                "whole_file_gets": sum(1 for s in spans if s == (0, size)),
                "bytes_moved": sum(r["out"] for r in gets),
                "distinct_bytes": sum(stop - start for start, stop in covered),
                "ranges": [r["range"] for r in gets],
                "columns_fetched": fetched,
                "columns_partly": partly,
                "columns_not_fetched": skipped,
                "bytes_of_columns_not_fetched": sum(
                    stop - start for n in skipped for start, stop in columns[n]
                ),
            }
        )
    return rows


def request_summary(requests: Sequence[dict[str, Any]], dump_key: str) -> dict[str, Any]:
    """Requests by kind: the dump's GETs, and the output's GETs, PUTs, lists, deletes."""
    summary: dict[str, Any] = {"requests": len(requests)}
    for r in requests:
        where = "dump" if r["path"].startswith(dump_key) else "out"
        kind = "LIST" if r["method"] == "GET" and "list-type" in r["query"] else r["method"]
        entry = summary.setdefault(f"{where}_{kind}", {"count": 0, "bytes_in": 0, "bytes_out": 0})
        entry["count"] += 1
        entry["bytes_in"] += r["in"]
        entry["bytes_out"] += r["out"]
    return summary


# -- the driver's memory ---------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def rss_mib() -> float:
    """This process's resident memory now (getrusage's peak where /proc is missing)."""
    kib = _status_kib("VmRSS")
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def reset_peak() -> bool:
    """Reset this process's peak resident memory (Linux: VmHWM); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def peak_mib() -> float:
    """This process's peak resident memory since ``reset_peak`` (else since it started)."""
    kib = _status_kib("VmHWM")
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


# -- other work on the machine ---------------------------------------------------------------


def busy_cpu_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:9]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(roots: Sequence[int]) -> float:
    """CPU seconds spent so far by the processes ``roots`` and all their descendants."""
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    clock = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        spent[int(entry)] = (int(fields[11]) + int(fields[12])) / clock
    ours = set(roots)
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in ours} - ours
        ours |= more
        grew = bool(more)
    return sum(spent.get(pid, 0.0) for pid in ours)


def busy_share(seconds: float = 1.0) -> float:
    """The share of the machine's cores busy over the next ``seconds``."""
    before = busy_cpu_s()
    time.sleep(seconds)
    return (busy_cpu_s() - before) / seconds / (os.cpu_count() or 1)


def wait_until_quiet(most: float, share: float = 0.1) -> tuple[float, float]:
    """Wait (at most ``most`` seconds) until under ``share`` of the machine is busy for a
    second (other people's work would be measured with ours): the share last seen and the
    seconds waited."""
    started = time.monotonic()
    seen = busy_share()
    while seen >= share and time.monotonic() - started < most:
        seen = busy_share()
    return seen, time.monotonic() - started


# -- in a driver -----------------------------------------------------------------------------


@contextlib.contextmanager
def timed_writes() -> Iterator[dict[str, list[float]]]:
    """Seconds of every ``delta.write_night`` (by table: the data files and the commit of one
    night, after validation) and ``runs_table.record_run`` (the run's commit), in this
    process: flows.store.output calls them through their modules, so wrapping them there counts
    every call."""
    from flows.store import delta, runs_table

    seconds: dict[str, list[float]] = {}

    def timing(name: Callable[[Any], str], call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                seconds.setdefault(name(args), []).append(time.perf_counter() - started)

        return wrapper

    write_night, record_run = delta.write_night, runs_table.record_run
    delta.write_night = timing(lambda args: str(args[1]), write_night)  # type: ignore[assignment]
    runs_table.record_run = timing(lambda args: "runs", record_run)  # type: ignore[assignment]
    try:
        yield seconds
    finally:
        delta.write_night, runs_table.record_run = write_night, record_run  # type: ignore[assignment]


def _warm_worker(tiny: str) -> dict[str, Any]:
    """In a Dask worker: import and first-call everything by scoring the tiny dump's files;
    the worker's polars threads."""
    import polars as pl

    from flows.score import score_file
    from flows.store.dumps import discover
    from transforms.registry import resolve

    for f in discover(tiny):
        score_file(f, resolve(()))
    import flows

    return {"polars_threads": pl.thread_pool_size(), "pid": os.getpid(), "flows": flows.__file__}


def _worker_reset(dask_worker: Any = None) -> float:
    """In a Dask worker: its resident memory now, its peak reset."""
    gc.collect()
    reset_peak()
    return rss_mib()


def _worker_peak(dask_worker: Any = None) -> float:
    return peak_mib()


def _file_working_set(root: str) -> float:
    """In a Dask worker: MiB its resident memory rises while it scores the first file of the
    dump at ``root`` (the result dropped)."""
    from flows.score import score_file
    from flows.store.dumps import discover
    from transforms.registry import resolve

    first = discover(root)[0]
    gc.collect()
    base = rss_mib()
    reset_peak()
    score_file(first, resolve(()))
    return peak_mib() - base


def _stream_index(dask_scheduler: Any = None) -> int:
    index: int = dask_scheduler.get_task_stream_index()
    return index


def _stream_since(index: int, dask_scheduler: Any = None) -> list[dict[str, Any]]:
    tasks = dask_scheduler.get_task_stream(start_index=index)
    return [
        {
            "key": str(t.get("key")),
            "worker": t.get("worker"),
            "startstops": [
                {"action": s["action"], "start": s["start"], "stop": s["stop"]}
                for s in t.get("startstops", ())
            ],
        }
        for t in tasks
    ]


# The function ``flows.mappers.dask_mapper`` submits one task per file (its key names it): it
# scores the file and stages its rows.
FILE_TASK = "score_and_stage"


def task_seconds(tasks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Compute seconds per file task (``FILE_TASK``; and by worker), from the task stream."""
    compute = []
    by_worker: dict[str, float] = {}
    span = [math.inf, -math.inf]
    for task in tasks:
        if FILE_TASK not in task["key"]:
            continue
        seconds = sum(
            s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute"
        )
        compute.append(seconds)
        by_worker[task["worker"]] = by_worker.get(task["worker"], 0.0) + seconds
        for s in task["startstops"]:
            span = [min(span[0], s["start"]), max(span[1], s["stop"])]
    return {
        "tasks": len(compute),
        "compute_s": compute,
        "compute_sum_s": sum(compute),
        "by_worker_s": list(by_worker.values()),
        "span_s": span[1] - span[0] if compute else 0.0,
    }


def staged_commit(out: Any, night: str) -> dict[str, float]:
    """Seconds of one Delta commit (``delta.staged.commit_files``: the overwrite of a night) of 10
    and of 100 staged files, each file a night's rows of one category, as Dask workers would
    stage them (``delta.write_data_files``), into a table of the output holding the night."""
    import polars as pl

    from flows.store.delta.staged import commit_files, write_data_files

    frame = out.read("episode_scores").filter(pl.col("dump_date") == night)
    table, one = "bench_staged_commit", frame.filter(pl.col("category") == frame["category"][0])
    staged = lambda files: [  # noqa: E731
        write_data_files(
            out.location, table, one.slice(i * STAGED_ROWS, STAGED_ROWS), night, ("dump_date",)
        )
        for i in range(files)
    ]
    commit_files(out.location, table, night, staged(1))  # creates the table
    seconds = {}
    for files in STAGED:
        files_staged = staged(files)
        started = time.perf_counter()
        commit_files(out.location, table, night, files_staged)
        seconds[f"commit_{files}_files_s"] = time.perf_counter() - started
    return seconds


def read_probe(endpoint: str, url: str) -> dict[str, list[str | None]]:
    """Which GETs each step of reading one dump file makes on its own (the ``Range`` header
    of each): the footer reads of ``flows.store.dumps.row_count`` and ``read_schema``, then a whole
    ``score_file`` (which calls both, then scans the columns it needs)."""
    from flows.score import score_file
    from flows.store.dumps import discover, read_schema, row_count
    from transforms.registry import resolve

    first = discover(url)[0]
    steps: dict[str, Callable[[], object]] = {
        "row_count": lambda: row_count(first),
        "read_schema": lambda: read_schema(first),
        "score_file": lambda: score_file(first, resolve(())),
    }
    ranges = {}
    for step, call in steps.items():
        s3_requests(endpoint, reset=True)
        call()
        ranges[step] = [
            r["range"]
            for r in s3_requests(endpoint)
            if r["method"] == "GET" and r["path"].endswith(first.relative)
        ]
    return ranges


def drive(name: str, episodes: int, round_: int, s3: str | None, extras: bool) -> dict[str, Any]:
    """One configuration on one night, in this fresh process: start-up, warm-up, the night.
    ``extras``: then the staged commit (local engine) and the read probe (S3, local engine)."""
    from flows.mappers import Mapper, dask_mapper, local_mapper
    from flows.runs import score
    from flows.store.output import Output

    imported = time.perf_counter() - T0
    config = CONFIGS[name]
    work = Path(tempfile.mkdtemp(prefix=f"scale-{name}-"))
    if config.store == "s3":
        assert s3 is not None, "an S3 configuration needs --s3 ENDPOINT,BUCKET"
        endpoint, bucket, server_pid = s3.split(",")
        tiny_root, night_root = (f"s3://{bucket}/dump-e{n}" for n in (TINY, episodes))
        out_tiny, out_night = (
            f"s3://{bucket}/out/{name}-e{episodes}-r{round_}-{w}" for w in ("tiny", "night")
        )
    else:
        endpoint = bucket = server_pid = ""
        tiny_root, night_root = (str(DATA / f"e{n}") for n in (TINY, episodes))
        out_tiny, out_night = (str(work / w) for w in ("tiny", "night"))
    import flows

    result: dict[str, Any] = {
        "config": name,
        "night": episodes,
        "round": round_,
        "imports_s": imported,
        "flows": flows.__file__,  # the code measured
    }
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, True)
        mapper: Mapper = local_mapper
        client: Any = None
        if config.workers:
            from distributed import Client, LocalCluster

            started = time.perf_counter()
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=config.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    env={"POLARS_MAX_THREADS": "1"},
                )
            )
            client = stack.enter_context(Client(cluster))
            result["cluster_s"] = time.perf_counter() - started
            started = time.perf_counter()
            result["workers"] = list(client.run(_warm_worker, tiny_root).values())
            result["workers_warm_s"] = time.perf_counter() - started
            mapper = dask_mapper(cluster.scheduler_address)
        started = time.perf_counter()
        with timed_writes() as writes:
            tiny = score(tiny_root, out_tiny, (), mapper)
        result["warm_s"] = time.perf_counter() - started
        assert tiny.result is not None
        result["tiny"] = {
            "net_s": tiny.seconds,
            "timings": dict(tiny.result.timings),
            "counts": dict(tiny.result.counts),
            "episodes": _episodes(tiny.result.counts),
            "write_night_s": {t: sum(s) for t, s in writes.items()},
        }
        if endpoint:
            s3_requests(endpoint, reset=True)
        index = client.run_on_scheduler(_stream_index) if client is not None else 0
        if client is not None:
            result["worker_baseline_mib"] = list(client.run(_worker_reset).values())
        gc.collect()
        roots = [os.getpid(), *([int(server_pid)] if server_pid else [])]
        baseline = rss_mib()
        exact_peak = reset_peak()
        with timed_writes() as writes:
            busy, ours = busy_cpu_s(), tree_cpu_s(roots)
            started = time.perf_counter()
            outcome = score(night_root, out_night, (), mapper)
            net = time.perf_counter() - started
            busy, ours = busy_cpu_s() - busy, tree_cpu_s(roots) - ours
        peak = peak_mib()
        assert outcome.result is not None, f"{name}: nothing scored"
        assert not outcome.nights_failed, outcome.nights_failed
        counts = dict(outcome.result.counts)
        result |= {
            "net_s": net,
            "timings": dict(outcome.result.timings),
            "counts": counts,
            "episodes": _episodes(counts),
            "write_night_s": {t: sum(s) for t, s in writes.items()},
            "driver_baseline_mib": baseline,
            "driver_peak_mib": peak,
            "driver_peak_exact": exact_peak,  # False: getrusage's peak since the process began
            # CPU of this run (the driver, its workers, the S3 server) and of everything else
            # on the machine meanwhile, in cores
            "own_cores": ours / net,
            "other_cores": max(0.0, busy - ours) / net,
        }
        if endpoint:
            requests = s3_requests(endpoint)
            result["s3_requests"] = request_summary(requests, f"/{bucket}/dump-e{episodes}/")
            result["s3_files"] = fetched_per_file(
                requests, bucket, f"dump-e{episodes}", DATA / f"e{episodes}"
            )
        if client is not None:
            result["tasks"] = task_seconds(client.run_on_scheduler(_stream_since, index))
            result["worker_peak_mib"] = list(client.run(_worker_peak).values())
            one = next(iter(client.scheduler_info()["workers"]))
            result["file_working_set_mib"] = client.run(
                _file_working_set, night_root, workers=[one]
            )[one]
        if config.engine == "local":
            from flows.mappers import FILES_AT_ONCE

            result["files_at_once"] = FILES_AT_ONCE
        if extras and config.engine == "local":
            result["staged_commit"] = staged_commit(Output.at(out_night), NIGHT)
            if endpoint:
                result["read_probe"] = read_probe(endpoint, night_root)
    return result


def _episodes(counts: dict[str, int]) -> int:
    return sum(
        counts[k] for k in ("episodes_scored", "episodes_rejected", "episodes_harness_error")
    )


# -- the parent: rounds of drivers, then tables and the model ------------------------------


def run_driver(
    name: str, episodes: int, round_: int, s3: str | None, extras: bool
) -> dict[str, Any]:
    """``drive`` in a fresh process (the S3 configurations get the server as ``AWS_*``)."""
    command = [sys.executable, "-m", "benchmarks.scale", "--driver", name]
    command += ["--episodes", str(episodes), "--round", str(round_)]
    command += ["--extras"] if extras else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "COGSCORE_"))}
    if s3 is not None:
        command += ["--s3", s3]
    if CONFIGS[name].store == "s3":
        assert s3 is not None
        from tests.s3server import REGION

        env |= {
            "AWS_ENDPOINT_URL": s3.split(",")[0],
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ALLOW_HTTP": "true",
        }
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"driver {name} on e{episodes} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def med(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], digits: int = 2) -> str:
    """``median (min-max)``.

    >>> spread([3.0, 1.0, 2.0]), spread([2.0])
    ('2.00 (1.00-3.00)', '2.00')
    """
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{med(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def grouped(runs: Sequence[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The runs by (configuration, night size), in the order first met."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["config"], run["night"]), []).append(run)
    return groups


def line_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares intercept and slope of y against x (two points or more).

    >>> line_fit([(1, 3), (3, 7)])
    (1.0, 2.0)
    """
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def driver_memory(run: dict[str, Any]) -> float:
    """MiB the driver's resident memory rose during the night (peak over baseline)."""
    return float(run["driver_peak_mib"] - run["driver_baseline_mib"])


def fit_model(runs: Sequence[dict[str, Any]], sizes: Sequence[int]) -> dict[str, Any]:
    """The cost model's parameters, from the 1-worker cluster's runs on the nights of
    ``sizes`` (two or more; medians over rounds, then least-squares lines through them):

    - rows per second per core: rows over the summed compute time of the ``FILE_TASK``
      tasks (one worker, one thread, ``POLARS_MAX_THREADS=1``);
    - map overhead: ``files_s`` beyond the tasks' compute (a client per night, scheduling,
      each file's result shipped to the driver), a line in the files of the night;
    - the driver's time: ``net_s - files_s`` (assemble, aggregate, validate and write every
      table, the run's state, lease and commit), a line in the night's episodes;
    - the driver's memory: peak minus baseline resident memory, a line in the episodes (its
      slope: bytes per episode at the driver, which holds every file's result until the
      night is written);
    - a file's working set: a worker's rise in resident memory while it scores one file of
      the night (after the night, its result dropped);
    - write cost: ``stage_s`` (validation, data files and the Delta commit of every table,
      part of the driver's time), a line in the files of the night.
    """
    groups = grouped(runs)
    fitted_points = [("dask-1", n) for n in sorted(set(sizes)) if ("dask-1", n) in groups]
    if len(fitted_points) < 2:
        raise ValueError("the cost model needs the dask-1 runs on two nights or more")
    night: list[dict[str, float]] = []
    for key in fitted_points:
        rs = groups[key]
        counts = rs[0]["counts"]
        night.append(
            {
                "rows": counts["rows_read"],
                "files": counts["files_read"],
                "episodes": rs[0]["episodes"],
                "compute": med([r["tasks"]["compute_sum_s"] for r in rs]),
                "overhead": med(
                    [r["timings"]["files_s"] - r["tasks"]["compute_sum_s"] for r in rs]
                ),
                "driver": med([r["net_s"] - r["timings"]["files_s"] for r in rs]),
                "memory": med([driver_memory(r) for r in rs]),
                "working_set": med([r["file_working_set_mib"] for r in rs]),
                "write": med([r["timings"]["stage_s"] for r in rs]),
            }
        )
    biggest = max(night, key=lambda n: n["rows"])
    overhead = line_fit([(n["files"], n["overhead"]) for n in night])
    driver = line_fit([(n["episodes"], n["driver"]) for n in night])
    memory = line_fit([(n["episodes"], n["memory"]) for n in night])
    write = line_fit([(n["files"], n["write"]) for n in night])
    return {
        "fitted_on": [f"dask-1 on {n['episodes']:,} episodes" for n in night],
        "fitted_points": fitted_points,
        "rows_per_episode": biggest["rows"] / biggest["episodes"],
        "rows_per_file": biggest["rows"] / biggest["files"],
        "rows_per_s_per_core": sum(n["rows"] for n in night) / sum(n["compute"] for n in night),
        "map_s_per_night": overhead[0],
        "map_s_per_file": overhead[1],
        "driver_s_per_night": driver[0],
        "driver_s_per_episode": driver[1],
        "driver_mib_per_night": memory[0],
        "driver_bytes_per_episode": memory[1] * MIB,
        "driver_baseline_mib": med(
            [r["driver_baseline_mib"] for k in fitted_points for r in groups[k]]
        ),
        "working_set_mib_per_file": med([n["working_set"] for n in night]),
        "write_s_per_night": write[0],
        "write_s_per_file": write[1],
    }


def predict(
    model: dict[str, Any],
    rows: float,
    workers: int,
    in_driver: bool = False,
    files: int | None = None,
) -> dict[str, float]:
    """Seconds and memory the model gives a night of ``rows`` rows (in ``files`` files, by
    default files of the measured size) on ``workers`` workers of one core each.
    ``in_driver``: the local engine (``workers`` files at a time in the driver's threads:
    nothing shipped, their working sets in the driver). Files are the unit of distribution:
    the map takes ``ceil(files / workers)`` file times; the shipping of results (the map's
    overhead) and the driver's part are serial. A Dask worker stages the episode rows of
    each file it scores and hands back its slim result as soon as the file is done, so it
    holds one file's working set, however many files it scores."""
    files = files or max(1, math.ceil(rows / model["rows_per_file"]))
    episodes = rows / model["rows_per_episode"]
    per_file = rows / files / model["rows_per_s_per_core"]
    parallel = math.ceil(files / workers) * per_file
    shipping = 0.0 if in_driver else model["map_s_per_night"] + model["map_s_per_file"] * files
    driver = model["driver_s_per_night"] + model["driver_s_per_episode"] * episodes
    results = model["driver_mib_per_night"] + model["driver_bytes_per_episode"] * episodes / MIB
    working_set = model["working_set_mib_per_file"]
    memory = results + (min(workers, files) * working_set if in_driver else 0.0)
    return {
        "files": files,
        "episodes": episodes,
        "parallel_s": parallel,  # the files' scoring, spread over the workers
        "serial_s": shipping + driver,  # results shipped to the driver, then the driver's part
        "seconds": parallel + shipping + driver,
        "driver_memory_mib": memory,
        "driver_peak_mib": model["driver_baseline_mib"] + memory,
        "worker_memory_mib": 0.0 if in_driver else working_set,
    }


def checks(
    model: dict[str, Any],
    groups: dict[tuple[str, int], list[dict[str, Any]]],
    fitted: set[tuple[str, int]],
) -> str:
    """The model's time and driver memory beside the measured ones (local disk runs)."""
    lines = []
    for (name, size), rs in groups.items():
        config = CONFIGS[name]
        if config.store != "disk":
            continue
        counts = rs[0]["counts"]
        p = predict(
            model,
            counts["rows_read"],
            config.workers or rs[0].get("files_at_once", 2),
            config.engine == "local",
            counts["files_read"],
        )
        measured, rise = med([r["net_s"] for r in rs]), med([driver_memory(r) for r in rs])
        lines.append(
            [
                name,
                f"{size:,}",
                "fitted" if (name, size) in fitted else "check",
                f"{p['seconds']:.2f}",
                spread([r["net_s"] for r in rs]),
                f"{(p['seconds'] - measured) / measured:+.0%}",
                f"{p['driver_memory_mib']:.0f}",
                spread([driver_memory(r) for r in rs], 0),
                f"{(p['driver_memory_mib'] - rise) / rise:+.0%}",
            ]
        )
    return table(
        [
            "config",
            "episodes",
            "",
            "predicted s",
            "measured s",
            "error",
            "predicted driver +MiB",
            "measured +MiB",
            "error",
        ],
        lines,
    )


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table, numbers right-aligned.

    >>> print(table(["a", "b"], [[1, "x"]]))
    | a | b |
    |---|---:|
    | 1 | x |
    """
    lines = ["| " + " | ".join(header) + " |", "|---|" + "|".join("---:" for _ in header[1:]) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    """The markdown tables of every figure in ``results``."""
    runs: list[dict[str, Any]] = results["runs"]
    groups = grouped(runs)
    model = results["model"]
    out = [
        f"# Scale: one night scored by `flows.runs.score` ({results['command']})\n",
        f"Code: {results.get('code', 'unknown')}. {results['machine']}. Medians (min-max) of "
        f"{results['repeat']} rounds (the "
        "configurations interleaved; the largest night once), each run a fresh driver "
        "process. net: wall time of `score` on the night after start-up (cluster started, "
        f"every worker warmed, a {TINY}-episode night scored through `score`). Dask: "
        "LocalCluster, worker processes of one thread each, `POLARS_MAX_THREADS=1` in the "
        "workers; local: the local engine (two files at a time in the driver's threads).\n",
    ]
    lines = []
    for (name, _), rs in groups.items():
        rows, episodes = rs[0]["counts"]["rows_read"], rs[0]["episodes"]
        net = [r["net_s"] for r in rs]
        startup = [r.get("cluster_s", 0) + r.get("workers_warm_s", 0) + r["warm_s"] for r in rs]
        driver_steps = [r["timings"]["assemble_s"] + r["timings"]["aggregate_s"] for r in rs]
        compute = [r["tasks"]["compute_sum_s"] for r in rs] if "tasks" in rs[0] else []
        lines.append(
            [
                name,
                f"{episodes:,}",
                f"{rows / 1e6:.2f} M",
                rs[0]["counts"]["files_read"],
                len(rs),
                spread(startup, 1),
                spread(net),
                f"{rows / med(net) / 1e6:.2f} M",
                spread([r["timings"]["files_s"] for r in rs]),
                spread(driver_steps),
                spread([r["timings"]["stage_s"] for r in rs]),
                spread(compute) if compute else "",
                f"{rows / med(compute) / 1e6:.2f} M" if compute else "",
                f"{med([r['driver_baseline_mib'] for r in rs]):.0f}",
                spread([r["driver_peak_mib"] for r in rs], 0),
                f"{med([driver_memory(r) * MIB / r['episodes'] for r in rs]):,.0f}",
                f"{med([r.get('other_cores', 0.0) for r in rs]):.2f}",
            ]
        )
    out.append(
        table(
            [
                "config",
                "episodes",
                "rows",
                "files",
                "runs",
                "start-up s",
                "net s",
                "rows/s (net)",
                "files_s",
                "assemble + aggregate s",
                "stage_s",
                "task compute s (sum)",
                "rows/s per core",
                "driver base MiB",
                "driver peak MiB",
                "driver +bytes/episode",
                "other load, cores",
            ],
            lines,
        )
    )
    out.append(
        "\nstart-up: cluster start, workers warmed, the tiny night through `score`. "
        "files_s, assemble/aggregate, stage_s: the run's own timings (its run record). "
        "task compute: the scheduler's task stream (compute only). driver peak: VmHWM during "
        "the night, reset before it; +bytes/episode: (peak - base) / episodes. other load: "
        "CPU used by processes other than this run's (driver, workers, S3 server) during the "
        "night, in cores (/proc/stat against the run's process tree); each run waits for a "
        f"quiet machine first, and a run during which others took over {OTHER_LOAD} cores is "
        "run again (the least disturbed attempt is kept)."
    )

    out.append("\n## Scale-out: 1 -> 2 Dask worker processes\n")
    lines = []
    for size in sorted({n for _, n in groups}):
        if ("dask-1", size) not in groups or ("dask-2", size) not in groups:
            continue
        one, two = groups[("dask-1", size)], groups[("dask-2", size)]
        ratios = [a["net_s"] / b["net_s"] for a, b in zip(one, two, strict=False)]
        n1, n2 = med([r["net_s"] for r in one]), med([r["net_s"] for r in two])
        f1, f2 = (med([r["timings"]["files_s"] for r in g]) for g in (one, two))
        c1, c2 = (med([r["tasks"]["compute_sum_s"] for r in g]) for g in (one, two))
        lines.append(
            [
                f"{size:,}",
                f"{n1:.2f}",
                f"{n2:.2f}",
                f"{n1 / n2:.2f}x",
                ", ".join(f"{x:.2f}" for x in ratios),
                f"{f1:.2f} -> {f2:.2f} ({f1 / f2:.2f}x)",
                f"{c1:.2f} -> {c2:.2f} (+{c2 / c1 - 1:.0%})",
            ]
        )
    out.append(
        table(
            [
                "episodes",
                "1 worker net s",
                "2 workers net s",
                "speed-up",
                "per round",
                "files_s (speed-up)",
                "task compute s, summed",
            ],
            lines,
        )
    )
    out.append(
        "\nThis machine has 2 cores: with 2 workers, both workers, the driver and the "
        "scheduler share them (the per-core rate drops: the summed compute rises), and the "
        "driver's steps after the files (assemble, aggregate, write) run once, on one "
        "process, whatever the workers: the speed-up of the whole night is bounded by them."
    )
    threads = sorted({w["polars_threads"] for r in runs for w in r.get("workers", [])})
    if threads:
        out.append(f"Each worker's polars thread pool, as the worker reported it: {threads}.")

    s3 = [k for k in groups if CONFIGS[k[0]].store == "s3"]
    if s3:
        out.append("\n## Object storage (moto S3 server, a local process) against local disk\n")
        lines = []
        for name, size in s3:
            disk = {"s3-local": "local", "s3-dask-2": "dask-2"}[name]
            if (disk, size) not in groups:
                continue
            a, b = groups[(disk, size)], groups[(name, size)]
            na, nb = med([r["net_s"] for r in a]), med([r["net_s"] for r in b])
            lines.append(
                [
                    f"{disk} / {name}",
                    f"{size:,}",
                    spread([r["net_s"] for r in a]),
                    spread([r["net_s"] for r in b]),
                    f"{nb / na:.2f}x (+{nb - na:.2f} s)",
                    *(
                        f"{med([r['timings'][k] for r in a]):.2f} / "
                        f"{med([r['timings'][k] for r in b]):.2f}"
                        for k in ("files_s", "stage_s")
                    ),
                ]
            )
        out.append(
            table(
                [
                    "disk / S3",
                    "episodes",
                    "disk net s",
                    "S3 net s",
                    "S3 against disk",
                    "files_s disk / S3",
                    "stage_s disk / S3",
                ],
                lines,
            )
        )
        name, size = s3[0]
        first = groups[(name, size)][0]
        files = first["s3_files"]
        out.append(
            f"\nBytes fetched from S3 per dump file ({name}, {size:,} episodes, round 1: every "
            "GET of the file by any step, from the server's own request log):\n"
        )
        lines = []
        for f in files:
            lines.append(
                [
                    f["file"].rsplit("/", 1)[-1],
                    f"{f['size']:,}",
                    f"{f['footer_bytes']:,}",
                    f["gets"],
                    f["ranged_gets"],
                    f["whole_file_gets"],
                    f"{f['bytes_moved']:,}",
                    f"{f['bytes_moved'] / f['size']:.2f}",
                    f"{f['distinct_bytes'] / f['size']:.2f}",
                    ", ".join(f["columns_not_fetched"]) or "none",
                    ", ".join(f["columns_partly"]) or "none",
                ]
            )
        out.append(
            table(
                [
                    "file",
                    "size B",
                    "footer B",
                    "GETs",
                    "ranged",
                    "whole-file GETs",
                    "bytes fetched",
                    "fetched / size",
                    "distinct bytes / size",
                    "columns not fetched",
                    "columns partly fetched",
                ],
                lines,
            )
        )
        every = [f for k in s3 for r in groups[k] for f in r["s3_files"]]
        whole = sum(f["whole_file_gets"] for f in every)
        moved, size_all = sum(f["bytes_moved"] for f in files), sum(f["size"] for f in files)
        distinct = sum(f["distinct_bytes"] for f in files)
        out.append(
            f"\nIn all ({name}, round 1): {moved:,} bytes fetched for {size_all:,} bytes of "
            f"files ({moved / size_all:.2f}); {distinct / size_all:.2f} of the files' bytes "
            f"fetched at least once. Over every S3 run ({len(every)} file reads): "
            + (
                f"**{whole} GET(s) fetched a whole file** (no Range header, or a range over all "
                "of it): some step downloads whole files."
                if whole
                else "no GET fetched a whole file: every read of a dump file was a ranged GET."
            )
        )
        probe = next((r["read_probe"] for r in runs if "read_probe" in r), None)
        if probe:
            out.append(
                "\nWhat each step fetches on its own (one file, the Range header of each GET): "
                + "; ".join(f"`{step}`: {', '.join(map(str, rs))}" for step, rs in probe.items())
            )
        summary = first["s3_requests"]
        out.append(
            "\nEvery request of that run, by kind: "
            + "; ".join(
                f"{k} {v['count']} ({v['bytes_out'] / 1e6:.2f} MB sent, "
                f"{v['bytes_in'] / 1e6:.2f} MB received)"
                for k, v in sorted(summary.items())
                if isinstance(v, dict)
            )
        )

    out.append("\n## Cost model\n")
    out.append(
        table(
            ["parameter", "value", "how"],
            [
                [
                    "rows per second per core (scoring)",
                    f"{model['rows_per_s_per_core']:,.0f}",
                    "rows / summed compute of the score_and_stage tasks",
                ],
                [
                    "map overhead",
                    f"{model['map_s_per_night']:.2f} s per night + "
                    f"{model['map_s_per_file'] * 1e3:.1f} ms per file",
                    "files_s beyond the tasks' compute: client, scheduling, results to the driver",
                ],
                [
                    "driver time",
                    f"{model['driver_s_per_night']:.2f} s per night + "
                    f"{model['driver_s_per_episode'] * 1e6:.2f} µs per episode",
                    "net - files_s: assemble, aggregate, validate, write, commit",
                ],
                [
                    "of which staging (stage_s)",
                    f"{model['write_s_per_night']:.2f} s per night + "
                    f"{model['write_s_per_file'] * 1e3:.1f} ms per file",
                    "validate, write the data files and commit every table",
                ],
                [
                    "driver memory",
                    f"{model['driver_mib_per_night']:.0f} MiB per night + "
                    f"{model['driver_bytes_per_episode']:,.0f} bytes per episode",
                    "peak - baseline resident memory of the driver",
                ],
                [
                    "a file's working set",
                    f"{model['working_set_mib_per_file']:.0f} MiB",
                    "a worker's RSS rise while it scores one file (its result included)",
                ],
                [
                    "driver baseline",
                    f"{model['driver_baseline_mib']:.0f} MiB",
                    "resident memory after start-up",
                ],
            ],
        )
    )
    out.append(
        f"\nFitted on: {', '.join(model['fitted_on'])} (lines through those points). "
        "Prediction for a night of R rows on N workers: ceil(F / N) file times at the rate "
        "per core + the map overhead + the driver's time; driver memory: baseline + per "
        f"night + per episode. Files of {model['rows_per_file']:,.0f} rows, "
        f"{model['rows_per_episode']:.1f} rows per episode (the simulator's)."
    )

    staged = [r for r in runs if "staged_commit" in r]
    if staged:
        few, many = STAGED
        lines = []
        for name in ("local", "s3-local"):
            s = [r["staged_commit"] for r in staged if r["config"] == name]
            if not s:
                continue
            c_few = med([x[f"commit_{few}_files_s"] for x in s])
            c_many = med([x[f"commit_{many}_files_s"] for x in s])
            per_file = (c_many - c_few) / (many - few)
            store = "local disk" if name == "local" else "S3 (moto)"
            lines.append(
                [
                    store,
                    f"{c_few * 1e3:.0f}",
                    f"{c_many * 1e3:.0f}",
                    f"{per_file * 1e3:.3f}",
                    f"{(c_few - few * per_file) * 1e3:.0f}",
                ]
            )
        out.append(
            "\nThe Delta commit alone, per file: files staged as workers would stage them "
            "(`delta.write_data_files`, not timed), then one `delta.staged.commit_files` of them "
            "all (the overwrite of a night: the write path issue 17 asks for), timed:\n"
        )
        out.append(
            table(
                ["store", f"{few} files ms", f"{many} files ms", "ms per file", "ms per commit"],
                lines,
            )
        )
        files = predict(model, BILLION, 1)["files"]
        worst = max(float(line[3]) for line in lines) / 1e3
        out.append(
            f"\nA night of {BILLION:,} rows is {files:,} files of the measured size: one commit "
            f"of them all would take about {files * worst:.1f} s per table at the slowest rate "
            "measured here (each file staged once per partition it spans; the files' own "
            "writing is not in this figure). In a run it is part of `stage_s` (the commit of "
            "the staged episode rows, then validation, data files and commit of the night's "
            "other tables, in the driver), the write cost per file in the model above."
        )

    out.append(
        "\nPredicted against measured, every configuration and night on local disk (the "
        "local engine: N = its files at once, their working sets in the driver):\n"
    )
    out.append(checks(model, groups, {(str(c), int(n)) for c, n in model["fitted_points"]}))
    holdout = results.get("holdout")
    if holdout:
        largest = max(n for _, n in groups)
        out.append(
            f"\nExtrapolation: the model fitted on the smaller nights only "
            f"({', '.join(holdout['fitted_on'])}) against the night of {largest:,} episodes "
            "it never saw:\n"
        )
        out.append(checks(holdout, {k: v for k, v in groups.items() if k[1] == largest}, set()))
    out.append(
        f"\n## Projection: one night of {BILLION:,} rows\n\nFiles of the measured size; each "
        "worker one core, the driver a core of its own; local disk; each worker scores its "
        "files and stages their episode rows, handing the driver each file's slim result as "
        "it is done (no row of an episode: a worker holds one file's working set), the "
        "driver reads the night's compared columns back from the staged files, reduces the "
        "night, writes its other tables and commits:\n"
    )
    lines = []
    for workers in PROJECTED_WORKERS:
        p = predict(model, BILLION, workers)
        lines.append(
            [
                workers,
                f"{p['files']:,}",
                f"{p['episodes'] / 1e6:.1f} M",
                f"{p['parallel_s'] / 60:.1f}",
                f"{p['serial_s'] / 60:.1f}",
                f"{p['seconds'] / 60:.1f}",
                f"{BILLION / p['seconds'] / 1e6:.2f} M",
                f"{p['driver_peak_mib'] / 1024:.1f}",
                f"{p['worker_memory_mib'] / 1024:.1f}",
            ]
        )
    out.append(
        table(
            [
                "workers",
                "files",
                "episodes",
                "files scored (parallel) min",
                "results shipped + driver (serial) min",
                "total min",
                "rows/s",
                "driver peak GiB",
                "each worker +GiB",
            ],
            lines,
        )
    )
    p = predict(model, BILLION, PROJECTED_WORKERS[-1])
    fits = "within" if p["driver_peak_mib"] < 24 * 1024 else "more than"
    out.append(
        f"\nThe serial part ({p['serial_s'] / 60:.1f} min: every file's slim result shipped to "
        "the driver, then assembling, aggregating, comparing and committing the night in that "
        f"one process) does not shrink with workers: from {_crossover(model, BILLION)} "
        "workers on it is most of the night. The driver's memory, "
        f"{p['driver_peak_mib'] / 1024:.1f} GiB ({fits} this machine's 24 GiB), is the "
        "night's compared columns read back a category at a time and the reduction's "
        "working set, "
        f"{model['driver_bytes_per_episode']:.0f} bytes an episode as fitted."
    )
    return "\n".join(out)


def _crossover(model: dict[str, Any], rows: float) -> int:
    """The fewest workers for which scoring the files takes less than the serial part."""
    for workers in range(1, 4097):
        p = predict(model, rows, workers)
        if p["parallel_s"] < p["serial_s"]:
            return workers
    return 4096


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--episodes", type=int, default=100_000, help="the night (100,000)")
    parser.add_argument(
        "--small", type=int, default=25_000, help="a second night, for the model (0: none)"
    )
    parser.add_argument(
        "--large", type=int, default=1_500_000, help="a night scored once, a check (0: none)"
    )
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated")
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help=f"runs again a run during which other work took over {OTHER_LOAD} cores (2)",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=120,
        help="before each run, wait at most this many seconds for other work to stop (120)",
    )
    parser.add_argument("--output", type=Path, default=RESULT, help="where the JSON goes")
    parser.add_argument("--report", type=Path, help="only print the tables of this JSON")
    parser.add_argument(
        "--commit", help="the commit measured, if this is not its git checkout (an export)"
    )
    parser.add_argument("--driver", help=argparse.SUPPRESS)  # in a driver process
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--s3", help=argparse.SUPPRESS)  # ENDPOINT,BUCKET
    parser.add_argument("--extras", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.report:
        print(report(json.loads(args.report.read_text())))
        return
    if args.driver:
        print(json.dumps(drive(args.driver, args.episodes, args.round, args.s3, args.extras)))
        return

    from benchmarks.run import dump

    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = set(names) - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configurations {sorted(unknown)}; known: {', '.join(CONFIGS)}")
    if "dask-1" not in names:
        raise SystemExit("the cost model is fitted on dask-1: include it")
    sizes = [n for n in (args.small, args.episodes) if n]
    # Every configuration on the night; the disk ones on the small night too (the model's
    # second point); the large night once, on local disk.
    rounds = [
        (n, s) for s in sizes for n in names if s == args.episodes or CONFIGS[n].store == "disk"
    ]
    once = [(n, args.large) for n in names if args.large and CONFIGS[n].store == "disk"]
    for size in {TINY, *sizes, *(s for _, s in once)}:
        dump(size)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, {memory / 2**30:.0f} GiB, Python "
        f"{platform.python_version()}, polars {_version('polars')}, distributed "
        f"{_version('distributed')}, deltalake {_version('deltalake')}, moto {_version('moto')}; "
        f"load average before: {os.getloadavg()[0]:.1f}"
    )
    print(machine, file=sys.stderr, flush=True)
    server, s3 = None, None
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []

    def one(name: str, size: int, round_: int, extras: bool) -> None:
        tries: list[dict[str, Any]] = []
        while len(tries) <= args.retries:
            seen, waited = wait_until_quiet(args.wait)
            tries.append(run_driver(name, size, round_, s3, extras))
            tries[-1] |= {"busy_before": seen, "waited_s": waited}
            if tries[-1]["other_cores"] <= OTHER_LOAD:
                break
        result = min(tries, key=lambda r: float(r["other_cores"]))
        result["attempts"] = len(tries)
        runs.append(result)
        print(
            f"round {round_ + 1} {name} on {size:,} episodes: net {result['net_s']:.2f} s, "
            f"driver peak {result['driver_peak_mib']:.0f} MiB; other load {seen:.0%} of the "
            f"machine before (waited {waited:.0f} s), {result['other_cores']:.2f} cores during "
            f"({time.perf_counter() - started:.0f} s in)",
            file=sys.stderr,
            flush=True,
        )

    try:
        if any(CONFIGS[n].store == "s3" for n in names):
            server = start_counting_s3()
            bucket = server.create_bucket("scale")
            for size in (TINY, args.episodes):
                upload(server, bucket, DATA / f"e{size}", f"dump-e{size}")
            s3 = f"{server.endpoint},{bucket},{server.process.pid}"
        for round_ in range(args.repeat):
            for name, size in rounds:
                one(name, size, round_, extras=size == args.episodes)
        for name, size in once:
            one(name, size, 0, extras=False)
    finally:
        if server is not None:
            server.stop()
    results: dict[str, Any] = {
        "machine": machine,
        "code": args.commit or _commit(),
        "command": " ".join(["python -m benchmarks.scale", *sys.argv[1:]]),
        "episodes": args.episodes,
        "repeat": args.repeat,
        "seconds": time.perf_counter() - started,
        "runs": runs,
    }
    every_size = [*sizes, *(s for _, s in once)]
    results["model"] = fit_model(runs, every_size)
    if once and len(sizes) >= 2:  # the large night left out: how well the model extrapolates
        results["holdout"] = fit_model(runs, sizes)
    results["predictions"] = {
        str(workers): predict(results["model"], BILLION, workers) for workers in PROJECTED_WORKERS
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1))
    print(report(results))
    print(f"\n(every figure: {args.output}; {results['seconds']:.0f} s in all)")


def _commit() -> str:
    """The commit of the code measured (``HEAD`` of the checkout holding ``flows``), marked
    when its scoring code has changes not committed."""
    import flows

    top = Path(flows.__file__).parents[1]
    git = ["git", "-C", str(top)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    changed = subprocess.run(
        [*git, "status", "--porcelain", "flows", "transforms", "schemas"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head.stdout.strip() + (" with uncommitted changes to the scorer" if changed else "")


def _version(name: str) -> str:
    from importlib import metadata

    return metadata.version(name)


if __name__ == "__main__":
    main()
