"""``flows.present.summary``: what a run prints, and how much of it when a run scores many
nights."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import polars as pl

from flows.outcome import Outcome
from flows.present.summary import MOST_NIGHT_LINES, formula_lines, standing_lines
from flows.store.output import Output
from schemas.tables import STANDING_CHANGES_TABLE

NIGHTS = [(date(2026, 1, 1) + timedelta(days=d)).isoformat() for d in range(3 * MOST_NIGHT_LINES)]


def _changes(levels: dict[str, str], kind: str = "rerun") -> pl.DataFrame:
    """standing_changes rows, one ``kind`` change per night of ``levels`` at its level."""
    rows = [
        {
            "as_of": night,
            "model": "m",
            "scope": "overall",
            "kind": kind,
            "change": -0.02,
            "ci_low": -0.03,
            "ci_high": -0.01,
            "q_bh": 0.01,
            "level": level,
        }
        for night, level in levels.items()
    ]
    empty = STANDING_CHANGES_TABLE.empty()
    return pl.concat([empty, pl.DataFrame(rows)], how="diagonal_relaxed").select(empty.columns)


def test_a_year_of_nights_prints_every_alert_and_the_latest_watches(tmp_path: Path) -> None:
    alerts = set(NIGHTS[:3])
    levels = {night: "alert" if night in alerts else "watch" for night in NIGHTS}
    lines = standing_lines(
        Outcome("rescore", Output.at(tmp_path), standing_changes=_changes(levels))
    )
    shown = [line for line in lines if line.startswith("  watch")]
    assert [line.split()[1] for line in shown] == NIGHTS[-MOST_NIGHT_LINES:]
    assert [line.split()[1] for line in lines if line.startswith("  alert")] == sorted(alerts)
    hidden = len(NIGHTS) - len(alerts) - MOST_NIGHT_LINES
    assert lines[-1] == f"  … and {hidden} earlier watch(es) (table standing_changes; --json)"


def test_a_few_nights_print_every_watch(tmp_path: Path) -> None:
    levels = dict.fromkeys(NIGHTS[:MOST_NIGHT_LINES], "watch")
    lines = standing_lines(
        Outcome("nightly", Output.at(tmp_path), standing_changes=_changes(levels))
    )
    assert len(lines) == 1 + MOST_NIGHT_LINES and "…" not in "".join(lines)


def test_a_year_s_rescore_prints_the_latest_rescored_standings(tmp_path: Path) -> None:
    """A rescore of every night moves every standing: the latest are printed, the rest
    counted (the table and the record hold them all)."""
    levels = dict.fromkeys(NIGHTS, "not_comparable")
    lines = standing_lines(
        Outcome("rescore", Output.at(tmp_path), standing_changes=_changes(levels, "rescored"))
    )
    shown = [line for line in lines if " rescored:" in line]
    assert [line.split()[1] for line in shown] == NIGHTS[-MOST_NIGHT_LINES:]
    hidden = len(NIGHTS) - MOST_NIGHT_LINES
    assert lines[-1] == (
        f"  … and {hidden} earlier rescored standing(s) (table standing_changes; --json)"
    )


def test_models_that_ran_nothing_are_counted_past_the_latest_nights(tmp_path: Path) -> None:
    absent = {night: ["m"] for night in reversed(NIGHTS)}
    lines = formula_lines(Outcome("rescore", Output.at(tmp_path), models_absent=absent))
    assert lines[0].startswith(f"… {len(NIGHTS) - MOST_NIGHT_LINES} earlier night(s) where")
    assert [line.split()[3] for line in lines[1:]] == NIGHTS[-MOST_NIGHT_LINES:]


def test_a_backfill_prints_the_latest_largest_reruns_and_counts_the_rest(tmp_path: Path) -> None:
    """A backfill of a harness that re-runs every task every night: the latest nights'
    largest moves are named (model, task, score and night before and now), the rest
    counted; a re-run within noise is a line like any other."""
    from flows.present.summary import MOST_RERUN_LINES, rerun_lines

    rows = [
        {
            "as_of": night,
            "previous_as_of": NIGHTS[i - 1],
            "model": "m",
            "category": "runtime_rl",
            "task": f"t{j}",
            "kind": "rerun",
            "old_night": NIGHTS[i - 1],
            "new_night": night,
            "old_score": 0.5,
            "new_score": 0.5 + j / 100,
            "change": j / 100,
        }
        for i, night in enumerate(NIGHTS[1:], start=1)
        for j in range(5)
    ]
    cells = pl.DataFrame(rows)
    lines = rerun_lines(Outcome("nightly", Output.at(tmp_path), reruns=cells))
    named = lines[1:-1]
    assert len(named) == MOST_RERUN_LINES
    # The latest nights first, each night's largest moves first.
    expected = cells.sort("as_of", "change", descending=True).head(MOST_RERUN_LINES)
    shown = {(line.split()[2].rstrip(":"), line.split()[4].rstrip(":")) for line in named}
    assert shown == set(expected.select("as_of", "task").rows())
    assert lines[-1].startswith(f"  and {cells.height - MOST_RERUN_LINES} earlier or smaller")


def test_a_rerun_within_noise_is_told_with_its_rank_move(tmp_path: Path) -> None:
    """A re-run that is neither alert nor watch has its line: scores, rank, noise."""
    levels = {NIGHTS[0]: "none"}
    changes = _changes(levels).with_columns(
        pl.lit(0.5).alias("baseline_score"),
        pl.lit(0.48).alias("score"),
        pl.lit(False).alias("beyond_noise"),
        pl.lit(2, pl.Int64).alias("old_rank"),
        pl.lit(3, pl.Int64).alias("new_rank"),
        pl.lit(1, pl.Int64).alias("old_rank_low"),
        pl.lit(3, pl.Int64).alias("old_rank_high"),
        pl.lit(1, pl.Int64).alias("new_rank_low"),
        pl.lit(3, pl.Int64).alias("new_rank_high"),
    )
    lines = standing_lines(Outcome("nightly", Output.at(tmp_path), standing_changes=changes))
    assert lines[1:] == [
        f"  none {NIGHTS[0]} m overall rerun: 0.500 → 0.480 -0.020 [-0.030, -0.010] q=0.01; "
        "rank 2 → 3 (within noise; rank interval 1-3)"
    ]


def test_a_backfill_prints_the_latest_reruns_within_noise_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    """Re-runs within noise on every night of a backfill: each is a line up to the latest
    nights', the rest counted (never dropped without a word)."""
    changes = _changes(dict.fromkeys(NIGHTS, "none"))
    lines = standing_lines(Outcome("nightly", Output.at(tmp_path), standing_changes=changes))
    shown = [line for line in lines if " rerun:" in line]
    assert [line.split()[1] for line in shown] == NIGHTS[-MOST_NIGHT_LINES:]
    hidden = len(NIGHTS) - MOST_NIGHT_LINES
    assert lines[-1] == (
        f"  and {hidden} earlier or smaller re-run(s) more: table standing_changes, --json"
    )


def test_a_year_s_rescore_names_the_latest_standings_reranked(tmp_path: Path) -> None:
    """Ranks moved by others' rescored results on every night: one line for each of the
    latest nights, the earlier ones counted."""
    changes = _changes(dict.fromkeys(NIGHTS, "none"), "reranked").with_columns(
        pl.lit(1, pl.Int64).alias("old_rank"), pl.lit(2, pl.Int64).alias("new_rank")
    )
    lines = standing_lines(Outcome("rescore", Output.at(tmp_path), standing_changes=changes))
    named = [line for line in lines if line.startswith("  reranked in the standing as of")]
    assert [line.split()[6].rstrip(":") for line in named] == NIGHTS[-MOST_NIGHT_LINES:]
    assert all(" m rank 1 → 2 (its results unchanged; " in line for line in named)
    assert lines[1].startswith(f"  and {len(NIGHTS) - MOST_NIGHT_LINES} earlier standing(s)")
