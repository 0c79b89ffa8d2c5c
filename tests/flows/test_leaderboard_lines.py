"""The leaderboard's tables laid out without rich where nothing in them needs it (issue 48:
rich drew a standing's seven tables in about 40 ms of a nightly's CPU, 3 ms a row), and
the lines exactly those rich draws, on a terminal's width and off a terminal, folded or
not, markup and odd names included (where rich is still needed, rich draws them)."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest
from rich.markup import escape

from flows.present import leaderboard
from flows.present.leaderboard import category_table, leaderboard_table
from schemas.comparisons import DEFAULT_LEVEL
from schemas.contract import Category

NAMES = [
    "model-01",
    "gpt-4o-mini",
    "meta-llama/Llama-3.1-405B-Instruct-FP8",
    "a",
    "name with  spaces",
    "[bold]not markup[/bold]",
    "back\\slash",
    "emoji :smile: code",
    "naïve-ü",
    "模型",
    " lead",
    "trail ",
    "x" * 70,
]


def _rows(rng: random.Random, n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Models (names drawn from ``NAMES`` and plain ones) with ranks, intervals and rank
    spans, and their category rows (a few categories missing)."""
    names = list(dict.fromkeys(rng.choice(NAMES + [f"m-{i}" for i in range(9)]) for _ in range(n)))
    ranks = list(range(1, len(names) + 1))
    models = pl.DataFrame(
        {
            "model": names,
            "rank": ranks,
            "score": [rng.random() for _ in names],
            "ci_low": [None if rng.random() < 0.2 else rng.random() / 2 for _ in names],
            "ci_high": [0.5 + rng.random() / 2 for _ in names],
            "categories_covered": [6] * len(names),
            "ranked_among": [",".join(Category)] * len(names),
            "rank_low": [max(1, r - rng.randint(0, 2)) for r in ranks],
            "rank_high": [r + rng.randint(0, 12) for r in ranks],
            "rank_ub": [rng.randint(1, 3) for _ in names],
            "n_tasks": [135 if rng.random() < 0.8 else rng.randint(1, 134) for _ in names],
        }
    )
    cells: list[dict[str, Any]] = [
        {"model": m, "category": str(c), "score": rng.random(), "rank": i + 1, "n_tasks": 3}
        for i, m in enumerate(names)
        for c in Category
        if rng.random() < 0.9
    ]
    return models, pl.DataFrame(cells)


def _drawn(models: pl.DataFrame, categories: pl.DataFrame, width: int | None) -> list[str]:
    lines = leaderboard_table(models, categories, DEFAULT_LEVEL, width)
    for category in categories["category"].unique(maintain_order=True):
        rows = categories.filter(pl.col("category") == category)
        lines += category_table(rows.with_columns(ci_low=0.1, ci_high=0.9), DEFAULT_LEVEL, width)
    return lines


@pytest.mark.parametrize("width", [None, 100, 140, 60])
def test_the_lines_are_those_rich_draws(monkeypatch: pytest.MonkeyPatch, width: int | None) -> None:
    rng = random.Random(48)
    laid_out = leaderboard._laid_out
    ways: list[bool] = []  # each table: laid out here (True) or drawn by rich

    def counted(*args: Any) -> list[str] | None:
        lines = laid_out(*args)
        ways.append(lines is not None)
        return lines

    monkeypatch.setattr(leaderboard, "_laid_out", counted)
    for _ in range(25):
        models, categories = _rows(rng, rng.randint(1, 8))
        ours = _drawn(models, categories, width)
        with monkeypatch.context() as rich_only:
            rich_only.setattr(leaderboard, "_laid_out", lambda *args: None)
            assert ours == _drawn(models, categories, width)
    assert any(ways) and not all(ways)  # both ways were taken, and matched rich


def test_a_plain_leaderboard_is_laid_out_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[object] = []
    original = leaderboard.render

    def spied(table: Any, width: int | None = None) -> list[str]:
        drawn.append(table)
        return original(table, width)

    monkeypatch.setattr(leaderboard, "render", spied)
    names = [f"model-{i:02}" for i in range(14)]
    models, categories = _rows(random.Random(1), 1)
    models = pl.concat(
        [models.with_columns(model=pl.lit(n), rank=i + 1) for i, n in enumerate(names)]
    )
    categories = pl.DataFrame(
        {"model": n, "category": str(c), "score": 0.5, "rank": i + 1}
        for i, n in enumerate(names)
        for c in Category
    )
    lines = _drawn(models, categories, None)
    assert not drawn  # rich drew none of the seven tables
    assert sum(escape(n) in " ".join(lines) for n in names) == len(names)
    monkeypatch.setattr(leaderboard, "_laid_out", lambda *args: None)
    assert _drawn(models, categories, None) == lines  # as rich draws them
    assert len(drawn) == 7
