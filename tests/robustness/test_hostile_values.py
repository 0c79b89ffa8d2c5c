"""Hostile names and very large values: nothing written outside OUT, names kept exactly,
bounded work and a clear outcome; an output an earlier cogscore left unreadable (Infinity in
a Delta log) repaired by one command, or by the next nightly."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.store.dumps import InputError
from schemas.contract import Role
from schemas.exits import ExitCode
from tests.dumps import answer, episode, item, message, write_dump
from tests.tables import (
    assert_finite_everywhere,
    break_latest_commit,
    last_run,
    read_table,
    read_tables,
)

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


# --- an output whose Delta log holds Infinity (issue 46) ---------------------------------------


def _priced_night(dump: Path, night: str) -> None:
    """A night of two models' episodes, each reply with its usage (contract 1.3)."""
    rows = [
        r
        for i, model in enumerate(("m1", "m2", "m1", "m2"))
        for r in episode(
            "associative_learning",
            episode_id=f"{night}-e{i}",
            model=model,
            file=f"dump_date={night}/p.parquet",
            turns=[
                message(Role.ASSISTANT, "Thinking.", input_tokens=900, cost_usd=0.01 * (i + 1)),
                item("q", "yes"),
                answer("q", "yes" if i else "no"),
            ],
        )
    ]
    write_dump(rows, dump)
    (dump / f"dump_date={night}" / "_SUCCESS").touch()


def _wedged(tmp_path: Path) -> tuple[Path, Path, dict[str, pl.DataFrame]]:
    """An output scored by ``nightly`` whose episode_scores log then holds ``Infinity`` in
    its statistics, as cogscore wrote them before contract 1.4 (a reply costing 1e308);
    its dump and its tables before."""
    dump, out = tmp_path / "dump", tmp_path / "out"
    _priced_night(dump, "2026-12-01")
    done = CliRunner().invoke(app, ["nightly", str(dump), "--out", str(out)])
    assert done.exit_code == 0, done.output
    before = read_tables(out)
    break_latest_commit(out, "episode_scores", "cost_usd")
    return dump, out, before


def test_an_output_whose_log_holds_infinity_says_the_one_command_that_repairs_it(
    tmp_path: Path,
) -> None:
    """Before: every command on such an output failed with exit 4 ("a service does not
    answer", which a scheduler retries for ever) and delta-rs's parse error. Now each says in
    one line (exit 2) which commit and the one command; ``cogscore repair OUT`` rewrites the
    statistics and every command works again, the tables as they were."""
    _, out, before = _wedged(tmp_path)
    runner = CliRunner()
    for args in (
        ["report", str(out), "--html", str(tmp_path / "r.html")],
        ["sql", str(out), "SELECT count(*) FROM episode_scores"],
        ["vacuum", str(out)],
    ):
        refused = runner.invoke(app, args)
        assert refused.exit_code == ExitCode.USAGE, (args, refused.output)
        (line,) = refused.output.strip().splitlines()
        assert re.fullmatch(
            rf"error: cannot (open|read version 0 of) table {re.escape(str(out))}/episode_scores: "
            rf"_delta_log/0+\.json holds statistics that are not JSON \(Infinity, written by "
            rf"cogscore before contract 1\.4\); run `cogscore repair {re.escape(str(out))}` to "
            "rewrite them",
            line,
        ), line
    repaired = runner.invoke(app, ["repair", str(out)])
    assert repaired.exit_code == 0, repaired.output
    assert repaired.output.splitlines()[0].startswith("rewrote episode_scores/_delta_log/")
    assert_finite_everywhere(out)
    for name, table in read_tables(out).items():
        assert table.equals(before[name]), name
    for args in (["status", str(out)], ["report", str(out), "--html", str(tmp_path / "r.html")]):
        assert runner.invoke(app, args).exit_code == 0, args
    again = runner.invoke(app, ["repair", str(out)])
    assert again.output.strip() == f"repair of {out}: nothing to repair"


def test_the_next_nightly_repairs_a_log_holding_infinity_itself(tmp_path: Path) -> None:
    """The scheduled job needs no person: the next nightly, holding the lease, rewrites the
    statistics before it writes, scores the new night and leaves every log JSON."""
    dump, out, _ = _wedged(tmp_path)
    _priced_night(dump, "2026-12-02")
    result = CliRunner().invoke(app, ["nightly", str(dump), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "rewrote the statistics that were not JSON (Infinity, written by cogscore before " in (
        result.output
    )
    assert_finite_everywhere(out)
    standings = read_table(out, "standings")
    assert sorted(set(standings["as_of"])) == ["2026-12-01", "2026-12-02"]
