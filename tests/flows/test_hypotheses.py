"""Planned hypotheses (``--hypotheses FILE``) end to end: declared once, tested on every
standing a run makes, night after night, and written through the standings' own path (one
commit for the table, the nights the run made replaced); a bad file refused before any work.

Expected numbers come from scipy on the standing found here by looking through every
night's input (each model's latest score on each task), never read back from cogscore."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from deltalake import DeltaTable
from scipy import stats
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.importers.scores import import_scores
from flows.options import run_options
from flows.present.sql import connect
from flows.records import RunContext
from flows.store.output import Output
from tests.multitest import adjusted
from tests.tables import read_table

N1, N2, N3 = "2026-04-01", "2026-04-02", "2026-04-03"
TASKS = {f"a{i}": "associative_learning" for i in range(8)} | {
    f"r{i}": "runtime_rl" for i in range(8)
}
MODELS = ("m1", "m2", "m3", "m4")
EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"

PLANNED = """
[[hypothesis]]
id = "W"
claim = "m1 outperforms m2 on associative learning"
test = "wilcoxon"
scope = "associative_learning"
a = "m1"
b = "m2"

[[hypothesis]]
id = "U"
claim = "m1 and m3 outperform m2 and m4"
test = "mann-whitney"
scope = "overall"
a = ["m1", "m3"]
b = ["m2", "m4"]
"""


def _cells(models: tuple[str, ...], seed: int, tasks: list[str] | None = None) -> dict:
    """Scores of ``models`` on ``tasks`` (default: all), tenths (ties and zero differences
    happen), m1 and m3 a little better."""
    rng = np.random.default_rng(seed)
    return {
        (m, t): min(1.0, rng.integers(0, 9) / 10 + (0.2 if m in ("m1", "m3") else 0.0))
        for m in models
        for t in tasks or TASKS
    }


NIGHTS = [
    (N1, _cells(("m1", "m2"), 1)),
    (N2, _cells(("m3", "m4"), 2) | _cells(("m1",), 3, ["a0", "a1", "r5"])),
    (N3, _cells(("m2",), 4, ["a2", "a3", "a4"])),
]


def _import(tmp: Path, dump: Path, night: str, cells: dict) -> None:
    rows = [
        {"dump_date": night, "model": m, "task": t, "category": TASKS[t], "score": s}
        for (m, t), s in sorted(cells.items())
    ]
    table = tmp / f"{night}.csv"
    pl.DataFrame(rows).write_csv(table)
    assert not import_scores(table, dump).rejected


def _context(planned: Path | None) -> RunContext:
    return RunContext(options=run_options(hypotheses=None if planned is None else str(planned)))


def _expected(as_of: str) -> dict[str, tuple[float, float] | None]:
    """Per hypothesis, scipy's (statistic, p-value) on the standing as of ``as_of`` (None:
    a model with no result)."""
    standing: dict[tuple[str, str], float] = {}
    for night, cells in NIGHTS:
        if night <= as_of:
            standing |= cells
    have = {m for m, _ in standing}
    found: dict[str, tuple[float, float] | None] = {"W": None, "U": None}
    assoc = [t for t, c in TASKS.items() if c == "associative_learning"]
    if {"m1", "m2"} <= have:
        x = [standing[("m1", t)] for t in assoc]
        y = [standing[("m2", t)] for t in assoc]
        w = stats.wilcoxon(x, y, zero_method="wilcox", alternative="two-sided")
        found["W"] = (w.statistic, w.pvalue)
    if set(MODELS) <= have:
        # Each sum correctly rounded: the m2 and m4 of N2 add up the same (a tie whatever
        # order a sum meets their scores in).
        scored = {m: [s for (n, _), s in standing.items() if n == m] for m in MODELS}
        mean = {m: math.fsum(s) / len(s) for m, s in scored.items()}
        u = stats.mannwhitneyu([mean["m1"], mean["m3"]], [mean["m2"], mean["m4"]])
        found["U"] = (u.statistic, u.pvalue)
    return found


def test_each_standing_a_nightly_makes_tests_the_planned_hypotheses(tmp_path: Path) -> None:
    planned = tmp_path / "planned.toml"
    planned.write_text(PLANNED)
    dump, out = tmp_path / "dump", tmp_path / "out"
    for night, cells in NIGHTS:
        _import(tmp_path, dump, night, cells)
        runs.nightly(dump, out, context=_context(planned))
        last = DeltaTable(str(out / "hypotheses")).history(1)[0]
        assert str(last["nights"]).split(",") == [night]  # this standing's, one commit
    table = read_table(out, "hypotheses")
    assert sorted(table["as_of"].unique()) == [N1, N2, N3]
    for night, _ in NIGHTS:
        rows = {r["id"]: r for r in table.filter(as_of=night).iter_rows(named=True)}
        expected = _expected(night)
        for hid, found in expected.items():
            row = rows[hid]
            if found is None:
                assert row["verdict"] == "not estimable" and "no result of" in row["reason"]
                assert row["p_value"] is None
            else:
                assert (row["statistic"], row["p_value"]) == found, (night, hid)
        tested = [hid for hid in ("U", "W") if expected[hid] is not None]
        p = np.array([rows[hid]["p_value"] for hid in tested])
        assert [rows[hid]["p_adjusted"] for hid in tested] == adjusted(p, "fdr_bh").tolist()
    assert table.filter(as_of=N1, id="U")["reason"].item() == (
        "no result of 'm3', 'm4' in overall in this standing"
    )
    view = connect(Output.at(out)).sql(
        "SELECT as_of, id, verdict, p_adjusted FROM planned_hypotheses"
    )
    latest = table.filter(as_of=N3).select("as_of", "id", "verdict", "p_adjusted")
    assert view.fetchall() == latest.rows()  # the latest standing's, by id


def test_a_standing_made_without_the_file_has_none_and_the_earlier_keep_theirs(
    tmp_path: Path,
) -> None:
    """Each standing's hypotheses are those of the run that made it."""
    planned = tmp_path / "planned.toml"
    planned.write_text(PLANNED)
    dump, out = tmp_path / "dump", tmp_path / "out"
    _import(tmp_path, dump, *NIGHTS[0])
    runs.nightly(dump, out, context=_context(planned))
    _import(tmp_path, dump, *NIGHTS[1])
    runs.nightly(dump, out, context=_context(None))
    table = read_table(out, "hypotheses")
    assert table["as_of"].to_list() == [N1, N1] and table["id"].to_list() == ["U", "W"]


