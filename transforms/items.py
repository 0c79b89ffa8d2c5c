"""Items and answers: the answer that counts for each item, graded.

The answer with the highest ``turn`` for an ``item_id`` counts; an item without one is
graded against the empty string (wrong in every mode, since ``expected`` is not blank).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from schemas.columns import VERDICT_MISMATCHES, Component
from schemas.contract import DEFAULT_MATCH, VERDICT, Category, Col, Kind, Match
from transforms.episodes import SEGMENT, of_kind
from transforms.matching import ANSWER, CORRECT, EXPECTED, MODE, POSITIONAL, grade

POSITIONAL_MEAN: Final = "positional_mean"


def last_answers(answers: pl.LazyFrame) -> pl.LazyFrame:
    """Per (episode, item_id): the content of the answer with the highest turn."""
    return (
        answers.filter(pl.col(Col.ITEM_ID).is_not_null())
        .group_by([SEGMENT, Col.ITEM_ID])
        .agg(
            pl.col(Col.CONTENT).max_by(Col.TURN).alias(ANSWER),
            pl.col(VERDICT).max_by(Col.TURN),
        )
    )


def item_verdicts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per graded item of each episode: its ``item_id`` and ``turn``, the ``expected``
    value, the ``answer`` that counts, the match mode, whether it is right (``correct``),
    the positional score (observational learning) and the harness's recorded verdict
    (``verdict``, contract 1.2; null where none). What the episode's counts are made of,
    and what ``cogscore explain`` shows. ``rows`` are in ``in_episode_order``."""
    answers = of_kind(rows, Kind.ANSWER, Col.ITEM_ID, Col.TURN, Col.CONTENT, VERDICT)
    default_mode = pl.col(Col.CATEGORY).replace_strict(
        {c.value: m.value for c, m in DEFAULT_MATCH.items()}, default=None, return_dtype=pl.String
    )
    pairs = (
        of_kind(rows, Kind.ITEM, Col.ITEM_ID, Col.TURN, Col.EXPECTED, Col.MATCH, Col.CATEGORY)
        .rename({Col.EXPECTED: EXPECTED})
        .filter(pl.col(EXPECTED).is_not_null())
        .join(last_answers(answers), on=[SEGMENT, Col.ITEM_ID], how="left")
        .with_columns(pl.col(Col.MATCH).fill_null(default_mode).alias(MODE))
    )
    # The positional diagnostic is observational learning's only: spare the others' items.
    observational = pl.col(Col.CATEGORY) == Category.OBSERVATIONAL_LEARNING
    return grade(pairs, positional_where=observational)


def graded_items(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per episode: ``correct_count``, ``n_items``, ``verdict_mismatches`` (items whose
    declarative verdict differs from the harness's recorded one; null where none was
    compared) and (observational learning) the mean positional score of its items (summed
    left to right in item order).

    ``rows`` are in ``in_episode_order``.
    """
    observational = pl.col(Col.CATEGORY) == Category.OBSERVATIONAL_LEARNING
    graded = item_verdicts(rows).cache()
    # A declarative kind's verdict against the harness's own, where it recorded one.
    verdict = pl.col(VERDICT)
    compared = (pl.col(MODE) != Match.RECORDED) & verdict.is_not_null()
    disagrees = pl.when(compared).then(pl.col(CORRECT) != verdict)
    counts = graded.group_by(SEGMENT).agg(
        pl.col(CORRECT).sum().cast(pl.Int64).alias(Component.CORRECT_COUNT),
        pl.len().cast(pl.Int64).alias(Component.N_ITEMS),
        pl.when(compared.any()).then(disagrees.sum()).cast(pl.Int64).alias(VERDICT_MISMATCHES),
    )
    # A left-to-right sum in item order (only observational items have a positional score).
    positional = pl.col(POSITIONAL).fill_null(0.0).sort_by(Col.TURN).cum_sum().last()
    means = (
        graded.filter(observational)
        .group_by(SEGMENT)
        .agg((positional / pl.len().cast(pl.Float64)).alias(POSITIONAL_MEAN))
    )
    return counts.join(means, on=SEGMENT, how="left")
