"""A night's regressions, night after night (README "Comparisons and statistics"; the
tables of one night are ``transforms.compare.night``'s, the statistics ``transforms.compare``'s).

Regressions compare a night with its baseline nights: those scored earlier in the same run
(kept here, the few columns compared per episode) or, before that, read from ``OUT`` (only
those nights' files and columns). A night scored late, delivered again or rescored changes
the baseline of the nights after it: ``later_nights`` names those whose regressions the run
makes again (``NightWatch.again``), reading of them only their own rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from flows.options import RegressionOptions
from flows.result import Episodes, resolved
from flows.store.catalog import EPISODE_SCORES, REJECTS
from schemas.columns import COMPARED_COLUMNS, STATUS
from schemas.comparisons import DEFAULT_LEVEL
from schemas.contract import DUMP_DATE, Col
from transforms.compact import plain
from transforms.compare import DEFAULT_DESIGN, DesignChoice, regressions
from transforms.compare.night import (
    ABSENT,
    absent_models,
    compared,
    harness_shares,
    models_without_scores,
    no_regressions,
    unscored_regressions,
)

if TYPE_CHECKING:
    from flows.store.output import Output


def later_nights(held: Sequence[str], scored: Iterable[str], span: int) -> list[str]:
    """The nights of ``held`` a run does not score whose baseline (the ``span`` nights
    before each, as the nights stand after the run) holds a night it scores (late, delivered
    again or rescored): their regressions must be made again. Only those: the nights beyond
    ``span`` after the last scored one keep theirs.

    >>> later_nights(["01", "02", "03", "04", "05"], ["02"], 1)
    ['03']
    >>> later_nights(["01", "02", "03", "04", "05"], ["02", "03"], 2)
    ['04', '05']
    >>> later_nights(["01", "03", "04"], ["02"], 1)  # a night arriving late
    ['03']
    >>> later_nights(["01", "02"], ["03"], 1)  # the next night: nothing after it
    []
    """
    chosen = set(scored)
    every = sorted({*held, *chosen})
    return [
        night
        for i, night in enumerate(every)
        if night not in chosen and chosen.intersection(every[max(0, i - span) : i])
    ]


@dataclass
class NightWatch:
    """Regressions of the nights a run scores, night after night in date order.

    ``known``: the nights ``OUT`` held when the run began (read from it where a baseline
    needs them); the nights this run scored or read are kept (the compared columns, the
    last ``span`` of them) for the nights after them: each night is read once."""

    output: Output | None
    options: RegressionOptions = field(default_factory=RegressionOptions)
    known: Iterable[str] = ()
    design: DesignChoice = DEFAULT_DESIGN  # the sampling design (``Bootstrap.design``)
    level: float = DEFAULT_LEVEL  # the intervals' level (``Bootstrap.level``)
    # night -> (its compared episodes, read back when first needed; its harness shares)
    _recent: dict[str, tuple[Episodes, pl.DataFrame]] = field(default_factory=dict)

    def regressions(
        self,
        night: str | None,
        scores: pl.DataFrame,
        rejects: pl.DataFrame,
        level: float | None = None,
        episodes: Episodes | None = None,
    ) -> pl.DataFrame:
        """The ``regressions`` rows of ``night`` (none for an undated dump), their intervals
        at ``level`` (default: the watch's, the run's). ``episodes``: the compared columns of
        ``scores`` with their ids as text, where ``scores`` holds them coded
        (``flows.coded``): read only where the night meets another."""
        if night is None:
            return no_regressions()
        current = (
            compared(scores) if episodes is None else episodes,
            harness_shares(scores, rejects),
        )
        earlier = sorted(n for n in {*self.known, *self._recent} if n < night)
        baseline = earlier[-self.options.span :]
        missing = [n for n in baseline if n not in self._recent]
        if missing and self.output is not None:
            self._recent |= self._read(missing)
        history = [self._held(n) for n in baseline if n in self._recent]
        self._recent[night] = current
        for old in sorted(self._recent)[: -self.options.span]:
            del self._recent[old]
        if not baseline:  # the first night: nothing to compare with (and nothing to prepare)
            return no_regressions()
        dark = models_without_scores(scores, rejects)
        tonight = (self._held(night)[0], current[1])
        table = regressions(
            pl.concat([h[0] for h in [*history, tonight]], how="vertical_relaxed"),
            baseline=self.options.baseline,
            k=self.options.baseline_nights,
            margin=self.options.regression_margin,
            metadata=pl.concat([h[1] for h in [*history, tonight]], how="vertical_relaxed"),
            harness_error_share_tolerance=self.options.harness_error_tolerance,
            design=self.design,
            level=self.level if level is None else level,
        )
        rows = plain(table.filter(pl.col(DUMP_DATE) == night))
        absent = absent_models([h[1] for h in history], current[1])
        dark |= {model: ABSENT for model in absent}
        unscored = unscored_regressions(night, self.options.baseline, baseline, dark)
        return pl.concat([rows, unscored], how="vertical")

    def _held(self, night: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        """A recent night's compared episodes and shares, its episodes read back once."""
        episodes, shares = self._recent[night]
        if not isinstance(episodes, pl.DataFrame):
            self._recent[night] = (episodes := resolved(episodes), shares)
        return episodes, shares

    def again(self, night: str, level: float) -> pl.DataFrame:
        """The ``regressions`` rows of ``night``, a night the output holds and the run did
        not score, made again (a night of its baseline was scored: late, delivered again or
        rescored) at ``level``: the level of the run that scored the night, which its other
        tables and its labels keep."""
        scores, rejects = self._rows([night])
        return self.regressions(night, scores, rejects, level)

    def _rows(self, nights: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The columns regressions read of ``nights``' episode scores and rejects, from OUT."""

        assert self.output is not None
        chosen = pl.col(DUMP_DATE).is_in(nights)
        scores = self.output.scan(EPISODE_SCORES).filter(chosen).select(COMPARED_COLUMNS)
        rejects = self.output.scan(REJECTS).filter(chosen).select(DUMP_DATE, Col.MODEL, STATUS)
        scores_frame, rejects_frame = pl.collect_all([scores, rejects])
        return scores_frame, rejects_frame

    def _read(self, nights: list[str]) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
        """Each of ``nights`` as regressions read it (read from ``OUT`` at once)."""
        scores, rejects = self._rows(nights)
        kept = compared(scores)
        shares = harness_shares(scores, rejects)
        return {
            night: (
                kept.filter(pl.col(DUMP_DATE) == night),
                shares.filter(pl.col(DUMP_DATE) == night),
            )
            for night in nights
        }