def test_the_command_line_and_its_variable_take_the_file(tmp_path: Path) -> None:
    planned = tmp_path / "planned.toml"
    names = {
        '"m1"': '"oracle-large"',
        '"m2"': '"random-small"',
        '"associative_learning"': '"overall"',
    }
    text = PLANNED
    for name, example in names.items():
        text = text.replace(name, example)
    planned.write_text(text)
    result = CliRunner().invoke(
        app,
        ["score", str(EXAMPLE_DUMP), "--out", str(tmp_path / "out"), "--engine", "local"],
        env={"COGSCORE_HYPOTHESES": str(planned)},
    )
    assert result.exit_code == 0, result.output
    table = read_table(tmp_path / "out", "hypotheses")
    assert table.height == 4 and table["as_of"].n_unique() == 2  # the dump's two nights
    wilcoxon = table.filter(id="W", as_of=table["as_of"].max()).row(0, named=True)
    assert wilcoxon["p_value"] is not None and wilcoxon["n"] >= 3, wilcoxon


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (PLANNED.replace('"overall"', '"everything"'), "hypothesis U: key 'scope': 'everything'"),
        (PLANNED.replace('test = "wilcoxon"', 'test = "t"'), "hypothesis W: key 'test': 't'"),
        (None, "cannot be read"),
    ],
)
def test_a_bad_file_is_refused_before_any_work(tmp_path: Path, text: str | None, says: str) -> None:
    planned = tmp_path / "planned.toml"
    if text is not None:
        planned.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["score", str(EXAMPLE_DUMP), "--out", str(out), "--hypotheses", str(planned)],
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert f"--hypotheses: {planned}: " in lines[0] and says in lines[0], lines[0]
    assert not out.exists()  # nothing created
