"""Property tests: the vectorised scorer agrees exactly with the plain-Python reference.

For dumps drawn by ``tests.strategies.dumps`` (all six categories, mostly valid episodes,
plus perturbations that break every kind of rule), ``transforms.pipeline.score_rows`` (on a
LazyFrame built from the rows) and ``flows.score.score_dump`` (on the rows written as
Parquet files) must give what ``tests.reference.reference_score`` gives:

(a) the same scored keys (episode_id, file);
(b) every score and component ``==`` the reference's (floats exactly, never NaN);
(c) the same rejected keys, status, set of rules and rows per reject;
(d) rows_read == rows_scored + rows_rejected, each equal to the reference's.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.score import score_dump
from schemas.columns import (
    EPISODE_SCORES_DTYPES,
    FORMULA_VERSION,
    N_ROWS,
    REASONS,
    REJECTS_DTYPES,
    ROWS,
    RULES,
    STATUS,
    USAGE_REFUSED,
    EpisodeStatus,
)
from schemas.contract import DUMP_DATE, FILE, Category, Col
from schemas.formulas import version_of
from schemas.rules import Rule
from tests.dumps import Row, rule_dump, write_dump
from tests.reference import SCORE_FIELDS, ReferenceResult, reference_score
from tests.run import rows_frame, run_pipeline
from tests.strategies import dumps, formulas
from transforms.ingest import partition_values
from transforms.pipeline import scorable_episodes
from transforms.registry import VERSIONS, resolve

Key = tuple[str | None, str]

# Every example runs the whole pipeline (~0.1 s, mostly polars planning large queries);
# the examples are sized so that this file runs in about 40 s on 2 cores.
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
LAZY = settings(max_examples=100, deadline=None, suppress_health_check=SLOW_OK)
PARQUET = settings(max_examples=15, deadline=None, suppress_health_check=SLOW_OK)
PROCEDURAL = settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)


@dataclass
class Outcome:
    """What the vectorised scorer gave for a dump."""

    scores: pl.DataFrame
    rejects: pl.DataFrame
    rows_read: int

    @property
    def rows_scored(self) -> int:
        return int(self.scores[N_ROWS].sum())

    @property
    def rows_rejected(self) -> int:
        return int(self.rejects[ROWS].sum())


# ------------------------------------------------------------------------------ running


def vectorised(rows: Sequence[Row], chosen: Mapping[str, str], cuts: Sequence[int] = ()) -> Outcome:
    """``score_rows`` on a LazyFrame of the rows (every file at once; ``cuts``: in chunks)."""
    scores, rejects = run_pipeline(rows, chosen, cuts)
    return Outcome(scores, rejects, len(rows))


def reference(rows: Sequence[Row], chosen: Mapping[str, str]) -> ReferenceResult:
    """The reference, given each row's hive ``dump_date`` as the scorer reads it."""
    dated = [{**r, DUMP_DATE: partition_values(r[FILE]).get(DUMP_DATE)} for r in rows]
    return reference_score(dated, dict(chosen))


# ---------------------------------------------------------------------------- comparing


def _episode(rows: Sequence[Row], key: Key) -> str:
    """The rows of one episode, by turn, for a failure message."""
    mine = [r for r in rows if (r.get(Col.EPISODE_ID), r[FILE]) == key]
    mine.sort(key=lambda r: (r.get(Col.TURN) is None, r.get(Col.TURN) or 0))
    shown = [{k: v for k, v in r.items() if v is not None and k != FILE} for r in mine]
    return f"episode {key}:\n" + "\n".join(f"  {r!r}" for r in shown)


# Contract 1.4: why an episode's usage was refused, as the scorer and the reference say it;
# the value as each prints it (polars ``NaN``, ``1e308``; Python ``nan``, ``1e+308``).
_REFUSAL = re.compile(
    r"usage_invalid: turn (-?\d+): (\w+) = (\S+), outside \[0, (\d+)\]"
    r"(?: \(and (\d+) more assistant row\(s\)\))?"
)


def _refusal(text: str) -> tuple[Any, ...]:
    """``usage_refused``'s parts: turn, column, value (a float), bound, rows more."""
    found = _REFUSAL.fullmatch(text)
    assert found is not None, text
    turn, column, value, bound, more = found.groups()
    return int(turn), column, float(value), int(bound), int(more or 0)


