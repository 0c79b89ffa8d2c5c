"""The intervals' level (``--level``): a run option that reaches every interval the run
writes and every label that prints one, in the terminal and in the report; a night's label
is the level of the run that scored it, read back from the runs table."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from plotly.offline import get_plotlyjs
from scipy import stats
from typer.testing import CliRunner

from flows.cli import app
from flows.store.output import Output
from schemas.comparisons import DEFAULT_LEVEL
from simulator.dump import simulate_dump
from simulator.models import DEFAULT_MODELS, Model, Skill
from tests.tables import read_table, run_rows
from transforms.compare import score_intervals

LEVEL = 0.90  # any level but the default: each label must say it, none the default
NIGHTS = ("2026-11-01", "2026-11-02")


def _percent(level: float) -> str:
    return f"{level:.0%}"


def cogscore(*args: str | Path) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nights, learner-m playing as the random model on the second (a regression alert
    to print)."""
    root = tmp_path_factory.mktemp("level") / "dump"
    worse = [Model(m.name, Skill.RANDOM) if m.name == "learner-m" else m for m in DEFAULT_MODELS]
    for seed, (night, models) in enumerate(zip(NIGHTS, (DEFAULT_MODELS, worse), strict=True)):
        simulate_dump(root, date=night, episodes=720, seed=seed, models=models)
    return root


@pytest.fixture(scope="module")
def scored(dump: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The dump scored at ``LEVEL``, and what the run printed."""
    out = tmp_path_factory.mktemp("level") / "out"
    printed = cogscore("nightly", dump, "--out", out, "--engine", "local", "--level", LEVEL)
    return out, printed


def _labels_say_the_level(text: str) -> None:
    assert _percent(LEVEL) in text
    assert _percent(DEFAULT_LEVEL) not in text, [
        line for line in text.splitlines() if _percent(DEFAULT_LEVEL) in line
    ]


def test_the_run_prints_its_level_on_every_interval(scored: tuple[Path, str]) -> None:
    _, printed = scored
    assert f"{_percent(LEVEL)} interval" in printed  # the leaderboard's column
    assert f"change from the baseline, {_percent(LEVEL)} interval" in printed  # regressions
    _labels_say_the_level(printed)


def test_compare_prints_the_level_of_the_run_that_scored_the_night(
    scored: tuple[Path, str],
) -> None:
    out, _ = scored
    _labels_say_the_level(cogscore("compare", out))


def test_the_report_labels_every_interval_with_the_nights_level(
    scored: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = scored
    page = tmp_path / "report.html"
    cogscore("report", out, "--html", page)
    # plotly.js itself (inline) is not the report's text.
    text = page.read_text().replace(get_plotlyjs(), "")
    _labels_say_the_level(text)
    # the regressions table, the leaderboard's three intervals, and the charts' axes
    assert f"change [{_percent(LEVEL)}]" in text
    assert len(re.findall(rf"{_percent(LEVEL)} interval", text)) >= 4


def test_the_tables_hold_intervals_at_the_level_and_the_run_records_it(
    scored: tuple[Path, str],
) -> None:
    out, _ = scored
    recorded = {json.loads(d)["bootstrap"]["level"] for d in run_rows(out)["details"]}
    assert recorded == {LEVEL}
    episodes = read_table(out, "episode_scores")
    key = ["dump_date", "model"]
    overall = pl.col("scope") == "overall"
    expected = score_intervals(episodes, level=LEVEL).filter(overall)
    expected = expected.select(*key, "ci_low", "ci_high")
    written = read_table(out, "model_scores").select(*key, "ci_low", "ci_high")
    joined = written.join(expected, on=key, suffix="_expected")
    assert joined.height == written.height > 0
    for bound in ("ci_low", "ci_high"):
        assert (joined[bound] - joined[f"{bound}_expected"]).abs().max() < 1e-12  # type: ignore[operator]
    # and not at the default level (the intervals are narrower than the default's)
    default = score_intervals(episodes).filter(overall).select(*key, "ci_low", "ci_high")
    wider = written.join(default, on=key, suffix="_default")
    assert (
        (wider["ci_high"] - wider["ci_low"]) < (wider["ci_high_default"] - wider["ci_low_default"])
    ).all()


def test_a_level_outside_zero_to_one_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["score", str(tmp_path), "--out", str(tmp_path), "--level", "1"]
    )
    assert result.exit_code == 2 and "--level" in result.output


def _interval_quantiles(table: pl.DataFrame) -> list[tuple[float, float]]:
    """Each interval's half-width over its standard error, and the quantile it should be at
    ``LEVEL`` (Student's t with the row's degrees of freedom, the normal where they are null)."""
    rows = table.filter(pl.col("se") > 0).drop_nulls(["ci_low", "ci_high"])
    assert rows.height > 0
    tail = 0.5 + LEVEL / 2
    return [
        (
            (r["ci_high"] - r["ci_low"]) / 2 / r["se"],
            stats.norm.ppf(tail) if r["df"] is None else stats.t.ppf(tail, r["df"]),
        )
        for r in rows.iter_rows(named=True)
    ]


def test_a_rescore_at_another_level_leaves_the_nights_it_did_not_rescore_at_theirs(
    dump: Path, scored: tuple[Path, str], tmp_path: Path
) -> None:
    """Rescoring the first night at 0.80 makes the second night's regressions again (their
    baseline moved): at the second night's own level, which its labels keep saying."""
    out = tmp_path / "out"
    shutil.copytree(scored[0], out)
    other = 0.80
    first, second = NIGHTS
    printed = cogscore(
        "rescore", dump, "--out", out, "--formula", "procedural_learning=v1",
        "--since", first, "--until", first, "--engine", "local", "--level", other,
    )  # fmt: skip
    assert f"regressions made again against the nights scored before them: {second}" in printed
    nights = Output.at(out).state().nights
    assert (nights[first].level, nights[second].level) == (other, LEVEL)
    first_night = cogscore("compare", out, "--date", first)
    assert _percent(other) in first_night and _percent(LEVEL) not in first_night
    _labels_say_the_level(cogscore("compare", out, "--date", second))
    refreshed = read_table(out, "regressions").filter(pl.col("dump_date") == second)
    for ratio, quantile in _interval_quantiles(refreshed):
        assert ratio == pytest.approx(quantile, rel=1e-9)
