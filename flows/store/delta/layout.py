"""What OUT may hold besides the committed tables: a local path delta-rs can use, no snapshot
store's layout or someone else's files, and the data files that killed runs staged and no
commit names (``uncommitted_files``, which ``vacuum`` deletes at any age).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final
from urllib.parse import unquote

from deltalake import DeltaTable

from flows.store import objects
from flows.store.delta.nights import _NIGHT, NIGHT_COLUMN, NULL_PARTITION
from flows.store.delta.tables import Opened, _errors, _open, _table
from flows.store.errors import BadLocation, LegacyLayout, NothingThere
from flows.store.location import Location

# What delta-rs cannot take in a local table's path (deltalake 1.6, measured): `[`, `]`, `^`
# and `|` make it panic (its file URL's host), `%XX` is decoded (the log is then looked for
# in another folder than the one written), `\` and control characters are refused or mangled.
_UNUSABLE: Final = re.compile(r"[\[\]^|%\\\x00-\x1f\x7f]")
# What an object-store OUT's prefix cannot hold: any character outside S3's "safe
# characters" (its guide's "Object key naming"; '%' alone and '+' measured to work) or a
# `%XX`. With a space, '#', '=', '?', `%20` or a non-ASCII letter, delta-rs writes keys that
# polars or obstore then look up encoded another way (moto's S3 server: exit 1 or 4 after a
# whole run, nothing readable), where a local folder with them works.
_UNUSABLE_KEY: Final = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9!_.*'()/%+-]")


def check_path(location: Location) -> None:
    """`BadLocation` if `location` is a local folder whose path delta-rs cannot use (a run
    into it would stage files, then fail, a panic, at its first commit) or an object-store
    URL whose prefix holds a character its keys would be encoded with in two ways.

    >>> check_path(Location.parse("/data/out[1]"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    flows.store.errors.BadLocation: /data/out[1]: a local output's path cannot hold '[' ...
    >>> check_path(Location.parse("s3://bucket/my out"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    flows.store.errors.BadLocation: s3://bucket/my out: an object-store output's prefix ...
    """
    if not location.is_local:
        prefix = location.uri.split("://", 1)[1].partition("/")[2]  # after any user@host
        if unsafe := sorted(set(_UNUSABLE_KEY.findall(prefix))):
            host = location.display.split("/")[2]
            raise BadLocation(
                f"{location.scheme}://{host}/{prefix}: an object-store output's prefix cannot hold "
                f"{', '.join(map(repr, unsafe))}: use letters, digits and ! - _ . * ' ( ) / + "
                "alone (delta-rs and polars encode the others differently: the tables "
                "written would not read back)"
            )
    bad = _UNUSABLE.search(location.uri) if location.is_local else None
    if bad is not None:
        raise BadLocation(
            f"{location.display}: a local output's path cannot hold {bad.group()!r} "
            "(delta-rs cannot use it): choose another folder"
        )


def check_layout(
    location: Location, layouts: Mapping[str, Sequence[str]], opened: Opened | None = None
) -> None:
    """`LegacyLayout` if OUT holds the snapshot store's layout instead of Delta tables, or a
    table folder without a Delta log holds a file that no cogscore run wrote.

    The snapshot store (flows/store.py) keeps `OUT/current` and `OUT/_versions/`, and its
    tables are plain hive-partitioned Parquet: writing Delta tables over them would mix both.
    `layouts` gives each table's partition columns (see `uncommitted_files`): a folder
    holding only what a killed run wrote (its first run's staged files, before any table was
    created) is no obstacle: the next run commits beside them, and `vacuum` deletes them.
    ``opened``: the handles of a run holding the lease (each table is opened here once).
    """
    if location.is_local:
        import os

        legacy = [n for n in ("current", "_versions") if os.path.lexists(f"{location.uri}/{n}")]
        if legacy:
            raise LegacyLayout(
                f"{location.display} holds the snapshot layout ({', '.join(legacy)}):"
                " write Delta tables into a new folder, or convert this one first"
            )
    for table, partition_by in layouts.items():
        if _open(_table(location, table), opened) is None:
            uncommitted_files(location, table, partition_by)  # refuses another's files


# --- what killed runs leave: data files no commit ever named ---------------------------

_UUID: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# The names cogscore's writers give data files: `write_data_files`' `part-<uuid>.parquet`
# (and the temporary file a local put writes first, `<name>.<hex>.tmp`), and delta-rs's own
# (`write_deltalake`: `part-00000-<uuid>-c000.snappy.parquet`).
_DATA_FILE: Final = re.compile(
    rf"part-(?:{_UUID}\.parquet(?:\.[0-9a-f]{{32}}\.tmp)?"
    rf"|\d{{5}}-{_UUID}-c\d{{3}}(?:\.[a-z0-9]+)?\.parquet)"
)


def written_by_cogscore(relative: str, partition_by: Sequence[str]) -> bool:
    """Whether `relative` (a path below a table folder) is where cogscore's writers put a
    data file of a table partitioned by `partition_by`: a `column=value` folder per
    partition column, in order (`dump_date` a date or the null partition), then a data
    file's name.

    >>> name = "part-5fea540b-2ba2-4466-b179-825890065b1d.parquet"
    >>> written_by_cogscore(f"dump_date=2026-11-30/category=runtime_rl/{name}",
    ...                     ["dump_date", "category"])
    True
    >>> written_by_cogscore(f"dump_date=2026-11-30/{name}", ["dump_date", "category"])
    False
    >>> written_by_cogscore("dump_date=2026-11-30/part-0.parquet", ["dump_date"])
    False
    """
    *folders, name = relative.split("/")
    if len(folders) != len(partition_by) or not _DATA_FILE.fullmatch(name):
        return False
    for column, folder in zip(partition_by, folders, strict=True):
        key, sep, value = folder.partition("=")
        if key != column or not sep or not value:
            return False
        if column == NIGHT_COLUMN and value != NULL_PARTITION and not _NIGHT.match(value):
            return False
    return True


def _listed(where: Location) -> list[objects.ObjectInfo]:
    """Every file below `where` but hidden ones (`_delta_log`); none where nothing is."""
    try:
        return objects.list_files(where, suffix=None)
    except NothingThere:
        return []


def _active(where: Location, table: DeltaTable) -> set[str]:
    """The data files of the table's latest version, as paths below `where`."""
    prefix = where.uri.rstrip("/") + "/"
    return {unquote(uri.removeprefix(prefix)) for uri in table.file_uris()}


def _named_by_log(where: Location, since: float) -> set[str]:
    """The data files that the commits still in the log of `OUT/table` (at `where`) written
    after `since` (a POSIX time) add or remove. A commit cleaned from the log is older than
    Delta's log retention, and no version it made can be read any more."""
    log = where.child("_delta_log")
    commits = [
        info.relative
        for info in _listed(log)
        if re.fullmatch(r"\d{20}\.json", info.relative) and info.modified.timestamp() >= since
    ]

    def paths(name: str) -> set[str]:
        found = set()
        for line in objects.get_bytes(log, name).splitlines():
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if isinstance(action.get(kind), dict) and "path" in action[kind]:
                    found.add(unquote(action[kind]["path"]))
        return found

    named: set[str] = set()
    with ThreadPoolExecutor(8) as pool:  # one request a commit on an object store
        for found in pool.map(paths, commits):
            named |= found
    return named


def uncommitted_files(
    location: Location, table: str, partition_by: Sequence[str]
) -> list[objects.ObjectInfo]:
    """The data files in `OUT/table` that no commit of its log names: what killed (or
    failed) runs wrote and never committed. Only files of the names and folders cogscore's
    writers give (`written_by_cogscore`) count: another's file in a table stays where it is.
    In a folder without a Delta log (a first run killed before its commits) every file must
    be such a file: one that is not is `LegacyLayout` (someone else's folder)."""
    where = _table(location, table)
    with _errors("list the files of table", where):
        existing = _open(where)
        files = _listed(where)
        if existing is None:
            foreign = [f for f in files if not written_by_cogscore(f.relative, partition_by)]
            if foreign:
                raise LegacyLayout(
                    f"{where.display} holds files but no Delta log ({foreign[0].relative}, "
                    "...), and not only what a killed cogscore run leaves: not cogscore's table"
                )
            return files
        active = _active(where, existing)
        ours = [
            f
            for f in files
            if f.relative not in active and written_by_cogscore(f.relative, partition_by)
        ]
        if not ours:
            return []
        # A file is committed, if ever, after it was written: only commits written since the
        # oldest of them are read (the store's own clock for both; an hour of slack).
        named = _named_by_log(where, min(f.modified.timestamp() for f in ours) - 3600)
        return [f for f in ours if f.relative not in named]
