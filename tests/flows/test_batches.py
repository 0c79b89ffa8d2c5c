"""Small files scored together (``flows.score.batches``, issue 30): a batched run writes the
tables a run of one file at a time writes, with fewer data files, and still names each file
it could not read."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from flows import mappers, runs
from flows import score as score_module
from flows import staging as staging_module
from flows.score import batches
from flows.store.dumps import DumpFile
from simulator import simulate
from tests.dumps import rule_dump, write_dump
from tests.tables import last_run, read_tables

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def files(*sizes: int) -> list[DumpFile]:
    return [
        DumpFile(Path(f"/d/part-{i:02d}.parquet"), f"part-{i:02d}.parquet", listed_size=size)
        for i, size in enumerate(sizes)
    ]


def names(groups: list[list[DumpFile]]) -> list[list[int]]:
    return [[int(f.relative[5:7]) for f in group] for group in groups]


def test_small_files_go_together_until_a_batch_is_full_and_large_files_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(score_module, "BATCH_BYTES", 100)
    monkeypatch.setattr(score_module, "BATCH_FILES", 3)
    assert names(batches(files(10, 20, 30, 40, 150, 60, 50, 1, 1, 1, 1))) == [
        [0, 1, 2],  # three files: a batch is full at BATCH_FILES
        [3],  # 40 + 150 would pass BATCH_BYTES
        [4],  # a large file is alone
        [5],  # 60 + 50 would pass BATCH_BYTES
        [6, 7, 8],
        [9, 10],
    ]
    assert names(batches(list(reversed(files(10, 20))))) == [[0, 1]]  # in listing order
    assert batches([]) == []
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)
    assert names(batches(files(10, 20, 30))) == [[0], [1], [2]]


def bad_files(root: Path) -> None:
    """Beside the rule dump's files: one that is not Parquet, one whose data pages do not
    decompress (its batch cannot be read whole), one without a required column."""
    night = root / "dump_date=2026-12-01"
    (night / "part-a-not-parquet.parquet").write_text("hello")
    good = pq.read_table(next(night.glob("part-*.parquet")))
    pq.write_table(good.drop_columns(["model"]), night / "part-b-no-model.parquet")
    corrupt = night / "part-c-corrupt.parquet"
    pq.write_table(good, corrupt, compression="zstd")
    data = bytearray(corrupt.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = (data[i] * 7 + 13) % 256
    corrupt.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example dump, the rule dump (repeated ids across files, rejects of every rule,
    harness errors) in a night of its own, a night of one-episode files, and bad files."""
    root = tmp_path_factory.mktemp("batched")
    shutil.copytree(EXAMPLE_DUMP, root, dirs_exist_ok=True)
    rows, _ = rule_dump()
    night = "dump_date=2026-12-03/"
    write_dump([r | {"file": night + r["file"].rsplit("/", 1)[-1]} for r in rows], root)
    simulate(root, date="2026-12-04", episodes=120, seed=3, episodes_per_file=1, rejects=0.2)
    bad_files(root)
    return root


def data_files(out: Path, table: str) -> int:
    return len(DeltaTable(str(out / table)).file_uris())


