"""A run's rows in the dump: its episode id, its file's key (its night's folder, a name from
its id and a digest), the Parquet bytes with the run's content digest and identity in their
metadata, written only where other bytes are there; and what the dump holds already
(``_Dump``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from flows.importers.kaggle_files import RUN_SUFFIX, RunRecord, TaskFile
from flows.store.errors import StorageError
from flows.store.location import Location
from flows.store.objects import get_object, list_files, put_if_absent, put_if_match
from schemas.contract import DUMP_DATE, Status
from schemas.kaggle import RUN_DIGEST_KEY, RUN_IDENTITY_KEY, Reason
from schemas.names import HARNESS_MODEL, HARNESS_TASK, HARNESS_TASK_FILE
from schemas.rules import USAGE_INVALID
from transforms.kaggle_rows import episode_rows
from transforms.usage import invalid_usage

# A dump file's name: the run id where it is made of these (the harness's own names are),
# else with every other character as "_" (the digest after it keeps distinct runs apart).
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")
_LABEL_LENGTH: Final = 150  # with the digest, ".parquet" and a writer's temporary suffix: < 255


def run_id_of(relative: str) -> str:
    """A run's id: its file's name without ``.run.json`` (task, harness run id, model).

    >>> run_id_of("m/t-run_id_Run_1_m.run.json")
    't-run_id_Run_1_m'
    """
    return relative.rsplit("/", 1)[-1].removesuffix(RUN_SUFFIX)


def harness_named(relative: str) -> bool:
    """Whether a run file has a name the harness gives (``<task>-run_id_<id>_<model>``).

    >>> harness_named("m/t-run_id_Run_1_m.run.json"), harness_named("m/copy.run.json")
    (True, False)
    """
    return re.search(r"-run_(?:param_)?id_", run_id_of(relative)) is not None


def episode_id_of(run_id: str, record: RunRecord, distinct: bool = False) -> str:
    """An episode's id: its run's id and start time (a run file name repeats per night);
    ``distinct``: with its content's digest too, for a run that shares its file name and
    start time with another run (``import_runs`` says which)."""
    base = f"{run_id}@{record.start_time}"
    return f"{base}#{record.digest[:12]}" if distinct else base


def night_of(record: RunRecord, date: str | None) -> str:
    return date or record.night


def file_label(run_id: str) -> str:
    """The start of a run's dump file name: its id where that is made of letters, digits,
    ``.``, ``_`` and ``-`` (as the harness names runs), else with every other character as
    ``_``, cut at 150 (a name that no reader takes for a pattern, hidden file or path; the
    digest after it tells runs apart, and the rows keep the id as it is).

    >>> file_label("t-run_id_Run_1_m"), file_label("run[1]"), file_label("_x y")
    ('t-run_id_Run_1_m', 'run_1_', 'run_x_y')
    """
    label = _UNSAFE.sub("_", run_id)[:_LABEL_LENGTH]
    return f"run{label}" if not label or label.startswith((".", "_")) else label


def dump_key(run_id: str, record: RunRecord, date: str | None, distinct: bool = False) -> str:
    """Where a run's rows go below DUMP_ROOT: its night's folder, a name from its id and a
    digest of its episode id (a run file's name repeats on other nights and re-runs)."""
    episode = episode_id_of(run_id, record, distinct)
    digest = hashlib.sha256(episode.encode()).hexdigest()[:12]
    return f"{DUMP_DATE}={night_of(record, date)}/{file_label(run_id)}-{digest}.parquet"


def rows_of(
    run_id: str,
    record: RunRecord,
    task: TaskFile,
    result: dict[str, Any],
    *,
    model: str,
    distinct: bool = False,
) -> pl.DataFrame:
    """The rows of one replayed run (``result``: what the replay worker sent back), its
    model named ``model`` (resolved from its slug: ``transforms.names``), its task by its
    task file (``TaskFile.task``), and the run's own names as ``source_names``."""
    assert task.category is not None
    errored = Reason.ERRORED in (result.get("notes") or [])
    return episode_rows(
        run_id=run_id,
        episode_id=episode_id_of(run_id, record, distinct),
        model=model,
        task=task.task,
        category=task.category,
        start_time=record.start_time,
        end_time=record.end_time,
        requests=record.requests,
        inputs=result.get("inputs") or {},
        status=Status.ERROR if errored else Status.COMPLETED,
        reported_score=record.reported_score,
        source_names=run_names(record, task),
    )


def run_names(record: RunRecord, task: TaskFile) -> str:
    """What a run calls its model and task (contract 1.5's ``source_names``): its slug, the
    name its task file registers and that file (its folder and name)."""
    names = {
        HARNESS_MODEL: record.model,
        HARNESS_TASK: record.task,
        HARNESS_TASK_FILE: f"{task.folder}/{task.path.name}",
    }
    return json.dumps(names, ensure_ascii=False, separators=(",", ":"))


def usage_beyond_bounds(frame: pl.DataFrame) -> str | None:
    """Contract 1.4: what of a run's rows' usage is beyond the contract's bounds, in words
    (the first such reply, how many more), or None. Written as it is all the same: the
    scorer scores the episode and refuses its usage."""
    invalid = invalid_usage(frame.lazy()).collect()[USAGE_INVALID]
    if invalid.is_empty():
        return None
    more = f" (and {invalid.len() - 1} more reply row(s))" if invalid.len() > 1 else ""
    return (
        f"usage beyond the contract's bounds, {invalid[0]}{more}: the scorer refuses the "
        "episode's usage and scores it"
    )


def parquet_bytes(frame: pl.DataFrame, record: RunRecord) -> bytes:
    """A frame as Parquet bytes, the run's content digest and identity in the file's
    metadata: the same frame and run give the same bytes (one row group)."""
    buffer = io.BytesIO()
    frame.write_parquet(
        buffer,
        compression="zstd",
        statistics=True,
        row_group_size=1 << 20,
        metadata={RUN_DIGEST_KEY: record.digest, RUN_IDENTITY_KEY: record.identity},
    )
    return buffer.getvalue()


@dataclass(frozen=True)
class Stored:
    """What an imported file says of its run: its content digest and identity ("" for each
    where the file does not say: written before they were kept, or none of the importer's)."""

    digest: str = ""
    identity: str = ""


def stored_run(data: bytes) -> Stored:
    """The run an imported file's metadata names (``Stored``)."""
    try:
        metadata = pq.read_metadata(pa.BufferReader(data)).metadata or {}
    except (pa.ArrowException, OSError, ValueError):
        return Stored()
    said = [metadata.get(key.encode(), b"").decode() for key in (RUN_DIGEST_KEY, RUN_IDENTITY_KEY)]
    return Stored(*said)


def stored_digest(data: bytes) -> str | None:
    """The run digest an imported file carries (None: a file written before they did, or
    none of the importer's)."""
    return stored_run(data).digest or None


def write_if_changed(out: Location, key: str, data: bytes) -> bool:
    """Write ``data`` at ``key`` unless those bytes are there already (True: written)."""
    current = get_object(out, key)
    if current is None:
        if put_if_absent(out, key, data) is None:  # another writer made it first
            return write_if_changed(out, key, data)
        return True
    if current.data == data:
        return False
    return put_if_match(out, key, data, current.etag) is not None


@dataclass
class _Night:
    """The runs imported into a night: the file of each, by content digest and by identity
    (the first file in path order where two hold one)."""

    by_digest: dict[str, str] = field(default_factory=dict)
    by_identity: dict[str, str] = field(default_factory=dict)

    def holding(self, record: RunRecord) -> str | None:
        """The file that holds this run (its identity; a file written before identities
        were kept: its content), else None."""
        return self.by_identity.get(record.identity) or self.by_digest.get(record.digest)


@dataclass
class _Dump:
    """What the dump holds, read as needed: the run a file holds, the runs of a night."""

    out: Location
    runs: dict[str, Stored | None] = field(default_factory=dict)  # None: no file there
    nights: dict[str, _Night] = field(default_factory=dict)

    def run_at(self, key: str) -> Stored | None:
        if key not in self.runs:
            current = get_object(self.out, key)
            self.runs[key] = None if current is None else stored_run(current.data)
        return self.runs[key]

    def digest_at(self, key: str) -> str | None:
        """The content digest of the run at ``key`` (None: no file; "": it does not say)."""
        stored = self.run_at(key)
        return None if stored is None else stored.digest

    def identity_at(self, key: str) -> str | None:
        stored = self.run_at(key)
        return None if stored is None else stored.identity

    def wrote(self, key: str, record: RunRecord) -> None:
        self.runs[key] = Stored(record.digest, record.identity)

    def night(self, night: str) -> _Night:
        """Every run imported into ``night`` (read once, when asked)."""
        if night not in self.nights:
            folder = f"{DUMP_DATE}={night}"
            found = _Night()
            for info in _listed_or_none(self.out.child(folder)):
                key = f"{folder}/{info.relative}"
                stored = self.run_at(key)
                if stored is not None and stored.digest:
                    found.by_digest.setdefault(stored.digest, key)
                if stored is not None and stored.identity:
                    found.by_identity.setdefault(stored.identity, key)
            self.nights[night] = found
        return self.nights[night]


def _listed_or_none(location: Location) -> list[Any]:
    """``list_files`` of a folder that may not exist yet (then nothing)."""
    if location.is_local:
        return list_files(location) if os.path.isdir(location.uri) else []
    try:
        return list_files(location)
    except StorageError as error:
        if "no objects there" in str(error):
            return []
        raise
