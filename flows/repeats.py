"""Episode ids a night repeats from another night.

The contract makes an ``episode_id`` unique in the whole dump. Within a night a copy is
rejected episode by episode (``transforms.duplicates``); a night that repeats ids already
scored on another night (a night's files copied into the next, a harness that re-sends
yesterday's episodes) fails whole, unwritten and named, rather than counting the same
episodes twice in every table that aggregates across nights.

Checked against the nights the output holds (their ``episode_id`` column, filtered by the
night's ids: exact) and against the new nights this run scored before (two 64-bit hashes
of each id kept, 16 bytes an episode: a false match is a 2^-128 chance per pair), all of
them in one join a night, whatever the number of nights before (issue 48: one join per
night before made a rescore of N nights run N²/2 of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from flows.store.catalog import EPISODE_SCORES
from flows.store.output import Output
from schemas.contract import DUMP_DATE, Col

_SEEDS = (0x5EED1, 0x5EED2)
_ROW = "row"  # a hash's row in every night's hashes, which tells its night


def _hashes(ids: pl.Series) -> pl.DataFrame:
    text = ids.cast(pl.String)
    return pl.DataFrame([text.hash(seed).alias(f"h{seed}") for seed in _SEEDS]).unique()


# A night's scored episode ids as text, or what reads them (a coded night's: ``flows.coded``).
Ids = pl.Series | Callable[[], pl.Series]


def _of(ids: Ids) -> pl.Series:
    return ids if isinstance(ids, pl.Series) else ids()


@dataclass
class SeenIds:
    """The episode ids of the output's nights and of this run's new nights, to check each
    night against the others."""

    output: Output | None
    known: frozenset[str] = frozenset()  # the nights the output holds
    # The run's new nights' id hashes, night after night (each night's appended as a chunk:
    # not copied), and the row where each night's end, in the same order.
    _seen: pl.DataFrame | None = field(default=None, repr=False)
    _nights: list[str] = field(default_factory=list)
    _ends: list[int] = field(default_factory=list)

    def repeats(self, night: str | None, read: Ids) -> dict[str, int]:
        """Per other night, how many of the night's scored episodes (their ids: ``read``,
        called only where there is another night to check them against) it scored."""
        against_output = self.output is not None and bool(self.known - {night})
        if night is None or not (against_output or self._nights):
            return {}
        ids = _of(read)
        if ids.is_empty():
            return {}
        found: dict[str, int] = {}
        if self.output is not None and against_output:
            text = ids.cast(pl.String)
            between = (str(text.min()), str(text.max()))
            # Implied by the ids themselves, and what the files' statistics in the Delta log
            # answer: a night whose files' ids all lie outside the night's range is not
            # read, and where no other night's can hold them (ids that name their night,
            # as import-scores' do) no file is (a scan's plan of 240 nights: 17-21 ms).
            others = [
                other
                for other in self.output.nights_within(
                    EPISODE_SCORES, DUMP_DATE, Col.EPISODE_ID, between
                )
                if other not in (None, night)  # (the null night's rows are no night's)
            ]
            if others:
                found |= self._found_out(others, text, between)
        if self._seen is not None:
            found |= self._found_new(night, _hashes(ids))
        return dict(sorted(found.items()))

    def _found_out(
        self, nights: list[str], text: pl.Series, between: tuple[str, str]
    ) -> dict[str, int]:
        """Per night of ``nights`` in the output, how many of the ids ``text`` it holds."""
        assert self.output is not None
        counted = (
            self.output.scan(EPISODE_SCORES)
            .filter(
                pl.col(DUMP_DATE).is_in(nights)
                & pl.col(Col.EPISODE_ID).is_between(pl.lit(between[0]), pl.lit(between[1]))
                & pl.col(Col.EPISODE_ID).is_in(text.implode())
            )
            .group_by(DUMP_DATE)
            .len()
            .collect()
        )
        return dict(counted.iter_rows())

    def _found_new(self, night: str, mine: pl.DataFrame) -> dict[str, int]:
        """Per new night of the run before (not ``night``), how many of ``mine`` it holds:
        one semi-join of every night's hashes with the night's, each match's row telling
        its night. On the streaming engine: the nights' hashes (chunks, not copied) pass
        through it, a table of the night's alone is built (20 M hashes before: +43 MiB and
        0.25 s; the in-memory engine's join gathered them all, +1.5 GiB and 2 s)."""
        assert self._seen is not None
        matched = (
            self._seen.lazy().with_row_index(_ROW).join(mine.lazy(), on=mine.columns, how="semi")
        )
        rows = matched.select(_ROW).collect(engine="streaming")[_ROW]
        at = pl.Series(self._ends, dtype=rows.dtype).search_sorted(rows, side="right")
        found = {self._nights[i]: n for i, n in at.value_counts(name="n").iter_rows()}
        found.pop(night, None)
        return found

    def add(self, night: str | None, read: Ids) -> None:
        """Remember a night this run scored that the output did not hold (its ids:
        ``read``)."""
        if night is not None and night not in self.known:
            hashes = _hashes(_of(read))
            self._seen = hashes if self._seen is None else self._seen.vstack(hashes)
            self._nights.append(night)
            self._ends.append(self._seen.height)


def repeat_reason(repeats: dict[str, int]) -> str:
    """Why a night that repeats other nights' episodes fails.

    >>> repeat_reason({"2026-12-01": 40})
    'not written: 40 episode id(s) already scored on 2026-12-01 (a copy of another night?)'
    """
    named = ", ".join(
        f"{n} episode id(s) already scored on {night}" for night, n in repeats.items()
    )
    return f"not written: {named} (a copy of another night?)"
