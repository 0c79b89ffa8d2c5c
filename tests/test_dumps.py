"""The test-dump tooling: the writer round-trips, and the rule dump's expectations hold."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.contract import (
    EPISODE_CONSTANT,
    FILE,
    INPUT_KINDS,
    NEEDS_ITEMS,
    NULLABLE,
    REPORTED_SCORE,
    REQUIRED,
    UNCATEGORISED,
    VERDICT,
    Category,
    Col,
    Kind,
    Match,
    Role,
    Status,
)
from schemas.params import PARAMS, PROGRESS_MODES, ParamType
from schemas.rules import Rule
from tests.dumps import (
    FILE_LEVEL_RULES,
    RULE_DUMP_FILES,
    Expected,
    Row,
    action,
    answer,
    episode,
    episode_end,
    example,
    feedback,
    item,
    message,
    round_end,
    rule_dump,
    write_dump,
)
from transforms.ingest import partition_values

HIVE_FILE = "dump_date=2026-12-01/part-0.parquet"
T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def _small_rows() -> list[Row]:
    return [
        *episode(
            Category.ASSOCIATIVE_LEARNING,
            episode_id="a1",
            file="part-0.parquet",
            ts=T0,
            turns=[message(Role.USER, "q?"), item("q1", "UNKNOWN"), answer("q1", "unknown")],
        ),
        *episode(
            Category.RUNTIME_RL,
            episode_id="r1",
            file=HIVE_FILE,
            turns=[action("up"), feedback(0.5, False), action("down"), feedback(1.0, True)],
        ),
        *episode(
            Category.PROCEDURAL_LEARNING,
            episode_id="p1",
            file=HIVE_FILE,
            params={"practice_rounds": 2},
            turns=[round_end(1, 0.4), round_end(2, 0.8), item("t1", "3", Match.INTEGER)],
        ),
    ]


# ------------------------------------------------------------------ builders and writer


def test_episode_numbers_turns_and_fills_identity() -> None:
    rows = episode(
        Category.CONCEPT_FORMATION,
        episode_id="e1",
        model="mx",
        ts=T0,
        turns=[example(), item("x1", "4", turn=7), answer("x1", "4"), episode_end()],
    )
    assert [r[Col.TURN] for r in rows] == [0, 1, 7, 8, 9]
    assert [r[Col.KIND] for r in rows] == [
        Kind.EPISODE_START,
        Kind.EXAMPLE,
        Kind.ITEM,
        Kind.ANSWER,
        Kind.EPISODE_END,
    ]
    assert json.loads(rows[0][Col.PARAMS]) == {"initial_examples": 2, "max_examples": 8}
    assert {r[Col.MODEL] for r in rows} == {"mx"}
    assert {r[Col.EPISODE_ID] for r in rows} == {"e1"}
    assert rows[3][Col.TS] == datetime(2026, 12, 1, 2, 0, 8, tzinfo=UTC)
    assert rows[4][Col.STATUS] == Status.COMPLETED
    with pytest.raises(KeyError):
        message(Role.USER, "x", modle="typo")


def test_write_dump_round_trips(tmp_path: Path) -> None:
    rows = _small_rows()
    paths = write_dump(rows, tmp_path)
    assert paths == [tmp_path / "part-0.parquet", tmp_path / HIVE_FILE]
    assert (tmp_path / "dump_date=2026-12-01").is_dir()

    schema = pq.read_schema(paths[0])
    assert schema.names == [str(c) for c in Col]  # no "file", no "dump_date"
    assert schema.field(Col.TURN).type == pa.int32()
    assert schema.field(Col.ROUND).type == pa.int32()
    assert schema.field(Col.VALUE).type == pa.float64()
    assert schema.field(Col.SOLVED).type == pa.bool_()
    assert schema.field(Col.TS).type == pa.timestamp("us", tz="UTC")
    assert schema.field(Col.CONTENT).type == pa.string()

    df = pl.read_parquet(paths[0])
    assert df.height == 4
    assert df[Col.TURN].to_list() == [0, 1, 2, 3]
    assert df[Col.TS][3] == datetime(2026, 12, 1, 2, 0, 3, tzinfo=UTC)
    assert df[Col.KIND].to_list() == [r[Col.KIND] for r in rows[:4]]

    hive = pl.read_parquet(
        tmp_path / "dump_date=*" / "*.parquet", hive_partitioning=True, try_parse_hive_dates=False
    )
    assert hive.height == len(rows) - 4
    assert set(hive["dump_date"].to_list()) == {"2026-12-01"}
    assert hive[Col.SOLVED].to_list()[:5] == [None, None, False, None, True]
    assert hive.filter(pl.col(Col.KIND) == Kind.ROUND_END)[Col.ROUND].to_list() == [1, 2]


def test_write_dump_drops_all_null_columns(tmp_path: Path) -> None:
    rows = _small_rows()
    p0, ph = write_dump(rows, tmp_path, drop_null_columns=True)
    names0 = set(pq.read_schema(p0).names)
    assert {str(c) for c in REQUIRED} <= names0
    assert Col.VALUE not in names0 and Col.ROUND not in names0 and Col.SOLVED not in names0
    assert Col.TS in names0 and Col.ITEM_ID in names0
    namesh = set(pq.read_schema(ph).names)
    assert Col.TS not in namesh and Col.VALUE in namesh and Col.ROUND in namesh
    assert set(pq.read_schema(p0).names) | set(NULLABLE) == {str(c) for c in Col}


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Int16, pl.UInt8()])
def test_write_dump_turn_type(tmp_path: Path, dtype: Any) -> None:
    (path, _) = write_dump(_small_rows(), tmp_path, turn_type=dtype)
    assert pl.read_parquet(path)[Col.TURN].dtype == dtype
    assert pl.read_parquet(path)[Col.ROUND].dtype == pl.Int32


def test_write_dump_shuffles_reproducibly(tmp_path: Path) -> None:
    rows = _small_rows()
    (a, _) = write_dump(rows, tmp_path / "a", shuffle_seed=3)
    (b, _) = write_dump(rows, tmp_path / "b", shuffle_seed=3)
    da, db = pl.read_parquet(a), pl.read_parquet(b)
    assert da.equals(db)
    assert da[Col.TURN].to_list() != [0, 1, 2, 3]
    assert sorted(da[Col.TURN].to_list()) == [0, 1, 2, 3]


def test_write_dump_file_level_breakage(tmp_path: Path) -> None:
    rows = _small_rows()
    rows[0]["harness_note"] = "extra columns are allowed"
    (path, _) = write_dump(
        rows, tmp_path, column_types={Col.TURN: pl.String}, drop_columns=[Col.KIND]
    )
    schema = pq.read_schema(path)
    assert schema.field(Col.TURN).type == pa.string()
    assert Col.KIND not in schema.names
    assert schema.names[-1] == "harness_note"


# ------------------------------------------------------------------ rule dump


def _episodes(rows: list[Row]) -> dict[tuple[str | None, str], list[Row]]:
    groups: dict[tuple[str | None, str], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(r.get(Col.EPISODE_ID), r[FILE])].append(r)
    return groups


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _rules(
    key: tuple[str | None, str], rows: list[Row], duplicated: set[tuple[str | None, str]]
) -> set[str]:
    """A plain reading of the contract and README decisions, to check the fixtures only."""
    got: set[str] = set()
    if key[0] is None:
        got.add(Rule.NO_EPISODE_ID)
    elif (partition_values(key[1]).get("dump_date"), key[0]) in duplicated:
        got.add(Rule.DUPLICATE_EPISODE_ACROSS_FILES)
    for r in rows:
        if any(r.get(c) is None for c in REQUIRED if c != Col.EPISODE_ID):
            got.add(Rule.NULL_REQUIRED)
        for col, enum, rule in [
            (Col.CATEGORY, Category, Rule.UNKNOWN_CATEGORY),
            (Col.ROLE, Role, Rule.UNKNOWN_ROLE),
            (Col.KIND, Kind, Rule.UNKNOWN_KIND),
            (Col.MATCH, Match, Rule.UNKNOWN_MATCH),
        ]:
            allowed = {e.value for e in enum} | ({UNCATEGORISED} if col == Col.CATEGORY else set())
            if r.get(col) is not None and r[col] not in allowed:
                got.add(rule)
        v = r.get(Col.VALUE)
        if v is not None and not math.isfinite(v):
            got.add(Rule.NON_FINITE_VALUE)
        reported = r.get(REPORTED_SCORE)
        at_end = r.get(Col.KIND) == Kind.EPISODE_END
        if at_end and reported is not None and not math.isfinite(reported):
            got.add(Rule.NON_FINITE_VALUE)
        if at_end and reported is not None and math.isfinite(reported) and not 0 <= reported <= 1:
            got.add(Rule.REPORTED_SCORE_OUT_OF_RANGE)
    turns = [r[Col.TURN] for r in rows if r.get(Col.TURN) is not None]
    if len(turns) != len(set(turns)):
        got.add(Rule.DUPLICATE_TURN)
    if any(len({r.get(c) for r in rows} - {None}) > 1 for c in EPISODE_CONSTANT):
        got.add(Rule.INCONSISTENT_FIELD)
    cats: set[str | None] = {r.get(Col.CATEGORY) for r in rows}
    cat = Category(str(next(iter(cats)))) if len(cats) == 1 and cats <= set(Category) else None

    def of(kind: Kind) -> list[Row]:
        return [r for r in rows if r.get(Col.KIND) == kind]

    starts, items, examples, rounds = (
        of(Kind.EPISODE_START),
        of(Kind.ITEM),
        of(Kind.EXAMPLE),
        of(Kind.ROUND_END),
    )
    params: dict[str, Any] = {}
    valid: dict[str, Any] = {}
    if not starts:
        got.add(Rule.MISSING_EPISODE_START)
    elif len(starts) > 1:
        got.add(Rule.MULTIPLE_EPISODE_START)
    else:
        try:
            parsed = json.loads(starts[0].get(Col.PARAMS) or "null")
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            got.add(Rule.PARAMS_NOT_OBJECT)
        else:
            params = parsed
        for p in PARAMS.get(cat, ()) if cat is not None and isinstance(parsed, dict) else ():
            if p.name not in params:
                if p.required:
                    got.add(Rule.PARAMS_MISSING)
                continue
            v = params[p.name]
            ok = {
                ParamType.INT: _is_int(v),
                ParamType.FLOAT: (_is_int(v) or isinstance(v, float)) and math.isfinite(v),
                ParamType.PROGRESS_MODE: v in PROGRESS_MODES,
            }[p.type]
            if not ok:
                got.add(Rule.PARAMS_WRONG_TYPE)
            elif p.minimum is not None and v < p.minimum:
                got.add(Rule.PARAMS_INVALID_VALUE)
            else:
                valid[p.name] = v
    ids = [r.get(Col.ITEM_ID) for r in items]
    if None in ids:
        got.add(Rule.ITEM_WITHOUT_ID)
    known = [i for i in ids if i is not None]
    if len(known) != len(set(known)):
        got.add(Rule.DUPLICATE_ITEM_ID)
    for r in items:
        exp = r.get(Col.EXPECTED)
        if exp is None or not exp.strip():
            got.add(Rule.EMPTY_EXPECTED)
        elif r.get(Col.MATCH) == Match.INTEGER and not re.fullmatch(r"[+-]?[0-9]+", exp.strip()):
            got.add(Rule.INTEGER_EXPECTED_NOT_INTEGER)
    if any(r.get(Col.ITEM_ID) not in known for r in of(Kind.ANSWER)):
        got.add(Rule.ANSWER_UNKNOWN_ITEM)
    recorded = {r.get(Col.ITEM_ID) for r in items if r.get(Col.MATCH) == Match.RECORDED}
    if any(r.get(Col.ITEM_ID) in recorded and r.get(VERDICT) is None for r in of(Kind.ANSWER)):
        got.add(Rule.RECORDED_WITHOUT_VERDICT)
    if cat in NEEDS_ITEMS and not items:
        got.add(Rule.NO_ITEMS)
    if cat in (Category.CONCEPT_FORMATION, Category.LANGUAGE_LEARNING):
        if len(items) > valid.get("num_test_items", len(items)):
            got.add(Rule.TOO_MANY_ITEMS)
        if "max_examples" in valid and len(examples) > valid["max_examples"]:
            got.add(Rule.TOO_MANY_EXAMPLES)
    numbers = [r.get(Col.ROUND) for r in rounds]
    if None in numbers:
        got.add(Rule.ROUND_MISSING_NUMBER)
    if len([n for n in numbers if n is not None]) != len(set(numbers) - {None}):
        got.add(Rule.DUPLICATE_ROUND)
    for r in rounds:
        v = r.get(Col.VALUE)
        if v is None:
            got.add(Rule.ROUND_MISSING_VALUE)
        elif math.isfinite(v) and not 0.0 <= v <= 1.0:
            got.add(Rule.ROUND_VALUE_OUT_OF_RANGE)
    if cat == Category.PROCEDURAL_LEARNING and len(starts) == 1:
        n = valid.get("practice_rounds", 5 if "practice_rounds" not in params else None)
        if n is not None and len(rounds) != n:
            got.add(Rule.WRONG_ROUND_COUNT)
    if cats == {UNCATEGORISED}:  # contract 1.4: a reported score alone, nothing else
        inputs = any(r.get(Col.KIND) in INPUT_KINDS for r in rows)
        ends = [r.get(REPORTED_SCORE) for r in of(Kind.EPISODE_END)]
        scores = [s for s in ends if s is not None]
        reported = bool(scores) and math.isfinite(scores[-1])
        if inputs or not reported or len(starts) != 1 or params:
            got.add(Rule.UNCATEGORISED_NOT_REPORTED)
    if any(r.get(Col.STATUS) == Status.ERROR for r in of(Kind.EPISODE_END)):
        got.add(Rule.HARNESS_ERROR)
    return got


def check_expectations(rows: list[Row], expected: Expected) -> None:
    """Every (episode, file) gets exactly its expected rules; unlisted ones get none."""
    groups = _episodes(rows)
    files_of: dict[tuple[str | None, str], set[str]] = defaultdict(set)
    for eid, file in groups:
        if eid is not None:  # ids are unique within a night (README)
            files_of[(partition_values(file).get("dump_date"), eid)].add(file)
    duplicated = {key for key, files in files_of.items() if len(files) > 1}
    assert set(expected) <= set(groups)
    for key, group in groups.items():
        assert _rules(key, group, duplicated) == expected.get(key, set()), key


def test_rule_dump_expectations_are_consistent() -> None:
    rows, expected = rule_dump()
    check_expectations(rows, expected)

    episode_rules = set(Rule) - FILE_LEVEL_RULES
    assert set().union(*expected.values()) == episode_rules
    singles = Counter(next(iter(r)) for r in expected.values() if len(r) == 1)
    assert set(singles) == episode_rules  # every rule alone in some episode
    assert sum(len(r) == 3 and Rule.HARNESS_ERROR not in r for r in expected.values()) == 1

    harness = [k for k, r in expected.items() if Rule.HARNESS_ERROR in r]
    assert 2 <= len(harness) <= 3
    assert any(expected[k] == {Rule.HARNESS_ERROR} for k in harness)
    assert any(k[0] is None for k in expected)
    dups = [k for k, r in expected.items() if Rule.DUPLICATE_EPISODE_ACROSS_FILES in r]
    assert len(dups) == 2 and dups[0][0] == dups[1][0] and dups[0][1] != dups[1][1]

    scored = [g for k, g in _episodes(rows).items() if k not in expected]
    assert {g[0][Col.CATEGORY] for g in scored} == set(Category)
    assert {r[FILE] for r in rows} == set(RULE_DUMP_FILES)
    assert sum(f.startswith("dump_date=") for f in RULE_DUMP_FILES) == 1


def test_rule_dump_writes_and_reads_back(tmp_path: Path) -> None:
    rows, _ = rule_dump()
    paths = write_dump(rows, tmp_path, drop_null_columns=True, shuffle_seed=1)
    assert len(paths) == len(RULE_DUMP_FILES)
    total = sum(pl.read_parquet(p).height for p in paths)
    assert total == len(rows)
    nan_rows = pl.read_parquet(tmp_path / "part-0.parquet").filter(pl.col(Col.VALUE).is_nan())
    assert nan_rows.height == 1


def test_example_dump_is_deterministic_and_small(tmp_path: Path) -> None:
    from examples.make_example_dump import build_rows, main

    rows, expected = build_rows()
    check_expectations(rows, expected)
    episodes = _episodes(rows)
    assert 60 <= len(episodes) <= 150
    assert {r[Col.CATEGORY] for r in rows} == set(Category)

    main(["--out", str(tmp_path / "a")])
    main(["--out", str(tmp_path / "b")])
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.parquet"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.parquet"))
    assert files_a == files_b
    assert {p.parts[0] for p in files_a} == {"dump_date=2026-11-30", "dump_date=2026-12-01"}
    for rel in files_a:
        assert pl.read_parquet(tmp_path / "a" / rel).equals(pl.read_parquet(tmp_path / "b" / rel))
    # The committed example dump is what the script writes now.
    committed = Path(__file__).resolve().parent.parent / "examples" / "dump"
    assert sorted(p.relative_to(committed) for p in committed.rglob("*.parquet")) == files_a
    for rel in files_a:
        assert pl.read_parquet(committed / rel).equals(pl.read_parquet(tmp_path / "a" / rel)), rel
    assert sum(p.stat().st_size for p in (tmp_path / "a").rglob("*.parquet")) < 1_000_000
