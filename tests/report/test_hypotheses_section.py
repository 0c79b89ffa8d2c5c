"""The report's planned hypotheses: a section beside the all-pairs comparisons, each
hypothesis with its test and verdict as the benchmark stands, the all-pairs family's Holm
verdict of the same pair beside it; no section where none was declared."""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl
import pytest

from flows import runs
from flows.importers.scores import import_scores
from flows.options import run_options
from flows.present.report import read_warehouse
from flows.present.report.page import build_sections
from flows.records import RunContext
from schemas.views import View
from tests.tables import read_table

NIGHT = "2026-04-16"
CLAIM = "m1 <b>beats</b> m2 & more"
PLANNED = f"""
[[hypothesis]]
id = "P1"
claim = "{CLAIM}"
test = "wilcoxon"
scope = "concept_formation"
a = "m1"
b = "m2"

[[hypothesis]]
id = "P2"
claim = "m1 and m3 beat m2 and a model that never ran"
test = "mann-whitney"
scope = "overall"
a = ["m1", "m3"]
b = ["m2", "gone"]
"""


def _scored(root: Path, planned: str | None) -> Path:
    rows = [
        (NIGHT, m, f"t{t}", "concept_formation", round(((t * 7 + i * 3) % 10) / 10 + up, 2))
        for i, (m, up) in enumerate((("m1", 0.0), ("m2", -0.4), ("m3", -0.1)))
        for t in range(8)
    ]
    table = root / "scores.csv"
    pl.DataFrame(
        rows, schema=["dump_date", "model", "task", "category", "score"], orient="row"
    ).with_columns(pl.col("score").clip(0, 1)).write_csv(table)
    import_scores(table, root / "dump")
    context = RunContext()
    if planned is not None:
        (root / "planned.toml").write_text(planned)
        context = RunContext(options=run_options(hypotheses=str(root / "planned.toml")))
    runs.score(root / "dump", root / "out", context=context)
    return root / "out"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scored(tmp_path_factory.mktemp("hypotheses-page"), PLANNED)


def test_the_planned_hypotheses_stand_beside_the_comparisons(out: Path) -> None:
    _, sections = build_sections(read_warehouse(out), None)
    keys = [s.key for s in sections]
    assert keys[keys.index("comparisons") + 1] == "hypotheses"
    section = sections[keys.index("hypotheses")]
    planned = read_table(out, "hypotheses").sort("id")
    for row in planned.iter_rows(named=True):
        assert f"<td>{row['id']}</td>" in section.after
        assert f"<b>{row['verdict']}</b>" in section.after
    pair = (
        read_table(out, "standing_comparisons")
        .filter(scope="concept_formation", model_a="m1", model_b="m2")
        .row(0, named=True)
    )
    assert f"{pair['verdict']} (Holm p {pair['p_holm']:.3g})" in section.after
    assert html.escape(CLAIM) in section.after and CLAIM not in section.after
    assert "no result of &#x27;gone&#x27;" in section.after  # P2: not estimable, and why


def test_the_nights_own_view_and_an_output_without_hypotheses_have_no_section(
    out: Path, tmp_path: Path
) -> None:
    _, night = build_sections(read_warehouse(out), None, View.NIGHT)
    assert "hypotheses" not in [s.key for s in night]
    _, sections = build_sections(read_warehouse(_scored(tmp_path, None)), None)
    assert "hypotheses" not in [s.key for s in sections]
