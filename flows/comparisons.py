"""The comparison tables of a night: ``model_comparisons``, the rank columns of
``model_scores`` and ``regressions`` (README "Comparisons"; the statistics are
``transforms.compare``'s).

Comparisons and ranks need the night's own episode scores only. Regressions compare a night
with its baseline nights: those scored earlier in the same run (kept here, a few slim columns
per episode) or, before that, read from ``OUT`` (only those nights' files and columns).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import polars as pl

from flows.options import RegressionOptions
from schemas.comparisons import (
    BASELINE,
    BASELINE_DATES,
    HARNESS_ERROR_SHARE,
    LEVEL,
    LEVEL_NOT_COMPARABLE,
    N_BASELINE_NIGHTS,
    N_PAIRS,
    OVERALL,
    PAIRED,
    PAIRED_NONE,
    RANK_HIGH,
    RANK_LOW,
    REASON,
    SCOPE,
)
from schemas.contract import DUMP_DATE, INSTANCE_ID, Col
from schemas.tables import FORMULA_VERSION, SCORE, STATUS, EpisodeStatus
from transforms.aggregate import Bootstrap
from transforms.compact import compact, plain
from transforms.compare import (
    comparisons_and_rank_intervals,
    regressions,
    significance_tiers,
)

if TYPE_CHECKING:
    from flows.output import Output

# What the comparisons read of an episode: a few bytes, not the whole row.
SLIM: Final = [
    DUMP_DATE,
    Col.MODEL,
    Col.CATEGORY,
    Col.TASK,
    Col.EPISODE_ID,
    INSTANCE_ID,
    SCORE,
    FORMULA_VERSION,
]


def slim(scores: pl.DataFrame) -> pl.DataFrame:
    """The columns of episode scores that comparisons read, compact."""
    return compact(scores.select(SLIM))


def night_comparisons(
    models: pl.DataFrame, scores: pl.DataFrame, bootstrap: Bootstrap
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``model_scores`` rows with each model's rank interval and significance tier, the
    ``model_comparisons`` rows) of a night's model and episode scores. The rank interval
    is a bootstrap of the shared instances, the same draw for every model."""
    episodes = slim(scores)
    comparisons, ranks = comparisons_and_rank_intervals(
        episodes, resamples=bootstrap.resamples, seed=bootstrap.seed
    )
    tiers = plain(significance_tiers(comparisons))
    key = [DUMP_DATE, Col.MODEL]
    ranked = (
        plain(models)
        .join(plain(ranks.select(*key, RANK_LOW, RANK_HIGH)), on=key, how="left", nulls_equal=True)
        .join(tiers, on=key, how="left", nulls_equal=True)
    )
    return ranked, plain(comparisons)


def harness_shares(scores: pl.DataFrame, rejects: pl.DataFrame) -> pl.DataFrame:
    """Per night and model: the share of its episodes that ended in a harness error."""
    key = [DUMP_DATE, Col.MODEL]
    episodes, errors = pl.len().cast(pl.Int64), pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR
    none = pl.lit(0, pl.Int64)
    # Counted per model first: the scores may be compact, the rejects are text. (Lazily:
    # polars' eager group_by of a night's 4 M episodes with a literal took 450 MB.)
    scored = scores.lazy().group_by(key).agg(episodes.alias("__n"))
    unscored = (
        rejects.lazy()
        .filter(pl.col(Col.MODEL).is_not_null())
        .group_by(key)
        .agg(episodes.alias("__n"), errors.sum().cast(pl.Int64).alias("__errors"))
    )
    counted = pl.collect_all([scored.with_columns(none.alias("__errors")), unscored])
    ran = pl.concat([plain(frame) for frame in counted])
    share = pl.col("__errors").sum() / pl.col("__n").sum()
    return ran.group_by(key).agg(share.alias(HARNESS_ERROR_SHARE))


def models_without_scores(scores: pl.DataFrame, rejects: pl.DataFrame) -> dict[str, str]:
    """The models of a night with episodes but none scored, each with why (its harness
    errors and rejected episodes): they must not vanish from the night silently.

    >>> rejects = pl.DataFrame({"model": ["m", "m", "n"], "status": ["harness_error"] * 3})
    >>> models_without_scores(pl.DataFrame({"model": ["n"]}), rejects)
    {'m': 'no episode scored: 2 harness error(s), 0 rejected'}
    """
    scored = scores.lazy().select(pl.col(Col.MODEL).cast(pl.String).unique())
    counted = (
        rejects.lazy()
        .filter(pl.col(Col.MODEL).is_not_null())
        .join(scored, on=Col.MODEL, how="anti")
        .group_by(Col.MODEL)
        .agg(
            (pl.col(STATUS) == EpisodeStatus.HARNESS_ERROR).sum().alias("errors"),
            (pl.col(STATUS) == EpisodeStatus.REJECTED).sum().alias("rejected"),
        )
        .sort(Col.MODEL)
        .collect()
    )
    return {
        model: f"no episode scored: {errors} harness error(s), {rejected} rejected"
        for model, errors, rejected in counted.iter_rows()
    }