def test_a_batched_run_writes_what_a_run_of_one_file_at_a_time_writes(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, batched = tmp_path / "alone", tmp_path / "batched"
    with monkeypatch.context() as patch:
        patch.setattr(score_module, "BATCH_BYTES", 0)  # a batch per file,
        patch.setattr(staging_module, "STAGE_BYTES", 0)  # staged alone
        runs.score(dump, alone)
    runs.score(dump, batched)
    expected, got = read_tables(alone), read_tables(batched)
    assert got.keys() == expected.keys()
    for name, table in expected.items():
        assert got[name].equals(table), name
    whole = pl.col("rules").list.set_intersection(["file_unreadable", "missing_column"])
    rejected = got["rejects"].filter(whole.list.len() > 0)
    assert sorted(rejected["file"].to_list()) == [
        f"dump_date=2026-12-01/part-{n}.parquet"
        for n in ("a-not-parquet", "b-no-model", "c-corrupt")
    ]
    assert got["rejects"]["rules"].explode().to_list().count("duplicate_episode_across_files") > 0
    # Every file has its own report, as before, in the run's record.
    by_file = [sorted(last_run(out)["files"], key=lambda f: f["file"]) for out in (alone, batched)]
    assert by_file[1] == by_file[0] and len(by_file[0]) == len(list(dump.rglob("*.parquet")))
    assert data_files(batched, "episode_scores") < data_files(alone, "episode_scores") / 5


def test_a_night_of_many_small_files_stages_a_few_data_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded by the chunks the driver stages (``STAGE_BYTES``) and the categories, not by
    the files or the batches: a night smaller than a chunk is one data file a category."""
    monkeypatch.setattr(score_module, "BATCH_FILES", 100)  # four batches
    simulate(tmp_path / "dump", date="2026-12-04", episodes=400, seed=4, episodes_per_file=1)
    runs.score(tmp_path / "dump", tmp_path / "out")
    categories = pl.read_delta(str(tmp_path / "out" / "episode_scores"))["category"].n_unique()
    assert data_files(tmp_path / "out", "episode_scores") == categories
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # each batch staged alone
    runs.score(tmp_path / "dump", tmp_path / "alone")
    assert data_files(tmp_path / "alone", "episode_scores") > 3 * categories


def test_the_driver_writes_one_chunk_at_a_time_and_waits_for_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local engine writes each chunk on the stager's thread while it goes on (the last
    chunk while the night's tables are made): one write at a time, so that memory holds two
    chunks' rows at most, and the run commits what a run writing as it goes commits."""
    import threading
    import time

    from flows.store import delta

    real, real_staging, lock = delta.write_data_files, staging_module.staging, threading.Lock()
    chunks, written, behind, tables = [0], [0], [], []

    def slow_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.05)  # long enough for the next chunk to be ready meanwhile
        try:
            return real(*args, **kwargs)
        finally:
            if args[1] == "episode_scores":
                tables.append(threading.current_thread().name)
                with lock:
                    written[0] += 1

    def staging(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            behind.append(chunks[0] - written[0])  # chunks not yet written
            chunks[0] += 1
        return real_staging(*args, **kwargs)

    dump = tmp_path / "dump"  # no id in two files: every write is a chunk's
    simulate(dump, date="2026-12-04", episodes=60, seed=4, episodes_per_file=1)
    monkeypatch.setattr(score_module, "BATCH_FILES", 10)
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # a chunk a batch: six
    monkeypatch.setattr(delta, "write_data_files", slow_write)
    monkeypatch.setattr(staging_module, "staging", staging)
    runs.score(dump, tmp_path / "chunks")
    assert len(tables) == 6 and all(name.startswith("cogscore-stage") for name in tables)
    assert behind == [0] * 6  # each chunk staged once the one before was written
    monkeypatch.setattr(delta, "write_data_files", real)
    assert_as_kept_in_memory(dump, tmp_path / "chunks", monkeypatch)


def _written_at_once(self: staging_module.Stager, spill: bool) -> list[score_module.FilePart]:
    """A chunk staged as ``stage`` stages it: written before it returns, never set aside."""
    if not self.pending:
        return []
    parts = [p.unspilled() for p in self.pending]
    chunk = parts[0] if len(parts) == 1 else score_module.merged(parts)
    self.pending, self.held = [], 0
    return [score_module.stage(chunk, self.target)]


def assert_as_kept_in_memory(dump: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``out`` holds the tables of a run of ``dump`` whose stager keeps everything in memory
    (each chunk staged as ``stage`` stages it)."""
    monkeypatch.setattr(staging_module.Stager, "_staged", _written_at_once)
    kept = out.with_name(out.name + "-kept")
    runs.score(dump, kept)
    got = read_tables(out)
    for name, table in read_tables(kept).items():
        assert got[name].equals(table), name


def test_a_chunk_that_cannot_be_written_fails_the_run_and_commits_nothing(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write on the stager's thread that fails is the run's error, not lost with the
    thread: raised when the run waits for it, before any table is committed."""
    import threading

    from flows.store import delta
    from flows.store.errors import StorageError
    from flows.store.output import Output

    real = delta.write_data_files

    def full_disk(*args, **kwargs):  # type: ignore[no-untyped-def]
        if threading.current_thread().name.startswith("cogscore-stage"):
            raise StorageError("cannot stage: no space left on device")
        return real(*args, **kwargs)  # the night's other tables, staged by the run itself

    monkeypatch.setattr(delta, "write_data_files", full_disk)
    with pytest.raises(StorageError, match="no space left"):
        runs.score(dump, tmp_path / "out")
    assert Output.at(tmp_path / "out").versions() == {}


def test_the_local_engine_holds_no_scored_file_once_it_is_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat with the night: once a file's rows are staged, nothing keeps them (the
    night's reduction needs its held columns only). Each file's future kept its scored rows
    to the night's end (every file of the night alive at once, 700-1,300 bytes an episode
    where the held columns are under 100): at most the files being scored and the one being
    staged may be alive when a file is done."""
    import gc
    import weakref

    dump, out = tmp_path / "dump", tmp_path / "out"
    simulate(dump, date="2026-12-01", episodes=1200, seed=5, episodes_per_file=50)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file,
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # each staged at once
    score = mappers.score_batch
    scored: list[weakref.ref[object]] = []
    alive: list[int] = []

    def tracked(*args: object, **kwargs: object) -> object:
        gc.collect()
        alive.append(sum(ref() is not None for ref in scored))
        part = score(*args, **kwargs)  # type: ignore[arg-type]
        scored.append(weakref.ref(part.scores))
        return part

    monkeypatch.setattr(mappers, "score_batch", tracked)
    runs.score(dump, out)
    assert len(scored) == len(list(dump.rglob("*.parquet"))) >= 20
    # Those scored or waiting (IN_FLIGHT), the one being staged, and the one before it
    # whose write the stager waits for: a few, however many files the night has.
    assert max(alive) <= mappers.IN_FLIGHT + 2, alive


def test_the_local_engine_sets_each_staged_chunks_held_columns_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat with the night (issue 39): what the night's reduction needs of a staged
    chunk (its held columns, about 120 bytes an episode) waits on disk while the night's
    other files are scored, not in memory: when a file is scored, no chunk staged before
    holds its columns (but the one being set aside). Kept in memory, every chunk's were
    alive at once."""
    import gc
    import weakref

    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=600, seed=5, episodes_per_file=50)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file,
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # each staged at once
    real_staging, score = staging_module.staging, mappers.score_batch
    held: list[weakref.ref[pl.DataFrame]] = []
    alive: list[int] = []

    def staging(*args, **kwargs):  # type: ignore[no-untyped-def]
        part, write = real_staging(*args, **kwargs)
        held.append(weakref.ref(part.scores))
        return part, write

    def scored(*args: object, **kwargs: object) -> object:
        gc.collect()
        frames = [ref() for ref in held]
        alive.append(sum(f is not None and len(f) > 0 for f in frames))  # holding rows
        del frames
        return score(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(staging_module, "staging", staging)
    monkeypatch.setattr(mappers, "score_batch", scored)
    runs.score(dump, tmp_path / "out")
    assert len(held) == len(list(dump.rglob("*.parquet"))) >= 10
    # At most the chunk being staged as a file starts (set aside once it is).
    assert max(alive) <= 1, alive
    assert_as_kept_in_memory(dump, tmp_path / "out", monkeypatch)


def test_files_waiting_for_their_chunk_hold_no_rows_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat with the night (issue 39): the files done wait for their chunk on disk,
    not in memory, where a chunk's worth of them (``STAGE_BYTES``) waited beside the two
    files being scored. Here the whole night is one chunk: in memory, the rows of every
    file done waited till the last was scored; the tables are those of a run that keeps
    them."""
    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=600, seed=5, episodes_per_file=50)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file
    add, waiting = staging_module.Stager.add, []

    def added(self: staging_module.Stager, part: score_module.FilePart) -> object:
        staged = add(self, part)
        waiting.append(sum(p.scores.height for p in self.pending))  # (unscored rows: few)
        return staged

    monkeypatch.setattr(staging_module.Stager, "add", added)
    runs.score(dump, tmp_path / "out")
    assert len(waiting) == len(list(dump.rglob("*.parquet"))) >= 10
    assert max(waiting) == 0, waiting
    assert_as_kept_in_memory(dump, tmp_path / "out", monkeypatch)


def test_a_chunk_is_staged_in_the_slot_of_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat with the night (issue 39): a chunk staged and written while two files
    were scored added its working set to theirs (+125-176 MiB a chunk, the peak of a large
    night); it takes the slot of a file instead: never more than ``FILES_AT_ONCE`` files
    scored and chunks staged at once."""
    import threading
    import time

    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=300, seed=5, episodes_per_file=25)
    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a task per file,
    monkeypatch.setattr(staging_module, "STAGE_BYTES", 0)  # each staged at once
    real_staging, score, lock = staging_module.staging, mappers.score_batch, threading.Lock()
    busy, most = [0], [0]

    def working(change: int) -> None:
        with lock:
            busy[0] += change
            most[0] = max(most[0], busy[0])

    def staging(*args, **kwargs):  # type: ignore[no-untyped-def]
        working(+1)  # until the chunk is written
        part, write = real_staging(*args, **kwargs)

        def written():  # type: ignore[no-untyped-def]
            try:
                time.sleep(0.02)  # long enough for the files to go on meanwhile
                return write()
            finally:
                working(-1)

        return part, written

    def scored(*args: object, **kwargs: object) -> object:
        working(+1)
        try:
            time.sleep(0.02)
            return score(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            working(-1)

    monkeypatch.setattr(staging_module, "staging", staging)
    monkeypatch.setattr(mappers, "score_batch", scored)
    runs.score(dump, tmp_path / "out")
    assert most[0] == mappers.FILES_AT_ONCE


def test_a_run_makes_no_id_hashes_for_its_last_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory flat with the night (issue 39): a night's id hashes (16 bytes an episode) are
    kept to check the run's later nights against; its last night has none, so they are
    not made for it (a one-night run's peak held them); every other night's are."""
    from flows.repeats import SeenIds

    dump = tmp_path / "dump"
    for night in ("2026-12-01", "2026-12-02", "2026-12-03"):
        simulate(dump, date=night, episodes=20, seed=5, episodes_per_file=10)
    kept: list[str | None] = []
    real = SeenIds.add

    def add(self: SeenIds, night: str | None, ids: pl.Series) -> None:
        kept.append(night)
        real(self, night, ids)

    monkeypatch.setattr(SeenIds, "add", add)
    runs.score(dump, tmp_path / "out")
    assert kept == ["2026-12-01", "2026-12-02"]


def test_a_chunk_of_files_done_out_of_order_is_written_in_file_and_id_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stager sorts each part as it comes and puts a chunk in order by file, rather than
    sorting the chunk whole (issue 39: a copy of its rows while files are scored): its data
    files hold the rows in (file, episode id) order, as a sort of the chunk wrote them, even
    where the files were done in another order."""
    import time

    dump = tmp_path / "dump"
    simulate(dump, date="2026-12-01", episodes=90, seed=5, episodes_per_file=30)
    first = sorted(p.name for p in dump.rglob("*.parquet"))[0]
    score = mappers.score_batch

    def first_done_last(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        if batch[0].relative.endswith(first):
            time.sleep(1.0)  # the other two files are done before it
        return score(batch, *args, **kwargs)

    monkeypatch.setattr(score_module, "BATCH_BYTES", 0)  # a part per file, one chunk
    monkeypatch.setattr(mappers, "score_batch", first_done_last)
    runs.score(dump, tmp_path / "out")
    for path in (tmp_path / "out" / "episode_scores").rglob("*.parquet"):
        rows = pl.read_parquet(path)
        assert rows["file"].n_unique() == 3  # else this test could not fail
        assert rows.equals(rows.sort("file", "episode_id")), path
