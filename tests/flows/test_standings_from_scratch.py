"""Standings made incrementally by a run (each from the one before: the pairs and score
intervals of the models without a new result kept, ``transforms.compare.pairs.Known``) are
the standings made from scratch from each standing's own task rows and episodes, to the bit:
models added, cells re-run, a model with few tasks and a category of one task, a result a
cell as ``import-scores`` tables hold them (LearningBench's shape; several episodes a cell:
``tests/transforms/test_known_pairs.py``) (issue 48)."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import flows.store.writer as writer_module
import transforms.compare.scores as scores_module
from flows import runs, standing_writes
from flows.importers.scores import import_scores
from flows.night import statistics_above
from schemas.columns import AS_OF, INPUT_FINGERPRINT, PROVENANCE
from schemas.contract import DUMP_DATE, Col
from tests.tables import read_table
from transforms.aggregate import Bootstrap
from transforms.compare.night import compared
from transforms.compare.preparation import Prepared
from transforms.standings import CELL

A, R, P = "associative_learning", "runtime_rl", "procedural_learning"
TASKS = {"t1": A, "t2": A, "t3": A, "t4": R, "t5": R, "t6": P}
# Night by night: the cells (model, task) that ran. m3 comes on the second night with two
# tasks, m0 on the seventh with three; the others re-run a few.
NIGHTS = {
    "2026-04-01": [(m, t) for m in ("m1", "m2") for t in TASKS],
    "2026-04-02": [("m3", "t1"), ("m3", "t4"), ("m1", "t2")],
    "2026-04-03": [("m2", "t1"), ("m2", "t5")],
    "2026-04-04": [("m1", "t3"), ("m3", "t4"), ("m1", "t6")],
    "2026-04-05": [("m3", "t1")],
    "2026-04-06": [("m2", "t2"), ("m2", "t6")],
    "2026-04-07": [("m0", "t1"), ("m0", "t4"), ("m0", "t6"), ("m1", "t5")],  # first in order
    "2026-04-08": [("m3", "t4")],
}


def _rows(seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    skill = {"m0": 0.6, "m1": 0.3, "m2": 0.5, "m3": 0.7}
    return [
        {
            "dump_date": night,
            "model": model,
            "task": task,
            "category": TASKS[task],
            "score": round(min(1.0, max(0.0, rng.gauss(skill[model], 0.2))), 4),
            "instance_id": f"{task}#0",  # every model on the task's instance
        }
        for night, cells in NIGHTS.items()
        for model, task in cells
    ]


def _score(tmp: Path, seed: int) -> None:
    """Every night imported and scored by one ``score`` (a standing a night)."""
    table = tmp / "scores.csv"
    pl.DataFrame(_rows(seed)).write_csv(table)
    assert not import_scores(table, tmp / "dump").rejected
    runs.score(tmp / "dump", tmp / "out")


def _from_scratch(out: Path, as_of: str) -> dict[str, pl.DataFrame]:
    """The standing as of ``as_of`` made from its own rows alone: its task rows and the
    episodes of the results it holds, scored as one night's (no standing before)."""
    tasks = read_table(out, "task_standings").filter(pl.col(AS_OF) == as_of)
    held = tasks.select(DUMP_DATE, *CELL)
    episodes = read_table(out, "episode_scores").join(held, on=[DUMP_DATE, *CELL], how="semi")
    night = pl.lit(as_of).alias(DUMP_DATE)
    made = statistics_above(
        tasks.drop(AS_OF, *PROVENANCE).with_columns(night),
        compared(episodes.with_columns(night)),
        Bootstrap(),
    )
    return {
        "standings": made.models,
        "category_standings": made.categories,
        "standing_comparisons": made.comparisons,
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_each_standing_made_from_the_one_before_is_the_one_made_from_scratch(
    tmp_path: Path, seed: int
) -> None:
    _score(tmp_path, seed)
    for as_of in NIGHTS:
        for name, theirs in _from_scratch(tmp_path / "out", as_of).items():
            mine = read_table(tmp_path / "out", name).filter(pl.col(AS_OF) == as_of)
            theirs = theirs.rename({DUMP_DATE: AS_OF})
            mine = mine.select(theirs.columns)
            keys = [c for c in theirs.columns if theirs[c].dtype == pl.String]
            assert_frame_equal(mine.sort(keys), theirs.sort(keys), check_exact=True)


def test_a_standing_makes_only_the_intervals_of_the_models_with_a_new_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each night the score intervals are made for the night's models (its own tables) and,
    in its standing, for the same models only (a model added among them): the others' are
    the standing before's, but where that is the first night's (its tables, renamed: it
    made none)."""
    made: list[tuple[str, frozenset[str]]] = []
    original = scores_module.variances  # (the score intervals' variances: one a call)

    def spy(prep: Prepared, *args: object, **kwargs: object) -> pl.DataFrame:
        for night, models in prep.units.group_by(DUMP_DATE).agg(pl.col(Col.MODEL)).rows():
            made.append((night, frozenset(models)))
        return original(prep, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scores_module, "variances", spy)
    _score(tmp_path, 1)
    seen: set[str] = set()
    for i, (night, cells) in enumerate(NIGHTS.items()):
        tonight = frozenset(model for model, _ in cells)
        seen |= tonight
        expected = [[tonight], [tonight, frozenset(seen)]][i] if i < 2 else [tonight, tonight]
        found = sorted(sorted(models) for n, models in made if n == night)
        assert found == sorted(sorted(models) for models in expected), night


def test_a_score_stages_its_standings_a_few_nights_at_a_time_with_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``score`` hands each standing table to the writer a few standings at a time
    (``STANDINGS_AT_ONCE``: one validation for them all, not one a night), and each night
    holds the rows it holds when every standing is staged alone."""
    checked: dict[str, list[list[str]]] = {}
    original = writer_module.validate

    def spy(table: object, frame: pl.DataFrame) -> pl.DataFrame:
        name = table if isinstance(table, str) else getattr(table, "name", "")
        if AS_OF in frame.columns:
            nights = sorted(set(frame[AS_OF].drop_nulls().to_list()))
            checked.setdefault(str(name), []).append(nights)
        return original(table, frame)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module, "validate", spy)
    monkeypatch.setattr(standing_writes, "STANDINGS_AT_ONCE", 3)
    (tmp_path / "batched").mkdir()
    _score(tmp_path / "batched", 1)
    nights = list(NIGHTS)
    batches = [nights[:3], nights[3:6], nights[6:]]
    for name in ("task_standings", "standings", "standing_comparisons", "task_health"):
        assert checked[name] == batches, name
    monkeypatch.setattr(standing_writes, "STANDINGS_AT_ONCE", 1)
    (tmp_path / "alone").mkdir()
    _score(tmp_path / "alone", 1)
    # (each night's input fingerprint: the night's own, as its task_scores rows hold it)
    of_night = read_table(tmp_path / "batched" / "out", "task_scores").select(
        pl.col(DUMP_DATE).alias(AS_OF), pl.col(INPUT_FINGERPRINT).alias("night's")
    )
    for name in checked:
        batched = read_table(tmp_path / "batched" / "out", name)
        fingerprints = batched.join(of_night.unique(), on=AS_OF)
        assert fingerprints.height == batched.height, name
        assert (fingerprints[INPUT_FINGERPRINT] == fingerprints["night's"]).all(), name
        batched = batched.drop(INPUT_FINGERPRINT)
        alone = read_table(tmp_path / "alone" / "out", name).drop(INPUT_FINGERPRINT)
        keys = [c for c in alone.columns if alone[c].dtype == pl.String]
        assert_frame_equal(batched.sort(keys), alone.sort(keys), check_exact=True)
