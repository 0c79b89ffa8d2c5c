"""The leaderboard on the terminal where models cover different categories (the 13 real
runs: four coverage groups, each ranked from 1, UB 1 on every row): what a coverage group is
and why UB is 1 are said under the table (issue 47), within 100 columns."""

from __future__ import annotations

from flows.present.leaderboard import leaderboard_table
from schemas.comparisons import DEFAULT_LEVEL
from schemas.contract import Category
from tests.leaderboards import three_models


def _lines(groups: list[str], bound: list[int]) -> list[str]:
    n_ranked = [groups.count(g) for g in groups]
    models, categories = three_models(
        {
            "ranked_among": groups,
            "categories_covered": [g.count(",") + 1 for g in groups],
            "n_ranked": n_ranked,
            "rank_ub": bound,
        }
    )
    return leaderboard_table(models, categories, DEFAULT_LEVEL, width=100)


def test_several_coverage_groups_are_explained_where_their_ranks_restart() -> None:
    lines = _lines(["runtime_rl", "runtime_rl", "associative_learning"], [1, 1, 1])
    assert max(map(len, lines)) <= 100
    said = " ".join(lines)
    assert "ranks restart in each of the 2 coverage groups: a group is the models with" in said
    assert "no verdict tells any two models of a group apart (UB 1 throughout)" in said


def test_one_group_whose_verdicts_separate_models_needs_no_note() -> None:
    everything = ",".join(str(c) for c in Category)
    lines = _lines([everything] * 3, [1, 2, 2])
    assert not any("coverage group" in line or "no verdict" in line for line in lines)
