"""Contract 1.2 end to end: the harness's reported score kept beside cogscore's, and every
episode where they differ (and every verdict that differs) counted and listed in
``episode_scores``, the runs table, the run record, ``cogscore status`` and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.overview import status
from flows.present.report import reported_section
from flows.present.status import status_lines
from flows.store.output import Output
from schemas.contract import REPORTED_SCORE, VERDICT, Category
from tests.dumps import answer, episode, episode_end, item, write_dump
from tests.tables import read_table

NIGHT = "2026-12-01"
FILE = f"dump_date={NIGHT}/part-0.parquet"


def cli(*args: str | Path, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


def associative(episode_id: str, answers: list[str], **end: Any) -> list[dict[str, Any]]:
    """Two items, yes and no; ``answers`` for them (with the harness's verdicts: right)."""
    body = [item("q1", "yes"), item("q2", "no")]
    body += [
        answer(f"q{i}", text, **{VERDICT: text == want})
        for i, (text, want) in enumerate(zip(answers, ["yes", "no"], strict=True), 1)
    ]
    return episode(
        Category.ASSOCIATIVE_LEARNING,
        turns=[*body, episode_end(**end)],
        episode_id=episode_id,
        file=FILE,
        model="m",
        task="t",
    )


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("reported")
    rows = [
        *associative("same", ["yes", "no"], **{REPORTED_SCORE: 1.0}),
        *associative("differs", ["yes", "yes"], **{REPORTED_SCORE: 1.0}),  # scores 0.5
        *associative("unreported", ["yes", "no"]),
    ]
    # The harness judged q2's "yes" right (a bespoke grader): a verdict that differs.
    for r in rows:
        if r.get("episode_id") == "differs" and r.get("item_id") == "q2" and "content" in r:
            r[VERDICT] = True
    write_dump(rows, root / "dump")
    out = root / "out"
    printed = cli("score", root / "dump", "--out", out, "--engine", "local", "--json")
    return out, json.loads(printed.strip().splitlines()[-1])


def test_episode_scores_keep_the_reported_score_and_flag_the_difference(
    scored: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = scored
    table = read_table(out, "episode_scores").sort("episode_id")
    got = {r["episode_id"]: r for r in table.iter_rows(named=True)}
    assert got["same"]["reported_score"] == got["same"]["score"] == 1.0
    assert got["same"]["score_mismatch"] is False
    assert (got["differs"]["score"], got["differs"]["score_mismatch"]) == (0.5, True)
    assert got["unreported"]["reported_score"] is None
    assert got["unreported"]["score_mismatch"] is None
    assert [got[e]["verdict_mismatches"] for e in ("same", "differs", "unreported")] == [0, 1, 0]


def test_the_run_record_and_the_runs_table_count_and_list_them(
    scored: tuple[Path, dict[str, Any]],
) -> None:
    out, record = scored
    assert record["counts"]["episodes_score_mismatch"] == 1
    assert record["counts"]["episodes_verdict_mismatch"] == 1
    assert [m["episode_id"] for m in record["score_mismatches"]] == ["differs"]
    assert record["score_mismatches"][0]["reported_score"] == 1.0
    runs = Output.at(out).runs()
    assert runs["episodes_score_mismatch"].to_list() == [1]
    assert runs["episodes_verdict_mismatch"].to_list() == [1]


def test_status_and_the_report_show_them(scored: tuple[Path, dict[str, Any]]) -> None:
    out, _ = scored
    report = status(Output.at(out))
    assert report["mismatches"][NIGHT] == {
        "episodes_score_mismatch": 1,
        "episodes_verdict_mismatch": 1,
    }
    assert any(
        "1 episode(s) scored other than the harness" in line for line in status_lines(report)
    )
    section = reported_section(read_table(out, "episode_scores"))
    assert section is not None
    assert "1 of 2 episode(s) with a reported score" in section.text
    assert "differs" in section.after and "unreported" not in section.after


def test_a_night_without_reported_scores_or_verdicts_has_no_section() -> None:
    frame = pl.DataFrame(
        {"score_mismatch": [None], "reported_score": [None], "verdict_mismatches": [None]},
        schema={
            "score_mismatch": pl.Boolean,
            "reported_score": pl.Float64,
            "verdict_mismatches": pl.Int64,
        },
    )
    assert reported_section(frame) is None
