"""Contract 1.2's reported score, alone: an episode with a reported score on its
``episode_end`` and no row of a kind that carries a formula's inputs (a score table
imported) is scored as reported, formula version ``reported``; the rules about a formula's
inputs do not apply to it, every other rule does; an episode with inputs is computed as
before, whatever it reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from flows.score import score_dump
from schemas.contract import REPORTED_SCORE, UNCATEGORISED, Category
from schemas.formulas import REPORTED

COLUMNS: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "episode_id": pl.String(),
    "model": pl.String(),
    "task": pl.String(),
    "category": pl.String(),
    "turn": pl.Int64(),
    "role": pl.String(),
    "kind": pl.String(),
    "item_id": pl.String(),
    "content": pl.String(),
    "expected": pl.String(),
    "params": pl.String(),
    "status": pl.String(),
    "instance_id": pl.String(),
    REPORTED_SCORE: pl.Float64(),
}


def episode(
    episode_id: str, category: str, reported: float | None, *middle: dict[str, Any], **common: Any
) -> list[dict[str, Any]]:
    """An episode_start (params ``{}``), ``middle`` rows, an episode_end reporting."""
    base = {"run_id": "r", "episode_id": episode_id, "model": "m", "task": "t", **common}
    base["category"] = category
    rows = [{**base, "turn": 0, "role": "environment", "kind": "episode_start", "params": "{}"}]
    rows += [{**base, "turn": i + 1, **row} for i, row in enumerate(middle)]
    end = {"turn": len(middle) + 1, "role": "environment", "kind": "episode_end"}
    rows.append({**base, **end, "status": "completed", REPORTED_SCORE: reported})
    return rows


def scored(tmp_path: Path, rows: list[dict[str, Any]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    night = tmp_path / "dump" / "dump_date=2026-12-01"
    night.mkdir(parents=True)
    pl.DataFrame(rows, schema=COLUMNS).write_parquet(night / "part-0.parquet")
    result = score_dump(tmp_path / "dump")
    return result.scores, result.rejects


def test_a_reported_score_alone_is_the_score_in_every_category(tmp_path: Path) -> None:
    rows = [
        row
        for i, category in enumerate(Category)
        for row in episode(f"e{i}", category.value, i / 10)  # no parameters: none needed
    ]
    scores, rejects = scored(tmp_path, rows)
    assert rejects.is_empty()
    got = dict(zip(scores["episode_id"], scores["score"], strict=True))
    assert got == {f"e{i}": i / 10 for i in range(len(Category))}
    assert set(scores["formula_version"]) == {REPORTED}
    assert scores["n_items"].null_count() == scores.height  # no component


def test_with_formula_inputs_the_score_is_computed_whatever_is_reported(tmp_path: Path) -> None:
    item = {"role": "environment", "kind": "item", "item_id": "q", "expected": "A"}
    answer = {"role": "assistant", "kind": "answer", "item_id": "q", "content": "a"}
    rows = episode("e", "associative_learning", 0.25, item, answer)
    scores, rejects = scored(tmp_path, rows)
    assert rejects.is_empty()
    assert (scores["score"].item(), scores["formula_version"].item()) == (1.0, "v1")


def test_every_rule_but_those_of_the_inputs_still_applies(tmp_path: Path) -> None:
    rows = [
        *episode("no-score", "associative_learning", None),  # nothing reported: no items
        *episode("nan", "runtime_rl", float("nan")),  # not a score: its parameters count
        *episode("no-model", "concept_formation", 0.5, model=None),
        *episode("fine", "procedural_learning", 0.5),
    ]
    scores, rejects = scored(tmp_path, rows)
    assert scores["episode_id"].to_list() == ["fine"]
    rules = dict(zip(rejects["episode_id"], rejects["rules"].to_list(), strict=True))
    assert rules["no-score"] == ["no_items"]
    assert "params_missing" in rules["nan"]
    assert "null_required" in rules["no-model"]


def test_the_reference_scorer_agrees_on_every_case(tmp_path: Path) -> None:
    """The plain-Python reference (``tests/reference``, from the contract's own words) scores
    and rejects these episodes as the vectorised scorer does, a runtime RL run with its
    parameters and no action included (computed, not reported)."""
    from tests.reference.scorer import reference_score

    rl_run = episode("rl", "runtime_rl", 0.75)
    rl_run[0]["params"] = '{"budget": 5}'
    rows = [
        *episode("alone", "observational_learning", 0.3),
        *episode("spaced", "concept_formation", 0.4),
        *rl_run,
        *episode("no-score", "associative_learning", None),
        *episode("nan", "runtime_rl", float("nan")),
    ]
    rows[1]["params"] = " { \n}"  # JSON whitespace: still no parameter
    scores, rejects = scored(tmp_path, rows)
    file = "dump_date=2026-12-01/part-0.parquet"
    files = [{**{k: v for k, v in r.items() if v is not None}, "file": file} for r in rows]
    reference = reference_score(files)
    assert {k[0] for k in reference.scored} == set(scores["episode_id"])
    assert {k[0] for k in reference.rejected} == set(rejects["episode_id"])
    for row in scores.iter_rows(named=True):
        want = reference.scored[(row["episode_id"], file)]
        assert (row["score"], row["formula_version"]) == (want["score"], want["formula_version"])
    assert dict(zip(scores["episode_id"], scores["formula_version"], strict=True))["rl"] == "v1"


def test_an_uncategorised_task_is_scored_as_reported_and_nothing_else(tmp_path: Path) -> None:
    """Contract 1.4: a task its publisher puts in none of the six categories (`uncategorised`)
    is a reported score alone: scored as reported; with formula inputs, parameters or no
    reported score it is rejected (`uncategorised_not_reported`: no formula scores a task in
    no category). The reference scorer agrees on every case."""
    from tests.reference.scorer import reference_score

    item = {"role": "environment", "kind": "item", "item_id": "q", "expected": "A"}
    with_params = episode("params", UNCATEGORISED, 0.5)
    with_params[0]["params"] = '{"budget": 5}'
    rows = [
        *episode("alone", UNCATEGORISED, 0.25),
        *episode("inputs", UNCATEGORISED, 0.5, item),
        *episode("no-score", UNCATEGORISED, None),
        *with_params,
        *episode("other", "uncategorized", 0.5),  # not the contract's word: unknown
    ]
    scores, rejects = scored(tmp_path, rows)
    assert scores.select("episode_id", "category", "score", "formula_version").rows() == [
        ("alone", UNCATEGORISED, 0.25, REPORTED)
    ]
    rules = dict(zip(rejects["episode_id"], rejects["rules"].to_list(), strict=True))
    assert rules == {
        "inputs": ["uncategorised_not_reported"],
        "no-score": ["uncategorised_not_reported"],
        "params": ["uncategorised_not_reported"],
        "other": ["unknown_category"],
    }
    file = "dump_date=2026-12-01/part-0.parquet"
    files = [{**{k: v for k, v in r.items() if v is not None}, "file": file} for r in rows]
    reference = reference_score(files)
    assert {k[0] for k in reference.scored} == {"alone"}
    assert {k[0]: sorted(v["rules"]) for k, v in reference.rejected.items()} == rules
