"""The nightly of a harness benchmark (``cogscore nightly --runs RUNS --tasks TASKS``): the
real LearningBench runs imported into the dump, the nights they touched scored, the twelve
models that ran printed as they stand, and what became of every run file kept in OUT's
``imports`` table, shown by ``status`` and the report, a run not imported included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.importers.kaggle_files import index_tasks, parse_run
from tests.learningbench import RUNS, TASKS
from tests.tables import read_table


def _cogscore(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def _runs_without_task_file() -> set[str]:
    """The run files whose task no task file registers (read from the files, not typed in)."""
    names = index_tasks(TASKS)
    return {
        str(path.relative_to(RUNS))
        for path in RUNS.rglob("*.run.json")
        if parse_run(path.read_bytes()).task not in names
    }


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    root = tmp_path_factory.mktemp("harness-nightly")
    code, output = _cogscore(
        "nightly", root / "dump", "--out", root / "out", "--runs", RUNS, "--tasks", TASKS,
        "--report", root / "report.html", "--json", "--engine", "local",
    )  # fmt: skip
    return root, code, output


def test_the_runs_are_imported_scored_and_stand(first: tuple[Path, int, str]) -> None:
    root, code, output = first
    assert code == 0, output
    runs = sorted(str(p.relative_to(RUNS)) for p in RUNS.rglob("*.run.json"))
    missing = _runs_without_task_file()
    assert missing  # the GLM-5 run: its task file is not in the benchmark's folder
    models = {parse_run((RUNS / r).read_bytes()).model for r in runs if r not in missing}
    standings = read_table(root / "out", "standings")
    latest = standings.filter(pl.col("as_of") == standings["as_of"].max())
    assert latest.height == len(models) == 12  # every model that ran, whichever night
    assert f"standing as of {latest['as_of'][0]}" in output
    imports = read_table(root / "out", "imports")
    assert sorted(imports["run_file"]) == runs  # every run file, each once
    rejected = imports.filter(outcome="rejected")
    assert set(rejected["run_file"]) == missing
    assert rejected["reasons"].to_list() == [["no_task_file"]] * len(missing)
    imported = imports.filter(outcome="imported")
    assert imported["file"].null_count() == 0 and imported["run_sha256"].null_count() == 0
    record = json.loads(output.strip().splitlines()[-1])
    assert record["imports"]["rejected"] == len(missing)
    assert {r["run"] for r in record["imports"]["not_imported"]} == missing
    for run in missing:
        assert f"not imported: {run}: no_task_file" in output
    page = (root / "report.html").read_text()
    assert "were not imported by the latest import" in page and next(iter(missing)) in page


def test_the_next_nightly_keeps_what_it_did_not_import_in_view(
    first: tuple[Path, int, str],
) -> None:
    """Nothing new arrived: nothing is scored again, no imported run is recorded twice, and
    the run not imported is recorded (and shown by status) again."""
    root, code, _ = first
    assert code == 0
    out = root / "again"
    shutil.copytree(root / "out", out)
    before = read_table(out, "imports").height
    code, output = _cogscore(
        "nightly", root / "dump", "--out", out, "--runs", RUNS, "--tasks", TASKS, "--engine",
        "local",
    )  # fmt: skip
    assert code == 0, output
    assert "nightly: 0 night(s) scored" in output
    imports = read_table(out, "imports")
    added = imports.height - before
    assert added == len(_runs_without_task_file())
    code, status = _cogscore("status", out)
    assert code == 0 and "harness run not imported" in status


def test_runs_without_tasks_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _cogscore("nightly", tmp_path / "d", "--out", tmp_path / "o", "--runs", RUNS)
    assert code == 2 and "--tasks" in output


# Two real runs: one that imports (one call: replays fast), one whose task has no file.
FAST_RUN = "deepseek-ai_deepseek-v3.2"
NO_TASK_RUN = "zai_glm-5"


@pytest.mark.parametrize("point", ["imported", "before-commit"])
def test_a_nightly_killed_after_its_import_leaves_the_ledger_to_the_next_run(
    point: str, tmp_path: Path
) -> None:
    """kill -9 once the import wrote the dump's files and before the run's commit (at
    ``imported``: before the ledger's rows were appended; at ``before-commit``: after, but
    before the runs table, so the next run's repair takes them away): the next nightly finds
    the run imported already, and the ledger then names the dump's file, once, as the
    record counts it."""
    from tests.robustness.test_faults import _killed_at

    runs, dump, out = tmp_path / "runs", tmp_path / "dump", tmp_path / "out"
    for folder in (FAST_RUN, NO_TASK_RUN):
        shutil.copytree(RUNS / folder, runs / folder)
    script = (
        "from pathlib import Path; from flows.runs import nightly; "
        "from flows.importers.kaggle_nightly import Harvest; "
        f"harvest = Harvest({str(runs)!r}, Path({str(TASKS)!r})); "
        f"nightly({str(dump)!r}, {str(out)!r}, harvest=harvest)"
    )
    _killed_at(point, script, tmp_path)
    files = sorted(str(p.relative_to(dump)) for p in dump.rglob("*.parquet"))
    assert len(files) == 1  # the killed run's import wrote the file
    code, output = _cogscore(
        "nightly", dump, "--out", out, "--runs", runs, "--tasks", TASKS, "--json", "--engine",
        "local",
    )  # fmt: skip
    assert code == 0, output
    record = json.loads(output.strip().splitlines()[-1])
    assert record["imports"]["imported"] == 1  # found imported already
    imports = read_table(out, "imports")
    imported = imports.filter(outcome="imported")
    assert sorted(imported["file"]) == files  # the dump's file, named once
    missing = {run for run in _runs_without_task_file() if run.startswith(f"{NO_TASK_RUN}/")}
    assert missing and set(imports.filter(outcome="rejected")["run_file"]) == missing
