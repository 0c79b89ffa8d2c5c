"""A Delta log holding statistics that are not JSON (``Infinity``, as cogscore wrote them
before contract 1.4, issue 46): found, refused in one line (exit 2, naming the one command
that repairs it), and rewritten so that the table reads again, its rows unchanged."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from flows.store import objects
from flows.store.delta.healing import LOG, broken_commits, heal, healed
from flows.store.delta.tables import read_table, table_version, write_night
from flows.store.errors import BrokenLog
from flows.store.location import Location
from schemas.exits import ExitCode
from tests.store.frames import night_frame
from tests.tables import strict_json, with_infinite_stats


def with_boolean(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a boolean column, as ``episode_scores`` has: delta-rs 1.6 parses the
    statistics of such a table when it opens it (a table of numbers and text alone, it
    opens without parsing them, Infinity or not)."""
    return frame.with_columns(pl.lit(True).alias("solved"))


def break_log(out: Location, table: str, version: int) -> bytes:
    """Give the add actions of ``table``'s commit ``version`` infinite statistics; the
    commit's bytes before."""
    key = f"{LOG}/{version:020d}.json"
    stored = objects.get_object(out.child(table), key)
    assert stored is not None
    broken = with_infinite_stats(stored.data, "score")
    assert objects.put_if_match(out.child(table), key, broken, stored.etag)
    return stored.data


def test_healed_leaves_out_the_non_finite_bounds_and_keeps_every_other_byte() -> None:
    stats = {
        "numRecords": 2,
        "minValues": {"cost": -math.inf, "n": 1, "s": "Infinity", "nested": {"x": math.nan}},
        "maxValues": {"cost": math.inf, "n": 2, "s": "NaN", "nested": {"x": 3.5}},
        "nullCount": {"cost": 0, "n": 0},
    }
    add = {"add": {"path": "p.parquet", "size": 10, "stats": json.dumps(stats)}}
    other = '{"commitInfo":{"timestamp":1,"operationParameters":{"note":"Infinity"}}}'
    content = "\n".join([other, json.dumps(add), ""]).encode()
    new = healed(content)
    assert new is not None
    first, second, last = new.decode().split("\n")
    assert (first, last) == (other, "")  # untouched, byte for byte
    rewritten = strict_json(second)
    assert rewritten["add"]["path"] == "p.parquet"
    assert strict_json(rewritten["add"]["stats"]) == {
        "numRecords": 2,
        "minValues": {"n": 1, "s": "Infinity", "nested": {}},
        "maxValues": {"n": 2, "s": "NaN", "nested": {"x": 3.5}},
        "nullCount": {"cost": 0, "n": 0},
    }
    assert healed(new) is None  # JSON already: nothing to do
    assert healed(other.encode()) is None  # "Infinity" in a text value is no number


def test_a_log_holding_infinity_is_refused_in_one_line_then_healed(out: Location) -> None:
    """Before: every open of the table failed with delta-rs's "Json error: Encountered
    unexpected 'I'", which cogscore reported as a store that does not answer (exit 4).
    Now: ``BrokenLog`` (exit 2), naming the commit and ``cogscore repair OUT``; ``heal``
    rewrites that commit only, and the table reads again, rows and versions as they were."""
    for offset, night in enumerate(("2026-12-01", "2026-12-02")):
        write_night(out, "scores", with_boolean(night_frame(night, offset=10 * offset)), night)
    want = read_table(out, "scores").collect().sort("episode_id")
    untouched = objects.get_bytes(out.child("scores"), f"{LOG}/{0:020d}.json")
    break_log(out, "scores", 1)
    with pytest.raises(BrokenLog) as refused:
        table_version(out, "scores")
    message = str(refused.value)
    assert refused.value.code == ExitCode.USAGE and "\n" not in message
    assert message == (
        f"cannot open table {out.child('scores').display}: {LOG}/{1:020d}.json holds "
        "statistics that are not JSON (Infinity, written by cogscore before contract 1.4); "
        f"run `cogscore repair {out.display}` to rewrite them"
    )
    assert broken_commits(out.child("scores")) == [f"{LOG}/{1:020d}.json"]
    assert heal(out, ["scores", "absent"]) == {"scores": [f"{LOG}/{1:020d}.json"]}
    assert table_version(out, "scores") == 1
    assert read_table(out, "scores").collect().sort("episode_id").equals(want)
    assert objects.get_bytes(out.child("scores"), f"{LOG}/{0:020d}.json") == untouched
    assert broken_commits(out.child("scores")) == [] and heal(out, ["scores"]) == {}
    frame = read_table(out, "scores", version=1).collect()
    assert frame.select(pl.col("score").is_finite().all()).item()
