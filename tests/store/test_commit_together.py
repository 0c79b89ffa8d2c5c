"""A run's tables committed several at a time (``Writer.commit``, ``COMMITTERS``; issue 48,
i48-stand8): two tables' commits are in flight at once, and so are two checkpoints; the runs
table, the commit point, is written only once every table's commit has returned, naming the
versions they made; a table whose commit fails fails the run, and no run is recorded as
having written."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable

import flows.store.writer as writer_module
from flows import runs
from flows.store import delta, runs_table
from flows.store.errors import StorageError
from flows.store.output import Output
from schemas.columns import RunStatus
from schemas.tables import TABLES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"


def _meeting(real: Callable[..., Any], parties: int = 2) -> tuple[Callable[..., Any], list[str]]:
    """``real`` wrapped so that its first ``parties`` calls wait for each other (a barrier:
    made one after the other, the first call waits in vain and raises), each call's end
    noted."""
    barrier = threading.Barrier(parties, timeout=20)
    calls = {"n": 0}
    lock = threading.Lock()
    ended: list[str] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with lock:
            calls["n"] += 1
            first = calls["n"] <= parties
        if first:
            barrier.wait()  # threading.BrokenBarrierError where no other call comes
        result = real(*args, **kwargs)
        with lock:
            ended.append(threading.current_thread().name)
        return result

    return wrapped, ended


def test_the_tables_are_committed_together_and_the_runs_table_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    runs.nightly(EXAMPLE_DUMP, out)  # every table exists: the next run commits each
    commit, committed = _meeting(delta.commit_nights)
    monkeypatch.setattr(delta, "commit_nights", commit)
    seen: dict[str, object] = {}
    record = runs_table.record_run

    def record_run(location: Any, rows: Any, held: Any = None) -> int:
        seen["committed before the runs table"] = len(committed)
        seen["versions"] = dict(rows[0].table_versions)
        return record(location, rows, held)

    monkeypatch.setattr(runs_table, "record_run", record_run)
    outcome = runs.score(EXAMPLE_DUMP, out)
    assert outcome.result is not None
    assert len(committed) >= 2 and seen["committed before the runs table"] == len(committed)
    main = threading.main_thread().name
    assert all(thread != main for thread in committed)
    latest = {table: DeltaTable(str(out / table)).version() for table in TABLES}
    assert seen["versions"] == latest


def test_the_tables_are_checkpointed_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    runs.nightly(EXAMPLE_DUMP, out)
    checkpoint, checked = _meeting(delta.checkpoint_if_due)
    monkeypatch.setattr(delta, "checkpoint_if_due", checkpoint)
    runs.score(EXAMPLE_DUMP, out)
    assert len(checked) == len(TABLES)  # every table's, none failed (the barrier met)


def test_a_table_whose_commit_fails_fails_the_run_and_records_no_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    runs.nightly(EXAMPLE_DUMP, out)
    succeeded = _succeeded(out)
    real = delta.commit_nights

    def commit(location: Any, table: str, *args: Any, **kwargs: Any) -> int:
        if table == "model_scores":
            raise StorageError("cannot commit model_scores: the disk is full")
        return real(location, table, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(delta, "commit_nights", commit)
    with pytest.raises(StorageError, match="model_scores: the disk is full"):
        runs.score(EXAMPLE_DUMP, out)
    assert _succeeded(out) == succeeded  # the failed run recorded as failed, if at all


def _succeeded(out: Path) -> int:
    rows = Output.at(out).runs()
    return rows.filter(pl.col("status") == RunStatus.SUCCEEDED.value).height


def test_committers_one_commits_one_table_after_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "COMMITTERS", 1)
    out = tmp_path / "out"
    threads: list[str] = []
    real = delta.commit_nights

    def commit(*args: Any, **kwargs: Any) -> int:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(delta, "commit_nights", commit)
    runs.nightly(EXAMPLE_DUMP, out)
    assert threads and set(threads) == {threading.main_thread().name}
