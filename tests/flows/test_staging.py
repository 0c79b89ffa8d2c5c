"""The slots shared by the files scored and the chunks staged (``flows.staging.Slots``)."""

from __future__ import annotations

import threading
import time

import pytest

from flows.staging import Slots


def test_a_chunk_waiting_takes_the_next_slot_before_a_file_waiting_longer() -> None:
    """A chunk waiting for a slot holds its rows while files done pile up behind it: it goes
    first, even before a file that asked earlier (a semaphore wakes the first to ask)."""
    slots, order = Slots(1), []
    slots.acquire()

    def take(name: str, chunk: bool) -> None:
        slots.acquire(chunk=chunk)
        order.append(name)
        time.sleep(0.01)
        slots.release()

    file = threading.Thread(target=take, args=("file", False))
    file.start()
    time.sleep(0.1)  # the file waits first
    chunk = threading.Thread(target=take, args=("chunk", True))
    chunk.start()
    while not slots.chunks_waiting:
        time.sleep(0.001)
    slots.release()
    file.join(5)
    chunk.join(5)
    assert order == ["chunk", "file"]


def test_as_many_at_once_as_there_are_slots() -> None:
    slots, lock, busy, most = Slots(2), threading.Lock(), [0], [0]

    def work(chunk: bool) -> None:
        slots.acquire(chunk=chunk)
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.005)
        with lock:
            busy[0] -= 1
        slots.release()

    threads = [threading.Thread(target=work, args=(n % 3 == 0,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert most[0] == 2 and slots.free == 2


def test_a_chunk_interrupted_while_it_waits_leaves_the_slots_to_the_files() -> None:
    """Ctrl-C while the stager waits for a slot: the files being scored must still get
    theirs (the run's threads are joined before it ends), not wait for that chunk forever."""
    slots = Slots(1)
    slots.acquire()
    wait = slots.changed.wait

    def interrupted(timeout: float | None = None) -> bool:
        raise KeyboardInterrupt

    slots.changed.wait = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        slots.acquire(chunk=True)
    slots.changed.wait = wait  # type: ignore[method-assign]
    assert slots.chunks_waiting == 0
    file = threading.Thread(target=slots.acquire)
    file.start()
    slots.release()
    file.join(5)
    assert not file.is_alive() and slots.free == 0
