"""``cogscore compare`` as an operator reads it (issue 47): each pair once, model a placed
before model b on the leaderboard, and at 100 columns every model's name whole on a line
(the numbers keep their columns), never folded into what the numbers leave."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.importers.scores import import_scores
from flows.present.status import comparison_lines
from tests.tables import read_table

# Their scores put them in this order (best first); not the names' order.
MODELS = ("Qwen 3 Next 80B Thinking", "Gemini 3.1 Flash-Lite Preview", "GLM-5", "Claude Haiku 4.5")
NIGHT = "2026-04-16"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    rows = [
        (NIGHT, model, f"t{t}", "concept_formation", min(1.0, (len(MODELS) - i) / 4 - t / 40))
        for i, model in enumerate(MODELS)
        for t in range(8)
    ]
    table = root / "scores.csv"
    pl.DataFrame(
        rows, schema=["dump_date", "model", "task", "category", "score"], orient="row"
    ).write_csv(table)
    import_scores(table, root / "dump")
    runs.score(root / "dump", root / "out")
    return root / "out"


def test_each_pair_is_printed_once_model_a_placed_first(out: Path) -> None:
    result = CliRunner().invoke(app, ["compare", str(out)])  # a pipe: a row a line
    assert result.exit_code == 0, result.output
    standing = read_table(out, "standings").sort("rank")
    assert standing["model"].to_list() == list(MODELS)
    # a row ends with its pairing, then its note's mark where it has one
    rows = [line for line in result.output.splitlines() if "full" in line.split()[-2:]]
    pairs = [(a, b) for line in rows for a in MODELS for b in MODELS if line.startswith(f"{a} ")
             and f" {b} " in line[len(a):]]  # fmt: skip
    expected = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]]
    assert pairs == expected  # once each, in the leaderboard's order
    both = CliRunner().invoke(app, ["compare", str(out), "--json"])
    assert len(json.loads(both.output)) == 2 * len(expected)  # the table's rows, both orders


def test_at_100_columns_every_name_is_whole_on_a_line(out: Path) -> None:
    table = read_table(out, "standing_comparisons").filter(pl.col("scope") == "overall")
    lines = comparison_lines(table, 0.95, MODELS, width=100)
    assert max(map(len, lines)) <= 100
    for a, b in ((a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]):
        assert f"a: {a}   b: {b}" in lines  # the pair, whole, then its numbers
    diffs = table.filter(pl.col("model_a") == MODELS[0], pl.col("model_b") == MODELS[1])
    shown = lines[lines.index(f"a: {MODELS[0]}   b: {MODELS[1]}") + 1]
    assert shown.split()[0] == f"{diffs['diff'][0]:+.3f}"
    # Wide enough, a row a line as before.
    wide = comparison_lines(table, 0.95, MODELS, width=200)
    rows = wide[2 : 2 + 6]  # the header and its rule, a row a pair, then the notes
    assert all(any(row.startswith(f"{a}  ") for a in MODELS) for row in rows)
    assert wide[2].startswith(f"{MODELS[0]}  ") and not any(w.startswith("a: ") for w in wide)
    assert max(map(len, wide)) <= 200
