"""The lease: one run at a time per output, on a local folder and on moto S3."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from flows.store import lease as lease_module
from flows.store import objects
from flows.store.errors import LeaseLost, OutputBusy, UnsafeStore
from flows.store.lease import LEASE_KEY, Holder, Lease, check_conditional_writes


def _stored_holder(out) -> Holder:
    return Holder.from_json(objects.get_bytes(out, LEASE_KEY))


def test_second_holder_is_refused_with_the_holder_named(out):
    with Lease(out, "run-1", "cogscore nightly"):
        with pytest.raises(OutputBusy) as caught:
            Lease(out, "run-2", "cogscore score").acquire()
        message = str(caught.value)
        assert "run run-1 (cogscore nightly)" in message
        assert "lease expires" in message and out.display in message
        assert "\n" not in message
    # released on exit: the next run gets it
    with Lease(out, "run-3"):
        assert _stored_holder(out).run_id == "run-3"
    assert objects.get_object(out, LEASE_KEY) is None


def test_expired_lease_is_taken_over(out):
    past = datetime.now(UTC) - timedelta(hours=7)
    dead = Holder("gone-host", 4242, "run-dead", "nightly", past, past + timedelta(hours=6))
    assert objects.put_if_absent(out, LEASE_KEY, dead.to_json())
    with Lease(out, "run-2") as taken:
        assert _stored_holder(out).run_id == "run-2"
        assert taken.holder is not None and taken.holder.expires > datetime.now(UTC)


def test_renew_extends_and_a_lost_lease_is_reported(out):
    held = Lease(out, "run-1", ttl=timedelta(minutes=1)).acquire()
    first_expiry = _stored_holder(out).expires
    held.ttl = timedelta(hours=2)
    held.renew()
    assert _stored_holder(out).expires > first_expiry + timedelta(minutes=30)
    assert _stored_holder(out).acquired == held.holder.acquired  # type: ignore[union-attr]
    # Someone decided run-1 was dead and took the lease over.
    stolen = objects.get_object(out, LEASE_KEY)
    assert stolen is not None
    now = datetime.now(UTC)
    other = Holder("h", 1, "run-2", "c", now, now + timedelta(hours=6))
    assert objects.put_if_match(out, LEASE_KEY, other.to_json(), stolen.etag)
    with pytest.raises(LeaseLost, match="run run-2"):
        held.renew()
    assert held.release() is False  # not ours any more: left alone
    assert _stored_holder(out).run_id == "run-2"


def test_unreadable_lease_is_not_taken(out):
    assert objects.put_if_absent(out, LEASE_KEY, b"not json")
    with pytest.raises(OutputBusy, match="unreadable lease"):
        Lease(out, "run-1").acquire()


def _race(out, contenders: int) -> tuple[list[str], list[str]]:
    barrier = threading.Barrier(contenders)
    winners: list[str] = []
    refused: list[str] = []

    def contend(i: int) -> None:
        barrier.wait()
        try:
            Lease(out, f"run-{i}").acquire()
            winners.append(f"run-{i}")
        except OutputBusy:
            refused.append(f"run-{i}")

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return winners, refused


def test_eight_racing_runs_one_winner(out):
    winners, refused = _race(out, 8)
    assert len(winners) == 1 and len(refused) == 7
    assert _stored_holder(out).run_id == winners[0]


def test_eight_racing_takeovers_of_an_expired_lease_one_winner(out):
    past = datetime.now(UTC) - timedelta(hours=7)
    dead = Holder("gone", 1, "run-dead", "c", past, past + timedelta(hours=1))
    assert objects.put_if_absent(out, LEASE_KEY, dead.to_json())
    winners, refused = _race(out, 8)
    assert len(winners) == 1 and len(refused) == 7
    assert _stored_holder(out).run_id == winners[0]


def test_conditional_writes_probe(out):
    assert check_conditional_writes(out) is True


def test_a_store_ignoring_if_none_match_is_refused(out, monkeypatch):
    """A server that drops the header: every create "succeeds", overwriting."""

    monkeypatch.setattr(
        lease_module.objects, "put_if_absent", _ignoring_conditions(objects.put_if_absent)
    )
    with pytest.raises(UnsafeStore, match="ignores conditional writes"):
        check_conditional_writes(out)
    assert check_conditional_writes(out, allow_unsafe=True) is False


def _ignoring_conditions(put_if_absent):
    def careless(location, key, data):
        objects.delete(location, key)  # what an overwrite amounts to
        return put_if_absent(location, key, data)

    return careless
