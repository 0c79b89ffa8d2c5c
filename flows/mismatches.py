"""Contract 1.2's mismatches of a night's episodes: how many were scored other than the
harness reported, how many have item verdicts other than the harness's, and the first few
(``Mismatches``, counted by ``flows.score`` where the whole rows are); contract 1.4's
episodes scored whose usage was refused."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import polars as pl

from schemas.columns import SCORE, SCORE_MISMATCH, USAGE_REFUSED, VERDICT_MISMATCHES
from schemas.contract import DUMP_DATE, REPORTED_SCORE, Col

MISMATCHES_LISTED: Final = 20  # named in a run's record; the table holds every one


@dataclass
class Mismatches:
    """Contract 1.2, of some episodes: how many were scored other than the harness reported,
    how many have item verdicts other than the harness's, and the first few of the former
    (by night and episode id); contract 1.4: how many had their usage refused (scored all
    the same). Counted where the whole rows are (a staged file keeps only the held columns:
    issue 17's 100 bytes an episode)."""

    scores: int = 0
    verdicts: int = 0
    listed: list[dict[str, Any]] = field(default_factory=list)
    usage_refused: int = 0

    @classmethod
    def of(cls, scores: pl.DataFrame) -> Mismatches:
        differ = scores.filter(pl.col(SCORE_MISMATCH).fill_null(False))
        keys = [DUMP_DATE, Col.EPISODE_ID, Col.MODEL, Col.TASK, SCORE, REPORTED_SCORE]
        first = differ.sort(DUMP_DATE, Col.EPISODE_ID).head(MISMATCHES_LISTED).select(keys)
        verdicts = int((scores[VERDICT_MISMATCHES] > 0).sum())
        refused = int(scores[USAGE_REFUSED].is_not_null().sum())
        return cls(differ.height, verdicts, first.to_dicts(), refused)

    @classmethod
    def total(cls, parts: Iterable[Mismatches]) -> Mismatches:
        every = list(parts)
        listed = sorted(
            (row for m in every for row in m.listed),
            key=lambda r: (r[DUMP_DATE] or "", r[Col.EPISODE_ID]),
        )
        return cls(
            sum(m.scores for m in every),
            sum(m.verdicts for m in every),
            listed[:MISMATCHES_LISTED],
            sum(m.usage_refused for m in every),
        )
