"""Delta logs holding a statistic that is not JSON: found (``broken_commits``) and rewritten
(``heal``).

cogscore before contract 1.4 (issue 46) wrote a staged data file's statistics with Python's
``json``, which writes an infinite float as ``Infinity`` (and NaN as ``NaN``): JSON has no
such token, and delta-rs refuses the whole log ("Json error: Encountered unexpected 'I'"),
so every later read of the table, and every run, failed. A data file's statistics are hints
(a reader skips a file whose bounds exclude what it looks for), so such a bound can go:
``heal`` rewrites each commit file holding one with the non-finite bounds of its add (and
remove) actions left out, as cogscore and delta-rs write them now; every other action,
value and line stays as it was, and so does every data file. The rewrite replaces the
commit file only if it is still the one read (a conditional put), under the output's lease.
A rewritten commit's data are as they were (the failed run's rows, an infinite cost among
them): the run that wrote it failed, so no run pinned it, and ``runs_table.repair`` then
brings the table back to the version the latest succeeded run pinned.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from flows.store import objects
from flows.store.errors import NothingThere
from flows.store.location import Location

LOG: Final = "_delta_log"
# What delta-rs says when a log line, or the statistics in it, is not JSON.
JSON_ERROR: Final = "Json error"
_BOUNDS: Final = ("minValues", "maxValues")
_ACTIONS: Final = ("add", "remove")


def _refuse(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _is_json(text: str) -> bool:
    """``text`` is JSON as delta-rs reads it: no NaN, Infinity or -Infinity."""
    try:
        json.loads(text, parse_constant=_refuse)
    except ValueError:
        return False
    return True


def _finite(values: Any) -> Any:
    """``values`` (a statistics object) without its non-finite numbers, nested ones too."""
    if isinstance(values, dict):
        return {k: _finite(v) for k, v in values.items() if not _non_finite(v)}
    return values


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and value - value != 0.0  # inf - inf and NaN are NaN


def _healed_line(line: str) -> str | None:
    """A commit line with the non-finite bounds of its actions' statistics left out, or
    None where the line needs nothing (or is not a line of an action with statistics)."""
    try:
        action = json.loads(line)
    except ValueError:
        return None
    if not isinstance(action, dict):
        return None
    changed = False
    for kind in _ACTIONS:
        body = action.get(kind)
        if not isinstance(body, dict):
            continue
        stats = body.get("stats")
        if not isinstance(stats, str) or _is_json(stats):
            continue
        try:
            parsed = json.loads(stats)  # Python reads NaN and Infinity
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        for bound in _BOUNDS:
            if bound in parsed:
                parsed[bound] = _finite(parsed[bound])
        try:
            body["stats"] = json.dumps(parsed, separators=(",", ":"), allow_nan=False)
        except ValueError:  # a non-finite number outside the bounds: not one cogscore writes
            continue
        changed = True
    if not changed:
        return None
    return json.dumps(action, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def healed(content: bytes) -> bytes | None:
    """A commit file's content with its statistics made JSON (``_healed_line``), or None
    where it needs nothing. Lines that need nothing keep their bytes."""
    if b"Infinity" not in content and b"NaN" not in content:
        return None
    lines = content.decode("utf-8").split("\n")
    new = [_healed_line(line) for line in lines]
    if all(n is None for n in new):
        return None
    kept = [line if n is None else n for line, n in zip(lines, new, strict=True)]
    return "\n".join(kept).encode("utf-8")


def _commits(table: Location) -> list[str]:
    """The commit files (``_delta_log/*.json``) of the table at ``table``, by version."""
    try:
        listed = objects.list_files(table.child(LOG), suffix=".json")
    except NothingThere:  # no log: not a table (yet)
        return []
    return [f"{LOG}/{info.relative}" for info in listed if "/" not in info.relative]


def broken_commits(table: Location) -> list[str]:
    """The commit files of the table at ``table`` whose statistics are not JSON."""
    broken = []
    for key in _commits(table):
        stored = objects.get_object(table, key)
        if stored is not None and healed(stored.data) is not None:
            broken.append(key)
    return broken


def heal(location: Location, tables: Sequence[str]) -> dict[str, list[str]]:
    """Rewrite every commit file of ``tables`` in ``location`` whose statistics are not JSON
    (see the module's docstring); per table, the commit files rewritten. Call with the
    lease held. A file changed since it was read is left (the next repair sees it again)."""
    done: dict[str, list[str]] = {}
    for name in tables:
        table = location.child(name)
        for key in _commits(table):
            stored = objects.get_object(table, key)
            new = None if stored is None else healed(stored.data)
            if stored is None or new is None:
                continue
            if objects.put_if_match(table, key, new, stored.etag) is not None:
                done.setdefault(name, []).append(key)
    return done