def _same(got: Any, want: Any, name: str = "") -> bool:
    """Equal values; null only for null; a bool only for a bool (``0 == False``); a usage
    refusal equal in its parts (NaN equal to NaN there)."""
    if got is None or want is None:
        return got is None and want is None
    if name == USAGE_REFUSED:
        return repr(_refusal(got)) == repr(_refusal(want))
    if isinstance(got, bool) or isinstance(want, bool):
        return type(got) is type(want) and got == want
    return bool(got == want)


def _by_key(frame: pl.DataFrame) -> dict[Key, dict[str, Any]]:
    out = {(r[Col.EPISODE_ID], r[FILE]): r for r in frame.to_dicts()}
    assert len(out) == frame.height, "one row per (episode_id, file)"
    return out


def assert_agree(rows: Sequence[Row], chosen: Mapping[str, str], got: Outcome) -> None:
    want = reference(rows, chosen)
    # (a) the same episodes scored
    scores = _by_key(got.scores)
    assert set(scores) == set(want.scored), (
        f"scored only by the vectorised scorer: {set(scores) - set(want.scored)}; "
        f"only by the reference: {set(want.scored) - set(scores)}"
    )
    # (b) every score and component, exactly
    for scored_key, expected in want.scored.items():
        actual = scores[scored_key]
        for name in SCORE_FIELDS:
            value = actual[name]
            assert not (isinstance(value, float) and math.isnan(value)), (
                f"{name} is NaN\n{_episode(rows, scored_key)}"
            )
            assert _same(value, expected[name], name), (
                f"{name}: vectorised {value!r} != reference {expected[name]!r}\n"
                f"{_episode(rows, scored_key)}"
            )
    # (c) the same rejects, status, rules and rows
    rejects = _by_key(got.rejects)
    assert set(rejects) == set(want.rejected), (
        f"rejected only by the vectorised scorer: {set(rejects) - set(want.rejected)}; "
        f"only by the reference: {set(want.rejected) - set(rejects)}"
    )
    for key, expected in want.rejected.items():
        actual = rejects[key]
        where = _episode(rows, key)
        rules = actual[RULES]
        assert set(rules) == {str(r) for r in expected["rules"]}, (
            f"rules: vectorised {sorted(rules)} != reference {sorted(expected['rules'])}\n{where}"
        )
        assert len(rules) == len(set(rules)), f"a rule listed twice: {rules}"
        assert actual[STATUS] == expected["status"], where
        if actual[STATUS] == EpisodeStatus.HARNESS_ERROR:
            assert rules[0] == Rule.HARNESS_ERROR, f"harness_error is not first: {rules}"
        assert actual[ROWS] == expected["rows"], where
        assert len(actual[REASONS]) >= len(rules) and all(actual[REASONS]), where
        for column in (Col.MODEL, Col.TASK, Col.CATEGORY, DUMP_DATE):
            assert _same(actual[column], expected[column]), f"{column}\n{where}"
    # (d) accounting
    assert got.rows_read == got.rows_scored + got.rows_rejected
    assert (got.rows_read, got.rows_scored, got.rows_rejected) == (
        want.rows_read,
        want.rows_scored,
        want.rows_rejected,
    )


def test_every_output_column_is_compared() -> None:
    assert set(EPISODE_SCORES_DTYPES) == {*SCORE_FIELDS, Col.EPISODE_ID, FILE}
    assert {Col.MODEL, Col.TASK, Col.CATEGORY, DUMP_DATE, STATUS, RULES, ROWS} <= set(
        REJECTS_DTYPES
    )


# -------------------------------------------------------------------------------- tests


def tidied(rows: list[Row]) -> list[Row]:
    """The rows as a harness writes them: each episode's rows together, in turn order (the
    scorer then keeps their order instead of sorting them)."""
    first: dict[Key, int] = {}
    for i, r in enumerate(rows):
        first.setdefault((r.get(Col.EPISODE_ID), r[FILE]), i)

    def where(r: Row) -> tuple[Any, ...]:
        turn = r.get(Col.TURN)
        return (first[(r.get(Col.EPISODE_ID), r[FILE])], turn is None, turn or 0)

    return sorted(rows, key=where)


