"""Simulated dumps through the real scorer: valid, rejected exactly where meant, reproducible,
scalable, and with the models' skills in the right order."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.score import ScoreResult, score_dump
from schemas.contract import Category, Col, Kind
from simulator import (
    DEFAULT_MODELS,
    FAULTS,
    TASKS,
    Simulation,
    read_expected,
    simulate,
    simulate_dump,
)

DATE = "2026-12-01"


def _rows(root: Path) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted(root.rglob("*.parquet"))])


def _rejected(result: ScoreResult) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    return {
        r[Col.EPISODE_ID]: (r["file"], r["status"], tuple(r["rules"]))
        for r in result.rejects.iter_rows(named=True)
    }


def _expected(sim: Simulation) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    return {k: (e.file, e.status, e.rules) for k, e in sim.expected.items()}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Simulation, ScoreResult]:
    out = tmp_path_factory.mktemp("clean")
    sim = simulate_dump(out, date=DATE, episodes=640, seed=11, rejects=0, episodes_per_file=300)
    return sim, score_dump(out)


def test_a_clean_dump_is_scored_whole(clean: tuple[Simulation, ScoreResult]) -> None:
    sim, result = clean
    assert result.rejects.is_empty() and not sim.expected
    assert result.counts["episodes_scored"] == 640
    assert result.counts["rows_read"] == result.counts["rows_scored"] == sim.rows
    assert result.counts["warnings_feedback_out_of_range"] == 0
    assert [p.relative_to(sim.root).as_posix() for p in sim.paths] == [
        f"dump_date={DATE}/part-0000{i}.parquet" for i in range(3)
    ]
    scores = result.scores
    assert set(scores["category"]) == {c.value for c in Category}
    assert set(scores["task"]) == {t.name for t in TASKS}
    assert set(scores["model"]) == {m.name for m in DEFAULT_MODELS}
    assert set(scores["dump_date"]) == {DATE}
    # every (model, task) pair plays equally often
    assert set(scores.group_by("model", "task").len()["len"]) == {640 // 32}


def test_transcripts_are_bulky(clean: tuple[Simulation, ScoreResult]) -> None:
    sim, _ = clean
    rows = _rows(sim.root)
    per_episode = rows.height / 640
    assert 24 <= per_episode <= 30
    text = rows.filter(pl.col(Col.KIND) == Kind.MESSAGE)[Col.CONTENT].str.len_bytes().sum()
    assert 3_000 <= text / 640 <= 8_000  # a few kB of prompts and reasoning per episode
    assert rows[Col.TS].dtype == pl.Datetime("us", "UTC")
    assert rows[Col.TURN].dtype == pl.Int32


def test_skills_order_the_scores(clean: tuple[Simulation, ScoreResult]) -> None:
    _, result = clean
    means = result.scores.group_by("model").agg(pl.col("score").mean())
    score = dict(zip(means["model"], means["score"], strict=True))
    order = [m.name for m in DEFAULT_MODELS]  # near-oracle, learner, greedy, random
    assert [score[m] for m in order] == sorted(score.values(), reverse=True)
    assert score[order[0]] > score[order[1]] + 0.1 > score[order[2]] + 0.2 > score[order[3]] + 0.3


def test_the_learner_improves_over_practice_rounds(clean: tuple[Simulation, ScoreResult]) -> None:
    sim, result = clean
    rounds = (
        _rows(sim.root)
        .filter(pl.col(Col.KIND) == Kind.ROUND_END)
        .group_by(Col.MODEL, Col.ROUND)
        .agg(pl.col(Col.VALUE).mean())
        .sort(Col.ROUND)
    )
    learner = rounds.filter(pl.col(Col.MODEL) == "learner-m")[Col.VALUE].to_list()
    assert len(learner) == 5
    assert all(a < b for a, b in itertools.pairwise(learner))
    assert learner[-1] - learner[0] > 0.3
    oracle = rounds.filter(pl.col(Col.MODEL) == "near-oracle-xl")[Col.VALUE].to_list()
    assert min(oracle) > 0.85  # good from the first round: no curve to climb
    trajectory = (
        result.scores.filter(pl.col("category") == Category.PROCEDURAL_LEARNING)
        .group_by("model")
        .agg(pl.col("trajectory").mean())
    )
    t = dict(zip(trajectory["model"], trajectory["trajectory"], strict=True))
    assert t["learner-m"] > 0.65 > max(t["near-oracle-xl"], t["greedy-s"], t["random-xs"])


def test_rejects_are_exactly_the_spoiled_episodes(tmp_path: Path) -> None:
    sim = simulate_dump(tmp_path, date=DATE, episodes=600, seed=5, rejects=0.04)
    assert 10 <= len(sim.expected) <= 50
    assert {e.status for e in sim.expected.values()} == {"rejected", "harness_error"}
    assert read_expected(tmp_path) == sim.expected  # recorded beside the files
    result = score_dump(tmp_path)
    assert _rejected(result) == _expected(sim)
    assert result.counts["episodes_scored"] == 600 - len(sim.expected)


def test_every_fault_breaks_exactly_its_rule(tmp_path: Path) -> None:
    sim = simulate_dump(
        tmp_path, date=None, episodes=320, seed=2, rejects=0.8, harness_errors=0.2, bulk=False
    )
    assert len(sim.expected) == 320  # every episode spoiled or crashed
    assert {e.fault for e in sim.expected.values()} == {f.name for f in FAULTS} | {"crash"}
    result = score_dump(tmp_path)
    assert _rejected(result) == _expected(sim)
    assert result.scores.is_empty()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.*")}

    kwargs = {"date": DATE, "episodes": 300, "episodes_per_file": 120, "rejects": 0.05}
    simulate(tmp_path / "a", seed=3, **kwargs)  # type: ignore[arg-type]
    simulate(tmp_path / "b", seed=3, **kwargs)  # type: ignore[arg-type]
    simulate(tmp_path / "c", seed=4, **kwargs)  # type: ignore[arg-type]
    a, b, c = files(tmp_path / "a"), files(tmp_path / "b"), files(tmp_path / "c")
    assert len(a) == 4 and a == b
    assert a.keys() == c.keys()
    assert all(a[k] != c[k] for k in a)
    # a rerun into the same folder replaces the files
    simulate(tmp_path / "a", seed=3, **{**kwargs, "episodes_per_file": 300})  # type: ignore[arg-type]
    assert sorted(files(tmp_path / "a")) == [
        f"dump_date={DATE}/_simulation.json",
        f"dump_date={DATE}/part-00000.parquet",
    ]


def test_tiling_scales_to_any_count_with_unique_ids(tmp_path: Path) -> None:
    sim = simulate_dump(
        tmp_path, episodes=2_000, seed=1, pool_size=3, episodes_per_file=700, rejects=0.01
    )
    assert sim.pool_episodes == 3 * len(DEFAULT_MODELS) * len(TASKS)
    assert [p.name for p in sim.paths] == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert all(p.parent == tmp_path for p in sim.paths)  # no date: no dump_date folder
    rows = _rows(tmp_path)
    assert rows.height == sim.rows
    ids = rows[Col.EPISODE_ID].unique()
    assert ids.len() == 2_000
    per_file = rows.group_by(Col.EPISODE_ID).agg(pl.col(Col.RUN_ID).n_unique())
    assert per_file[Col.RUN_ID].max() == 1
    # episode g and g + 3 * pairs are copies of one pool entry: same rows, new identity
    pairs = len(DEFAULT_MODELS) * len(TASKS)
    copies = next(
        ids
        for g in range(pairs)
        if not {ids := (f"sim-s1-{g:09d}", f"sim-s1-{g + 3 * pairs:09d}")} & sim.expected.keys()
    )
    ep = (
        rows.filter(pl.col(Col.EPISODE_ID).is_in(copies))
        .sort(Col.EPISODE_ID, Col.TURN)
        .partition_by(Col.EPISODE_ID)
    )
    same = [Col.MODEL, Col.TASK, Col.TURN, Col.KIND, Col.CONTENT, Col.EXPECTED, Col.VALUE]
    assert ep[0].select(same).equals(ep[1].select(same))
    assert ep[0][Col.TS][0] < ep[1][Col.TS][0]
    result = score_dump(tmp_path)
    assert result.counts["episodes_scored"] + len(sim.expected) == 2_000
    assert _rejected(result) == _expected(sim)


def test_cli_simulate(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["simulate", "--out", str(tmp_path), "--no-date", "--episodes", "40", "--clean"]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 1 file, 40 episodes" in result.output and "clean" in result.output
    manifest = json.loads((tmp_path / "_simulation.json").read_text())
    assert manifest["episodes"] == 40 and manifest["expected"] == {}
    assert (tmp_path / "part-00000.parquet").exists()

    result = runner.invoke(app, ["simulate", "--out", str(tmp_path), "--episodes", "5"])
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("dump_date=*/part-00000.parquet"))) == 1  # today, UTC

    result = runner.invoke(
        app, ["simulate", "--out", str(tmp_path), "--date", "2026-02-30", "--episodes", "5"]
    )
    assert result.exit_code == 2 and "is not a date" in result.output
