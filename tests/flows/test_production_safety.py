"""The paths production users take: the Prefect engine, nightly runs into an output that holds
history, partial rescores, relative paths and odd input. Each test names the defect it guards
against (issue 12); none depends on how the store lays out its files (``tests.tables``)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import transforms.registry
from flows import prefect_flows, runs
from flows.cli import app
from flows.prefect_flows import batch_cache_key
from flows.present.sql import connect
from flows.provenance import git_commit
from flows.store.dumps import DumpFile
from flows.store.output import Output
from schemas.contract import Category
from simulator import simulate
from tests.tables import read_table, read_tables
from transforms.registry import resolve

ROOT = Path(__file__).parents[2]
EXAMPLE_DUMP = ROOT / "examples" / "dump"
NIGHTS = ("2026-11-26", "2026-11-27", "2026-11-28", "2026-11-29", "2026-11-30")
PROCEDURAL = "procedural_learning"


def cli(*args: str | Path, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (links followed where they point inside), by content."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def night_dump(root: Path, nights: tuple[str, ...], episodes: int = 120, seed: int = 0) -> Path:
    for i, night in enumerate(nights):
        simulate(root, date=night, episodes=episodes, seed=seed + i)
    return root


@pytest.fixture(scope="module")
def history_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five nights, and a sixth in a dump of its own (it arrives later)."""
    return night_dump(tmp_path_factory.mktemp("history"), NIGHTS)


def procedural_versions(out: Path) -> dict[str, str]:
    scores = read_table(out, "category_scores").filter(category=PROCEDURAL)
    return dict(scores.select("dump_date", "formula_version").unique().iter_rows())


# --- 1. cache keys from content ---------------------------------------------------------------


def test_the_cache_key_refuses_a_file_without_a_content_digest() -> None:
    """A key of the path alone gave one dump's scores to another dump of the same layout."""
    params = {"batch": [DumpFile(Path("/a/p.parquet"), "p.parquet")], "formulas": resolve()}
    with pytest.raises(ValueError, match="no content digest"):
        batch_cache_key(None, {**params, "digests": {}})  # type: ignore[arg-type]
    assert batch_cache_key(None, {**params, "digests": {"p.parquet": "x"}}) != batch_cache_key(  # type: ignore[arg-type]
        None, {**params, "digests": {"p.parquet": "y"}}
    )


def test_prefect_engine_scores_two_dumps_of_one_layout_as_the_local_engine(
    prefect_home: Path, tmp_path: Path
) -> None:
    dumps = {
        seed: night_dump(tmp_path / f"dump-{seed}", ("2026-12-01",), 150, seed) for seed in (1, 77)
    }
    local = {}
    for seed, dump in dumps.items():  # one Prefect home: the second could hit the first's cache
        cli("score", dump, "--out", tmp_path / f"prefect-{seed}", "--engine", "prefect")
        cli("score", dump, "--out", tmp_path / f"local-{seed}", "--engine", "local")
        local[seed] = read_tables(tmp_path / f"local-{seed}")
        assert read_tables(tmp_path / f"prefect-{seed}").keys() == local[seed].keys()
        for name, table in read_tables(tmp_path / f"prefect-{seed}").items():
            assert_frame_equal(table, local[seed][name])
    # Else the comparison proves nothing: the two dumps do score differently.
    assert not local[1]["model_scores"]["score"].equals(local[77]["model_scores"]["score"])


def test_prefect_engine_rescores_a_file_rewritten_in_place(
    prefect_home: Path, tmp_path: Path
) -> None:
    dump = night_dump(tmp_path / "dump", ("2026-12-01",), 150, 1)
    other = night_dump(tmp_path / "other", ("2026-12-01",), 150, 77)
    cli("score", dump, "--out", tmp_path / "first", "--engine", "prefect")
    for path in other.rglob("*.parquet"):  # same paths, new content
        shutil.copyfile(path, dump / path.relative_to(other))
    cli("score", dump, "--out", tmp_path / "again", "--engine", "prefect")
    cli("score", other, "--out", tmp_path / "truth", "--engine", "local")
    assert_frame_equal(
        read_table(tmp_path / "again", "episode_scores").drop("input_fingerprint"),
        read_table(tmp_path / "truth", "episode_scores").drop("input_fingerprint"),
    )


