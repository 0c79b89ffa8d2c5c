"""A run's standings made beside its next night (issue 48, i48-pipeline), on a worker thread.

A standing depends on the standing before it and on its own night's tables alone, so a run
hands each to one worker thread (``make``: ``Standings.of_night``) and scores the next
night's files meanwhile (polars releases the GIL in its queries, and a standing is mostly
many small ones). At most one standing is in flight (the next ``submit`` waits for it), so
they are made strictly in night order, each from the one before; each made standing's tables
go to ``done`` on the run's thread, in night order (its changes kept for the terminal, its
tables to ``StandingWrites``), at the next ``submit`` or at ``flush``, where a standing's
error on the worker is raised in the run. ``flush`` comes before the run's commit and
nothing is written here, so a run killed with a standing in flight leaves what a run killed
before making it leaves: uncommitted files at most. ``close`` ends the worker on a failing
run (the standing in flight waited for, its error left for the run's own).

Memory: a night's input to its standing (its task rows, tables and compared episodes,
``NightInput``) is held until the worker has made it, while the run scores the next night;
one night's at most (the next submit waits). A run of one night has nothing to overlap: its
standing is made while the run's thread waits at ``flush``, with the same frames alive as
when it was made on the run's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from flows.standings import NightInput

Tables = dict[str, pl.DataFrame]


@dataclass
class StandingsBeside:
    """Standings made in night order on one worker thread (``make``), one in flight, each
    made one handed to ``done`` on the run's thread; ``seconds``: the worker's time in
    ``make``, summed."""

    make: Callable[[str | None, NightInput], Tables]
    done: Callable[[str | None, Tables], None]
    seconds: float = 0.0
    _worker: ThreadPoolExecutor | None = field(default=None, repr=False)
    _pending: tuple[str | None, Future[tuple[Tables | None, float]]] | None = field(
        default=None, repr=False
    )

    def ahead(self, read: Callable[[], object]) -> None:
        """``read`` run first on the worker (what the first standing reads before anything
        of its night: the standing before it), while the run scores its first night."""
        self._collect()
        self._pending = (None, self._start(_ahead, read))

    def submit(self, night: str | None, tonight: NightInput) -> None:
        """The standing as of ``night`` made on the worker once the one before is made (its
        tables handed to ``done`` here; its error raised here)."""
        self._collect()
        self._pending = (night, self._start(_timed, self.make, night, tonight))

    def idle(self) -> bool:
        """Whether nothing is in flight (or what is has finished): a ``submit`` now starts
        at once, without waiting for the standing before."""
        return self._pending is None or self._pending[1].done()

    def flush(self) -> None:
        """Every standing submitted made and handed to ``done`` (an error raised here); the
        worker ended (on an error too)."""
        try:
            self._collect()
        finally:
            self.close()

    def close(self) -> None:
        """The worker ended, the standing in flight waited for (its error not raised: the
        run that closes without ``flush`` is failing with its own)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[1].exception()  # waits; the error is the run's to tell, or not
        if self._worker is not None:
            self._worker.shutdown()
            self._worker = None

    def _start(
        self, call: Callable[..., tuple[Tables | None, float]], *args: object
    ) -> Future[tuple[Tables | None, float]]:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="cogscore-standing")
        return self._worker.submit(call, *args)

    def _collect(self) -> None:
        """The standing in flight made (waited for; its error raised) and handed on."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        night, future = pending
        tables, seconds = future.result()
        self.seconds += seconds
        if tables is not None:  # (None: what ``ahead`` read)
            self.done(night, tables)


def _timed(
    make: Callable[[str | None, NightInput], Tables], night: str | None, tonight: NightInput
) -> tuple[Tables, float]:
    """``make``'s tables and its seconds (on the worker)."""
    t0 = time.perf_counter()
    tables = make(night, tonight)
    return tables, time.perf_counter() - t0


def _ahead(read: Callable[[], object]) -> tuple[None, float]:
    """``read`` done (on the worker): no standing's tables."""
    t0 = time.perf_counter()
    read()
    return None, time.perf_counter() - t0
