"""Nightly and rescore runs: incremental detection, the rescore diff, Dask."""

from __future__ import annotations

import os
import shutil
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from flows import runs
from flows.mappers import check_workers_reach, dask_mapper
from flows.store.dumps import InputError
from flows.store.errors import BadLocation
from flows.store.lease import LEASE_KEY
from flows.store.location import Location
from schemas.exits import ExitCode
from tests.dumps import copy_night
from tests.processes import fresh_python
from tests.tables import assert_same_tables, night_files, read_table, run_rows
from transforms.registry import DEFAULTS as _DEFAULTS

# A new output pins the registry's default (the task files' rounding, v3, since issue 28).
DEFAULT_PROCEDURAL = _DEFAULTS["procedural_learning"]  # type: ignore[index]  # a str key

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"
NIGHTS = ("2026-11-30", "2026-12-01")


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    root = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, root)
    return root


def test_nightly_scores_new_then_nothing_then_only_what_changed(dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = runs.nightly(dump, out)
    assert first.nights_scored == list(NIGHTS) and first.nights_unchanged == []
    kept = night_files(out, NIGHTS[0])

    again = runs.nightly(dump, out)
    assert again.nights_scored == [] and again.nights_unchanged == list(NIGHTS)
    assert again.result is None

    # Change one file of the second night: only that night is scored again.
    victim = dump / f"dump_date={NIGHTS[1]}" / "part-0.parquet"
    frame = pl.read_parquet(victim)
    frame.with_columns(pl.col("content").str.replace("a", "b")).write_parquet(victim)
    changed = runs.nightly(dump, out)
    assert changed.nights_scored == [NIGHTS[1]] and changed.nights_unchanged == [NIGHTS[0]]
    assert night_files(out, NIGHTS[0]) == kept, "an unchanged night is not rewritten"

    # A new night appears: it alone is scored.
    copy_night(dump / f"dump_date={NIGHTS[1]}", dump / "dump_date=2026-12-02")
    new = runs.nightly(dump, out)
    assert new.nights_scored == ["2026-12-02"]
    assert sorted(new.out.state().nights) == [*NIGHTS, "2026-12-02"]
    log = run_rows(out).group_by("run_id", maintain_order=True).agg("status", "night")
    assert [(s[0], [n for n in ns if n]) for s, ns in log.select("status", "night").rows()] == [
        ("succeeded", list(NIGHTS)),
        ("nothing_to_do", []),
        ("succeeded", [NIGHTS[1]]),
        ("succeeded", ["2026-12-02"]),
    ]


def test_nightly_equals_one_score_of_everything(dump: Path, tmp_path: Path) -> None:
    one_night = tmp_path / "growing"
    shutil.copytree(dump / f"dump_date={NIGHTS[0]}", one_night / f"dump_date={NIGHTS[0]}")
    runs.nightly(one_night, tmp_path / "incremental")
    shutil.copytree(dump / f"dump_date={NIGHTS[1]}", one_night / f"dump_date={NIGHTS[1]}")
    runs.nightly(one_night, tmp_path / "incremental")
    runs.score(dump, tmp_path / "whole")
    assert_same_tables(tmp_path / "incremental", tmp_path / "whole")


def test_a_touched_but_unchanged_file_is_rehashed_and_left_alone(
    dump: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runs.nightly(dump, out)
    victim = dump / f"dump_date={NIGHTS[0]}" / "part-1.parquet"
    os.utime(victim, ns=(1, 1))  # new modification time, same content
    assert runs.nightly(dump, out).nights_scored == []


def test_nightly_needs_dated_partitions(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(EXAMPLE_DUMP / f"dump_date={NIGHTS[0]}" / "part-0.parquet", flat / "a.parquet")
    with pytest.raises(InputError, match="dump_date"):
        runs.nightly(flat, tmp_path / "out")


def test_rescore_replaces_the_range_and_writes_what_moved(dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    runs.nightly(dump, out)
    before = read_table(out, "model_scores").filter(dump_date=NIGHTS[0])
    kept = night_files(out, NIGHTS[0])
    outcome = runs.rescore(dump, out, ["procedural_learning=v1"], since=date(2026, 12, 1))
    assert outcome.nights_scored == [NIGHTS[1]]
    after = night_files(out, NIGHTS[0])
    assert {table: after[table] for table in kept} == kept  # not rewritten
    diff = read_table(out, "rescore_diff")
    assert set(diff["dump_date"].cast(pl.String)) == {NIGHTS[1]}
    procedural = diff.filter(category="procedural_learning")
    assert procedural["delta"].abs().max() > 0
    assert set(procedural["old_formula"]) == {DEFAULT_PROCEDURAL} and set(
        procedural["new_formula"]
    ) == {"v1"}
    untouched = diff.filter(
        pl.col("level") == "category", pl.col("category") != "procedural_learning"
    )
    assert untouched["delta"].abs().max() == 0.0
    models = diff.filter(level="model")
    assert models["old_rank"].null_count() == 0 and models["new_rank"].null_count() == 0
    new_models = read_table(out, "model_scores").filter(dump_date=NIGHTS[1])
    assert sorted(models["new_score"]) == sorted(new_models["score"])
    assert before.equals(read_table(out, "model_scores").filter(dump_date=NIGHTS[0]))


def test_rescore_outside_every_night_is_an_error(dump: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="range"):
        runs.rescore(dump, tmp_path / "out", ["procedural_learning=v1"], since=date(2030, 1, 1))


@pytest.fixture(scope="module")
def dask_cluster():  # type: ignore[no-untyped-def]
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster


def test_dask_cluster_gives_the_same_tables_as_a_local_run(
    dask_cluster,
    dump: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    runs.score(dump, tmp_path / "local")
    runs.score(dump, tmp_path / "dask", mapper=dask_mapper(dask_cluster.scheduler_address))
    assert_same_tables(tmp_path / "dask", tmp_path / "local")


def test_a_rescore_on_dask_gives_the_local_tables(
    dask_cluster,  # type: ignore[no-untyped-def]
    dump: Path,
    tmp_path: Path,
) -> None:
    """A night staged by workers is held coded (``flows.coded``); where its text meets the
    other nights' (the rescore's diff, the ids checked across nights, a later standing) it
    is read back from its staged files: the same tables as the local engine's."""
    mapper = dask_mapper(dask_cluster.scheduler_address)
    for out, chosen in ((tmp_path / "local", None), (tmp_path / "dask", mapper)):
        runs.nightly(dump, out, mapper=chosen)
        runs.rescore(dump, out, ["procedural_learning=v1"], mapper=chosen)
    assert read_table(tmp_path / "dask", "rescore_diff").height > 0
    assert_same_tables(tmp_path / "dask", tmp_path / "local")


@pytest.mark.parametrize("batch_bytes", [None, 0], ids=["batched", "a-task-per-file"])
def test_dask_gives_the_local_tables_where_runs_are_replaced_and_ids_repeat(
    dask_cluster,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    batch_bytes: int | None,
) -> None:
    """Workers stage what they scored and the driver reads the night back from their files
    (``flows.coded``, issue 48): contract 1.4's replaced runs set apart and an id in two
    files rejected as the local engine does, every table the same; in one batch (the
    copies found on the worker) and a task per file (found across the parts)."""
    from flows import score as score_module
    from tests.flows.test_replaced_runs import replaced_dump

    dump = replaced_dump(tmp_path / "dump")
    with pytest.MonkeyPatch.context() as patch:
        if batch_bytes is not None:
            patch.setattr(score_module, "BATCH_BYTES", batch_bytes)
        runs.score(dump, tmp_path / "local")
        runs.score(dump, tmp_path / "dask", mapper=dask_mapper(dask_cluster.scheduler_address))
    assert read_table(tmp_path / "local", "replaced_episodes").height == 2
    assert_same_tables(tmp_path / "dask", tmp_path / "local")


def test_a_local_out_the_workers_do_not_see_is_refused_before_they_write(
    dask_cluster,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    from distributed import Client

    # The workers of a test's cluster share this disk: an OUT without this run's lease file
    # is what a worker on another machine sees of a local OUT.
    out = Location.parse(str(tmp_path / "out"))
    with Client(dask_cluster.scheduler_address) as client:
        with pytest.raises(BadLocation, match="object store or one path on a disk") as refused:
            check_workers_reach(client, out)
        assert all(worker in str(refused.value) for worker in client.scheduler_info()["workers"])
        assert refused.value.code == ExitCode.USAGE
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / LEASE_KEY).write_text("{}")
        check_workers_reach(client, out)  # each worker sees it: scored there


def test_a_worker_hands_the_driver_no_row_of_the_episodes_it_scored(
    dask_cluster,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """What a Dask worker sends back of a file (issue 48): its scored episodes are in the
    data files it staged, none in its result, whose size but for the reject rows of the
    episodes not scored does not grow with them (the files' sums per task, mismatches)."""
    import pickle

    from distributed import Client

    from flows.score import score_and_stage
    from flows.store.delta.staged import StageTarget
    from flows.store.dumps import discover
    from flows.store.location import Location
    from simulator import simulate
    from transforms.registry import resolve

    sizes = {}
    with Client(dask_cluster.scheduler_address) as client:
        for episodes in (1_000, 4_000):
            root = tmp_path / f"dump-{episodes}"
            simulate(root, date="2026-12-01", episodes=episodes, seed=3, rejects=0.0)
            (dump_file,) = discover(root)
            out = Location.parse(str(tmp_path / f"out-{episodes}"))
            target = StageTarget(out, "2026-12-01", "sha256:x")
            future = client.submit(score_and_stage, [dump_file], resolve(()), None, target)
            part = future.result()
            assert part.staged is not None and part.scores.is_empty()
            staged = sum(_records(add.stats) for add in part.staged.adds)
            assert staged + part.rejects.height == episodes
            part.rejects = part.rejects.clear()  # (a row per episode not scored: the driver's)
            sizes[episodes] = len(pickle.dumps(part))
    grown = (sizes[4_000] - sizes[1_000]) / 3_000
    assert grown < 1, sizes  # not a byte an episode more (a score alone is 8)


def _records(stats: str) -> int:
    import json

    return int(json.loads(stats)["numRecords"])


def test_the_scale_benchmark_finds_a_task_per_file_in_the_dask_task_stream(
    dask_cluster,
    dump: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """benchmarks/scale.py fits its cost model on the compute time of the file tasks it finds
    by name in the scheduler's task stream (it found none once the mapper's task was
    renamed, and the fit divided by zero)."""
    from distributed import Client

    from benchmarks.scale import _stream_index, _stream_since, task_seconds
    from flows import score as score_module
    from flows.store.dumps import discover

    with Client(dask_cluster.scheduler_address) as client, pytest.MonkeyPatch.context() as patch:
        # A task per file, as the benchmark's dumps (files of 10,000 episodes) have; this
        # dump's small files would be scored in batches.
        patch.setattr(score_module, "BATCH_BYTES", 0)
        index = client.run_on_scheduler(_stream_index)
        runs.score(dump, tmp_path / "dask", mapper=dask_mapper(dask_cluster.scheduler_address))
        seconds = task_seconds(client.run_on_scheduler(_stream_since, index))
    assert seconds["tasks"] == len(discover(dump))
    assert seconds["compute_sum_s"] >= 0  # timed; a duration is never asserted


def test_the_flows_set_the_allocator_before_polars_loads_unless_the_user_did() -> None:
    """Importing cogscore's flows in a fresh process sets polars' allocator to return freed
    memory within a second (docs/performance.md, "Round two"); a value the user set is kept."""
    from flows import ALLOCATOR

    show = "import flows, os; print(os.environ['_RJEM_MALLOC_CONF'])"
    ours = fresh_python(show)
    assert ours.stdout.strip() == ALLOCATOR, ours.stderr
    theirs = fresh_python(show, allocator="narenas:1")
    assert theirs.stdout.strip() == "narenas:1", theirs.stderr


# A process that imports the flows, then frees a file's worth of buffers (under jemalloc's
# oversize threshold of 8 MiB: the arena's own pages) in one file worker's thread and makes
# them again in the other's: the pages the second faulted in, and how many the buffers take.
_FAULTS_IN_ANOTHER_THREAD = """
import resource
from concurrent.futures import ThreadPoolExecutor
import flows
import polars as pl

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def a_files_buffers():
    kept = [pl.int_range(0, 500_000, eager=True) * 3 for _ in range(8)]  # 4 MB each
    del kept

one, other = ThreadPoolExecutor(1), ThreadPoolExecutor(1)
other.submit(faults).result()  # its thread started before: only the buffers between
one.submit(a_files_buffers).result()
before = faults()
other.submit(a_files_buffers).result()
print(faults() - before, 8 * 500_000 * 8 // 4096)
"""


def test_a_file_workers_freed_pages_are_used_again_by_the_other_worker() -> None:
    """The file workers share one jemalloc arena (``flows.ALLOCATOR``: ``narenas:1``): the
    pages one worker's file freed are used again by the other's next file, not faulted in
    anew by the kernel (with jemalloc's eight arenas on 2 cores each thread had its own:
    8,861 of 9,765 pages faulted in here; a 2 M-episode night faulted in 4.8 M pages, 2.6 M
    with one arena, docs/performance.md "Scoring at 3x, round six")."""
    shown = fresh_python(_FAULTS_IN_ANOTHER_THREAD)
    assert shown.returncode == 0, shown.stderr
    faulted, pages = map(int, shown.stdout.split())
    # Half, not none: on a loaded machine jemalloc's background thread may return some of
    # the pages (dirty_decay_ms) before the other thread asks; eight arenas fault in all.
    assert faulted < pages // 2, (faulted, pages)


def test_the_flows_give_openblas_one_thread_before_numpy_loads_unless_the_user_did() -> None:
    """numpy's and scipy's OpenBLAS start no thread pool of their own (its threads spin when
    loaded: 0.3 s of CPU a command): a process that imports the flows and scipy runs a
    thread fewer per OpenBLAS than one given two BLAS threads by the user, who is obeyed."""
    import os
    import subprocess
    import sys

    from flows import BLAS_THREADS

    show = (
        "import flows, flows.runs, os, scipy.special; "
        "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def threads(**given: str) -> tuple[str, int]:
        shown = subprocess.run(
            [sys.executable, "-c", show], env={**env, **given}, capture_output=True, text=True
        )
        assert shown.returncode == 0, shown.stderr
        setting, count = shown.stdout.split()
        return setting, int(count)

    (ours, ours_threads), (theirs, theirs_threads) = threads(), threads(OPENBLAS_NUM_THREADS="2")
    assert (ours, theirs) == (BLAS_THREADS, "2")
    assert theirs_threads >= ours_threads + 2  # numpy's OpenBLAS and scipy's: one more each
