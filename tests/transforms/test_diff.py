"""transforms/diff.py on small frames: a rescore's old and new rows meet on night, model,
level and category, an undated dump's (null night) as a dated night's; a model on one side
only keeps the other side null; episodes scored by a reported score alone are counted."""

from __future__ import annotations

import polars as pl

from schemas.columns import FORMULA_VERSION, RANK, SCORE
from schemas.comparisons import (
    DELTA,
    DIFF_LEVEL,
    DIFF_LEVEL_CATEGORY,
    DIFF_LEVEL_MODEL,
    FORMULA_VERSIONS,
    NEW_RANK,
    NEW_SCORE,
    OLD_RANK,
    OLD_SCORE,
    OVERALL,
    SCOPE,
    SE,
)
from schemas.contract import DUMP_DATE, Col
from schemas.formulas import REPORTED
from transforms.diff import KEY, reported_alone, rescore_diff, with_significance

CATEGORY = "procedural_learning"


def _models(night: str | None, scores: dict[str, float]) -> pl.LazyFrame:
    ranked = sorted(scores, key=lambda m: -scores[m])
    return pl.LazyFrame(
        {
            DUMP_DATE: [night] * len(scores),
            Col.MODEL: list(scores),
            SCORE: list(scores.values()),
            RANK: [ranked.index(m) + 1 for m in scores],
            FORMULA_VERSIONS: ["v1"] * len(scores),
        },
        schema_overrides={DUMP_DATE: pl.String},
    )


def _categories(night: str | None, scores: dict[str, float]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            DUMP_DATE: [night] * len(scores),
            Col.MODEL: list(scores),
            Col.CATEGORY: [CATEGORY] * len(scores),
            SCORE: list(scores.values()),
            FORMULA_VERSION: ["v1"] * len(scores),
        },
        schema_overrides={DUMP_DATE: pl.String},
    )


def test_old_and_new_rows_meet_on_an_undated_night_as_on_a_dated_one() -> None:
    old = {"a": 0.5, "b": 0.25, "gone": 0.75}
    new = {"a": 0.625, "b": 0.125, "came": 0.875}
    for night in ("2026-12-01", None):
        diff = rescore_diff(
            _models(night, old), _categories(night, old), _models(night, new),
            _categories(night, new),
        ).collect()  # fmt: skip
        # One row per model and level: both sides met (a null night equals a null night).
        assert diff.select(KEY).is_duplicated().sum() == 0
        assert diff.height == 2 * len(old.keys() | new.keys())
        assert diff[DUMP_DATE].to_list() == [night] * diff.height
        for model in old.keys() | new.keys():
            for level, category in ((DIFF_LEVEL_MODEL, OVERALL), (DIFF_LEVEL_CATEGORY, CATEGORY)):
                row = diff.filter(
                    (pl.col(Col.MODEL) == model)
                    & (pl.col(DIFF_LEVEL) == level)
                    & (pl.col(Col.CATEGORY) == category)
                ).row(0, named=True)
                assert row[OLD_SCORE] == old.get(model)
                assert row[NEW_SCORE] == new.get(model)
                both = model in old and model in new
                assert row[DELTA] == (new[model] - old[model] if both else None)
                if level == DIFF_LEVEL_MODEL:
                    assert (row[OLD_RANK] is None) == (model not in old)
                    assert (row[NEW_RANK] is None) == (model not in new)
                else:
                    assert row[OLD_RANK] is None and row[NEW_RANK] is None


def test_significance_joins_an_undated_night_too_and_lists_it_last() -> None:
    scores = {"a": 0.5, "b": 0.25}
    nights = (None, "2026-12-01")  # the undated night first in the input
    diff = pl.concat(
        rescore_diff(
            _models(night, scores), _categories(night, scores), _models(night, scores),
            _categories(night, scores),
        ).collect()
        for night in nights
    )  # fmt: skip
    significance = diff.select(
        DUMP_DATE,
        Col.MODEL,
        pl.col(Col.CATEGORY).alias(SCOPE),
        (pl.col(OLD_SCORE) / 10).alias(SE),  # a value of each row's own
    )
    significance = significance.with_columns(
        *(pl.lit(None).alias(c) for c in ("df", "design", "ci_low", "ci_high", "p_value")),
        *(pl.lit(None).alias(c) for c in ("mde", "n_pairs", "paired")),
        pl.lit(None).alias("rank_change_significant"),
    )
    joined = with_significance(diff, significance)
    assert joined.height == diff.height
    assert joined[SE].null_count() == 0  # every row met its own, the undated ones too
    assert (joined[SE] == joined[OLD_SCORE] / 10).all()
    half = diff.height // 2
    assert joined[DUMP_DATE].to_list() == ["2026-12-01"] * half + [None] * half


def test_the_episodes_of_a_reported_score_alone_are_counted() -> None:
    versions = [REPORTED, "v3", REPORTED, "v1", "v4"]
    scores = pl.DataFrame({FORMULA_VERSION: versions})
    assert reported_alone(scores) == versions.count(REPORTED)
    categorical = scores.with_columns(pl.col(FORMULA_VERSION).cast(pl.Categorical))
    assert reported_alone(categorical) == versions.count(REPORTED)
