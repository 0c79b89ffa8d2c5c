"""``import-kaggle`` on hostile inputs (reliability review): run file names that read as
patterns or are no text, one file name in two folders, one run under two names, symbolic
links (to folders, dangling, looping), run files of the wrong types, nested 100,000 deep or
in UTF-16, a model that differs between folder, file name and slug. Every run ends in the
report, one bad run stops none of the others, no run overwrites another's rows, each night
is marked complete, and a second import writes nothing but what is new.

One import (and a second) of variants of one real run that replays fast (one call): the
variants differ by their harness run id (``pyRunId``), which the replay does not read, so each
is a run of its own that replays exactly as the real one. A variant saved again under
another name with a field added is the same run (its model, task, harness run id and start
time): imported once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from flows.importers.kaggle import import_runs
from flows.importers.kaggle_dump import _Dump, dump_key, parquet_bytes, stored_digest
from flows.importers.kaggle_files import parse_run
from flows.importers.kaggle_plan import _list_runs, _place, _plan
from flows.importers.kaggle_report import ImportReport, RunReport
from flows.store.dumps import SUCCESS_MARKER, discover, marked_complete, scan
from flows.store.location import Location
from schemas.kaggle import Outcome, Reason
from tests.learningbench import RUNS, TASKS

MODEL = "deepseek-ai_deepseek-v3.2"
BASE = RUNS / MODEL / f"feistel_cipher_round_obs_learning-run_id_Run_1_{MODEL}.run.json"
NIGHT = "2026-04-12"  # the base run's start date
LONG = "feistel-" + "x" * 230  # a run file name the file system takes, its dump name too
UNDECODABLE = os.fsdecode(b"caf\xe9 [2]")  # a name whose bytes are not UTF-8


def variant(number: int, **changes: Any) -> bytes:
    """The base run with the harness run id ``... variant <number>`` (a run of its own,
    replayed as the base is) and a key the importer does not read set to ``number``, and
    ``changes`` made to its fields."""
    raw = json.loads(BASE.read_bytes())
    raw["pyRunId"] = f"{raw['pyRunId']} variant {number}"
    raw["cogscoreTestVariant"] = number
    raw.update(changes)
    return json.dumps(raw, indent=1).encode()


def resaved(number: int) -> bytes:
    """Variant ``number`` saved again: the same run, one field added, other bytes."""
    return variant(number, savedAgain=True)


def by_run(report: ImportReport) -> dict[str, RunReport]:
    return {r.run: r for r in report.runs}


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("inputs")
    runs, out, outside = root / "runs", root / "dump", root / "outside"

    def put(relative: str, data: bytes) -> None:
        path = runs / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    put(f"{MODEL}/{BASE.name}", BASE.read_bytes())
    put("names/run[1].run.json", variant(1))
    put(f"names/{LONG}.run.json", variant(2))
    put(f"names/{UNDECODABLE}.run.json", variant(3))
    put("one/same.run.json", variant(4))  # one file name in two folders, two runs
    put("two/same.run.json", variant(5))
    put("copies/first.run.json", variant(6))  # one run under two names
    put("copies/second.run.json", variant(6))
    put("copies/resaved.run.json", resaved(6))  # and a third, one field added
    # the model differs: its slug against its folder and file name
    other = {"slug": "openai/gpt-5.4-2026-03-05"}
    put(f"{MODEL}/feistel-run_id_Run_2_{MODEL}.run.json", variant(7, modelVersion=other))
    raw = json.loads(variant(8))
    raw["endTime"] = 12345
    put("bad/end-time.run.json", json.dumps(raw).encode())
    put("bad/deep.run.json", b"[" * 100_000 + b"]" * 100_000)
    put("bad/utf16.run.json", variant(9).decode().encode("utf-16"))
    put("bad/start-time.run.json", variant(10, startTime="yesterday"))
    # a time the harness does not write, but a time: its night is its date
    put("names/basic-time.run.json", variant(14, startTime="20260412T113204Z"))
    put("bad/no-text.run.json", variant(11).replace(b'"cogscoreTestVariant"', b'"\\udc80"'))
    (outside / "far").mkdir(parents=True)
    (outside / "far" / "far.run.json").write_bytes(variant(12))
    (runs / "linked").symlink_to(outside / "far")  # a folder reached through a link
    (runs / "linked-again").symlink_to(outside / "far")  # and again: walked once
    (runs / "cycle").mkdir()
    (runs / "cycle" / "up").symlink_to(runs)  # a loop
    (runs / "dangling.run.json").symlink_to(root / "nowhere.run.json")
    (runs / "loop.run.json").symlink_to(runs / "loop.run.json")
    first = import_runs(Location.parse(str(runs)), TASKS, Location.parse(str(out)))
    files = {p: p.read_bytes() for p in out.rglob("*.parquet")}
    marker = out / f"dump_date={NIGHT}" / SUCCESS_MARKER
    marker_time = marker.stat().st_mtime_ns if marker.exists() else None
    put("later/new.run.json", variant(13))  # a new run into a night already complete
    put("later/resaved.run.json", resaved(4))  # a run the dump holds, saved again
    second = import_runs(Location.parse(str(runs)), TASKS, Location.parse(str(out)))
    return {
        "first": first,
        "second": second,
        "out": out,
        "files": files,
        "marker_time": marker_time,
        "marker": marker,
    }


def test_every_listed_input_is_in_the_report_and_the_others_import(layout: dict) -> None:
    runs = by_run(layout["first"])
    rejected = {run: r.reasons for run, r in runs.items() if r.outcome is not Outcome.IMPORTED}
    as_text = "names/caf\\xe9 [2].run.json"
    assert rejected == {
        "bad/deep.run.json": [Reason.UNREADABLE_RUN],
        "bad/end-time.run.json": [Reason.UNREADABLE_RUN],
        "bad/no-text.run.json": [Reason.UNREADABLE_RUN],
        "bad/start-time.run.json": [Reason.UNREADABLE_RUN],
        "bad/utf16.run.json": [Reason.UNREADABLE_RUN],
        "copies/resaved.run.json": [Reason.DUPLICATE_RUN],
        "copies/second.run.json": [Reason.DUPLICATE_RUN],
        "dangling.run.json": [Reason.BROKEN_LINK],
        "loop.run.json": [Reason.BROKEN_LINK],
    }
    imported = sorted(run for run, r in runs.items() if r.outcome is Outcome.IMPORTED)
    assert imported == sorted(
        [
            f"{MODEL}/{BASE.name}",
            f"{MODEL}/feistel-run_id_Run_2_{MODEL}.run.json",
            "copies/first.run.json",
            "linked/far.run.json",
            "names/basic-time.run.json",
            f"names/{LONG}.run.json",
            as_text,
            "names/run[1].run.json",
            "one/same.run.json",
            "two/same.run.json",
        ]
    )


def test_a_bad_run_file_is_its_own_reason_naming_what_is_wrong(layout: dict) -> None:
    runs = by_run(layout["first"])
    assert "endTime" in str(runs["bad/end-time.run.json"].detail)
    assert "startTime" in str(runs["bad/start-time.run.json"].detail)
    assert "nested too deeply" in str(runs["bad/deep.run.json"].detail)
    assert "UTF-16" in str(runs["bad/utf16.run.json"].detail)
    assert "dangling" in str(runs["dangling.run.json"].detail)
    assert "loop" in str(runs["loop.run.json"].detail)


def test_every_run_file_name_round_trips_through_the_dump(layout: dict) -> None:
    """What the scorer reads of the dump (flows.store.dumps) holds each imported run's rows
    under its file name as it is: a name read as a pattern (``run[1]``) or too long to append to, or
    bytes that are not UTF-8 (as ``\\xNN``), loses nothing."""
    report, out = layout["second"], layout["out"]
    read = []
    for dump_file in discover(out):
        rows = scan(dump_file).collect()
        assert rows.height > 0, dump_file.relative
        read.extend(rows["run_id"].unique().to_list())
    imported = [r for r in report.runs if r.outcome is Outcome.IMPORTED]
    names = [r.run.rsplit("/", 1)[-1].removesuffix(".run.json") for r in imported]
    assert sorted(read) == sorted(names)
    assert {"run[1]", LONG, "caf\\xe9 [2]"} <= set(read)


def test_two_runs_of_one_file_name_keep_their_own_rows(layout: dict) -> None:
    runs, out = by_run(layout["first"]), layout["out"]
    one, two = runs["one/same.run.json"], runs["two/same.run.json"]
    assert one.file != two.file and one.written and two.written
    for report, number in ((one, 4), (two, 5)):
        data = (out / str(report.file)).read_bytes()
        assert stored_digest(data) == parse_run(variant(number)).digest
    ids = [pl.read_parquet(out / str(r.file))["episode_id"].unique().to_list() for r in (one, two)]
    assert len(ids[0]) == len(ids[1]) == 1 and ids[0] != ids[1]


def test_one_run_under_two_names_is_imported_once(layout: dict) -> None:
    runs = by_run(layout["first"])
    copy = runs["copies/second.run.json"]
    assert copy.file is None and not copy.written
    assert "copies/first.run.json" in str(copy.detail)


def test_one_run_saved_again_with_a_field_added_is_imported_once(layout: dict) -> None:
    """Its identity is the run's (model, task, harness run id, start time), not its bytes:
    under another name with one field more, in the same import or after the dump holds it,
    it is the same run, never a second episode."""
    first, second, out = by_run(layout["first"]), by_run(layout["second"]), layout["out"]
    again = first["copies/resaved.run.json"]
    assert again.file is None and not again.written
    assert "copies/first.run.json" in str(again.detail) and "content differing" in str(again.detail)
    later = second["later/resaved.run.json"]
    assert later.reasons == [Reason.DUPLICATE_RUN] and later.file is None
    assert "one/same.run.json" in str(later.detail)  # the file the dump holds is kept
    for number in (4, 6):
        run = parse_run(variant(number))
        episodes = [
            p for p in out.rglob("*.parquet") if stored_digest(p.read_bytes()) == run.digest
        ]
        assert len(episodes) == 1, number  # one episode of the run in the dump
    held = {parse_run(resaved(n)).digest for n in (4, 6)}
    assert not [p for p in out.rglob("*.parquet") if stored_digest(p.read_bytes()) in held]


def test_links_are_followed_each_folder_once(layout: dict) -> None:
    listed = [r.run for r in layout["first"].runs]
    assert "linked/far.run.json" in listed
    assert not any(run.startswith(("linked-again/", "cycle/")) for run in listed)


def test_a_model_that_differs_from_its_folder_and_file_name_is_flagged(layout: dict) -> None:
    runs, out = by_run(layout["first"]), layout["out"]
    run = runs[f"{MODEL}/feistel-run_id_Run_2_{MODEL}.run.json"]
    assert run.outcome is Outcome.IMPORTED and run.reasons == [Reason.MODEL_MISMATCH]
    assert "openai/gpt-5.4-2026-03-05" in str(run.detail) and MODEL in str(run.detail)
    rows = pl.read_parquet(out / str(run.file))  # the slug's model, named as cogscore names it
    assert rows["model"].unique().to_list() == ["gpt-5.4-2026-03-05"]
    names = rows.filter(kind="episode_start")["source_names"].str.json_decode()
    assert names.struct.field("model").to_list() == ["openai/gpt-5.4-2026-03-05"]
    base = runs[f"{MODEL}/{BASE.name}"]
    assert base.reasons == []  # folder, file name and slug agree


def test_each_night_is_marked_complete_once_imported(layout: dict) -> None:
    assert layout["first"].marked == [NIGHT]
    assert layout["marker_time"] is not None
    assert marked_complete(layout["out"], NIGHT)
    assert layout["first"].warnings == []


def test_a_second_import_writes_only_the_new_run_and_warns_of_the_complete_night(
    layout: dict,
) -> None:
    first, second = by_run(layout["first"]), by_run(layout["second"])
    assert set(second) == set(first) | {"later/new.run.json", "later/resaved.run.json"}
    assert [run for run, r in second.items() if r.written] == ["later/new.run.json"]
    for run, report in first.items():
        again = second[run]
        assert (again.outcome, again.reasons, again.file) == (
            report.outcome,
            report.reasons,
            report.file,
        ), run
    for path, data in layout["files"].items():
        assert path.read_bytes() == data
    assert layout["marker"].stat().st_mtime_ns == layout["marker_time"]
    assert layout["second"].marked == []
    [warning] = layout["second"].warnings
    assert f"dump_date={NIGHT}" in warning and "nightly will score the night again" in warning


def test_the_dump_scores_every_imported_run(layout: dict, tmp_path: Path) -> None:
    command = ["score", str(layout["out"]), "--out", str(tmp_path), "--engine", "local"]
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *command, "--json", "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "TERM": "dumb"},
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    scores = pl.read_delta(str(tmp_path / "episode_scores"))
    replaced = pl.read_delta(str(tmp_path / "replaced_episodes"))
    imported = [r for r in layout["second"].runs if r.outcome is Outcome.IMPORTED]
    assert scores.height + replaced.height == len(imported)  # every run scored, once
    # Each a run of its model on the task (contract 1.4): the latest started stands, the
    # others are kept as replaced by it, never averaged with it.
    assert scores.select("model", "task").is_unique().all()
    for run in replaced.iter_rows(named=True):
        [stands] = scores.filter(model=run["model"], task=run["task"]).iter_rows(named=True)
        assert run["replaced_by"] == stands["episode_id"]
        later = (stands["single_run_started"], stands["episode_id"])
        assert (run["single_run_started"], run["episode_id"]) < later
    assert "run[1]" in [*scores["run_id"], *replaced["run_id"]]


def test_a_run_saved_again_is_found_in_the_dump_under_its_first_name(tmp_path: Path) -> None:
    """The run the dump holds is no longer in RUNS, only its copy saved again under another
    name with a field added: the copy is the run imported already (no replay needed to say
    so: the runs are placed before any replay)."""
    runs, out = tmp_path / "runs", tmp_path / "dump"
    runs.mkdir()
    (runs / "renamed.run.json").write_bytes(resaved(20))
    original = parse_run(variant(20))
    key = dump_key("original", original, None)
    (out / key).parent.mkdir(parents=True)
    (out / key).write_bytes(parquet_bytes(pl.DataFrame({"run_id": ["original"]}), original))
    location = Location.parse(str(runs))
    plans = [_plan(location, listed, None) for listed in _list_runs(location)]
    _place(plans, _Dump(Location.parse(str(out))), None)
    [plan] = plans
    assert plan.key is None and plan.report.reasons == [Reason.DUPLICATE_RUN]
    assert f"was imported already, as {key}" in str(plan.report.detail)


def test_of_a_run_and_its_copy_saved_again_the_harness_named_file_is_kept(
    tmp_path: Path,
) -> None:
    """The copy's name sorts first, but the file the harness named is the run's own (its
    episode id and dump file keep the run's name)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    own = f"feistel-run_id_Run_1_{MODEL}.run.json"
    (runs / own).write_bytes(variant(21))
    (runs / "a-copy.run.json").write_bytes(resaved(21))
    location = Location.parse(str(runs))
    plans = [_plan(location, listed, None) for listed in _list_runs(location)]
    _place(plans, _Dump(Location.parse(str(tmp_path / "dump"))), None)
    kept = {p.listed.relative: p.key is not None for p in plans}
    assert kept == {own: True, "a-copy.run.json": False}
    copy = next(p for p in plans if p.key is None)
    assert f"as {own}, its content differing" in str(copy.report.detail)
