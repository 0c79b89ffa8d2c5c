"""Hostile names and very large values: nothing written outside OUT, names kept exactly,
bounded work and a clear outcome."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.store.dumps import InputError
from tests.dumps import answer, episode, item, write_dump
from tests.tables import last_run, read_table

HOSTILE = [
    "../../escape",
    "a/b",
    "/etc/passwd",
    "nul\x00byte",
    "bell\x07\x1b[2J",
    "x" * 5000,
    "naïve-模型-🙂",
    "..",
    ".",
    "",
    "%2e%2e",
    "C:\\windows",
]


def _assoc(name: str, i: int, file: str) -> list[dict]:
    return episode(
        "associative_learning",
        episode_id=f"e{i}",
        model=name or "m",
        task=name or "t",
        run_id=name or "r",
        file=file,
        turns=[item("q", "yes"), answer("q", "yes")],
    )


def _files_outside(root: Path, out: Path) -> list[Path]:
    return [p for p in root.rglob("*") if not p.resolve().is_relative_to(out.resolve())]


def test_hostile_names_stay_inside_out_and_round_trip(tmp_path: Path) -> None:
    rows = [
        r for i, n in enumerate(HOSTILE) for r in _assoc(n, i, "dump_date=2026-12-01/p.parquet")
    ]
    write_dump(rows, tmp_path / "dump")
    out = tmp_path / "sandbox" / "out"
    runs.score(tmp_path / "dump", out)
    assert not _files_outside(tmp_path / "sandbox", out)
    assert sorted(tmp_path.iterdir()) == [tmp_path / "dump", tmp_path / "sandbox"]
    scores = read_table(out, "episode_scores")
    assert sorted(scores["model"]) == sorted(n or "m" for n in HOSTILE)


@pytest.mark.parametrize("night", ["..", "a b", "x" * 200, "2026-12-01%2F..%2F..", "ß\u200b"])
def test_hostile_partition_values_are_refused_before_any_work(night: str, tmp_path: Path) -> None:
    """Only dates become partition folders (delta-rs writes dump_date=YYYY-MM-DD and the
    category, an enum); anything else in a dump_date folder name stops the run."""
    dump = tmp_path / "dump"
    write_dump(_assoc("m", 0, "dump_date=2026-12-01/p.parquet"), dump)
    (dump / "dump_date=2026-12-01").rename(dump / f"dump_date={night}")
    with pytest.raises(InputError, match="is not a date YYYY-MM-DD"):
        runs.score(dump, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_terminal_output_escapes_control_characters(tmp_path: Path) -> None:
    write_dump(_assoc("evil\x1b[2J\nmodel", 0, "dump_date=2026-12-01/p.parquet"), tmp_path / "d")
    result = CliRunner().invoke(app, ["score", str(tmp_path / "d"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0
    assert "\x1b" not in result.output and "evil\\x1b[2J\\nmodel" in result.output


def _table(out: Path, name: str) -> pl.DataFrame:
    return read_table(out, name)


def test_a_50_mb_answer_is_graded(tmp_path: Path) -> None:
    huge = "filler " * (50 * 1024 * 1024 // 7) + "the answer is YES"
    rows = episode(
        "associative_learning",
        episode_id="big",
        file="p.parquet",
        turns=[item("q", "yes"), answer("q", huge)],
    )
    write_dump(rows, tmp_path / "dump")
    runs.score(tmp_path / "dump", tmp_path / "out")
    assert _table(tmp_path / "out", "episode_scores")["score"].to_list() == [1.0]


def test_an_episode_with_a_million_items_is_scored(tmp_path: Path) -> None:
    n = 1_000_000
    frame = pl.DataFrame(
        {
            "run_id": "r",
            "episode_id": "wide",
            "model": "m",
            "task": "t",
            "category": "associative_learning",
            "turn": pl.int_range(0, 2 * n + 1, eager=True),
            "role": pl.Series(["environment"] + ["environment", "assistant"] * n),
            "kind": pl.Series(["episode_start"] + ["item", "answer"] * n),
            "item_id": pl.Series([None] + [f"q{i // 2}" for i in range(2 * n)]),
            "content": pl.Series([None] + [None, "yes"] * (n // 2) + [None, "no"] * (n // 2)),
            "expected": pl.Series([None] + ["yes", None] * n),
            "params": pl.Series(["{}"] + [None] * (2 * n)),
        }
    )
    (tmp_path / "dump").mkdir()
    frame.write_parquet(tmp_path / "dump" / "wide.parquet")
    runs.score(tmp_path / "dump", tmp_path / "out")
    assert _table(tmp_path / "out", "episode_scores").select("score", "n_items").row(0) == (0.5, n)


def test_params_nested_a_thousand_deep_is_rejected_with_a_reason(tmp_path: Path) -> None:
    deep = '{"a": ' * 1000 + "1" + "}" * 1000
    rows = episode(
        "associative_learning",
        episode_id="deep",
        file="p.parquet",
        params=deep,
        turns=[item("q", "yes"), answer("q", "yes")],
    )
    write_dump(rows, tmp_path / "dump")
    runs.score(tmp_path / "dump", tmp_path / "out")
    rejects = _table(tmp_path / "out", "rejects")
    assert rejects["rules"].to_list() == [["params_not_object"]]
    assert "`params` is a JSON value nested too deep to read" in rejects["reasons"][0][0]
    manifest = last_run(tmp_path / "out")
    assert manifest["counts"]["episodes_rejected"] == 1
