"""``cogscore sql`` reads OUT's tables and views and nothing else (issue 46): a file, a URL,
an extension, a write, a setting or a second statement is refused (exit 2, one line) and
leaves the output as it was, byte for byte; local and on an object store."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.present.sql import connect
from flows.store.output import Output
from tests.s3server import S3Server

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (the Delta logs too) and its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


@pytest.fixture(scope="module")
def scored_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scored") / "out"
    runs.score(EXAMPLE_DUMP, out)
    return out


def attacks(standing: Path, elsewhere: Path) -> dict[str, str]:
    """The reviewers' queries (issue 46), each of which exited 0: ``standing`` is a data
    file of OUT's standings (what every dashboard reads), ``elsewhere`` a folder beside OUT
    holding one Parquet file."""
    return {
        "read_csv": "SELECT * FROM read_csv('/etc/passwd', delim=':', header=false)",
        "read_text": "SELECT * FROM read_text('/proc/self/environ')",
        "glob": "SELECT * FROM glob('/etc/*')",
        "read_parquet": f"SELECT * FROM read_parquet('{elsewhere}/*.parquet')",
        "copy": f"COPY (SELECT 1 AS x) TO '{elsewhere}/copied.csv'",
        "copy_into_out": (
            "COPY (SELECT * REPLACE (CASE WHEN rank = (SELECT max(rank) FROM standings) "
            f"THEN 0.99 ELSE score END AS score) FROM standings) TO '{standing}' "
            "(FORMAT parquet)"
        ),
        "export": f"EXPORT DATABASE '{elsewhere}/exported'",
        "attach_then_create": (
            f"ATTACH '{elsewhere}/attached.duckdb' AS x; CREATE TABLE x.t AS SELECT 1"
        ),
        "attach": f"ATTACH '{elsewhere}/attached.duckdb' AS x",
        "install": "INSTALL httpfs",
        "load": "LOAD httpfs",
        "set": "SET enable_external_access = true",
        "create": "CREATE TABLE t AS SELECT 1",
        "two_statements": "SELECT 1; SELECT 2",
        "a_read_then_a_write": f"SELECT 1; COPY (SELECT 1) TO '{elsewhere}/copied.csv'",
        "nothing": "  ;  ",
    }


@pytest.mark.parametrize("name", list(attacks(Path("STANDING"), Path("ELSEWHERE"))))
def test_an_attack_exits_2_in_one_line_and_leaves_everything_as_it_was(
    name: str, scored_out: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    elsewhere = tmp_path / "elsewhere"
    pl.DataFrame({"secret": ["not OUT's"]}).write_parquet(elsewhere / "other.parquet")
    query = attacks(next((scored_out / "standings").rglob("*.parquet")), elsewhere)[name]
    out_before, elsewhere_before = files_of(scored_out), files_of(elsewhere)
    board = cli("sql", scored_out, "SELECT model, rank, score FROM leaderboard")
    code, output = cli("sql", scored_out, query)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: refused: "), output
    assert "cogscore sql" in lines[0]  # why
    assert "root:" not in output and "not OUT's" not in output and "PATH=" not in output
    assert files_of(scored_out) == out_before
    assert files_of(elsewhere) == elsewhere_before
    assert cli("sql", scored_out, "SELECT model, rank, score FROM leaderboard") == board


@pytest.mark.parametrize(
    "query",
    [
        "FROM leaderboard",
        "SELECT model, score FROM standings WHERE as_of = (SELECT max(as_of) FROM standings);",
        "/* a comment first */\nWITH m AS (FROM model_scores) SELECT count(*) FROM m",
        "DESCRIBE runs",
        "SUMMARIZE model_scores",
        "SHOW TABLES",
        "VALUES (1, 'a')",
        "PIVOT model_scores ON dump_date IN ('2026-11-30', '2026-12-01') USING max(score) "
        "GROUP BY model",
    ],
)
def test_a_query_that_reads_still_runs(query: str, scored_out: Path) -> None:
    code, output = cli("sql", scored_out, query)
    assert code == 0 and output.strip() and not output.startswith("error"), output


def test_a_pivot_that_would_create_a_type_is_told_how_to_read(scored_out: Path) -> None:
    code, output = cli("sql", scored_out, "PIVOT model_scores ON dump_date USING max(score)")
    assert code == 2 and "PIVOT t ON c IN (...)" in output and len(output.splitlines()) == 1


def test_the_connection_reads_every_view_and_nothing_can_open_it_again(
    scored_out: Path,
) -> None:
    """``connect`` (what ``sql`` and the tests of the views use) turns DuckDB's external
    access off and locks its configuration once OUT's tables and views are registered; a
    Python variable is not read as a table (DuckDB's replacement scans)."""
    import duckdb

    con = connect(Output.at(scored_out))
    views = con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    assert len(views) >= 10
    for (view,) in views:
        con.sql(f'FROM "{view}"').fetchall()
    hidden = pl.DataFrame({"secret": ["a Python variable"]})  # noqa: F841
    with pytest.raises(duckdb.CatalogException):
        con.sql("FROM hidden").fetchall()
    for setting in ("SET enable_external_access = true", "RESET lock_configuration"):
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute(setting)
    with pytest.raises(duckdb.PermissionException):
        con.sql(f"FROM read_parquet('{scored_out}/standings/**/*.parquet')").fetchall()


def test_on_s3_the_same_holds_and_as_of_reads_a_key_holding_a_percent_sign(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registered datasets scan from the bucket with external access off (deltalake's
    file system holds the credentials, DuckDB none); a read or a write of the bucket is
    refused. ``--as-of`` compares the log's decoded paths with the listing's: a prefix
    "100%" still reads (a space, "#" or unicode in a key fails at the first write today)."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("COGSCORE_STORAGE_OPTIONS", raising=False)
    bucket = s3_server.create_bucket()
    url = f"s3://{bucket}/100%/out"
    assert cli("score", EXAMPLE_DUMP, "--out", url, "--engine", "local")[0] == 0
    client = s3_server.client()

    def objects() -> list[tuple[str, str]]:
        listed = client.list_objects_v2(Bucket=bucket)["Contents"]
        return sorted((o["Key"], o["ETag"]) for o in listed)

    before = objects()
    standing = next(key for key, _ in before if "/standings/as_of=" in key)
    for query in (
        f"COPY (SELECT model, 0.99 AS score FROM standings) TO 's3://{bucket}/{standing}'",
        f"SELECT * FROM read_parquet('s3://{bucket}/{standing}')",
        "SELECT * FROM read_text('/proc/self/environ')",
    ):
        code, output = cli("sql", url, query)
        assert code == 2 and output.startswith("error: refused: "), output
        assert len(output.strip().splitlines()) == 1
    assert objects() == before
    first = json.loads(cli("history", url, "--json")[1])[0]["run_id"]
    count = "SELECT count(*) AS n FROM episode_scores"
    pinned, latest = cli("sql", url, count, "--as-of", first), cli("sql", url, count)
    assert pinned == latest and pinned[0] == 0 and int(pinned[1].split()[-1]) > 0
    code, output = cli("sql", url, "SELECT count(*) AS n FROM leaderboard")
    assert code == 0 and int(output.split()[-1]) > 0