# --- 2. formula versions pinned per output -----------------------------------------------------


def test_a_new_output_takes_the_versions_asked_for_and_keeps_them(
    history_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(history_dump / f"dump_date={NIGHTS[0]}", dump / f"dump_date={NIGHTS[0]}")
    out = tmp_path / "out"
    cli("nightly", dump, "--out", out, "--engine", "local", "--formula", f"{PROCEDURAL}=v1")
    # A release whose newest version differs must not change what this output scores with.
    monkeypatch.setitem(transforms.registry.DEFAULTS, Category.PROCEDURAL_LEARNING, "v2")
    shutil.copytree(history_dump / f"dump_date={NIGHTS[1]}", dump / f"dump_date={NIGHTS[1]}")
    cli("nightly", dump, "--out", out, "--engine", "local")
    assert procedural_versions(out) == {NIGHTS[0]: "v1", NIGHTS[1]: "v1"}


def test_installed_defaults_that_change_do_not_change_an_existing_output(
    history_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(history_dump / f"dump_date={NIGHTS[0]}", dump / f"dump_date={NIGHTS[0]}")
    out = tmp_path / "out"
    default = resolve()[PROCEDURAL]  # what a new output pins (the registry's default)
    cli("nightly", dump, "--out", out, "--engine", "local")
    monkeypatch.setitem(transforms.registry.DEFAULTS, Category.PROCEDURAL_LEARNING, "v1")
    assert resolve()[Category.PROCEDURAL_LEARNING] == "v1"  # the "new release"
    shutil.copytree(history_dump / f"dump_date={NIGHTS[1]}", dump / f"dump_date={NIGHTS[1]}")
    cli("nightly", dump, "--out", out, "--engine", "local")
    assert default != "v1" and procedural_versions(out) == {NIGHTS[0]: default, NIGHTS[1]: default}


def test_asking_another_formula_of_an_existing_output_is_refused(
    history_dump: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cli("nightly", history_dump, "--out", out, "--engine", "local")
    before = tree_digest(out)
    for command in ("nightly", "score"):
        output = cli(command, history_dump, "--out", out, "--formula", f"{PROCEDURAL}=v1", code=2)
        assert "would mix versions" in output and "cogscore rescore" in output
    assert tree_digest(out) == before


def test_a_partial_rescore_then_nightly_runs_name_the_nights_off_the_set(
    history_dump: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    for night in NIGHTS[:4]:
        shutil.copytree(history_dump / f"dump_date={night}", dump / f"dump_date={night}")
    out = tmp_path / "out"
    cli("nightly", dump, "--out", out, "--engine", "local")
    moved = cli(
        "rescore", dump, "--out", out, "--engine", "local", "--formula", f"{PROCEDURAL}=v1",
        "--since", NIGHTS[1], "--until", NIGHTS[2],
    )  # fmt: skip
    assert f"night {NIGHTS[1]} scored with other versions: {PROCEDURAL}=v1" in moved
    shutil.copytree(history_dump / f"dump_date={NIGHTS[4]}", dump / f"dump_date={NIGHTS[4]}")
    output = cli("nightly", dump, "--out", out, "--engine", "local")
    pinned = resolve()[PROCEDURAL]
    assert procedural_versions(out) == {
        NIGHTS[0]: pinned, NIGHTS[1]: "v1", NIGHTS[2]: "v1", NIGHTS[3]: pinned, NIGHTS[4]: pinned,
    }  # fmt: skip
    for night in NIGHTS[1:3]:  # every run names them
        assert f"night {night} scored with other versions: {PROCEDURAL}=v1" in output
    assert f"night {NIGHTS[0]} scored" not in output and f"night {NIGHTS[4]} scored" not in output
    # The views: a column, and a series per formula set (no trend line joins versions).
    con = connect(Output.at(out))
    differences = con.sql("SELECT DISTINCT dump_date, formula_version FROM formula_differences")
    assert sorted(differences.fetchall()) == [(NIGHTS[1], "v1"), (NIGHTS[2], "v1")]
    trend = pl.DataFrame(
        con.sql("SELECT model, dump_date, series, off_formula_set FROM model_trend").arrow()
    )
    off = trend.filter("off_formula_set")["dump_date"].unique().sort().to_list()
    assert off == list(NIGHTS[1:3])
    for _, rows in trend.group_by("model"):
        assert rows["series"].n_unique() == 2  # the v1 nights on a line of their own
    # The report marks them on the chart across nights.
    page = tmp_path / "report.html"
    cli("report", out, "--html", page)
    text = page.read_text()
    assert f"{NIGHTS[1]}: {PROCEDURAL}=v1" in text and "marked x" in text


def test_a_rescore_of_every_night_changes_the_set(history_dump: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    for night in NIGHTS[:2]:
        shutil.copytree(history_dump / f"dump_date={night}", dump / f"dump_date={night}")
    out = tmp_path / "out"
    cli("nightly", dump, "--out", out, "--engine", "local")
    output = cli(
        "rescore", dump, "--out", out, "--engine", "local", "--formula", f"{PROCEDURAL}=v1"
    )
    assert "other versions" not in output
    shutil.copytree(history_dump / f"dump_date={NIGHTS[2]}", dump / f"dump_date={NIGHTS[2]}")
    cli("nightly", dump, "--out", out, "--engine", "local")
    assert procedural_versions(out) == dict.fromkeys(NIGHTS[:3], "v1")


def test_a_rescore_dry_run_changes_nothing_and_shows_the_diff(
    history_dump: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cli("nightly", history_dump, "--out", out, "--engine", "local")
    before = tree_digest(out)
    diff_file = tmp_path / "review" / "diff.parquet"
    args = ("rescore", history_dump, "--out", out, "--engine", "local")
    args += ("--formula", f"{PROCEDURAL}=v1", "--since", NIGHTS[3])
    shown = cli(*args, "--dry-run", "--diff-out", diff_file)
    assert "dry run: nothing in" in shown and "what the rescore would move" in shown
    assert tree_digest(out) == before
    reviewed = pl.read_parquet(diff_file)
    cli(*args)  # the real one writes the same diff
    written = read_table(out, "rescore_diff")
    assert_frame_equal(
        reviewed.select(sorted(reviewed.columns)).sort(
            "dump_date", "model", "level", "category", nulls_last=True
        ),
        written.sort("dump_date", "model", "level", "category", nulls_last=True),
    )
    assert set(reviewed["dump_date"]) == set(NIGHTS[3:])
    assert reviewed.filter(level="model")["delta"].abs().max() > 0  # it did move something


# --- 3. an output folder is never damaged ------------------------------------------------------


def test_undated_input_into_an_output_of_nights_is_refused(
    history_dump: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cli("nightly", history_dump, "--out", out, "--engine", "local")
    before = tree_digest(out)
    single = next((history_dump / f"dump_date={NIGHTS[0]}").glob("*.parquet"))
    # Another dump root as well: the layout is what this refusal is about.
    output = cli("score", single, "--out", out, "--engine", "local", "--input-root-changed", code=2)
    assert "would replace them all" in output
    stray = tmp_path / "stray"
    shutil.copytree(history_dump, stray)
    shutil.copyfile(single, stray / "stray.parquet")
    for command in ("score", "nightly"):
        output = cli(command, stray, "--out", out, "--engine", "local", code=2)
        assert "stray.parquet" in output
    assert tree_digest(out) == before


def test_files_cogscore_did_not_write_survive_every_run(history_dump: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    for night in NIGHTS[:2]:
        shutil.copytree(history_dump / f"dump_date={night}", dump / f"dump_date={night}")
    out = tmp_path / "out"
    cli("nightly", dump, "--out", out, "--engine", "local")
    note = out / "rejects" / "notes.txt"
    note.write_text("checked by hand on Monday")
    (out / "README.txt").write_text("owned by the warehouse team")
    shutil.copytree(history_dump / f"dump_date={NIGHTS[2]}", dump / f"dump_date={NIGHTS[2]}")
    cli("nightly", dump, "--out", out, "--engine", "local")
    cli("rescore", dump, "--out", out, "--engine", "local", "--formula", f"{PROCEDURAL}=v1")
    cli("score", dump, "--out", out, "--engine", "local")
    assert note.read_text() == "checked by hand on Monday"
    assert (out / "README.txt").read_text() == "owned by the warehouse team"


def test_a_folder_cogscore_did_not_write_where_a_table_goes_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "episode_scores").mkdir(parents=True)
    (out / "episode_scores" / "data.csv").write_text("a,b\n")
    output = cli("score", EXAMPLE_DUMP, "--out", out, "--engine", "local", code=2)
    assert "episode_scores" in output and "data.csv" in output
    assert (out / "episode_scores" / "data.csv").read_text() == "a,b\n"


def test_a_url_output_is_never_taken_for_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for url, says in (("ftp://host/out", "unsupported URL"), ("s3:/bucket/out", "malformed URL")):
        output = cli("score", EXAMPLE_DUMP, "--out", url, code=2)
        assert url in output and says in output
    # An object store that cannot be reached: a one-line error naming the URL, in seconds.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    output = cli(
        "score", EXAMPLE_DUMP, "--out", "s3://bucket/out",
        "--storage-option", "aws_endpoint_url=http://127.0.0.1:9", code=4,
    )  # fmt: skip
    assert "s3://bucket/out" in output and "unreachable" in output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_relative_paths_keep_the_previous_snapshot_and_report_from_anywhere(
    engine: str, prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` uses relative paths; a second run once deleted the previous snapshot."""
    work = tmp_path / "work"
    shutil.copytree(EXAMPLE_DUMP, work / "dump")
    monkeypatch.chdir(work)
    cli("nightly", "dump", "--out", "out", "--engine", engine)
    first = tree_digest(work / "out")
    args = ("--out", "out", "--engine", engine, "--formula", f"{PROCEDURAL}=v1")
    cli("rescore", "dump", *args)
    after = tree_digest(work / "out")
    # Every file of the first run is still there (time travel to it works).
    assert first.items() <= after.items(), "files of the previous version were deleted"
    state = Output.at(work / "out").state()
    assert state.input == str(work / "dump")
    assert Output.at("out").display == str(work / "out")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cli("report", work / "out", "--html", "page.html")
    page = (elsewhere / "page.html").read_text()
    assert "no longer there" not in page and f"under {work / 'dump'}" in page


# --- 4. failures that schedulers see -----------------------------------------------------------


def test_a_strict_prefect_run_with_rejects_ends_failed(prefect_home: Path, tmp_path: Path) -> None:
    state = prefect_flows.score_flow(
        input_root=EXAMPLE_DUMP, out=tmp_path / "out", strict=True, return_state=True
    )
    assert state.is_failed() and "strict run failed" in (state.message or "")
    assert not read_table(tmp_path / "out", "episode_scores").is_empty()  # written all the same
    lenient = prefect_flows.score_flow(
        input_root=EXAMPLE_DUMP, out=tmp_path / "lenient", return_state=True
    )
    assert lenient.is_completed()


def test_strict_comes_from_the_environment_for_deployments_and_the_command_line(
    prefect_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGSCORE_STRICT", "true")
    state = prefect_flows.nightly_flow(
        dump_root=str(EXAMPLE_DUMP), out=str(tmp_path / "flow"), return_state=True
    )
    assert state.is_failed()
    output = cli("score", EXAMPLE_DUMP, "--out", tmp_path / "cli", "--engine", "local", code=3)
    assert "completed with rejected input" in output
    output = cli("score", EXAMPLE_DUMP, "--out", tmp_path / "cli2", "--engine", "prefect", code=3)
    assert "strict run failed" in output


def test_nights_without_their_success_marker_wait(history_dump: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    for night in NIGHTS[:2]:
        shutil.copytree(history_dump / f"dump_date={night}", dump / f"dump_date={night}")
    (dump / f"dump_date={NIGHTS[0]}" / "_SUCCESS").touch()
    out = tmp_path / "out"
    output = cli("nightly", dump, "--out", out, "--engine", "local", "--require-marker")
    assert f"waiting for the _SUCCESS marker (not scored): {NIGHTS[1]}" in output
    assert set(read_table(out, "model_scores")["dump_date"]) == {NIGHTS[0]}
    (dump / f"dump_date={NIGHTS[1]}" / "_SUCCESS").touch()
    output = cli("nightly", dump, "--out", out, "--engine", "local", "--require-marker")
    assert "waiting" not in output
    assert set(read_table(out, "model_scores")["dump_date"]) == set(NIGHTS[:2])


def test_the_marker_option_is_a_deployment_parameter_and_an_environment_variable(
    prefect_home: Path, history_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(history_dump / f"dump_date={NIGHTS[0]}", dump / f"dump_date={NIGHTS[0]}")
    outcome = prefect_flows.nightly_flow(dump_root=dump, out=tmp_path / "a", require_marker=True)
    assert outcome.nights_waiting == [NIGHTS[0]] and outcome.nights_scored == []
    monkeypatch.setenv("COGSCORE_REQUIRE_MARKER", "1")
    output = cli("score", dump, "--out", tmp_path / "b", "--engine", "local")
    assert f"waiting for the _SUCCESS marker (not scored): {NIGHTS[0]}" in output
    assert Output.at(tmp_path / "b").read("model_scores").is_empty()  # nothing scored


# --- 5. provenance that holds anywhere ---------------------------------------------------------


def test_the_commit_is_recorded_only_from_cogscores_own_checkout(tmp_path: Path) -> None:
    foreign = tmp_path / "another-project"
    (foreign / "site-packages").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(foreign)], check=True)
    (foreign / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    subprocess.run(
        ["git", "-C", str(foreign), "-c", "user.email=a@b", "-c", "user.name=a", "commit",
         "-q", "--allow-empty", "-m", "x"],
        check=True,
    )  # fmt: skip
    assert git_commit.__wrapped__(foreign) == "unknown"  # another repository's commit
    assert git_commit.__wrapped__(foreign / "site-packages") == "unknown"
    if (ROOT / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        assert git_commit.__wrapped__(ROOT) == head.stdout.strip()


def test_the_manifest_records_the_installed_version_and_the_input_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    monkeypatch.chdir(EXAMPLE_DUMP.parent)
    runs.score(EXAMPLE_DUMP.name, tmp_path / "out")
    state = Output.at(tmp_path / "out").state()
    assert state.scorer_version == metadata.version("cogscore")
    assert state.input == str(EXAMPLE_DUMP.resolve())


# --- 6. no traceback for any input -------------------------------------------------------------


def test_a_partition_that_is_not_a_date_is_a_clear_error_on_every_command(
    tmp_path: Path,
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLE_DUMP, dump)
    shutil.copytree(dump / "dump_date=2026-12-01", dump / "dump_date=latest")
    out = tmp_path / "out"
    for args in (
        ("score", dump, "--out", out),
        ("nightly", dump, "--out", out),
        ("rescore", dump, "--out", out, "--formula", f"{PROCEDURAL}=v1"),
        ("rescore", dump, "--out", out, "--formula", f"{PROCEDURAL}=v1", "--since", "2026-12-01"),
    ):
        output = cli(*args, "--engine", "local", code=2)
        assert "dump_date='latest' is not a date YYYY-MM-DD" in output
    assert not out.exists()