@LAZY
@given(rows=dumps(max_episodes=8), chosen=formulas(), tidy=st.booleans())
def test_score_rows_agrees_with_reference(
    rows: list[Row], chosen: dict[str, str], tidy: bool
) -> None:
    rows = tidied(rows) if tidy else rows
    assert_agree(rows, chosen, vectorised(rows, chosen))


@LAZY
@given(
    rows=dumps(max_episodes=8),
    chosen=formulas(),
    cuts=st.lists(st.floats(0.05, 0.95), min_size=1, max_size=3),
)
def test_rows_read_in_chunks_score_as_the_reference(
    rows: list[Row], chosen: dict[str, str], cuts: list[float]
) -> None:
    # A file's columns come in chunks (the reader's morsels), the episode numbers in one:
    # episode order must cut them alike (``transforms.episodes.aligned``).
    rows = tidied(rows)
    assert_agree(rows, chosen, vectorised(rows, chosen, [int(c * len(rows)) for c in cuts]))


@PARQUET
@given(
    rows=dumps(),
    chosen=formulas(),
    drop_null_columns=st.booleans(),
    turn_type=st.sampled_from([pl.Int32, pl.Int64, pl.Int16]),
    shuffle_seed=st.none() | st.integers(0, 9),
)
def test_score_dump_agrees_with_reference(
    rows: list[Row],
    chosen: dict[str, str],
    drop_null_columns: bool,
    turn_type: type[pl.DataType],
    shuffle_seed: int | None,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_dump(
            rows,
            root,
            drop_null_columns=drop_null_columns,
            turn_type=turn_type,
            shuffle_seed=shuffle_seed,
        )
        result = score_dump(root, chosen)
    counts = result.counts
    assert counts["files_rejected"] == 0
    got = Outcome(result.scores, result.rejects, counts["rows_read"])
    assert (got.rows_scored, got.rows_rejected) == (counts["rows_scored"], counts["rows_rejected"])
    assert_agree(rows, chosen, got)


@pytest.mark.parametrize("version", VERSIONS[Category.PROCEDURAL_LEARNING])
@PROCEDURAL
@given(rows=dumps(categories=[Category.PROCEDURAL_LEARNING], max_episodes=4))
def test_procedural_formula_version_agrees_with_reference(version: str, rows: list[Row]) -> None:
    chosen = {f"{Category.PROCEDURAL_LEARNING.value}/*": version}  # every task: this one
    got = vectorised(rows, chosen)
    procedural = got.scores.filter(pl.col(Col.CATEGORY) == Category.PROCEDURAL_LEARNING)
    assert set(procedural[FORMULA_VERSION]) <= {version}  # (a perturbation may relabel one)
    assert_agree(rows, chosen, got)


def test_a_task_named_with_its_categorys_own_version_is_scored() -> None:
    """``--formula CATEGORY/TASK=VERSION`` naming the version the category has anyway: the
    task's episodes are scored as without it, not lost (they were neither scored nor
    rejected)."""
    rows, _ = rule_dump()
    scores, rejects = run_pipeline(rows, resolve([]))
    for category, task in scores.select(Col.CATEGORY, Col.TASK).unique().rows():
        same = resolve([f"{category}/{task}={version_of(resolve([]), Category(category))}"])
        named_scores, named_rejects = run_pipeline(rows, same)
        assert named_scores.sort(Col.EPISODE_ID).equals(scores.sort(Col.EPISODE_ID)), task
        assert named_rejects.height == rejects.height


def test_unscored_rows_keep_each_rows_kind_as_text() -> None:
    """The plan compares ``kind`` as a categorical code; the unscored rows it hands on are
    rows read, ``kind`` text again (an unknown kind included): each one of the input's."""
    rows, _ = rule_dump()
    frame = rows_frame(rows).collect()
    unscored = scorable_episodes(frame.lazy())[1].collect()
    assert unscored.schema == {c: t for c, t in frame.schema.items() if c != Col.CONTENT}
    assert "thought" in unscored[Col.KIND].to_list()
    read = frame.drop(Col.CONTENT)
    assert unscored.join(read, on=read.columns, how="anti", nulls_equal=True).is_empty()
    assert unscored.height > 0