@dataclass
class NightWatch:
    """Regressions of the nights a run scores, night after night in date order.

    ``known``: the nights ``OUT`` held when the run began (read from it where a baseline
    needs them); the nights this run scored are kept (slim) for the nights after them."""

    output: Output | None
    options: RegressionOptions = field(default_factory=RegressionOptions)
    known: Iterable[str] = ()
    _recent: dict[str, tuple[pl.DataFrame, pl.DataFrame]] = field(default_factory=dict)

    def regressions(
        self, night: str | None, scores: pl.DataFrame, rejects: pl.DataFrame
    ) -> pl.DataFrame:
        """The ``regressions`` rows of ``night`` (none for an undated dump)."""
        if night is None:
            return _no_regressions()
        current = (slim(scores), harness_shares(scores, rejects))
        earlier = sorted(n for n in {*self.known, *self._recent} if n < night)
        baseline = earlier[-self.options.span :]
        history = [self._recent[n] for n in baseline if n in self._recent]
        missing = [n for n in baseline if n not in self._recent]
        if missing and self.output is not None:
            history.append(self._read(missing))
        self._recent[night] = current
        for old in sorted(self._recent)[: -self.options.span]:
            del self._recent[old]
        if not baseline:  # the first night: nothing to compare with (and nothing to prepare)
            return _no_regressions()
        dark = models_without_scores(scores, rejects)
        table = regressions(
            pl.concat([h[0] for h in [*history, current]], how="vertical_relaxed"),
            baseline=self.options.baseline,
            k=self.options.baseline_nights,
            margin=self.options.margin,
            metadata=pl.concat([h[1] for h in [*history, current]], how="vertical_relaxed"),
            harness_error_share_tolerance=self.options.harness_error_tolerance,
        )
        tonight = plain(table.filter(pl.col(DUMP_DATE) == night))
        return pl.concat([tonight, self._unscored_rows(night, baseline, dark)], how="vertical")

    def _unscored_rows(self, night: str, baseline: list[str], dark: dict[str, str]) -> pl.DataFrame:
        """A ``not_comparable`` row (scope overall) for each model with episodes tonight but
        none scored: never silently absent from the night's regressions."""
        rows = [
            {
                DUMP_DATE: night,
                Col.MODEL: model,
                SCOPE: OVERALL,
                BASELINE: self.options.baseline,
                BASELINE_DATES: ",".join(baseline),
                N_BASELINE_NIGHTS: len(baseline),
                N_PAIRS: 0,
                PAIRED: PAIRED_NONE,
                LEVEL: LEVEL_NOT_COMPARABLE,
                REASON: why,
            }
            for model, why in dark.items()
        ]
        empty = _no_regressions()
        return pl.DataFrame(rows, schema=empty.schema) if rows else empty

    def again(self, night: str) -> pl.DataFrame:
        """The ``regressions`` rows of ``night``, a night the output holds and the run did
        not score, made again (its baseline nights were rescored)."""
        scores, rejects = self._rows([night])
        return self.regressions(night, scores, rejects)

    def _rows(self, nights: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The columns regressions read of ``nights``' episode scores and rejects, from OUT."""
        from flows.output import EPISODE_SCORES, REJECTS

        assert self.output is not None
        chosen = pl.col(DUMP_DATE).is_in(nights)
        scores = self.output.scan(EPISODE_SCORES).filter(chosen).select(SLIM)
        rejects = self.output.scan(REJECTS).filter(chosen).select(DUMP_DATE, Col.MODEL, STATUS)
        scores_frame, rejects_frame = pl.collect_all([scores, rejects])
        return scores_frame, rejects_frame

    def _read(self, nights: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        scores, rejects = self._rows(nights)
        return slim(scores), harness_shares(scores, rejects)


def _no_regressions() -> pl.DataFrame:
    from flows.output import REGRESSIONS, empty_table

    return empty_table(REGRESSIONS).drop("scorer_version", "input_fingerprint")
