"""One run at a time per output: a lease object created with a conditional write.

`OUT/_cogscore_lease.json` names its holder (host, pid, run id, command) and when the lease
expires. Taking it is `put_if_absent`: on a store that honours `If-None-Match` exactly one of
any number of racing runs creates it. An existing, unexpired lease means another run is going:
`OutputBusy`, naming it. An expired lease (its run was killed, or its host died) is taken over
with `put_if_match` on the ETag read, so of two runs taking over the same expired lease one
wins. `release()` deletes the lease only if it is still ours.

Time to live: 6 hours by default, renewed after every night a run commits (`renew()`). A night
of scoring takes minutes here, so a lease that is not renewed for 6 hours belongs to a dead
run; a run that does outlive its lease finds out at the next renewal (`LeaseLost`) and stops.
A run killed with -9 leaves its lease behind. On the host it names, the lease is stale as
soon as its process is gone (`_dead`): the next run there takes it over, and `cogscore status`
says so. From another host nothing tells whether the run is gone: its lease blocks the output
until it expires, or until `cogscore unlock OUT --run RUN_ID` (`break_lease`) breaks it.

Release is read-then-delete (object stores have no conditional delete through obstore); the
one unsafe moment is a run releasing at the very instant its expired lease is taken over, which
the lifetime of 6 hours makes theoretical.

Conditional writes are safe on: Amazon S3 (since August 2024 for `If-None-Match`, November
2024 for `If-Match`), MinIO, Cloudflare R2, Google Cloud Storage, Azure Blob Storage, local
filesystems (link/rename), and moto. A store that silently ignores the headers (some older
S3-compatible servers) lets two runs both "win": `check_conditional_writes` probes for that
and refuses such a store (`UnsafeStore`) unless `allow_unsafe=True`. delta-rs relies on the
same header for its own commits (`_delta_log/N.json`), so such a store is unsafe for Delta too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Final, Self

from flows.store import objects
from flows.store.errors import LeaseLost, OutputBusy, StorageError, UnlockRefused, UnsafeStore
from flows.store.location import Location

LEASE_KEY: Final = "_cogscore_lease.json"
PROBE_PREFIX: Final = "_cogscore_probe"
DEFAULT_TTL: Final = timedelta(hours=6)
_ATTEMPTS: Final = 5  # a lease released or taken over while we look: look again


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, and until when (UTC)."""

    host: str
    pid: int
    run_id: str
    command: str
    acquired: datetime
    expires: datetime

    def to_json(self) -> bytes:
        record = asdict(self)
        record["acquired"] = self.acquired.isoformat()
        record["expires"] = self.expires.isoformat()
        return json.dumps(record, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Holder:
        record = json.loads(data)
        return cls(
            host=str(record["host"]),
            pid=int(record["pid"]),
            run_id=str(record["run_id"]),
            command=str(record["command"]),
            acquired=datetime.fromisoformat(record["acquired"]),
            expires=datetime.fromisoformat(record["expires"]),
        )

    def describe(self) -> str:
        return (
            f"run {self.run_id} ({self.command or 'no command'}) on {self.host}, pid {self.pid},"
            f" since {self.acquired:%Y-%m-%d %H:%M:%S}Z, lease expires"
            f" {self.expires:%Y-%m-%d %H:%M:%S}Z"
        )


def _dead(holder: Holder) -> bool:
    """A holder on this host whose process is gone (killed): its lease is stale before it
    expires, so the next run on the same machine need not wait hours for it."""
    if holder.host != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _now() -> datetime:
    return datetime.now(UTC)


class Lease:
    """The lease of one output for one run; use as `with Lease(out, run_id, command):`."""

    def __init__(
        self,
        location: Location,
        run_id: str,
        command: str = "",
        ttl: timedelta = DEFAULT_TTL,
    ) -> None:
        self.location = location
        self.run_id = run_id
        self.command = command or " ".join(os.path.basename(a) for a in sys.argv[:2])
        self.ttl = ttl
        self.holder: Holder | None = None
        self._etag: str | None = None

    def _ours(self, acquired: datetime | None = None) -> Holder:
        now = _now()
        return Holder(
            host=socket.gethostname(),
            pid=os.getpid(),
            run_id=self.run_id,
            command=self.command,
            acquired=acquired or now,
            expires=now + self.ttl,
        )

    def acquire(self) -> Self:
        """Take the lease, or raise `OutputBusy` naming the run that holds it."""
        for _ in range(_ATTEMPTS):
            ours = self._ours()
            etag = objects.put_if_absent(self.location, LEASE_KEY, ours.to_json())
            if etag is not None:
                self.holder, self._etag = ours, etag
                return self
            current = objects.get_object(self.location, LEASE_KEY)
            if current is None:  # released between our write and our read
                continue
            try:
                theirs = Holder.from_json(current.data)
            except (ValueError, KeyError, TypeError):
                raise OutputBusy(
                    f"{self.location.display} has an unreadable lease"
                    f" ({self.location.child(LEASE_KEY).display}): delete it if no run is going"
                ) from None
            if theirs.expires > _now() and not _dead(theirs):
                raise OutputBusy(
                    f"{self.location.display} is busy: {theirs.describe()}. If that run is "
                    f"gone (killed, its host down), break its lease: cogscore unlock "
                    f"{self.location.display} --run {theirs.run_id}"
                )
            etag = objects.put_if_match(self.location, LEASE_KEY, ours.to_json(), current.etag)
            if etag is not None:  # took over the expired lease
                self.holder, self._etag = ours, etag
                return self
        raise OutputBusy(f"{self.location.display}: the lease changed hands {_ATTEMPTS} times")

    def renew(self) -> None:
        """Push the expiry `ttl` from now; `LeaseLost` if another run has taken the lease."""
        if self.holder is None or self._etag is None:
            raise StorageError(f"renewing a lease not held on {self.location.display}")
        ours = self._ours(self.holder.acquired)
        etag = objects.put_if_match(self.location, LEASE_KEY, ours.to_json(), self._etag)
        if etag is None:
            current = objects.get_object(self.location, LEASE_KEY)
            who = "nobody holds it now"
            if current is not None:
                try:
                    who = Holder.from_json(current.data).describe()
                except (ValueError, KeyError, TypeError):
                    who = "its content is unreadable"
            raise LeaseLost(f"lost the lease of {self.location.display}: {who}")
        self.holder, self._etag = ours, etag

    def release(self) -> bool:
        """Delete the lease if it is still ours (True), else leave it alone (False)."""
        if self.holder is None:
            return False
        current = objects.get_object(self.location, LEASE_KEY)
        self.holder, etag, self._etag = None, self._etag, None
        if current is None or current.etag != etag:
            return False
        objects.delete(self.location, LEASE_KEY)
        return True

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def break_lease(location: Location, run_id: str) -> Holder:
    """Delete the lease of run ``run_id`` (a run killed on another host blocks the output
    until its lease expires): the holder it was. Guarded: refused (``UnlockRefused``) when
    no lease is held, when another run holds it (name the run you checked is gone), and
    when its run is alive on this host; the lease is deleted only if it did not change
    while it was read."""

    current = objects.get_object(location, LEASE_KEY)
    if current is None:
        raise UnlockRefused(f"{location.display} holds no lease: nothing to unlock")
    try:
        holder = Holder.from_json(current.data)
    except (ValueError, KeyError, TypeError):
        raise UnlockRefused(
            f"{location.child(LEASE_KEY).display} is unreadable: delete it by hand if no run "
            "is going"
        ) from None
    if holder.run_id != run_id:
        raise UnlockRefused(
            f"{location.display}'s lease is held by run {holder.run_id}, not {run_id}: "
            f"{holder.describe()}"
        )
    if holder.host == socket.gethostname() and not _dead(holder):
        raise UnlockRefused(
            f"run {run_id} is alive on this host (pid {holder.pid}): not unlocking its output"
        )
    again = objects.get_object(location, LEASE_KEY)
    if again is None or again.etag != current.etag:
        raise UnlockRefused(f"{location.display}'s lease changed while it was read: look again")
    objects.delete(location, LEASE_KEY)
    return holder


def check_conditional_writes(location: Location, allow_unsafe: bool = False) -> bool:
    """Whether `location`'s store honours create-if-absent; `UnsafeStore` if not (unless allowed).

    Writes a probe object twice with `put_if_absent`: the second write must be refused. One
    probe costs three requests; run it once per run, before taking the lease.
    """
    key = f"{PROBE_PREFIX}/{uuid.uuid4().hex}.json"
    try:
        first = objects.put_if_absent(location, key, b'{"probe": 1}')
        second = objects.put_if_absent(location, key, b'{"probe": 2}')
    finally:
        objects.delete(location, key)
        if location.is_local:  # an object store has no folders; a local one keeps them
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(location.uri, PROBE_PREFIX))
    safe = first is not None and second is None
    if not safe and not allow_unsafe:
        raise UnsafeStore(
            f"{location.display} ignores conditional writes (If-None-Match): two runs, or two"
            " Delta commits, could overwrite each other; use a store that honours them"
            " (S3, MinIO, R2, GCS, Azure, a local folder) or pass allow_unsafe"
        )
    return safe


def lease_holder(location: Location) -> str | None:
    """Who holds the lease of the output at ``location`` now (a run in flight, or a killed
    one's), if anyone. A lease of this host whose process is gone (``kill -9``) is stale
    before it expires, and said so: the next run on this host takes it over (``acquire``),
    and ``cogscore unlock`` frees it at once. Of another host's, nothing can be told here."""
    held = objects.get_object(location, LEASE_KEY)
    if held is None:
        return None
    try:
        holder = Holder.from_json(held.data)
    except (ValueError, KeyError, TypeError):
        return "unreadable lease object"
    if not _dead(holder):
        return holder.describe()
    unlock = shlex.join(["cogscore", "unlock", location.display, "--run", holder.run_id])
    return (
        f"{holder.describe()}; stale: its process {holder.pid} is gone (this host), the next "
        f"run here takes the lease over, and `{unlock}` frees it now"
    )
