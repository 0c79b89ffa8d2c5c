"""The SQL views an operator reads (``sql/views.sql``, issue 47), through ``cogscore sql``
and DuckDB's own delta extension alike: ``category_profile`` is the standing the report
shows (every model, whenever it ran), ``night_category_profile`` a night's own;
``pairwise`` names its scope and carries the raw p beside Holm's."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from flows import runs
from flows.importers.scores import import_scores
from flows.present.sql import connect
from flows.store.output import Output
from tests.flows.test_warehouse import _delta_scan_views
from tests.tables import read_table

# m3 runs only on the first night: it stands on the second all the same.
ROWS = [
    ("2026-04-09", model, task, category, score)
    for model, base in (("m1", 0.9), ("m2", 0.5), ("m3", 0.2))
    for task, category, score in (
        ("a1", "associative_learning", base),
        ("a2", "associative_learning", base - 0.1),
        ("c1", "concept_formation", base / 2),
    )
] + [
    ("2026-04-12", model, "a1", "associative_learning", score)
    for model, score in (("m1", 0.8), ("m2", 0.6))
]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("views")
    table = root / "scores.csv"
    pl.DataFrame(
        ROWS, schema=["dump_date", "model", "task", "category", "score"], orient="row"
    ).write_csv(table)
    import_scores(table, root / "dump")
    runs.score(root / "dump", root / "out")
    return root / "out"


def _reader(out: Path, reader: str) -> duckdb.DuckDBPyConnection:
    if reader == "cogscore sql":
        return connect(Output.at(out))  # type: ignore[no-any-return]
    return _delta_scan_views(out)


def _profile(con: duckdb.DuckDBPyConnection, view: str, night: str) -> dict[tuple, dict]:
    result = con.execute(f"SELECT * FROM {view}")
    names = [d[0] for d in result.description]
    rows = [dict(zip(names, row, strict=True)) for row in result.fetchall()]
    return {
        (str(r[names[0]]), r["model"]): {c: r[c] for c in names[2:] if r[c] is not None}
        for r in rows
        if str(r[names[0]]) == night
    }


@pytest.mark.parametrize("reader", ["cogscore sql", "delta_scan"])
def test_category_profile_is_the_standing_and_the_nights_own_one_view_away(
    out: Path, reader: str
) -> None:
    con = _reader(out, reader)
    columns = [d[0] for d in con.execute("FROM category_profile LIMIT 0").description]
    assert columns[:2] == ["as_of", "model"]
    standing = read_table(out, "category_standings").filter(pl.col("as_of") == "2026-04-12")
    want = {}
    for r in standing.iter_rows(named=True):
        want.setdefault(("2026-04-12", r["model"]), {})[r["category"]] = r["score"]
    got = _profile(con, "category_profile", "2026-04-12")
    assert got == want and {m for _, m in got} == {"m1", "m2", "m3"}  # m3 did not run
    night = _profile(con, "night_category_profile", "2026-04-12")
    assert {m for _, m in night} == {"m1", "m2"}
    scores = read_table(out, "category_scores").filter(pl.col("dump_date") == "2026-04-12")
    assert night == {
        ("2026-04-12", r["model"]): {r["category"]: r["score"]} for r in scores.to_dicts()
    }


@pytest.mark.parametrize("reader", ["cogscore sql", "delta_scan"])
def test_pairwise_names_its_scope_and_the_raw_p(out: Path, reader: str) -> None:
    con = _reader(out, reader)
    for view, table, night in (
        ("pairwise", "standing_comparisons", "as_of"),
        ("night_pairwise", "model_comparisons", "dump_date"),
    ):
        got = con.execute(
            f"SELECT scope, model_a, model_b, p_value, p_holm FROM {view} ORDER BY ALL"
        ).fetchall()
        rows = read_table(out, table).filter(
            (pl.col(night) == "2026-04-12") & (pl.col("scope") == "overall")
        )
        assert got == sorted(rows.select("scope", "model_a", "model_b", "p_value", "p_holm").rows())
        assert got and {r[0] for r in got} == {"overall"}
